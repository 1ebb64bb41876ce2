"""Every worked example in the package's docstrings runs and gives what it shows."""
import doctest
import importlib
import pkgutil

import pytest

import course_llm

MODULES = sorted(m.name.removeprefix("course_llm.")
                 for m in pkgutil.walk_packages(course_llm.__path__, "course_llm.")
                 if not m.name.rsplit(".", 1)[-1].startswith("_"))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"course_llm.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in course_llm.{name}"
