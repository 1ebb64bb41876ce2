"""The book's offline machinery (`_ext/course_build.py`): the static scan finds what a browser
would fetch from another machine, widgets are dropped before rendering, kernels are quiet."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
import course_build  # noqa: E402
from course_build import WIDGET_VIEW, offline_problems, render_notebook  # noqa: E402


@pytest.mark.parametrize("html", [
    '<script src="https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.4/require.min.js"></script>',
    '<script src="//cdn.jsdelivr.net/npm/@jupyter-widgets/html-manager/dist/embed-amd.js"></script>',
    '<link rel="stylesheet" href="http://fonts.example/a.css">',
    '<link rel="preload" as="font" href="https://fonts.example/a.woff2">',
    '<img src="https://example.org/figure.png">',
    '<img srcset="HTTPS://example.org/figure.png 2x">',
    '<iframe src="https://www.youtube.com/embed/x"></iframe>',
    '<div style="background: url(https://example.org/bg.png)"></div>',
    "<style>@import url('https://fonts.example/a.css');</style>",
    '<script type="application/vnd.jupyter.widget-state+json">{"state": {}}</script>',
])
def test_scan_finds_what_a_browser_fetches(html):
    assert offline_problems(f"<html><body>{html}</body></html>")


@pytest.mark.parametrize("html", [
    '<a href="https://arxiv.org/abs/1706.03762">the paper</a>',
    '<link rel="canonical" href="https://example.org/book/">',
    '<script src="../_static/mathjax/tex-chtml.js"></script>',
    '<img src="../_images/fig.png"> <p>see https://example.org in the text</p>',
    '<style>.x { background: url(../_static/bg.png) }</style>',
])
def test_scan_allows_local_resources_and_links(html):
    assert offline_problems(html) == []


def _widget_notebook():
    view = {"model_id": "abc", "version_major": 2, "version_minor": 0}
    return {
        "metadata": {"kernelspec": {"name": "python3"},
                     "widgets": {"application/vnd.jupyter.widget-state+json": {"state": {"abc": {}}}}},
        "cells": [{"cell_type": "code", "source": "#| hide\nimport x", "metadata": {},
                   "outputs": [{"output_type": "display_data",
                                "data": {WIDGET_VIEW: view, "text/plain": "Loading weights: 100%"}},
                               {"output_type": "display_data", "data": {WIDGET_VIEW: view}},
                               {"output_type": "stream", "name": "stdout", "text": "ok\n"}]}],
    }


def test_render_drops_widget_state_and_views():
    nb = _widget_notebook()
    before = json.dumps(nb)
    out = render_notebook(nb)
    assert json.dumps(nb) == before, "render_notebook must not change its input"
    assert "widgets" not in out["metadata"] and out["metadata"]["kernelspec"]
    cell = out["cells"][0]
    assert cell["outputs"] == [
        {"output_type": "display_data", "data": {"text/plain": "Loading weights: 100%"}},
        {"output_type": "stream", "name": "stdout", "text": "ok\n"},
    ]
    assert cell["metadata"]["tags"] == ["remove-cell"] and cell["source"] == "import x"


def test_kernels_start_without_progress_bars():
    env = {"TQDM_DISABLE": "0"}
    course_build.quiet_kernels(env)
    assert env["HF_HUB_DISABLE_PROGRESS_BARS"] == "1" and env["TQDM_DISABLE"] == "0"
    # conftest.py (imported by this pytest run) set them for this process, so the kernels
    # nbval starts inherit them; a child process sees tqdm disabled
    code = "import tqdm, io; b = tqdm.tqdm(range(3), file=io.StringIO()); print(b.disable)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_api_reference_documents_library_modules_not_the_grader():
    names = course_build.api_modules()
    assert "course_llm.gpt" in names and "course_llm.core" in names
    assert not any(n.startswith("course_llm.grading") or "._" in n for n in names)
    rst = course_build.api_rst(["course_llm.gpt"], ROOT, {"nbs/07_gpt"})
    assert ".. automodule:: course_llm.gpt" in rst and "   :members:" in rst
    assert "Built in :doc:`/nbs/07_gpt` (``nbs/07_gpt.ipynb``)." in rst
    # a chapter outside the book being built is named, not linked (no dangling reference)
    assert "Built in ``nbs/07_gpt.ipynb``." in course_build.api_rst(["course_llm.gpt"], ROOT, set())


def test_constants_are_documented_with_their_type():
    import course_llm.tokenizers as tok

    assert "WORD_PATTERN" in course_build.undocumented_data(tok)
    lines = course_build.data_directive(tok, "WORD_PATTERN")
    assert lines[:3] == [".. py:data:: WORD_PATTERN", "   :module: course_llm.tokenizers",
                         "   :type: str"]


@pytest.mark.parametrize(
    "directive, tags",
    [
        ("export", ["hide-input"]),       # the library: folded behind "show code"
        ("exports", []),                  # teaching code that is also exported: in view
        ("hide", ["remove-cell"]),
        ("code-fold: true", ["hide-input"]),  # scaffolding (plots, data set-up): folded
        ("eval: false", ["skip-execution"]),
    ],
)
def test_directives_fold_the_library_and_keep_teaching_code_in_view(directive, tags):
    cell = {"cell_type": "code", "metadata": {}, "outputs": [],
            "source": f"#| {directive}\ndef f(x):\n    return x\n"}
    out = course_build.render_cell(cell)
    assert out["source"] == "def f(x):\n    return x\n"
    assert out["metadata"].get("tags", []) == tags


def test_bibliography_parses_with_unique_keys():
    """references.bib is read by pybtex (as sphinxcontrib-bibtex does) and no key is declared twice:
    a lost closing brace makes the whole book build fail before any page is read."""
    import re

    from pybtex.database import parse_file

    path = Path(__file__).resolve().parents[1] / "references.bib"
    keys = re.findall(r"^@\w+\{([^,\s]+),", path.read_text(), flags=re.M)
    assert len(keys) == len(set(keys)), sorted(k for k in set(keys) if keys.count(k) > 1)
    assert len(parse_file(str(path)).entries) == len(keys)


def cell_source(cell: dict) -> str:
    """A cell's source as one string (nbformat stores a string or a list of lines)."""
    return cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])


def book_pages():
    """(name, notebook) for every page of `_toc.yml` that is a notebook, in book order."""
    import yaml
    from book_cache import toc_files

    for name in toc_files(yaml.safe_load((ROOT / "_toc.yml").read_text())):
        path = ROOT / (name + ".ipynb")
        if path.is_file():
            yield name, json.loads(path.read_text())


def test_code_in_view_fits_88_columns():
    """Every code line the book shows in view (cells not folded or removed) is at most 88
    columns, the formatter's limit, so no code cell scrolls sideways in the content column.
    `ruff format` wraps code; comments, docstrings and long strings are wrapped by hand."""
    long_lines = []
    for name, nb in book_pages():
        for cell in render_notebook(nb)["cells"]:
            tags = cell.get("metadata", {}).get("tags", [])
            if cell["cell_type"] != "code" or {"hide-input", "remove-cell", "remove-input"} & set(tags):
                continue
            source = cell_source(cell)
            long_lines += [f"{name}: {line[:60]}..." for line in source.splitlines() if len(line) > 88]
    assert not long_lines, f"{len(long_lines)} code lines in view over 88 columns: {long_lines[:5]}"


def test_no_notebook_exports_the_package_when_run():
    """A chapter never calls nbdev's export: nbval runs chapters in parallel with the unit tests,
    and a notebook that rewrote `course_llm/` mid-run would race them (`make export` does it)."""
    calls = []
    for path in sorted((ROOT / "nbs").rglob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "code" and "nbdev_export(" in cell_source(cell):
                calls.append(path.name)
    assert not calls, f"remove the nbdev_export() cells of {sorted(set(calls))}"


def test_headings_never_skip_a_level():
    """Each page's markdown headings go down one level at a time (myst warns about H1 -> H3, and
    the strict build turns the warning into a failure after the chapters have executed)."""
    skips = []
    for name, nb in book_pages():
        level = 0
        for cell in nb["cells"]:
            if cell["cell_type"] != "markdown":
                continue
            fence = False
            for line in cell_source(cell).splitlines():
                if line.lstrip().startswith(("```", "~~~")):
                    fence = not fence
                m = None if fence else re.match(r"(#{1,6}) ", line)
                if m:
                    if len(m.group(1)) > level + 1:
                        skips.append(f"{name}: {line[:60]}")
                    level = len(m.group(1))
    assert not skips, f"headings that skip a level: {skips}"


def test_no_notebook_source_holds_a_control_character():
    """A control character in a cell's source is almost always a lost backslash: a JSON
    ``"\\to"`` written by a script becomes a tab followed by ``o``, and ``$\\epsilon \\to 0$``
    no longer typesets. Newlines are the only control character a notebook source holds."""
    control = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")
    found = []
    for path in sorted((ROOT / "nbs").rglob("*.ipynb")) + sorted((ROOT / "exercises").rglob("*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text())["cells"]):
            for m in control.finditer(cell_source(cell)):
                found.append(f"{path.relative_to(ROOT)} cell {i}: {cell_source(cell)[max(0, m.start() - 20):m.end() + 10]!r}")
    assert not found, f"control characters in notebook sources: {found[:5]}"


def test_every_folded_definition_is_named_above_its_fold():
    """Issue #33 item 3: a folded `#| export` cell is announced by its public definitions'
    signatures and docstring summaries; cells in view (`#| exports`) and private names are not."""
    import course_build

    folded = ("#| export\ndef pairs(ids: list, counts=None) -> dict:\n"
              '    """Count adjacent pairs.\n\n    More text.\n    """\n    return {}\n\n\n'
              "def _helper(x):\n    return x\n")
    shown = "#| exports\ndef merge(ids, pair, new_id):\n    \"\"\"Merge.\"\"\"\n    return ids\n"
    klass = ("#| export\nclass Tok:\n    \"\"\"A tokenizer\n    over bytes.\"\"\"\n\n"
             "    def __init__(self, vocab: int = 3):\n        self.vocab = vocab\n")
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "source": s, "outputs": []}
                    for s in (folded, shown, klass)], "metadata": {}}
    out = course_build.render_notebook(nb)["cells"]
    kinds = [c["cell_type"] for c in out]
    assert kinds == ["markdown", "code", "code", "markdown", "code"]
    assert out[0]["source"] == ("**Library** `pairs(ids: list, counts=None) -> dict`: "
                                "Count adjacent pairs.")
    assert out[3]["source"] == "**Library** `class Tok(vocab: int=3)`: A tokenizer over bytes."


def test_module_map_lists_every_module_with_its_chapter_and_layer():
    """Issue #32 item 6: the appendix's module map, generated from the architecture test's table."""
    import course_build

    rst = course_build.module_map_rst(ROOT)
    rows = [line for line in rst if line.startswith("   * - ``")]
    assert len(rows) == len(course_build.api_modules())
    assert not [line for line in rst if line.strip() == "- ?"], "a module without chapter or layer"


def test_no_caption_is_printed_twice():
    """Issue #33 item 5: a figure's caption lives in its cell's `mystnb.figure` metadata (the
    book numbers it); a "*Figure: ...*" paragraph under it would repeat it."""
    doubled = []
    for path in sorted((Path(__file__).resolve().parents[1] / "nbs").glob("*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text())["cells"]):
            if cell["cell_type"] == "markdown" and re.search(r"^\*Figure[:.]", cell_source(cell), re.M):
                doubled.append(f"{path.name} cell {i}")
    assert not doubled, doubled
