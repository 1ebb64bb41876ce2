"""Grade every planted bug and every reference solution under many seeds (not part of `make test`).

`make test` grades each planted bug under three fresh seeds and each reference under two, so a
check that separates a bug from the reference on most inputs but not all (two known mistakes
that agree on one draw, a softmax so sharp that a wrong mask hides nothing) fails CI once in a
few hundred runs. This sweep finds such checks before CI does:

    .venv/bin/python tests/seed_sweep.py 150          # 150 seeds per file, about 6 minutes
    .venv/bin/python tests/seed_sweep.py 300 02_bpe   # only files whose name contains 02_bpe

It prints each seed whose report breaks the file's declarations (`# expect-fail:` and
`# expect-hint:` for a planted bug, full marks for a reference) and exits 1 if there was one.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from grading_support import FIXTURES, FOLDERS, assert_report_of_bug, grade_trusted  # noqa: E402


def main(n_seeds: int, pattern: str = "", seed: int = 0) -> int:
    rng = random.Random(seed)
    bugs = sorted(p for p in FIXTURES.glob("*_bug_*.py") if pattern in p.stem)
    references = sorted(p for solutions, _ in FOLDERS for p in solutions.glob("*.ipynb")
                        if pattern in p.stem)
    broken = 0
    for path in bugs + references:
        for report in grade_trusted([path], rng.sample(range(2**31), n_seeds))[0]:
            try:
                if path in bugs:
                    assert_report_of_bug(path, report)
                else:
                    assert report.score == report.max_score, report.table()
            except AssertionError as error:
                broken += 1
                print(f"{path.name}, seed {report.seed}:\n{error}\n", flush=True)
    print(f"{len(bugs)} planted bugs and {len(references)} references, {n_seeds} seeds each: "
          f"{broken} broken reports")
    return 1 if broken else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    sys.exit(main(int(args[0]) if args else 50, args[1] if len(args) > 1 else ""))
