"""CPU time per chapter, from the nbval run of `make test` (build tooling, not the package).

`make test` writes pytest's JUnit report to `.cache/test-report.xml`. `make cpu-times` runs this
script on it: for every notebook in `nbs/` it adds up the execution time of its cells and writes
`nbs/cpu_times.json` (seconds per notebook, the machine's cores, the date of the run). The book
reads that file (`_ext/course_build.py`: the front page's and the syllabus's time columns), so
the times are measured, never typed in.
"""

from __future__ import annotations

import json
import os
import sys
import xml.etree.ElementTree as ET
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / ".cache" / "test-report.xml"
OUT = ROOT / "nbs" / "cpu_times.json"


def notebook_seconds(report: Path) -> dict[str, float]:
    """{notebook stem: seconds} summed over the notebook's cells in a JUnit report."""
    seconds: dict[str, float] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = case.get("classname") or ""  # nbval: "nbs.02_tokenization.ipynb"
        if not (name.startswith("nbs.") and name.endswith(".ipynb")) or name.count(".") != 2:
            continue  # unit tests, exercise solutions, the grader's notebooks
        stem = name[len("nbs."):-len(".ipynb")]
        seconds[stem] = seconds.get(stem, 0.0) + float(case.get("time") or 0.0)
    return seconds


def load(path: Path = OUT) -> dict:
    """The recorded times (``{"seconds": {...}, "cores": n, "date": ...}``), or an empty record."""
    if not path.exists():
        return {"seconds": {}, "cores": None, "date": None}
    return json.loads(path.read_text(encoding="utf-8"))


def main(argv=None) -> int:
    report = Path((argv or sys.argv[1:] or [REPORT])[0])
    if not report.exists():
        print(f"{report} does not exist: run `make test` first", file=sys.stderr)
        return 1
    seconds = notebook_seconds(report)
    if not seconds:
        print(f"{report} holds no notebook cells", file=sys.stderr)
        return 1
    record = {"seconds": {k: round(v, 1) for k, v in sorted(seconds.items())},
              "cores": os.cpu_count(), "date": date.today().isoformat()}
    OUT.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(seconds)} notebooks, "
          f"{sum(seconds.values()) / 60:.1f} min in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
