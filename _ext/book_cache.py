"""Which chapters of the book have no valid entry in its execution cache?

    python _ext/book_cache.py        # prints their paths, one per line (nothing when all are cached)

`make book` runs nbval on exactly these notebooks, two at a time (pytest-xdist), before the
Jupyter Book build. nbval's passing runs are stored in the cache by `conftest.py`, so the build
that follows executes nothing, and a book built after `make test` executes nothing at all.
The match is the one the build makes: the notebook after the book's render-time rewrite
(`course_build.render_notebook`), compared by jupyter-cache's hash of its code cells.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "_ext"))


def toc_files(toc: dict) -> list[str]:
    """Every `file:` entry of a Jupyter Book `_toc.yml` (root, chapters, sections), in order."""
    found = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                found.append(entry["file"])
            walk(entry.get("sections"))
            walk(entry.get("chapters"))

    walk(toc.get("parts"))
    walk(toc.get("chapters"))
    return found


def stale_notebooks(root: Path = ROOT) -> list[Path]:
    """The book's notebooks that the execution cache named in `_config.yml` cannot serve."""
    import nbformat
    import yaml
    from course_build import render_notebook
    from jupyter_cache import get_cache

    config = yaml.safe_load((root / "_config.yml").read_text())
    cache = get_cache(str(root / config["execute"]["cache"]))
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    stale = []
    for name in toc_files(toc):
        path = root / (name + ".ipynb")
        if not path.is_file():
            continue  # a Markdown page: nothing to execute
        nb = nbformat.from_dict(render_notebook(json.loads(path.read_text())))
        try:
            cache.match_cache_notebook(nb)
        except KeyError:
            stale.append(path)
    return stale


if __name__ == "__main__":
    for path in stale_notebooks():
        print(path.relative_to(ROOT))
