"""Every worked example in the package's docstrings runs and gives what it shows."""
import doctest
import importlib
import pkgutil

import pytest

import course_llm

MODULES = sorted(m.name for m in pkgutil.iter_modules(course_llm.__path__) if not m.name.startswith("_"))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"course_llm.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in course_llm.{name}"
