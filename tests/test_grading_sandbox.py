"""The grader's sandbox (issue 20): every attack of the issue's table is a test, in both modes where
the mode is meant to stop it (README: what each mode guarantees), plus hostile submissions that
declare the message they must produce."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from course_llm.grading import get_exercise
from course_llm.grading.cli import main
from course_llm.grading.isolation import Limits, sandbox_mode
from course_llm.grading.runner import grade_file

from grading_support import FIXTURES, NGRAM_MAX, ROOT, cli, header, submission

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
        expected = header(Path(sub["submission"]), "expect-message")
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


TINY = dict(timeout=5.0, total_timeout=60.0, limits=Limits(memory_mb=2048, file_mb=8))
HAS_BWRAP = sandbox_mode("auto") == "bwrap"
MODES = [pytest.param("bwrap", marks=pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap is not installed")),
         "rlimits"]
BWRAP_ONLY = pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap is not installed")


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
    hog = submission(tmp_path, "hog.py", "\n_count = count_ngrams_and_contexts\n\ndef count_ngrams_and_contexts(sequences, n):\n"
                      "    big = bytearray(20 * 2**30)\n    return _count(sequences, n)\n")
    report = _grade(hog, mode)
    assert report.score == 0 and "MemoryError" in report.results[0].message, report.table()
    writer = submission(tmp_path, "writer.py", "\n_count = count_ngrams_and_contexts\n\ndef count_ngrams_and_contexts(sequences, n):\n"
                         "    with open('big.bin', 'wb') as f:\n        for _ in range(2048):\n"
                         "            f.write(b'x' * 2**20)\n    return _count(sequences, n)\n")
    report = _grade(writer, mode)
    assert report.score == 0 and "File too large" in report.results[0].message, report.table()


@pytest.mark.parametrize("mode", MODES)
def test_attack_forks_and_setsid_do_not_outlive_the_worker(mode, tmp_path):
    token = f"31.{time.time_ns() % 10**6}"
    forks = submission(tmp_path, "forks.py", f"""
import os
_count = count_ngrams_and_contexts

def count_ngrams_and_contexts(sequences, n):
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
    path = submission(tmp_path, f"{how}.py", "def count_ngrams_and_contexts(sequences, n):\n    " + steal[how], reference=False)
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
                                  "    return space['count_ngrams_and_contexts'](sequences, n)\n",
             "bytecode": "import glob, marshal, os, course_llm.ngram as m\n    space = {}\n"
                         "    pyc = glob.glob(os.path.join(os.path.dirname(m.__file__), '__pycache__', 'ngram.*.pyc'))[0]\n"
                         "    exec(marshal.loads(open(pyc, 'rb').read()[16:]), space)\n"
                         "    return space['count_ngrams'](sequences, n)\n"}
    path = submission(tmp_path, f"{how}.py", "def count_ngrams_and_contexts(sequences, n):\n    " + steal[how], reference=False)
    report = _grade(path, "bwrap")
    assert report.score == 0, report.table()


@pytest.mark.parametrize("mode", MODES)
def test_attack_detached_process_cannot_forge_the_gradebook(mode, tmp_path):
    out = tmp_path / "out" / "grades.json"
    forger = submission(tmp_path / "subs", "forger.py", f"""
import os, time, json
_count = count_ngrams_and_contexts

def count_ngrams_and_contexts(sequences, n):
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
    result = cli("grade", str(forger), "--json", str(out), "--sandbox", mode, "--timeout", "5")
    assert result.returncode == 0, result.stderr
    time.sleep(3)
    assert json.loads(out.read_text())["score"] == NGRAM_MAX
    if mode == "bwrap":  # the fallback cannot hide the grader's /proc entry from a root worker (README)
        assert "FORGED" not in result.stdout


@BWRAP_ONLY
def test_attack_writes_outside_the_private_folder_fail(tmp_path):
    target = tmp_path / "outside.txt"
    path = submission(tmp_path / "sub", "writes.py", f"""
_count = count_ngrams_and_contexts

def count_ngrams_and_contexts(sequences, n):
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
    submission(folder / "mallory", "01_ngram_counts.py", f"""
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
    shutil.copy(ROOT / "exercises" / "solutions" / "01_ngram_counts.ipynb", submission(folder, "a.py", "").parent)
    submission(folder, "killer_01_ngram_counts.py", "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"
                "os.kill(-1, signal.SIGKILL)\n")
    result = cli("grade", str(folder), "--quiet", "--sandbox", "bwrap")
    assert result.returncode == 0, result.stderr
    assert f"{NGRAM_MAX}/{NGRAM_MAX}" in result.stdout and "3 submissions" in result.stdout


@pytest.mark.parametrize("mode", MODES)
def test_attack_forged_reply_is_refused_quickly(mode, tmp_path):
    path = submission(tmp_path, "forged.py", """
import os, pickle, struct, sys, time

def count_ngrams_and_contexts(sequences, n):
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
    submission(folder, "ann_01_ngram_counts.py", "import torch\nassert torch.zeros(1).shape == (1,)\n")
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
    submission(folder, "good_01_ngram_counts.py", "")
    out = tmp_path / "g.json"
    assert main(["grade", str(folder), "--json", str(out), "--quiet"]) == 0
    subs = {Path(s["submission"]).name: s for s in json.loads(out.read_text())["submissions"]}
    assert subs["good_01_ngram_counts.py"]["score"] == NGRAM_MAX
    assert "not a valid notebook" in subs["bad_01_ngram_counts.ipynb"]["notes"][0]
    result = cli("grade", str(folder / "bad_01_ngram_counts.ipynb"))
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_attack_control_characters_are_escaped_everywhere(tmp_path, capsys):
    folder = tmp_path / "class"
    submission(folder, "ok_01_ngram_counts.py", "")
    submission(folder, "evil\n01_ngram_counts  11\x1b[2J.py",
                "\ndef count_ngrams_and_contexts(sequences, n):\n    raise ValueError('\\x1b[31mred\\nfake row 11/11')\n",
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
    path = submission(tmp_path, "stderr.py", """
import os

def count_ngrams_and_contexts(sequences, n):
    try:
        for _ in range(100):
            os.write(2, b"y" * 2**20)
    finally:
        os._exit(1)
""", reference=False)
    report = _grade(path, mode)
    message = report.results[0].message
    assert report.score == 0 and "ended the process" in message and len(message) < 400, message
