"""Shared helpers of the grader's tests (tests/test_grading*.py); not a test file itself.

The grader's tests are split by theme into several files so that the test command's two
pytest-xdist workers (``--dist loadfile``: one file runs on one worker) share them evenly.
"""

from __future__ import annotations

import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from course_llm.grading import exercises, get_exercise
from course_llm.grading.core import run_checks
from course_llm.grading.worker import WorkerBackend
from course_llm.grading.runner import exercise_for, read_submission
from course_llm.grading.inprocess import InProcessBackend

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "grading_fixtures"
EXERCISES = sorted(exercises())
# exercises/solutions/NAME.ipynb -> exercises/NAME.ipynb; the projects' pair mirrors it
FOLDERS = [(ROOT / "exercises" / "solutions", ROOT / "exercises"),
           (ROOT / "exercises" / "projects" / "solutions", ROOT / "exercises" / "projects")]


def reference(name: str) -> Path:
    """The reference notebook of exercise or project `name` (the first folder that has it)."""
    found = [s / f"{name}.ipynb" for s, _ in FOLDERS if (s / f"{name}.ipynb").is_file()]
    return found[0] if found else FOLDERS[0][0] / f"{name}.ipynb"


def student(name: str) -> Path:
    """The generated student notebook of exercise or project `name`, next to its reference's folder."""
    ref = reference(name)
    return dict(FOLDERS).get(ref.parent, FOLDERS[0][1]) / f"{name}.ipynb"
# Correct and planted-bug submissions never hang, so a generous limit costs nothing and keeps
# the verdicts independent of how loaded the machine is (2 s flaked once at load 8 on 2 cores).
FAST = dict(timeout=10.0, total_timeout=120.0)

REFERENCE = '''
from collections import Counter
from course_llm.ngram import BOS, EOS


def count_ngrams_and_contexts(sequences, n):
    ngrams, contexts = Counter(), Counter()
    for sequence in sequences:
        padded = [BOS] * (n - 1) + list(sequence) + [EOS]
        for i in range(len(padded) - n + 1):
            ngrams[tuple(padded[i:i + n])] += 1
            contexts[tuple(padded[i:i + n - 1])] += 1
    return ngrams, contexts
'''
NGRAM_MAX = get_exercise("01_ngram_counts").max_score


def header(path: Path, key: str) -> str:
    """The value of the ``# key: value`` line a fixture declares."""
    found = re.search(rf"^# {key}: (.*)$", path.read_text(), re.M)
    assert found, f"{path.name} has no '# {key}:' line"
    return found.group(1).strip()


def grade_seeds(path: Path, seeds: list, sandboxed: bool = True, hidden: bool = True) -> list:
    """Grade `path` once per seed (None draws a fresh one), all in one worker.

    This is `grade_file` (same reading, exercise, worker and `run_checks`) without restarting
    the worker between seeds: starting a worker (a sandbox, Python, torch, the submission's
    cells) costs far more than the checks, and the checks of one report already share a worker.
    With ``sandboxed=False`` the worker's code runs in this process (`InProcessBackend`): for
    the course's own trusted files only, one at a time, from the main thread. With
    ``hidden=False`` only the visible checks run (a project's hidden ones train models again).
    """
    path = Path(path)
    cells = read_submission(path)
    ex = exercise_for(path, cells)
    module_name = "__main__" if path.suffix == ".ipynb" else "submission"
    if sandboxed:
        backend = WorkerBackend(cells, ex, module_name=module_name, load_timeout=FAST["total_timeout"],
                                files={path.name: path.read_bytes()})
    else:
        backend = InProcessBackend(cells, ex, module_name=module_name)
    try:
        return [run_checks(ex, backend, str(path), seed, **FAST, hidden=hidden) for seed in seeds]
    finally:
        backend.close()


def grade_many(paths: list, seeds: list) -> list:
    """`grade_seeds` over several files, four sandboxed workers at a time; one list of reports per file."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda p: grade_seeds(p, seeds), paths))


def grade_trusted(paths: list, seeds: list, hidden: bool = True) -> list:
    """`grade_seeds` over the course's own files (references, stubs, planted bugs) in this process,
    one after the other: no worker to start, the same loading, calls and `run_checks`."""
    return [grade_seeds(p, seeds, sandboxed=False, hidden=hidden) for p in paths]


def verdicts(report) -> list:
    """What a report says about each check: name, points earned, passed, message."""
    return [(r.name, r.points, r.passed, r.message) for r in report.results]


def submission(folder: Path, name: str, code: str, reference: bool = True) -> Path:
    """A .py submission of 01_ngram_counts: the reference (or nothing) followed by `code`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("# course-llm exercise: 01_ngram_counts\n" + (REFERENCE if reference else "") + code)
    return path


def cli(*args, cwd=ROOT):
    """Run the ``course-llm`` command in a fresh process."""
    exe = Path(sys.executable).parent / "course-llm"
    command = [str(exe)] if exe.exists() else [sys.executable, "-c", "from course_llm.grading.cli import main; "
                                                                       "raise SystemExit(main())"]
    return subprocess.run(command + list(args), capture_output=True, text=True, cwd=cwd, timeout=60)


def assert_bug_loses_exactly_its_checks(bug: Path, reports: list) -> None:
    """Three reports of `bug` under three different seeds, each as `assert_report_of_bug` wants."""
    assert len(reports) == 3 and len({r.seed for r in reports}) == 3
    for report in reports:
        assert_report_of_bug(bug, report)


def assert_report_of_bug(bug: Path, report) -> None:
    """The report fails exactly the checks the ``# expect-fail:`` line of `bug` names, and the first
    failing check (in the exercise's order, the one a student reads first) says what the
    ``# expect-hint:`` line names: its message or hint contains that phrase (ignoring case)."""
    expected_failures = set(header(bug, "expect-fail").split())
    hint = header(bug, "expect-hint").lower()
    exercise = get_exercise(header(bug, "course-llm exercise"))
    assert expected_failures <= {c.name for c in exercise.checks}
    failed = [r for r in report.results if not r.passed]
    assert {r.name for r in failed} == expected_failures, f"seed {report.seed}:\n{report.table()}"
    lost = sum(c.points for c in exercise.checks if c.name in expected_failures)
    assert report.score == exercise.max_score - lost
    first = failed[0]
    assert hint in f"{first.message}\n{first.hint}".lower(), (
        f"seed {report.seed}: the first failing check, {first.name}, does not say {hint!r}:\n"
        f"{report.table()}")


def selected(request, name: str) -> list:
    """The values of parameter `name` of this module's tests that pytest will run (after ``-k``),
    so that a module-scoped fixture grades only what is asked for."""
    # getattr: the session also holds nbval's notebook cells, which have no `module`.
    return [item.callspec.params[name] for item in request.session.items
            if getattr(item, "module", None) is request.module
            and name in getattr(getattr(item, "callspec", None), "params", {})]
