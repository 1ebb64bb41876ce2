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
from course_llm.grading.isolation import Limits, PidsCgroup, sandbox_mode, strip_definitions
from course_llm.grading.formats import gradebook_csv, gradescope_results
from course_llm.grading.sandbox import decode_result, dump_plain, printable

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
        # within the overall limit, plus the restarts (a sandboxed worker starts in 1-3 s here)
        assert sub["elapsed"] < 20 + 10, sub
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


# ---------------------------------------------------------------------------------------------
# The sandbox (issue 20): every attack of the table is a test, in both modes where the
# mode is meant to stop it (README: what each mode guarantees).

REFERENCE = '''
from collections import Counter
from course_llm.ngram import BOS, EOS


def count_ngrams(sequences, n):
    counts = Counter()
    for sequence in sequences:
        padded = [BOS] * (n - 1) + list(sequence) + [EOS]
        for i in range(len(padded) - n + 1):
            counts[tuple(padded[i:i + n])] += 1
    return counts
'''
NGRAM_MAX = get_exercise("01_ngram_counts").max_score
TINY = dict(timeout=5.0, total_timeout=60.0, limits=Limits(memory_mb=2048, file_mb=8))
HAS_BWRAP = sandbox_mode("auto") == "bwrap"
MODES = [pytest.param("bwrap", marks=pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap is not installed")),
         "rlimits"]
BWRAP_ONLY = pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap is not installed")


def _submission(folder: Path, name: str, code: str, reference: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("# course-llm exercise: 01_ngram_counts\n" + (REFERENCE if reference else "") + code)
    return path


def _grade(path, mode, **options):
    return grade_file(path, sandbox=mode, seed=3, **{**TINY, **options})


def _processes_with(token: str) -> list:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and token.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            pass
    return found


@pytest.mark.parametrize("mode", MODES)
def test_attack_memory_and_file_size_are_limited(mode, tmp_path):
    hog = _submission(tmp_path, "hog.py", "\n_count = count_ngrams\n\ndef count_ngrams(sequences, n):\n"
                      "    big = bytearray(20 * 2**30)\n    return _count(sequences, n)\n")
    report = _grade(hog, mode)
    assert report.score == 0 and "MemoryError" in report.results[0].message, report.table()
    writer = _submission(tmp_path, "writer.py", "\n_count = count_ngrams\n\ndef count_ngrams(sequences, n):\n"
                         "    with open('big.bin', 'wb') as f:\n        for _ in range(2048):\n"
                         "            f.write(b'x' * 2**20)\n    return _count(sequences, n)\n")
    report = _grade(writer, mode)
    assert report.score == 0 and "File too large" in report.results[0].message, report.table()


@pytest.mark.parametrize("mode", MODES)
def test_attack_forks_and_setsid_do_not_outlive_the_worker(mode, tmp_path):
    token = f"31.{time.time_ns() % 10**6}"
    forks = _submission(tmp_path, "forks.py", f"""
import os
_count = count_ngrams

def count_ngrams(sequences, n):
    for i in range(50):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            if i == 0:
                os.setsid()
            os.execv("/bin/sleep", ["sleep", "{token}"])
    return _count(sequences, n)
""")
    report = _grade(forks, mode)
    assert report.results, report.table()
    assert _processes_with(token) == [], "a process started by the submission outlived its worker"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", ["reload", "exec_source"])
def test_attack_reference_code_is_out_of_reach(mode, how, tmp_path):
    steal = {"reload": "import importlib, course_llm.ngram as m\n    importlib.reload(m)\n"
                       "    return m.count_ngrams(sequences, n)\n",
             "exec_source": "import course_llm.ngram as m\n"
                            "    space = {'__name__': m.__name__, '__package__': m.__package__}\n"
                            "    exec(open(m.__file__).read(), space)\n    return space['count_ngrams'](sequences, n)\n"}
    path = _submission(tmp_path, f"{how}.py", "def count_ngrams(sequences, n):\n    " + steal[how], reference=False)
    report = _grade(path, mode)
    assert report.score == 0, report.table()
    assert "reference implementation is not available" in report.results[0].message, report.table()


@BWRAP_ONLY
@pytest.mark.parametrize("how", ["solution_notebook", "bytecode"])
def test_attack_solutions_and_bytecode_are_hidden(how, tmp_path):
    solution = ROOT / "exercises" / "solutions" / "01_ngram_counts.ipynb"
    steal = {"solution_notebook": f"import json\n    nb = json.load(open({str(solution)!r}))\n"
                                  "    space = {}\n    for c in nb['cells']:\n        if c['cell_type'] == 'code' and "
                                  "'check(' not in ''.join(c['source']):\n            exec(''.join(c['source']), space)\n"
                                  "    return space['count_ngrams'](sequences, n)\n",
             "bytecode": "import glob, marshal, os, course_llm.ngram as m\n    space = {}\n"
                         "    pyc = glob.glob(os.path.join(os.path.dirname(m.__file__), '__pycache__', 'ngram.*.pyc'))[0]\n"
                         "    exec(marshal.loads(open(pyc, 'rb').read()[16:]), space)\n"
                         "    return space['count_ngrams'](sequences, n)\n"}
    path = _submission(tmp_path, f"{how}.py", "def count_ngrams(sequences, n):\n    " + steal[how], reference=False)
    report = _grade(path, "bwrap")
    assert report.score == 0, report.table()


@pytest.mark.parametrize("mode", MODES)
def test_attack_detached_process_cannot_forge_the_gradebook(mode, tmp_path):
    out = tmp_path / "out" / "grades.json"
    forger = _submission(tmp_path / "subs", "forger.py", f"""
import os, time, json
_count = count_ngrams

def count_ngrams(sequences, n):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            try:
                with open('/proc/%d/fd/1' % os.getppid(), 'w') as f:
                    f.write('FORGED ROW 999/999\\n')
            except OSError:
                pass
            time.sleep(2)
            try:
                with open({str(out)!r}, 'w') as f:
                    json.dump({{"score": 999}}, f)
            except OSError:
                pass
        os._exit(0)
    return _count(sequences, n)
""")
    result = _cli("grade", str(forger), "--json", str(out), "--sandbox", mode, "--timeout", "5")
    assert result.returncode == 0, result.stderr
    time.sleep(3)
    assert json.loads(out.read_text())["score"] == NGRAM_MAX
    if mode == "bwrap":  # the fallback cannot hide the grader's /proc entry from a root worker (README)
        assert "FORGED" not in result.stdout


@BWRAP_ONLY
def test_attack_writes_outside_the_private_folder_fail(tmp_path):
    target = tmp_path / "outside.txt"
    path = _submission(tmp_path / "sub", "writes.py", f"""
_count = count_ngrams

def count_ngrams(sequences, n):
    for where in ({str(target)!r}, '/etc/course-llm-was-here', 'here.txt'):
        try:
            open(where, 'w').write('x')
        except OSError:
            pass
    return _count(sequences, n)
""")
    report = _grade(path, "bwrap")
    assert report.score == NGRAM_MAX, report.table()
    assert not target.exists() and not Path("/etc/course-llm-was-here").exists()
    assert not (tmp_path / "sub" / "here.txt").exists()


@pytest.mark.parametrize("mode", MODES)
def test_folder_of_five_with_one_hostile_leaves_the_four_grades_unchanged(mode, tmp_path, capsys):
    folder = tmp_path / "class"
    honest = ["alice", "bob", "carol", "dave"]
    for name in honest:
        (folder / name).mkdir(parents=True)
        shutil.copy(ROOT / "exercises" / "solutions" / "01_ngram_counts.ipynb", folder / name)
    _submission(folder / "mallory", "01_ngram_counts.py", f"""
import glob, json, os
for path in glob.glob({str(folder)!r} + '/*/*.ipynb'):
    try:
        json.dump({{"cells": []}}, open(path, 'w'))
    except OSError:
        pass
""")
    alone = grade_file(folder / "alice" / "01_ngram_counts.ipynb", seed=5, sandbox=mode)
    out = tmp_path / "grades.json"
    assert main(["grade", str(folder), "--json", str(out), "--jobs", "2", "--seed", "5", "--sandbox", mode,
                 "--quiet"]) == 0
    scores = {Path(s["submission"]).parent.name: s for s in json.loads(out.read_text())["submissions"]}
    for name in honest:
        assert scores[name]["score"] == alone.score == NGRAM_MAX, scores[name]
        assert [c["passed"] for c in scores[name]["checks"]] == [r.passed for r in alone.results]


@BWRAP_ONLY
def test_attack_killing_the_grader_fails(tmp_path):
    folder = tmp_path / "class"
    shutil.copy(ROOT / "exercises" / "solutions" / "01_ngram_counts.ipynb", _submission(folder, "a.py", "").parent)
    _submission(folder, "killer_01_ngram_counts.py", "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"
                "os.kill(-1, signal.SIGKILL)\n")
    result = _cli("grade", str(folder), "--quiet", "--sandbox", "bwrap")
    assert result.returncode == 0, result.stderr
    assert f"{NGRAM_MAX}/{NGRAM_MAX}" in result.stdout and "3 submissions" in result.stdout


@pytest.mark.parametrize("mode", MODES)
def test_attack_forged_reply_is_refused_quickly(mode, tmp_path):
    path = _submission(tmp_path, "forged.py", """
import os, pickle, struct, sys, time

def count_ngrams(sequences, n):
    bomb = {}
    for _ in range(60):
        bomb = {"a": bomb, "b": bomb}
    data = pickle.dumps((None, pickle.dumps(bomb), "", None))
    os.write(int(sys.argv[2]), struct.pack("!i", len(data)) + data)
    time.sleep(60)
""", reference=False)
    start = time.monotonic()
    report = _grade(path, mode, timeout=2.0, total_timeout=20.0)
    assert report.score == 0 and time.monotonic() - start < 40
    assert "refused" in report.results[0].message or "does not accept" in report.results[0].message, report.table()


@pytest.mark.parametrize("mode", MODES)
def test_attack_torch_py_in_a_flat_folder_does_not_shadow_torch(mode, tmp_path):
    folder = tmp_path / "flat"
    _submission(folder, "ann_01_ngram_counts.py", "import torch\nassert torch.zeros(1).shape == (1,)\n")
    (folder / "torch.py").write_text("raise SystemExit('hijacked')\n")
    out = tmp_path / "g.json"
    assert main(["grade", str(folder), "--json", str(out), "--sandbox", mode, "--quiet"]) == 0
    subs = {Path(s["submission"]).name: s for s in json.loads(out.read_text())["submissions"]}
    assert subs["ann_01_ngram_counts.py"]["score"] == NGRAM_MAX
    assert subs["torch.py"]["score"] == 0 and "could not grade" in subs["torch.py"]["notes"][0]


@pytest.mark.parametrize("bad", ["int_source", "deep_json"])
def test_attack_malformed_notebooks_are_rows_in_a_folder_and_rc2_alone(bad, tmp_path, capsys):
    folder = tmp_path / "class"
    folder.mkdir()
    text = {"int_source": json.dumps({"cells": [{"cell_type": "code", "source": [1, 2]}]}),
            "deep_json": "[" * 100_000 + "]" * 100_000}[bad]
    (folder / "bad_01_ngram_counts.ipynb").write_text(text)
    _submission(folder, "good_01_ngram_counts.py", "")
    out = tmp_path / "g.json"
    assert main(["grade", str(folder), "--json", str(out), "--quiet"]) == 0
    subs = {Path(s["submission"]).name: s for s in json.loads(out.read_text())["submissions"]}
    assert subs["good_01_ngram_counts.py"]["score"] == NGRAM_MAX
    assert "not a valid notebook" in subs["bad_01_ngram_counts.ipynb"]["notes"][0]
    result = _cli("grade", str(folder / "bad_01_ngram_counts.ipynb"))
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_attack_control_characters_are_escaped_everywhere(tmp_path, capsys):
    folder = tmp_path / "class"
    _submission(folder, "ok_01_ngram_counts.py", "")
    _submission(folder, "evil\n01_ngram_counts  11\x1b[2J.py",
                "\ndef count_ngrams(sequences, n):\n    raise ValueError('\\x1b[31mred\\nfake row 11/11')\n",
                reference=False)
    out, sheet, gs = tmp_path / "g.json", tmp_path / "g.csv", tmp_path / "gs.json"
    assert main(["grade", str(folder), "--json", str(out), "--csv", str(sheet), "--gradescope", str(gs)]) == 0
    printed = capsys.readouterr().out
    assert "\x1b" not in printed
    summary = printed.split("submission ")[-1].splitlines()
    assert sum("01_ngram_counts" in line for line in summary) == 2
    for f in (out, sheet, gs):
        text = f.read_text()
        assert "\x1b" not in text and "\\u001b" not in text, f
    assert len(sheet.read_text().splitlines()) == 3


@pytest.mark.parametrize("mode", MODES)
def test_attack_flooding_stderr_is_read_up_to_a_cap(mode, tmp_path):
    path = _submission(tmp_path, "stderr.py", """
import os

def count_ngrams(sequences, n):
    try:
        for _ in range(100):
            os.write(2, b"y" * 2**20)
    finally:
        os._exit(1)
""", reference=False)
    report = _grade(path, mode)
    message = report.results[0].message
    assert report.score == 0 and "ended the process" in message and len(message) < 400, message


# ---------------------------------------------------------------------------------------------
# New guarantees: bounded decoding, stripping, limits, formats, hidden checks, the autograder.

def test_decode_refuses_shared_references_depth_and_junk():
    bomb = {}
    for _ in range(60):
        bomb = {"a": bomb, "b": bomb}
    import pickle
    start = time.monotonic()
    for forged in (pickle.dumps(bomb), b"\x80\x04" + b"]" * 5000 + b"a" * 4999 + b".", b"junk", 5):
        with pytest.raises(pickle.UnpicklingError):
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


def test_fallback_mode_says_so_once(monkeypatch, tmp_path):
    from course_llm.grading import isolation

    monkeypatch.setattr(isolation, "_PROBE", {"ok": False})
    monkeypatch.setattr(isolation, "_NOTICE", __import__("threading").Event())
    path = _submission(tmp_path, "ok.py", "")
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
    n_checks = len(get_exercise("01_ngram_counts").checks) * 2 + len(get_exercise("01_perplexity").checks)
    assert len(results["tests"]) == n_checks and results["score"] == 2 * NGRAM_MAX
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
