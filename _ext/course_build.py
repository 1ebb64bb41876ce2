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
import inspect
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


def _undocumented_data(module) -> list[str]:
    """Public constants of `module` (names in its ``__all__`` that are neither classes nor
    functions) that carry no ``#:`` doc comment, so that ``automodule`` would skip them."""
    from sphinx.pycode import ModuleAnalyzer

    try:
        documented = {name for (_, name) in ModuleAnalyzer.for_module(module.__name__).find_attr_docs()}
    except Exception:  # no source to analyse: document them all
        documented = set()
    names = []
    for name in getattr(module, "__all__", []):
        obj = getattr(module, name, None)
        if callable(obj) or inspect.ismodule(obj) or name in documented:
            continue
        names.append(name)
    return names


def _data_directive(module, name: str) -> list[str]:
    """reST for one public constant: its name, its type, and its value when that is short."""
    obj = getattr(module, name)
    lines = [f".. py:data:: {name}", f"   :module: {module.__name__}", f"   :type: {type(obj).__name__}"]
    value = repr(obj)
    if len(value) <= 70 and "\n" not in value:
        lines.append(f"   :value: {value}")
    return lines + [""]


def api_modules() -> list[str]:
    """The library modules the student API reference documents: the top-level modules of
    `course_llm`, without private ones and without subpackages (the grader, `course_llm.grading`,
    is for instructors)."""
    import course_llm

    return sorted(
        f"course_llm.{m.name}" for m in pkgutil.iter_modules(course_llm.__path__)
        if not m.name.startswith("_") and not m.ispkg
    )


def api_rst(module_names: list[str]) -> list[str]:
    """The reST lines of an API reference: one section per module, its members via autodoc."""
    result = []
    for title in module_names:
        module = importlib.import_module(title)
        summary = (module.__doc__ or "").strip().splitlines()
        result += [title, "-" * len(title), ""]
        if summary:
            result += [summary[0], ""]
        result += [f".. automodule:: {title}", "   :members:", "   :show-inheritance:", ""]
        for name in _undocumented_data(module):
            result += _data_directive(module, name)
    return result


class CourseApi(SphinxDirective):
    """``.. course-llm-api:: [module ...]``: one section per public module of `course_llm`
    (or per module named), via autodoc.

    autodoc writes reStructuredText, so the directive must sit in a reST context: in a MyST
    page wrap it in an ``{eval-rst}`` block (a MyST page would otherwise show the generated
    ``.. automodule::`` lines as text)."""

    optional_arguments = 100

    def run(self):
        names = list(self.arguments) or api_modules()
        node = nodes.section()
        node.document = self.state.document
        nested_parse_with_titles(self.state, StringList(api_rst(names), source="course-llm-api"), node)
        return node.children


def _resolve_course_reference(app, env, node, contnode):
    """Resolve a Python cross-reference that names an object of another `course_llm` module
    by its short name (``:func:`cosine_schedule``` in `course_llm.train`, defined in
    `course_llm.optim`): when exactly one documented `course_llm` object has that name."""
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip(".~")
    domain = env.get_domain("py")
    matches = [name for name in domain.objects
               if name.startswith("course_llm.") and name.endswith("." + target)]
    if len(matches) != 1:
        return None
    from sphinx.util.nodes import make_refnode

    entry = domain.objects[matches[0]]
    return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id, contnode, matches[0])


def setup(app):
    app.connect("source-read", _on_source_read)
    app.add_directive("course-llm-api", CourseApi)
    app.connect("missing-reference", _resolve_course_reference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
