"""pytest glue for running the chapters under nbval.

- A cell marked ``#| eval: false`` is skipped, as it is when the book executes.
- The kernels run without progress bars (`course_build.quiet_kernels`): a tqdm bar would be
  stored as an ipywidgets widget, which the offline book cannot show.
- A grader notebook (``nbs/grading/``, never a book page) whose code cells are all ``#| export``
  is not run: it only defines the package's code, which the sync check proves equal to the
  exported modules and the unit tests import. Each such run cost a kernel start (about 5 s).
- When every cell of a chapter passed, the executed notebook is stored in the book's execution
  cache (the one `_config.yml` names), after the same render-time rewrite the book applies.
  The book build that follows in the test command then finds every chapter already executed:
  each notebook runs once per test run.
"""

from __future__ import annotations

import copy
import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parent
# No wall-clock deadline for a hypothesis example: under `make test` two workers and the
# chapters' kernels share the cores, and one example of a 1 ms test once took 251 ms, which
# failed the run. Timing belongs in benchmarks/, not in tests.
settings.register_profile("course", deadline=None)
settings.load_profile("course")
sys.path.insert(0, str(ROOT / "_ext"))
from course_build import quiet_kernels  # noqa: E402

quiet_kernels()  # before any kernel starts: nbval's kernels inherit this environment
BOOK_CACHE = ROOT / ".cache" / "jupyter"
STAGING = ROOT / ".cache" / "nbval-executed"

_failed_files: set[str] = set()


def _is_nbval_cell(item) -> bool:
    return type(item).__name__ == "IPyNbCell"


def _definitions_only(path: Path) -> bool:
    import json

    from course_build import directives_of

    cells = json.loads(path.read_text())["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    return all(
        any(d.split()[:1] in (["export"], ["default_exp"]) for d in directives_of(src))
        for src in code
    )


def pytest_ignore_collect(collection_path, config):
    path = Path(collection_path)
    if path.suffix == ".ipynb" and (ROOT / "nbs" / "grading") in path.resolve().parents:
        return _definitions_only(path) or None
    return None


def pytest_collection_modifyitems(config, items):
    from course_build import directives_of

    for item in items:
        if _is_nbval_cell(item) and "eval: false" in directives_of(item.cell.source):
            item.add_marker(pytest.mark.skip(reason="#| eval: false"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if _is_nbval_cell(item) and report.failed:
        _failed_files.add(str(item.parent.fspath))


def pytest_runtest_teardown(item, nextitem):
    if not _is_nbval_cell(item):
        return
    if nextitem is not None and nextitem.parent is item.parent:
        return
    path = str(item.parent.fspath)
    in_book = Path(path).resolve().parent == ROOT / "nbs"
    if path in _failed_files or not in_book or os.environ.get("COURSE_LLM_NO_BOOK_CACHE"):
        return
    _stage_executed(item.parent)


def _stage_executed(nb_file) -> None:
    """Write the notebook nbval just executed, with its outputs, to the staging folder."""
    import nbformat
    from course_build import render_notebook

    nb = copy.deepcopy(nb_file.nb)
    for item in nb_file.session.items:
        if _is_nbval_cell(item) and item.parent is nb_file and item.test_outputs is not None:
            idx = next(i for i, c in enumerate(nb_file.nb.cells) if c is item.cell)
            nb.cells[idx].outputs = [copy.deepcopy(o) for o in item.test_outputs]
    rendered = nbformat.from_dict(render_notebook(nb))
    STAGING.mkdir(parents=True, exist_ok=True)
    target = STAGING / Path(nb_file.fspath).name
    tmp = target.with_suffix(".tmp")
    nbformat.write(rendered, str(tmp))
    os.replace(tmp, target)


def pytest_sessionfinish(session, exitstatus):
    """On the controlling process only: move the staged notebooks into the book's cache.

    (pytest-xdist workers each execute whole notebooks; the cache is one sqlite file, so a
    single process writes it.)"""
    if hasattr(session.config, "workerinput") or not STAGING.is_dir():
        return
    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    cache = get_cache(str(BOOK_CACHE))
    for staged in sorted(STAGING.glob("*.ipynb")):
        nb = nbformat.read(str(staged), as_version=4)
        source = ROOT / "nbs" / staged.name
        cache.cache_notebook_bundle(
            CacheBundleIn(nb, str(source), data={"executed_by": "nbval"}),
            check_validity=False,
            overwrite=True,
        )
        staged.unlink()
