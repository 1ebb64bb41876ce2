"""Tests of the grader (course_llm.grading*, course_llm.grading.cli): the command line, folder
mode, the formats, the in-process check, in-place writes, decoding and stripping.

The exercises against their oracles are in tests/test_grading_references.py and
tests/test_grading_bugs.py, the sandbox's attacks in tests/test_grading_sandbox.py (split by
theme so that the test command's two workers share them).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from course_llm.grading.cli import main, make_student, strip_solutions
from course_llm.grading import GradingError, check, get_exercise
from course_llm.grading.runner import grade_file, grade_path, read_submission
from course_llm.grading.isolation import Limits, sandbox_mode, strip_definitions
from course_llm.grading.processes import PidsCgroup
from course_llm.grading.formats import gradescope_results
from course_llm.grading.transport import decode_result, dump_plain
from course_llm.grading.sandbox import printable
from course_llm.grading.registry import Exercise
from course_llm.grading.core import run_checks
from course_llm.grading.assertions import expect

from grading_support import EXERCISES, FAST, FIXTURES, NGRAM_MAX, ROOT, cli, submission
from grading_support import student as student_notebook

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
        student = "".join(src for _, src in read_submission(student_notebook(name)))
        assert "BEGIN SOLUTION" not in student and "REFERENCE ONLY" not in student
        assert "raise NotImplementedError" in student and "Example:" in student
        for function in get_exercise(name).functions:
            assert f"def {function}(" in student


def test_strip_solutions_rejects_unbalanced_markers():
    with pytest.raises(ValueError, match="never closed"):
        strip_solutions("# BEGIN SOLUTION\nx = 1\n")
    with pytest.raises(ValueError, match="without a matching BEGIN"):
        strip_solutions("x = 1\n# END SOLUTION\n")


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
    result = cli(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("course-llm: error:"), result.stderr
    assert {"missing": "no such file", "invalid_json": "not a valid notebook",
            "unknown_exercise": "unknown exercise '99_nothing'", "unnamed_py": "--exercise"}[case] in lines[0]


def test_list_names_every_exercise():
    result = cli("list")
    assert result.returncode == 0
    for name in EXERCISES:
        assert name in result.stdout


def test_self_check_in_process():
    from collections import Counter

    def count_ngrams_and_contexts(sequences, n):
        counts, contexts = Counter(), Counter()
        for s in sequences:
            padded = ["<BOS>"] * (n - 1) + list(s) + ["<EOS>"]
            counts.update(tuple(padded[i:i + n]) for i in range(len(padded) - n + 1))
            contexts.update(tuple(padded[i:i + n - 1]) for i in range(len(padded) - n + 1))
        return counts, contexts

    good = check("01_ngram_counts", {"count_ngrams_and_contexts": count_ngrams_and_contexts}, quiet=True)
    assert good.score == good.max_score

    def slow(sequences, n):
        while True:
            pass

    start = time.monotonic()
    bad = check("01_ngram_counts", {"count_ngrams_and_contexts": slow}, timeout=0.2, quiet=True)
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
    key = "buf"  # the state comes back under the parameter's name

    @ex.check()
    def returns(student, rng):
        expect(student.fill(torch.zeros(4), 2, []) == 2, "wrong return value")

    @ex.check()
    def buffer_written(student, rng):
        buf = torch.zeros(4)
        student.fill(buf, 3, [])
        got = student.written.get(key)
        expect(got is not None and got.tolist() == [7.0, 7.0, 7.0, 0.0], f"buf is {got}")
        # the state comes back as a value: the check's own tensor is never written
        expect(buf.tolist() == [0.0] * 4, "the grader wrote into the check's own tensor")

    @ex.check()
    def keyword_written(student, rng):
        buf = torch.zeros(4)
        student.fill(n=1, buf=buf, extra=[])
        got = student.written.get(key)
        expect(got is not None and got.tolist() == [7.0, 0.0, 0.0, 0.0], f"buf is {got}")
        expect(buf.tolist() == [0.0] * 4, "the grader wrote into the check's own tensor")

    return ex


@pytest.mark.parametrize("backend", ["local", "worker"])
@pytest.mark.parametrize("mutates", [("buf",), (0,)], ids=["by_name", "by_position"])
def test_mutates_declared_arguments_come_back_as_values(backend, mutates):
    from course_llm.grading.core import LocalBackend, run_checks
    from course_llm.grading.worker import WorkerBackend

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


# ---------------------------------------------------------------------------------------------
# New guarantees: bounded decoding, stripping, limits, formats, hidden checks, the autograder.

def test_decode_refuses_pickles_depth_and_junk():
    from course_llm.grading.transport import MAGIC, ReplyRefused

    bomb = {}
    for _ in range(60):
        bomb = {"a": bomb, "b": bomb}
    import pickle
    start = time.monotonic()
    deep = MAGIC + (10000).to_bytes(8, "big") + b"[" * 5000 + b"]" * 5000
    for forged in (pickle.dumps(bomb), deep, b"junk", 5):
        with pytest.raises(ReplyRefused):
            decode_result(forged)
    assert time.monotonic() - start < 2
    assert decode_result(dump_plain(["x", "x", {"k": ("x", "x")}])) == ["x", "x", {"k": ("x", "x")}]


def test_printable_escapes_controls():
    assert printable("a\x1b[2Jb\nc\r") == "a\\x1b[2Jb\\nc\\r"
    assert printable("a\nb\tc", keep_newlines=True) == "a\nb\tc"


def test_strip_definitions_keeps_the_rest_of_the_module():
    src = "X = 1\n\ndef f(a):\n    '''Doc.'''\n    return a + X\n\ndef g(a): return a\n"
    space = {}
    exec(strip_definitions(src, {"f", "g"}, "off"), space)
    assert space["X"] == 1 and space["f"].__doc__ == "Doc."
    for fn in (space["f"], space["g"]):
        with pytest.raises(RuntimeError, match="off"):
            fn(1)


def test_bad_sandbox_options_are_rejected(tmp_path):
    with pytest.raises(ValueError, match="memory_mb"):
        Limits(memory_mb=0)
    with pytest.raises(TypeError):
        Limits(file_mb=1.5)
    with pytest.raises(ValueError, match="sandbox"):
        sandbox_mode("docker")
    with pytest.raises(ValueError):
        PidsCgroup(0)
    ref = ROOT / "exercises" / "solutions" / "01_ngram_counts.ipynb"
    assert main(["grade", str(ref), "--memory", "10"]) == 2
    assert main(["grade", str(ref), "--require", "99_nothing"]) == 2
    with pytest.raises(SystemExit):
        main(["grade", str(ref), "--sandbox", "docker"])


def test_fallback_mode_says_so_once_per_run(tmp_path):
    # once per grading run, not once per worker (every run: tests/test_grading_paths.py)
    path = submission(tmp_path, "ok.py", "")
    result = subprocess.run([sys.executable, "-c", "import sys, shutil; shutil.which = lambda *a, **k: None\n"
                             "from course_llm.grading.cli import main; sys.exit(main())", "grade", str(tmp_path),
                             "--quiet"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("bubblewrap (bwrap) not found") == 1
    assert f"{NGRAM_MAX}/{NGRAM_MAX}" in result.stdout


def test_csv_gradebook_and_gradescope_results(tmp_path):
    folder = tmp_path / "class"
    for student in ("ann", "ben"):
        (folder / student).mkdir(parents=True)
        shutil.copy(ROOT / "exercises" / "solutions" / "01_ngram_counts.ipynb", folder / student)
    shutil.copy(ROOT / "exercises" / "01_perplexity.ipynb", folder / "ben")
    sheet, gs = tmp_path / "book.csv", tmp_path / "results.json"
    assert main(["grade", str(folder), "--csv", str(sheet), "--gradescope", str(gs), "--quiet", "--jobs", "2"]) == 0
    rows = sheet.read_text().splitlines()
    assert rows[0] == "student,01_ngram_counts,01_perplexity,total"
    assert rows[1] == f"ann,{NGRAM_MAX},,{NGRAM_MAX}" and rows[2] == f"ben,{NGRAM_MAX},0,{NGRAM_MAX}"
    results = json.loads(gs.read_text())
    # results.json is one student's: an exercise handed in twice counts once, the others named
    n_checks = len(get_exercise("01_ngram_counts").checks) + len(get_exercise("01_perplexity").checks)
    assert len(results["tests"]) == n_checks and results["score"] == NGRAM_MAX
    assert "01_ngram_counts: counted" in results["output"] and "not counted" in results["output"]
    for t in results["tests"]:
        assert {"name", "score", "max_score", "output", "visibility"} <= set(t)
        assert (t["score"] == t["max_score"]) == (t["output"] == "")


def test_hidden_checks_run_when_graded_but_not_in_the_notebook(capsys):
    ex = get_exercise("11_bm25")
    hidden = [c for c in ex.checks if c.visibility == "hidden"]
    assert hidden, "11_bm25 declares a hidden check"
    ref = ROOT / "exercises" / "solutions" / "11_bm25.ipynb"
    graded = grade_file(ref, seed=1, **FAST)
    assert {c.name for c in hidden} <= {r.name for r in graded.results}
    assert graded.score == graded.max_score == ex.max_score
    results = gradescope_results([graded])
    assert {t["visibility"] for t in results["tests"] if t["name"].endswith(hidden[0].name)} == {"hidden"}
    space = {}
    for _, source in read_submission(ref):
        if "check(" not in source:
            exec(source, space)
    report = check("11_bm25", namespace=space, seed=1)
    printed = capsys.readouterr().out
    assert hidden[0].name not in printed and hidden[0].name not in {r.name for r in report.results}
    assert report.max_score == ex.max_score - sum(c.points for c in hidden)
    assert "hidden check" in printed


def test_gradescope_autograder_zip_runs_against_a_fake_autograder_tree(tmp_path):
    import zipfile

    zip_path = tmp_path / "autograder.zip"
    assert main(["gradescope-autograder", "01_ngram_counts", "01_perplexity", "-o", str(zip_path)]) == 0
    root = tmp_path / "autograder"
    with zipfile.ZipFile(zip_path) as z:
        names = z.namelist()
        z.extractall(root / "source")
    assert {"setup.sh", "run_autograder", "exercises.txt"} <= set(names)
    wheel = next(n for n in names if n.startswith("wheels/") and n.endswith("-py3-none-any.whl"))
    with zipfile.ZipFile(root / "source" / wheel) as w:
        assert "course_llm/grading/cli.py" in w.namelist()
        assert not any("solutions" in n for n in w.namelist())
    target = tmp_path / "installed"   # the wheel installs offline (into a folder, not the venv)
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--target",
                          str(target), str(root / "source" / wheel)], capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stderr
    assert (target / "course_llm" / "grading" / "runner.py").is_file()
    (root / "submission").mkdir()
    shutil.copy(ROOT / "exercises" / "solutions" / "01_ngram_counts.ipynb", root / "submission" / "mine.ipynb")
    env = dict(__import__("os").environ, AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable)
    run = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == NGRAM_MAX     # 01_perplexity was not submitted: its checks score 0
    missing = [t for t in results["tests"] if t["name"].startswith("01_perplexity")]
    assert missing and all(t["score"] == 0 for t in missing)


class _Answers:
    """A backend that answers every call with 1 and records the time limit each call was given."""

    def __init__(self):
        self.limits = []

    def call(self, name, args, kwargs, timeout):
        self.limits.append(timeout)
        return 1


def _slow_exercise(**limits) -> Exercise:
    ex = Exercise("00_needs_time", ["f"], **limits)

    @ex.check(points=1, hint="return 1")
    def returns_one(student, rng):
        expect(student.f() == 1, "f() should return 1")

    return ex


def test_an_exercise_that_needs_more_time_gets_it_and_no_other_does():
    plain, backend = _slow_exercise(), _Answers()
    assert run_checks(plain, backend, timeout=0.5, total_timeout=1.0).score == 1
    assert 0 < backend.limits[0] <= 0.5
    project, backend = _slow_exercise(time_limit=30, total_time_limit=100), _Answers()
    assert run_checks(project, backend, timeout=0.5, total_timeout=1.0).score == 1
    assert 29 < backend.limits[0] <= 30            # the exercise's own limit, not the default's
    # a larger limit from the grader's caller still wins
    backend = _Answers()
    run_checks(project, backend, timeout=60, total_timeout=600)
    assert 59 < backend.limits[0] <= 60


@pytest.mark.parametrize("bad", [0, -1, "5", True, float("nan")])
def test_an_exercise_time_limit_must_be_a_positive_number(bad):
    with pytest.raises(ValueError, match="time_limit"):
        Exercise("00_bad", ["f"], time_limit=bad)
    with pytest.raises(ValueError, match="total_time_limit"):
        Exercise("00_bad", ["f"], total_time_limit=bad)


def test_a_hidden_check_may_require_a_visible_one_and_not_the_reverse():
    ex = Exercise("00_order", ["f"])

    @ex.check(points=1)
    def visible(student, rng):
        expect(student.f() == 2, "f() should return 2")

    @ex.check(points=1, visibility="hidden", requires=("visible",))
    def held_out(student, rng):
        expect(student.f() == 2, "f() should return 2")

    report = run_checks(ex, _Answers(), timeout=1.0, total_timeout=5.0)
    assert [r.message for r in report.results] == ["f() should return 2", "skipped: fix visible first"]
    with pytest.raises(ValueError, match="cannot require the hidden"):
        @ex.check(points=1, requires=("held_out",))
        def late(student, rng):
            pass
