"""One home per name (issue #32): every public name is defined in the module that exports it, and
every import of a course_llm name names that module.

`course_llm.grading`'s package `__init__` is the one facade: students write
`from course_llm.grading import check`, and the API reference documents each of those names in
its own grading module.
"""
import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "course_llm"
FACADES = {"course_llm.grading"}


def _module_name(path):
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _defined(tree):
    """Names bound at the top level of a module by def, class or assignment (not by import)."""
    out = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Assign):
            out |= {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
    return out


def _all(tree):
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            return ast.literal_eval(node.value)
    return []


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if p.stem != "_modidx"}
TREES = {m: ast.parse(p.read_text(encoding="utf-8")) for m, p in MODULES.items()}
DEFINED = {m: _defined(t) for m, t in TREES.items()}


@pytest.mark.parametrize("module", [m for m in MODULES if m not in FACADES])
def test_every_name_in_all_is_defined_in_its_module(module):
    foreign = [n for n in _all(TREES[module]) if n not in DEFINED[module]]
    assert not foreign, f"{module}.__all__ lists names defined elsewhere (re-exports): {foreign}"


def _sources():
    """(place, code) for every Python source and notebook code cell that can import course_llm."""
    for folder in ("course_llm", "nbs", "tests", "exercises", "train", "benchmarks"):
        for p in sorted((ROOT / folder).rglob("*")):
            rel = p.relative_to(ROOT).as_posix()
            if p.suffix == ".py" and p.stem != "_modidx":
                yield rel, p.read_text(encoding="utf-8")
            elif p.suffix == ".ipynb":
                for i, cell in enumerate(json.loads(p.read_text(encoding="utf-8"))["cells"]):
                    if cell["cell_type"] == "code":
                        code = "".join(cell["source"])
                        # IPython magics and shell lines are not Python
                        code = re.sub(r"^\s*[%!].*$", "", code, flags=re.M)
                        yield f"{rel}#cell{i}", code


def _imports(code):
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("course_llm"):
            for a in node.names:
                yield node.lineno, node.module, a.name


def test_every_import_names_the_home_module():
    wrong = []
    for place, code in _sources():
        if place.startswith("course_llm/"):
            continue          # the generated modules import relatively; their notebooks are checked
        for line, module, name in _imports(code):
            if module in FACADES or module not in MODULES or f"{module}.{name}" in MODULES:
                continue
            if name not in DEFINED[module]:
                homes = [m for m, d in DEFINED.items() if name in d]
                wrong.append(f"{place}:{line}: from {module} import {name}  (its home: {homes})")
    assert not wrong, "imports from a module that does not define the name:\n" + "\n".join(wrong[:40])
