"""Count the code a reader sees on each chapter page of the book (issue 18's measure).

A code cell's lines are *visible* unless the book removes the cell or its input, or folds its input
behind a "show code" toggle (`hide-input`), after `_ext/course_build.render_notebook` has mapped the
nbdev directives to tags, exactly as the book build does. Blank lines are not counted.

    python benchmarks/visible_code.py            # table per chapter, then the totals
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
from course_build import render_notebook  # noqa: E402

HIDDEN = {"remove-cell", "remove-input", "hide-input", "hide-cell"}


def chapter_files() -> list[Path]:
    """The notebooks the student book renders, in the order of _toc.yml."""
    import yaml
    from book_cache import toc_files

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [ROOT / (name + ".ipynb") for name in toc_files(toc) if name != toc["root"]]
    return [p for p in files if p.exists()]


def count(path: Path) -> tuple[int, int, int]:
    """(visible code lines, folded code lines, longest visible cell) of one notebook."""
    nb = render_notebook(json.loads(path.read_text()))
    visible = folded = longest = 0
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        n = sum(1 for line in src.splitlines() if line.strip())
        tags = set(cell.get("metadata", {}).get("tags", []))
        if "remove-cell" in tags or "remove-input" in tags:
            continue
        if tags & HIDDEN:
            folded += n
        else:
            visible += n
            longest = max(longest, n)
    return visible, folded, longest


if __name__ == "__main__":
    rows = [(p.stem, *count(p)) for p in chapter_files()]
    print(f"{'page':28} {'visible':>8} {'folded':>8} {'longest':>8}")
    for name, v, f, longest in rows:
        print(f"{name:28} {v:8d} {f:8d} {longest:8d}")
    print(f"{'total':28} {sum(r[1] for r in rows):8d} {sum(r[2] for r in rows):8d} "
          f"{max(r[3] for r in rows):8d}")
    print(f"median visible lines per page: {statistics.median(r[1] for r in rows):.0f}; "
          f"pages with a visible cell over 30 lines: {sum(r[3] > 30 for r in rows)}")
