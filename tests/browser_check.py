"""The rendered book, opened in a real browser (headless Chromium driven by Playwright).

Run by `make test` after the book is built (it is not collected with the unit tests: the
file name does not start with ``test_``). For each checked page it asserts that MathJax typeset
the maths (its output elements are present and no raw ``$$`` is left), that every figure
loaded, and that the page requested nothing from outside this machine.
"""
import http.server
import os
import shutil
import threading
from functools import partial
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"


def _toc_pages():
    """Every page of the book, in the order of _toc.yml."""
    import sys

    import yaml

    sys.path.insert(0, str(ROOT / "_ext"))
    from book_cache import toc_files

    return [f + ".html" for f in toc_files(yaml.safe_load((ROOT / "_toc.yml").read_text()))]


PAGES = _toc_pages()
LAPTOP = {"width": 1280, "height": 900}   # the layout checks hold on a laptop screen
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic"]


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("CI"):
        pytest.fail("no chromium on this machine: `make test` installs Debian's chromium package")
    pytest.skip("chromium is not installed (apt-get install chromium)")


def _open(page, url):
    """Load `url` completely: parsed (`load`; on a busy machine a long page can still be
    parsing when the network is idle) and then no requests for 500 ms."""
    page.goto(url, wait_until="load", timeout=120_000)
    page.wait_for_load_state("networkidle", timeout=120_000)


@pytest.fixture(scope="module")
def server():
    if not (HTML / PAGES[0]).exists():
        pytest.fail("the book is not built: run `make book` first")
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = partial(Quiet, directory=str(HTML))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    executable = _chromium()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        yield b
        b.close()


@pytest.mark.parametrize("page_path", PAGES)
def test_page_renders_offline(server, browser, page_path):
    page = browser.new_page(viewport=LAPTOP)
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    _open(page, f"{server}/{page_path}")
    # MathJax 3 typesets asynchronously: wait until it reports that it has finished
    if page.locator("script[src*='mathjax']").count():   # Sphinx loads MathJax on pages with maths
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise",
                               timeout=30_000)
        page.evaluate("() => MathJax.startup.promise")
    n_tex = page.locator("main .math").count()          # maths Sphinx wrote for MathJax
    n_math = page.locator("mjx-container").count()      # what MathJax typeset
    text = page.inner_text("main")
    code_cells = page.locator("main div.cell_input").all_inner_texts()
    images = page.evaluate("""() => Array.from(document.querySelectorAll('main img')).map(
        i => ({src: i.getAttribute('src'), ok: i.complete && i.naturalWidth > 0}))""")
    layout = page.evaluate("""() => {
        const main = document.querySelector('main').getBoundingClientRect();
        const outputs = Array.from(document.querySelectorAll('main div.cell_output pre'));
        const imgs = Array.from(document.querySelectorAll('main img'));
        const code = Array.from(document.querySelectorAll('main div.cell_input pre'));
        return {
            scrolling_outputs: outputs.filter(o => o.scrollWidth > o.clientWidth + 1).length,
            scrolling_code: code.filter(c => c.checkVisibility() && c.scrollWidth > c.clientWidth + 1)
                                .map(c => c.innerText.split('\\n').find(l => l.length > 88) || '')
                                .map(l => l.slice(0, 60)),
            wide_images: imgs.filter(i => i.getBoundingClientRect().right > main.right + 1)
                             .map(i => i.getAttribute('src')),
        };
    }""")
    page.close()

    assert layout["scrolling_outputs"] == 0, f"{layout['scrolling_outputs']} outputs scroll sideways"
    assert not layout["scrolling_code"], f"code cells that scroll sideways: {layout['scrolling_code']}"
    assert not layout["wide_images"], f"figures wider than the column: {layout['wide_images']}"
    assert n_math >= n_tex, f"MathJax typeset {n_math} of the page's {n_tex} formulas"
    assert "$$" not in text and "\\begin{" not in text and "\\(" not in text, "raw TeX left on the page"
    directive_lines = [l for c in code_cells for l in c.splitlines() if l.strip().startswith("#|")]
    assert not directive_lines, f"nbdev directives shown in code cells: {directive_lines[:3]}"
    broken = [i["src"] for i in images if not i["ok"]]
    assert not broken, f"figures that did not load: {broken}"
    outside = sorted({u for u in requests
                      if urlparse(u).scheme not in ("data", "blob", "about")
                      and urlparse(u).hostname not in ("127.0.0.1", "localhost")})
    assert not outside, f"the page asked for resources outside this machine: {outside}"


def test_every_page_is_checked():
    assert "nbs/01_language_models.html" in PAGES and "nbs/api.html" in PAGES


def test_chapter_one_has_its_figures(server, browser):
    page = browser.new_page()
    _open(page, f"{server}/nbs/01_language_models.html")
    n_figures = page.locator("main img").count()
    page.close()
    assert n_figures >= 2, f"chapter 01 should show its sparsity and perplexity figures, found {n_figures}"


# Measured on the library of November 2026: 243 documented classes, functions and exceptions
# (456 `dl.py` entries with methods, attributes and constants). The floors leave room for
# modules being split or merged, not for the reference going empty.
API_MIN_OBJECTS = 200
API_MIN_ENTRIES = 380


def test_api_reference_renders_the_library(server, browser):
    page = browser.new_page()
    page.set_default_timeout(120_000)   # a long page on a busy machine
    _open(page, f"{server}/nbs/api.html")
    found = page.evaluate("""() => ({
        kinds: Array.from(document.querySelectorAll('main dl.py')).map(d => d.classList[1]),
        signatures: document.querySelectorAll('main dl.py > dt.sig').length,
        ids: Array.from(document.querySelectorAll('main dl.py > dt[id]')).map(d => d.id),
        text: document.querySelector('main').textContent,
    })""")
    page.close()
    kinds, signatures, ids, text = found["kinds"], found["signatures"], found["ids"], found["text"]
    assert ".. automodule::" not in text and ":members:" not in text, \
        "the API page shows autodoc's directives as text instead of running them"
    objects = sum(k in ("class", "function", "exception") for k in kinds)
    assert objects >= API_MIN_OBJECTS, f"the API page documents {objects} classes and functions"
    assert len(kinds) >= API_MIN_ENTRIES, f"the API page has {len(kinds)} entries"
    assert signatures >= len(kinds), "an API entry has no signature"
    grader = [i for i in ids if i.startswith("course_llm.grading")]
    assert not grader, f"the grader is not part of the student API: {grader[:3]}"
