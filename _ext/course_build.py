"""Sphinx glue for the course book (build tooling, not part of the `course_llm` package).

Two jobs:

1. nbdev writes its directives as comment lines at the top of code cells (``#| export``,
   ``#| hide``, ``#| eval: false`` ...). The book must not show them, and some of them mean
   something to the renderer. `render_notebook` rewrites a notebook *at render time* (on
   Sphinx's ``source-read`` event; the files on disk are never touched): it removes the
   directive lines and maps them to the cell tags Jupyter Book understands.
   The test command applies the same function before it stores nbval's executed notebooks
   in the book's execution cache, so both see identical cells and each chapter runs once.

2. ``{course-llm-api}`` renders an API reference for every module of `course_llm`, so a
   module exported by a new chapter appears in the reference without editing anything.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import re

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

_DIRECTIVE = re.compile(r"^\s*#\|\s*(.*?)\s*$")

# nbdev directive -> Jupyter Book cell tags
_TAGS = {
    "hide": ["remove-cell"],
    "default_exp": ["remove-cell"],
    "eval: false": ["skip-execution"],
    "echo: false": ["remove-input"],
    "output: false": ["remove-output"],
}


def directives_of(source: str) -> list[str]:
    """The nbdev directives (``#| ...`` lines) at the top of a cell's source."""
    found = []
    for line in source.splitlines():
        m = _DIRECTIVE.match(line)
        if m:
            found.append(m.group(1))
        elif line.strip():
            break
    return found


def render_cell(cell: dict) -> dict:
    """Strip nbdev directive lines from a code cell and turn them into Jupyter Book tags."""
    if cell.get("cell_type") != "code":
        return cell
    source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
    directives = directives_of(source)
    if not directives:
        return cell
    tags = list(cell.get("metadata", {}).get("tags", []))
    for d in directives:
        key = d.split()[0] if d.split() else ""
        for name, extra in _TAGS.items():
            if d == name or key == name or d.replace(" ", "") == name.replace(" ", ""):
                tags += [t for t in extra if t not in tags]
    lines = source.splitlines(keepends=True)
    while lines and (_DIRECTIVE.match(lines[0]) or not lines[0].strip()):
        lines.pop(0)
    cell = dict(cell)
    cell["source"] = "".join(lines)
    meta = dict(cell.get("metadata", {}))
    if tags:
        meta["tags"] = tags
    cell["metadata"] = meta
    return cell


def render_notebook(nb: dict) -> dict:
    """Return a copy of notebook `nb` (as a JSON dict) ready for the book."""
    nb = dict(nb)
    nb["cells"] = [render_cell(c) for c in nb["cells"]]
    return nb


def _on_source_read(app, docname, source):
    path = app.env.doc2path(docname)
    if not str(path).endswith(".ipynb"):
        return
    source[0] = json.dumps(render_notebook(json.loads(source[0])), indent=1, ensure_ascii=False)


class CourseApi(SphinxDirective):
    """``{course-llm-api}``: one section per public module of `course_llm`, via autodoc."""

    def run(self):
        import course_llm

        # The library's modules; the grader (`course_llm.grading`) is for instructors.
        names = sorted(
            m.name for m in pkgutil.iter_modules(course_llm.__path__)
            if not m.name.startswith("_") and not m.ispkg
        )
        result = []
        for name in names:
            module = importlib.import_module(f"course_llm.{name}")
            summary = (module.__doc__ or "").strip().splitlines()
            title = f"course_llm.{name}"
            result += [title, "-" * len(title), ""]
            if summary:
                result += [summary[0], ""]
            result += [f".. automodule:: course_llm.{name}", "   :members:", ""]
        node = nodes.section()
        node.document = self.state.document
        nested_parse_with_titles(self.state, StringList(result, source="course-llm-api"), node)
        return node.children


def setup(app):
    app.connect("source-read", _on_source_read)
    app.add_directive("course-llm-api", CourseApi)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
