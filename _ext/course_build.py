"""Sphinx glue for the course book (build tooling, not part of the `course_llm` package).

Two jobs:

1. nbdev writes its directives as comment lines at the top of code cells (``#| export``,
   ``#| hide``, ``#| eval: false`` ...). The book must not show them, and some of them mean
   something to the renderer. `render_notebook` rewrites a notebook *at render time* (on
   Sphinx's ``source-read`` event; the files on disk are never touched): it removes the
   directive lines and maps them to the cell tags Jupyter Book understands.
   The test command applies the same function before it stores nbval's executed notebooks
   in the book's execution cache, so both see identical cells and each chapter runs once.

2. ``course-llm-api`` renders an API reference for every module of `course_llm`, so a
   module exported by a new chapter appears in the reference without editing anything.

3. The book must work offline. Progress bars are switched off in every kernel that executes a
   chapter (`quiet_kernels`, called here for the book and by ``conftest.py`` for nbval): a
   tqdm bar in a notebook becomes an ipywidgets widget whose page needs require.js and
   @jupyter-widgets from CDNs. Widgets that reach the book anyway (an execution cache filled
   before this rule) are dropped when the page is rendered, and `offline_problems` finds any
   reference to another machine in a built page (``make test`` runs it over the whole book).
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
# `export` is the hardened library code: folded behind a "show code" toggle, so a chapter reads as
# its teaching version (nbdev's own docs hide exported source too). `exports` (nbdev: export and
# show) keeps a cell that is both the teaching version and the library in view. Quarto's
# `code-fold: true` (which nbdev documents) folds a cell that is not the idea itself: the code
# that draws a figure, builds an experiment's data or formats its table.
_TAGS = {
    "export": ["hide-input"],
    "code-fold: true": ["hide-input"],
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


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

# Environment of the kernels that execute chapters: no progress bars (Hugging Face's
# "Loading weights", tqdm's own), no advisory warnings on stderr (the strict build fails on
# stderr output).
QUIET_KERNEL_ENV = {
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TQDM_DISABLE": "1",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
}


def quiet_kernels(environ=None) -> None:
    """Set `QUIET_KERNEL_ENV` in `environ` (default: this process, whose kernels inherit it),
    keeping any value already set."""
    import os

    environ = os.environ if environ is None else environ
    for key, value in QUIET_KERNEL_ENV.items():
        environ.setdefault(key, value)


def drop_widgets(cell: dict) -> dict:
    """Remove ipywidgets views from a code cell's outputs (keeping their plain-text form)."""
    outputs = cell.get("outputs")
    if not outputs or not any(WIDGET_VIEW in o.get("data", {}) for o in outputs):
        return cell
    kept = []
    for out in outputs:
        data = out.get("data", {})
        if WIDGET_VIEW in data:
            data = {k: v for k, v in data.items() if k != WIDGET_VIEW}
            if not data:
                continue
            out = {**out, "data": data}
        kept.append(out)
    return {**cell, "outputs": kept}


def _machine_path_rules() -> list[tuple[re.Pattern, str]]:
    import sys
    import tempfile
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    named = [(str(root / ".venv"), "<venv>"), (str(root.resolve() / ".venv"), "<venv>"),
             (sys.prefix, "<venv>"), (str(root), "<course>"), (str(root.resolve()), "<course>"),
             (sys.base_prefix, "<python>"), (str(Path.home()), "~")]
    named = sorted({(k, v) for k, v in named if k.count("/") >= 2}, key=lambda kv: -len(kv[0]))
    rules = [(re.compile(re.escape(k) + r"(?![\w.-])"), v) for k, v in named]
    temp = re.escape(tempfile.gettempdir().rstrip("/"))
    rules.append((re.compile(temp + r"/(?:tmp|pytest-of-)[\w.-]*"), "<tmp>"))
    return rules


def hide_machine_paths(cell: dict) -> dict:
    """Replace this machine's paths in a code cell's outputs by names that read the same on
    every machine: ``<course>`` for the checkout, ``<venv>``, ``<tmp>`` for a temporary folder
    (an error message that names a file keeps the file's name). The book does not show, and its
    execution cache does not store, where it was built."""
    outputs = cell.get("outputs")
    if not outputs:
        return cell
    rules = _machine_path_rules()

    def clean(value):
        if isinstance(value, list):
            return [clean(v) for v in value]
        if isinstance(value, str):
            for pattern, name in rules:
                value = pattern.sub(name, value)
        return value

    kept = []
    for out in outputs:
        out = dict(out)
        if "text" in out:
            out["text"] = clean(out["text"])
        if "data" in out:
            out["data"] = {k: clean(v) if k.startswith("text/") else v
                           for k, v in out["data"].items()}
        if "traceback" in out:
            out["traceback"] = clean(out["traceback"])
        if "evalue" in out:
            out["evalue"] = clean(out["evalue"])
        kept.append(out)
    return {**cell, "outputs": kept}


def _signature(node) -> str:
    """``name(args) -> returns`` of a function, or ``class Name(args of __init__)``."""
    import ast

    if isinstance(node, ast.ClassDef):
        init = next(
            (n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"),
            None,
        )
        if init is None:
            return f"class {node.name}"
        args = ast.unparse(init.args).removeprefix("self, ").removeprefix("self")
        return f"class {node.name}({args})"
    args = ast.unparse(node.args)
    ret = f" -> {ast.unparse(node.returns)}" if node.returns is not None else ""
    return f"{node.name}({args}){ret}"


def fold_summaries(source: str) -> list[str]:
    """One line per public function or class that `source` (a folded ``#| export`` cell)
    defines: its signature and the first line of its docstring, as nbdev's ``show_doc`` shows
    them, so that the reader sees what a fold holds without opening it."""
    import ast

    try:
        body = ast.parse(source).body
    except SyntaxError:
        return []
    lines = []
    for node in body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if node.name.startswith("_"):
            continue
        doc = (ast.get_docstring(node) or "").strip().split("\n\n")[0]  # the summary
        doc = " ".join(doc.replace("`", "").split())
        sig = _signature(node).replace("`", "")
        lines.append(f"`{sig}`" + (f": {doc}" if doc else ""))
    return lines


def announce_folds(cells: list[dict]) -> list[dict]:
    """Before each folded library cell (``#| export``), a markdown cell that names what it
    defines (`fold_summaries`). Cells kept in view (``#| exports``) need none."""
    out = []
    for cell in cells:
        if cell.get("cell_type") == "code":
            source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            if "export" in directives_of(source):
                lines = fold_summaries(source)
                if lines:
                    text = "\n\n".join(f"**Library** {line}" for line in lines)
                    out.append({"cell_type": "markdown", "metadata": {"tags": ["fold-summary"]},
                                "source": text})
        out.append(cell)
    return out


def render_notebook(nb: dict) -> dict:
    """Return a copy of notebook `nb` (as a JSON dict) ready for the book: nbdev directives
    mapped to tags, each folded definition named above its fold (`announce_folds`), no
    ipywidgets state or views, no path of the machine that executed it."""
    nb = dict(nb)
    cells = announce_folds(nb["cells"])
    nb["cells"] = [hide_machine_paths(drop_widgets(render_cell(c))) for c in cells]
    if "widgets" in nb.get("metadata", {}):
        nb["metadata"] = {k: v for k, v in nb["metadata"].items() if k != "widgets"}
    return nb


def _on_source_read(app, docname, source):
    path = app.env.doc2path(docname)
    if not str(path).endswith(".ipynb"):
        return
    source[0] = json.dumps(render_notebook(json.loads(source[0])), indent=1, ensure_ascii=False)


def undocumented_data(module) -> list[str]:
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


def data_directive(module, name: str) -> list[str]:
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


_NBDEV_HEADER = re.compile(r"File to edit: (\S+\.ipynb)")


def source_notebook(module) -> "Path | None":
    """The notebook that nbdev generated `module` from (its header names it), or None."""
    from pathlib import Path

    try:
        path = Path(inspect.getsourcefile(module))
        head = path.read_text(encoding="utf-8").split("\n", 3)[:3]
    except (TypeError, OSError):
        return None
    match = _NBDEV_HEADER.search("\n".join(head))
    return (path.parent / match.group(1)).resolve() if match else None


def _built_by(module, srcdir, found_docs) -> list[str]:
    """One line saying which chapter builds `module`, linking to it when it is in the book."""
    notebook = source_notebook(module)
    if notebook is None or srcdir is None:
        return []
    try:
        rel = notebook.relative_to(srcdir)
    except ValueError:
        return []
    docname = rel.with_suffix("").as_posix()
    if docname in (found_docs or ()):
        return [f"Built in :doc:`/{docname}` (``{rel.as_posix()}``).", ""]
    return [f"Built in ``{rel.as_posix()}``.", ""]


def api_rst(module_names: list[str], srcdir=None, found_docs=None) -> list[str]:
    """The reST lines of an API reference: one section per module, the chapter that builds
    it (when `srcdir`, the book's folder, is given), its members via autodoc (which also shows
    the module's docstring, if any)."""
    result = []
    for title in module_names:
        module = importlib.import_module(title)
        result += [title, "-" * len(title), ""]
        result += _built_by(module, srcdir, found_docs)
        result += [f".. automodule:: {title}", "   :members:", "   :show-inheritance:", ""]
        for name in undocumented_data(module):
            result += data_directive(module, name)
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
        from pathlib import Path

        rst = api_rst(names, Path(self.env.srcdir).resolve(), self.env.found_docs)
        nested_parse_with_titles(self.state, StringList(rst, source="course-llm-api"), node)
        return node.children


def architecture_table(root):
    """(LAYERS, RANK) of the package's import layers, read from the architecture test that
    enforces them (`tests/test_architecture.py` under `root`), so the map and the test agree."""
    import importlib.util
    from pathlib import Path

    path = Path(root) / "tests" / "test_architecture.py"
    spec = importlib.util.spec_from_file_location("_course_architecture", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.LAYERS, module.RANK


def _notebook_title(notebook) -> str:
    """The first markdown heading of a notebook, without its leading #'s."""
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("#"):  # safe inside a :doc:`title <doc>` role
                    title = line.lstrip("#").strip()
                    return re.sub(r"[`$<>*\\]", "", title)
    return notebook.stem


def module_map_rst(root, found_docs=None) -> list[str]:
    """A reST table of every library module: the chapter (page) that builds it, its layer in
    the import order, and the public names it holds."""
    from pathlib import Path

    root = Path(root).resolve()
    layers, rank = architecture_table(root)
    rows = []
    for title in api_modules():
        module = importlib.import_module(title)
        short = title.split(".", 1)[1]
        notebook = source_notebook(module)
        chapter = "?"
        if notebook is not None:
            docname = notebook.relative_to(root).with_suffix("").as_posix()
            name = _notebook_title(notebook)
            chapter = f":doc:`{name} </{docname}>`" if docname in (found_docs or ()) else name
        names = list(getattr(module, "__all__", []))
        holds = ", ".join(f"``{n}``" for n in names[:6]) + (", ..." if len(names) > 6 else "")
        rows += [f"   * - ``{short}``", f"     - {chapter}",
                 f"     - {layers[rank[short]] if short in rank else '?'}", f"     - {holds}"]
    head = [".. list-table::", "   :header-rows: 1", "   :widths: 15 35 15 35", "",
            "   * - module", "     - built in", "     - layer", "     - holds"]
    return head + rows + [""]


class CourseModuleMap(SphinxDirective):
    """``.. course-llm-module-map::``: the table of `module_map_rst` (wrap it in
    ``{eval-rst}`` in a MyST page)."""

    def run(self):
        node = nodes.section()
        node.document = self.state.document
        rst = module_map_rst(self.env.srcdir, self.env.found_docs)
        nested_parse_with_titles(self.state, StringList(rst, source="course-llm-module-map"), node)
        return node.children


def chapter_times(root) -> list[tuple[str, list[tuple[str, str, float | None]]]]:
    """The book's parts in `_toc.yml` order, each with its chapters as (title, docname,
    seconds), a chapter's seconds including its sections', from `nbs/cpu_times.json` (which
    `make cpu-times` writes from `make test`'s measured run); None where nothing was measured."""
    from pathlib import Path

    import yaml

    sys_path = str(Path(__file__).resolve().parent)
    import sys

    if sys_path not in sys.path:
        sys.path.insert(0, sys_path)
    import cpu_times

    root = Path(root)
    seconds = cpu_times.load(root / "nbs" / "cpu_times.json")["seconds"]
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    parts = []
    for part in toc["parts"]:
        rows = []
        for chapter in part["chapters"]:
            files = [chapter["file"]] + [s["file"] for s in chapter.get("sections", [])]
            notebooks = [root / f"{f}.ipynb" for f in files]
            if not notebooks[0].exists():
                continue
            measured = [seconds.get(Path(f).name) for f in files]
            total = None if all(s is None for s in measured) else sum(s or 0 for s in measured)
            rows.append((_notebook_title(notebooks[0]), chapter["file"], total))
        if rows:
            parts.append((part["caption"], rows))
    return parts


def _minutes(seconds) -> str:
    return "not measured" if seconds is None else f"{max(1, round(seconds / 60))} min"


def cpu_times_rst(root, per_chapter: bool) -> list[str]:
    """A reST table of CPU minutes per part (or per chapter, with its part) on the machine of
    the last `make cpu-times`."""
    from pathlib import Path

    sys_path = str(Path(__file__).resolve().parent)
    import sys

    if sys_path not in sys.path:
        sys.path.insert(0, sys_path)
    import cpu_times

    record = cpu_times.load(Path(root) / "nbs" / "cpu_times.json")
    head = [".. list-table::", "   :header-rows: 1", ""]
    if per_chapter:
        head += ["   * - part", "     - chapter (with its sections)", "     - CPU time"]
    else:
        head += ["   * - part", "     - chapters", "     - CPU time"]
    rows = []
    for part, chapters in chapter_times(root):
        if per_chapter:
            for title, doc, secs in chapters:
                rows += [f"   * - {part}", f"     - :doc:`{title} </{doc}>`",
                         f"     - {_minutes(secs)}"]
        else:
            measured = [s for _, _, s in chapters if s is not None]
            rows += [f"   * - {part}", f"     - {len(chapters)}",
                     f"     - {_minutes(sum(measured) if measured else None)}"]
    note = ("No run has been measured yet (`make test`, then `make cpu-times`)."
            if not record["seconds"] else
            f"Measured by `make test` on {record['date']} on a {record['cores']}-core machine "
            "(each chapter executed on one core, two at a time).")
    return head + rows + ["", note, ""]


class CourseCpuTimes(SphinxDirective):
    """``.. course-llm-cpu-times:: [chapters]``: CPU minutes per part, or per chapter with
    the argument ``chapters`` (wrap it in ``{eval-rst}`` in a MyST page)."""

    optional_arguments = 1

    def run(self):
        node = nodes.section()
        node.document = self.state.document
        rst = cpu_times_rst(self.env.srcdir, per_chapter=bool(self.arguments))
        nested_parse_with_titles(self.state, StringList(rst, source="course-llm-cpu-times"), node)
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


def _drop_widget_scripts(app, doctree):
    """myst-nb adds ipywidgets' state and its CDN scripts to a page whose executed notebook
    (possibly from an old execution cache) holds widgets: drop them, the book is offline."""
    try:
        from myst_nb.sphinx_ import NbMetadataCollector

        js_files = NbMetadataCollector.get_js_files(app.env, app.env.docname)
    except (ImportError, AttributeError, KeyError):
        return
    for key in [k for k in js_files if k.startswith("ipywidgets")]:
        del js_files[key]


_EXTERNAL = re.compile(r"^\s*(https?:)?//", re.IGNORECASE)
# (tag, attribute) pairs whose URL the browser fetches by itself when the page loads
_FETCHED = {("script", "src"), ("img", "src"), ("img", "srcset"), ("iframe", "src"),
            ("source", "src"), ("source", "srcset"), ("video", "src"), ("video", "poster"),
            ("audio", "src"), ("embed", "src"), ("object", "data"), ("input", "src"),
            ("track", "src")}
_LINK_FETCHED = {"stylesheet", "preload", "modulepreload", "prefetch", "icon", "shortcut",
                 "apple-touch-icon", "manifest", "dns-prefetch", "preconnect"}
_CSS_URL = re.compile(r"(url\(|@import)\s*['\"]?\s*(https?:)?//", re.IGNORECASE)
_WIDGET_MARKS = ("application/vnd.jupyter.widget-state+json", WIDGET_VIEW, "require.min.js",
                 "@jupyter-widgets")


def offline_problems(html: str) -> list[str]:
    """What in the HTML page `html` would make a browser fetch something from another machine:
    scripts, styles, images, frames and media with an ``http(s)://`` or ``//`` address, CSS
    ``url(...)``/``@import`` of one, and the traces of ipywidgets (widget state or views,
    require.js). Links a reader may follow (``<a href>``) are fine.

    Example:
        >>> offline_problems('<a href="https://arxiv.org">paper</a><img src="fig.png">')
        []
        >>> offline_problems('<script src="https://cdn.example/x.js"></script>')
        ['<script src="https://cdn.example/x.js">']
    """
    from html.parser import HTMLParser

    problems: list[str] = []

    class Scan(HTMLParser):
        def handle_starttag(self, tag, attrs):
            a = {k: (v or "") for k, v in attrs}
            for name, value in a.items():
                fetched = (tag, name) in _FETCHED or (
                    tag == "link" and name == "href"
                    and _LINK_FETCHED & set(a.get("rel", "").lower().split()))
                if fetched and _EXTERNAL.match(value):
                    problems.append(f'<{tag} {name}="{value}">')
            if _CSS_URL.search(a.get("style", "")):
                problems.append(f"<{tag} style> loads an external url")

        def handle_data(self, data):
            if self.lasttag == "style" and _CSS_URL.search(data):
                problems.append("<style> loads an external url")

    Scan(convert_charrefs=True).feed(html)
    problems += [f"ipywidgets trace {mark!r}" for mark in _WIDGET_MARKS if mark in html]
    return problems


_MACHINE_PATH = re.compile(
    r"(?<![\w.:/~-])/(?:tmp|var/tmp|private/var/folders|home|Users|work|mnt|scratch)"
    r"(?:/[\w.-]+)+"
)


def machine_paths(text: str, roots=()) -> list[str]:
    """Absolute paths of a build machine that `text` holds: any of the folders in `roots`
    (the checkout, the interpreter's prefix, the home folder), and anything under the usual
    machine-specific roots (``/tmp``, ``/var/tmp``, ``/home``, ``/Users``, ``/work``, ...).
    A shipped file, a built page or a cached output must hold none: the course does not depend
    on where the checkout lives, and it does not show it. Relative paths and URLs are fine.

    Example:
        >>> machine_paths('saved to "/tmp/tmpab12/ckpt.pt"; see https://x.org/home/a')
        ['/tmp/tmpab12/ckpt.pt']
        >>> machine_paths("cwd /srv/course/nbs", roots=["/srv/course"])
        ['/srv/course']
    """
    found = []
    for root in roots:
        root = str(root).rstrip("/")
        if root.count("/") >= 2 or (root.startswith("/") and len(root) > 4):
            if root in text and root not in found:
                found.append(root)
    found += [m for m in _MACHINE_PATH.findall(text) if m not in found]
    return found


def this_machine_roots(root) -> list[str]:
    """The folders of this machine whose names must not reach a shipped file or a page: the
    checkout `root` (as given and resolved), the interpreter's prefixes and the home folder."""
    import sys
    from pathlib import Path

    root = Path(root)
    roots = {str(root), str(root.resolve()), sys.prefix, sys.base_prefix, str(Path.home())}
    return sorted(r for r in roots if r.startswith("/") and r not in ("/usr", "/usr/local"))


def setup(app):
    quiet_kernels()
    app.connect("source-read", _on_source_read)
    app.connect("doctree-read", _drop_widget_scripts)
    app.add_directive("course-llm-api", CourseApi)
    app.add_directive("course-llm-module-map", CourseModuleMap)
    app.add_directive("course-llm-cpu-times", CourseCpuTimes)
    app.connect("missing-reference", _resolve_course_reference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
