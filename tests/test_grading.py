"""Tests of the grader (course_llm.grading*, course_llm.grading.cli) and of every registered exercise.

The oracles here are the exercises' own reference solutions (full marks), their generated stubs
(zero), planted-bug copies in tests/grading_fixtures/ that declare which checks they must fail,
and hostile submissions that declare the message they must produce.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from course_llm.grading.cli import main, make_student, strip_solutions
from course_llm.grading import GradingError, check, exercises, get_exercise
from course_llm.grading.runner import grade_file, grade_path, read_submission

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "grading_fixtures"
EXERCISES = sorted(exercises())
# Correct and planted-bug submissions never hang, so a generous limit costs nothing and keeps
# the verdicts independent of how loaded the machine is (2 s flaked once at load 8 on 2 cores).
FAST = dict(timeout=10.0, total_timeout=120.0)


def _header(path: Path, key: str) -> str:
    found = re.search(rf"^# {key}: (.*)$", path.read_text(), re.M)
    assert found, f"{path.name} has no '# {key}:' line"
    return found.group(1).strip()


def _grade_all(paths, **options):
    """Grade several files at once (each in its own worker), returning reports in order."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda p: grade_file(p, **{**FAST, **options}), paths))


def test_chapter_01_exercises_are_registered():
    assert {"01_ngram_counts", "01_perplexity"} <= set(EXERCISES)


def test_every_exercise_has_a_reference_a_student_notebook_and_planted_bugs():
    for name in EXERCISES:
        assert (ROOT / "exercises" / "solutions" / f"{name}.ipynb").is_file(), name
        assert (ROOT / "exercises" / f"{name}.ipynb").is_file(), name
        assert list(FIXTURES.glob(f"{name}_bug_*.py")), f"no planted bug for {name}"


def test_references_score_full_marks_and_stubs_zero():
    refs = [ROOT / "exercises" / "solutions" / f"{n}.ipynb" for n in EXERCISES]
    stubs = [ROOT / "exercises" / f"{n}.ipynb" for n in EXERCISES]
    reports = _grade_all(refs * 2 + stubs, seed=None)
    for report in reports[: 2 * len(refs)]:
        assert report.score == report.max_score > 0, report.table()
    for report in reports[2 * len(refs):]:
        assert report.score == 0, report.table()
        assert all("NotImplementedError" in r.message for r in report.results), report.table()


@pytest.mark.parametrize("bug", sorted(FIXTURES.glob("*_bug_*.py")), ids=lambda p: p.stem)
def test_planted_bug_loses_exactly_its_checks(bug):
    expected_failures = set(_header(bug, "expect-fail").split())
    exercise = get_exercise(_header(bug, "course-llm exercise"))
    assert expected_failures <= {c.name for c in exercise.checks}
    for report in _grade_all([bug] * 3):  # three fresh seeds
        failed = {r.name for r in report.results if not r.passed}
        assert failed == expected_failures, f"seed {report.seed}:\n{report.table()}"
        lost = sum(c.points for c in exercise.checks if c.name in expected_failures)
        assert report.score == exercise.max_score - lost


def test_student_notebooks_match_their_references(tmp_path):
    assert make_student(ROOT / "exercises" / "solutions", ROOT / "exercises", check_only=True) == []
    # and --check notices a stale student notebook
    shutil.copytree(ROOT / "exercises", tmp_path / "exercises")
    (tmp_path / "exercises" / "01_perplexity.ipynb").write_text("{}")
    code = main(["make-student", "--check", "--solutions", str(tmp_path / "exercises" / "solutions"),
                 "--out", str(tmp_path / "exercises")])
    assert code == 1


def test_student_notebooks_keep_signature_docstring_and_example():
    for name in EXERCISES:
        student = "".join(src for _, src in read_submission(ROOT / "exercises" / f"{name}.ipynb"))
        assert "BEGIN SOLUTION" not in student and "REFERENCE ONLY" not in student
        assert "raise NotImplementedError" in student and "Example:" in student
        for function in get_exercise(name).functions:
            assert f"def {function}(" in student


def test_strip_solutions_rejects_unbalanced_markers():
    with pytest.raises(ValueError, match="never closed"):
        strip_solutions("# BEGIN SOLUTION\nx = 1\n")
    with pytest.raises(ValueError, match="without a matching BEGIN"):
        strip_solutions("x = 1\n# END SOLUTION\n")


HOSTILE = sorted((FIXTURES / "hostile").glob("*.py"))


def test_hostile_submissions_fail_their_checks_and_grading_goes_on(tmp_path):
    out = tmp_path / "hostile.json"
    start = time.monotonic()
    code = main(["grade", str(FIXTURES / "hostile"), "--timeout", "1", "--total-timeout", "20",
                 "--jobs", str(len(HOSTILE)), "--json", str(out), "--quiet"])
    elapsed = time.monotonic() - start
    assert code == 0
    data = json.loads(out.read_text())
    assert len(data["submissions"]) == len(HOSTILE)
    for sub in data["submissions"]:
        expected = _header(Path(sub["submission"]), "expect-message")
        assert sub["score"] == 0 and sub["max_score"] == get_exercise("01_ngram_counts").max_score
        assert expected in sub["checks"][0]["message"], (sub["submission"], sub["checks"][0]["message"])
        assert all(not c["passed"] and c["message"] for c in sub["checks"])
        assert sub["elapsed"] < 20 + 5, sub  # within the overall limit (plus one restart)
    assert elapsed < 40


def test_top_level_infinite_loop_fails_every_check_within_the_overall_limit():
    start = time.monotonic()
    report = grade_file(FIXTURES / "loops_at_load.py", timeout=1.0, total_timeout=3.0)
    assert time.monotonic() - start < 3.0 + 5
    assert report.score == 0
    assert all("did not finish loading within 3 s" in r.message for r in report.results), report.table()


def test_folder_mode_three_submissions(tmp_path, capsys):
    folder = tmp_path / "class"
    (folder / "alice").mkdir(parents=True)
    (folder / "bob").mkdir()
    shutil.copy(ROOT / "exercises" / "solutions" / "01_ngram_counts.ipynb", folder / "alice")
    shutil.copy(ROOT / "exercises" / "01_ngram_counts.ipynb", folder / "bob")
    shutil.copy(FIXTURES / "01_ngram_counts_bug_no_eos.py", folder / "carol_01_ngram_counts.py")
    (folder / ".ipynb_checkpoints").mkdir()
    (folder / "notes.txt").write_text("not a submission")
    out = tmp_path / "grades.json"
    assert main(["grade", str(folder), "--json", str(out), "--jobs", "3", "--seed", "7"]) == 0
    summary = capsys.readouterr().out.split("submission ")[-1]
    rows = [line for line in summary.splitlines() if "01_ngram_counts" in line]
    assert len(rows) == 3
    data = json.loads(out.read_text())
    max_score = get_exercise("01_ngram_counts").max_score
    scores = {Path(s["submission"]).parent.name if "carol" not in s["submission"] else "carol": s["score"]
              for s in data["submissions"]}
    assert scores["alice"] == max_score and scores["bob"] == 0 and 0 < scores["carol"] < max_score
    assert data["score"] == sum(scores.values()) and data["max_score"] == 3 * max_score
    assert data["summary"]["submissions"] == 3
    assert data["summary"]["by_exercise"]["01_ngram_counts"]["submissions"] == 3
    for sub in data["submissions"]:
        assert sub["seed"] == 7 and len(sub["checks"]) == len(get_exercise("01_ngram_counts").checks)
        assert {"name", "points", "max_points", "passed", "message", "hint"} <= set(sub["checks"][0])


def test_single_file_json(tmp_path):
    out = tmp_path / "one.json"
    ref = ROOT / "exercises" / "solutions" / "01_perplexity.ipynb"
    assert main(["grade", str(ref), "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["score"] == data["max_score"] == get_exercise("01_perplexity").max_score
    assert len(data["checks"]) == len(get_exercise("01_perplexity").checks)


def _cli(*args, cwd=ROOT):
    exe = Path(sys.executable).parent / "course-llm"
    command = [str(exe)] if exe.exists() else [sys.executable, "-c", "from course_llm.grading.cli import main; "
                                                                       "raise SystemExit(main())"]
    return subprocess.run(command + list(args), capture_output=True, text=True, cwd=cwd, timeout=60)


@pytest.mark.parametrize("case", ["missing", "invalid_json", "unknown_exercise", "unnamed_py"])
def test_bad_input_gives_one_line_error_and_nonzero_exit(case, tmp_path):
    bad = tmp_path / "broken.ipynb"
    bad.write_text("{ this is not json")
    plain = tmp_path / "answer.py"
    plain.write_text("def f(): pass\n")
    args = {"missing": ["grade", str(tmp_path / "nope.ipynb")],
            "invalid_json": ["grade", str(bad)],
            "unknown_exercise": ["grade", str(plain), "--exercise", "99_nothing"],
            "unnamed_py": ["grade", str(plain)]}[case]
    result = _cli(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("course-llm: error:"), result.stderr
    assert {"missing": "no such file", "invalid_json": "not a valid notebook",
            "unknown_exercise": "unknown exercise '99_nothing'", "unnamed_py": "--exercise"}[case] in lines[0]


def test_list_names_every_exercise():
    result = _cli("list")
    assert result.returncode == 0
    for name in EXERCISES:
        assert name in result.stdout


def test_self_check_in_process():
    from collections import Counter

    def count_ngrams(sequences, n):
        counts = Counter()
        for s in sequences:
            padded = ["<BOS>"] * (n - 1) + list(s) + ["<EOS>"]
            counts.update(tuple(padded[i:i + n]) for i in range(len(padded) - n + 1))
        return counts

    good = check("01_ngram_counts", {"count_ngrams": count_ngrams}, quiet=True)
    assert good.score == good.max_score

    def slow(sequences, n):
        while True:
            pass

    start = time.monotonic()
    bad = check("01_ngram_counts", {"count_ngrams": slow}, timeout=0.2, quiet=True)
    assert bad.score == 0 and "did not return within" in bad.results[0].message
    assert time.monotonic() - start < 10
    missing = check("01_perplexity", {}, quiet=True)
    assert missing.score == 0 and "not defined" in missing.results[0].message


def test_grading_errors():
    with pytest.raises(GradingError, match="unknown exercise"):
        get_exercise("00_nope")
    with pytest.raises(GradingError, match="no such file or folder"):
        grade_path("/nonexistent/path")


# Exercise(..., mutates=...): arguments a function is expected to write in place (08_kv_append).
_FILL_SOURCES = {
    "writes": "def fill(buf, n, extra):\n    buf[:n] = 7\n    return n\n",
    "copies": "def fill(buf, n, extra):\n    out = buf.clone()\n    out[:n] = 7\n    return n\n",
    "writes_undeclared": "def fill(buf, n, extra):\n    buf[:n] = 7\n    extra.append(1)\n    return n\n",
}


def _fill_exercise(mutates):
    import torch

    from course_llm.grading import Exercise, expect

    ex = Exercise("00_fill", ["fill"], mutates=mutates)

    @ex.check()
    def returns(student, rng):
        expect(student.fill(torch.zeros(4), 2, []) == 2, "wrong return value")

    @ex.check()
    def buffer_written(student, rng):
        buf = torch.zeros(4)
        student.fill(buf, 3, [])
        expect(buf.tolist() == [7.0, 7.0, 7.0, 0.0], f"buf is {buf.tolist()}")

    @ex.check()
    def keyword_written(student, rng):
        buf = torch.zeros(4)
        student.fill(n=1, buf=buf, extra=[])
        expect(buf.tolist() == [7.0, 0.0, 0.0, 0.0], f"buf is {buf.tolist()}")

    return ex


@pytest.mark.parametrize("backend", ["local", "worker"])
@pytest.mark.parametrize("mutates", [("buf",), (0,)], ids=["by_name", "by_position"])
def test_mutates_declared_arguments_are_sent_back(backend, mutates):
    from course_llm.grading.core import LocalBackend, run_checks
    from course_llm.grading.runner import WorkerBackend

    ex = _fill_exercise(mutates)
    failed = {}
    for kind, source in _FILL_SOURCES.items():
        if backend == "local":
            namespace = {}
            exec(source, namespace)
            be = LocalBackend(namespace, ex)
        else:
            be = WorkerBackend([("cell 1", source)], ex)
        try:
            report = run_checks(ex, be, seed=0, **FAST)
        finally:
            getattr(be, "close", lambda: None)()
        failed[kind] = {r.name for r in report.results if not r.passed}
        if kind == "writes_undeclared":
            assert all("changed its input in place: extra" in r.message for r in report.results), report.table()
    assert failed == {"writes": set(), "copies": {"buffer_written", "keyword_written"},
                      "writes_undeclared": {"returns", "buffer_written", "keyword_written"}}


def test_without_mutates_any_write_fails():
    from course_llm.grading.core import LocalBackend, run_checks

    ex = _fill_exercise(())
    namespace = {}
    exec(_FILL_SOURCES["writes"], namespace)
    report = run_checks(ex, LocalBackend(namespace, ex), seed=0, **FAST)
    assert report.score == 0 and all("changed its input in place: buf" in r.message for r in report.results)
