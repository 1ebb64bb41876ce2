"""Every page of the built book works offline: a static scan of the HTML files.

Run by `make test` after the book is built, whatever the execution cache held (it is not
collected with the unit tests: the file name does not start with ``test_``). It reads every
HTML and CSS file under ``_build/html`` and fails on anything a browser would fetch from
another machine (scripts, styles, images, frames with an ``http(s)://`` address) and on
ipywidgets' traces (widget state, require.js), and on any absolute path of this machine in a
page or a cached output (the checkout, the venv, the home folder, a temporary folder): the
book reads the same wherever it was built. `browser_check.py` then loads the pages.
"""
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
sys.path.insert(0, str(ROOT / "_ext"))
from course_build import machine_paths, offline_problems, this_machine_roots  # noqa: E402

CSS_EXTERNAL = re.compile(r"(url\(|@import)\s*['\"]?\s*(https?:)?//", re.IGNORECASE)


def _files(pattern):
    if not (HTML / "index.html").exists():
        pytest.fail("the book is not built: run `make book` first")
    return sorted(HTML.rglob(pattern))


def test_the_book_has_pages():
    pages = _files("*.html")
    assert len(pages) >= 5 and (HTML / "nbs" / "api.html").exists(), [p.name for p in pages]


def test_no_page_references_another_machine():
    bad = {}
    for page in _files("*.html"):
        problems = offline_problems(page.read_text(encoding="utf-8", errors="replace"))
        if problems:
            bad[str(page.relative_to(HTML))] = problems[:3]
    assert not bad, f"pages that need the network: {bad}"


def test_no_stylesheet_imports_from_another_machine():
    bad = [str(css.relative_to(HTML)) for css in _files("*.css")
           if CSS_EXTERNAL.search(css.read_text(encoding="utf-8", errors="replace"))]
    assert not bad, f"stylesheets that load from the network: {bad}"


def test_no_page_or_cached_output_holds_a_machine_path():
    roots = this_machine_roots(ROOT)
    cached = [p for folder in (ROOT / ".cache" / "jupyter", ROOT / ".cache" / "course_llm")
              for p in folder.rglob("*")
              if p.is_file() and p.suffix in {".ipynb", ".json", ".txt", ".html"}]
    bad = {}
    for path in _files("*.html") + cached:
        hits = machine_paths(path.read_text(encoding="utf-8", errors="replace"), roots)
        if hits:
            bad[str(path.relative_to(ROOT))] = hits[:3]
    assert not bad, f"pages or cached outputs that name a path of this machine: {bad}"
