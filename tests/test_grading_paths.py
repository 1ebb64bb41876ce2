"""The grader runs wherever it is installed (issue #30, item 5).

The bwrap sandbox gives the worker a private ``/tmp`` (and fresh ``/dev``, ``/proc``), which once
hid the grader's own interpreter when the class folder, the venv or the checkout lived under
``/tmp``: every submission, the references included, scored 0 and the message blamed the
student. These tests run the grader through an interpreter that lives in a fresh temporary
folder (behind a symlink, in a path with a space), check that a sandbox that cannot start the
interpreter stops the run with exit status 2 instead of grading, that the fallback without
bubblewrap is announced on every run, and that ``COURSE_LLM_SEED`` does not move a grade.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest
from grading_support import ROOT, grade_seeds, submission, verdicts

from course_llm.grading import get_exercise
from course_llm.grading.cli import main
from course_llm.grading.isolation import sandbox_mode, worker_command
from course_llm.grading.mounts import worker_paths

SOLUTIONS = ROOT / "exercises" / "solutions"
REFERENCES = ["01_ngram_counts", "05_masked_attention"]
HAS_BWRAP = sandbox_mode("auto") == "bwrap"
BWRAP_ONLY = pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap is not installed")
# set only by these tests: the temporary venv's .pth then gives the grader this `sys.executable`
EXECUTABLE_SWITCH = "COURSE_LLM_TEST_EXECUTABLE"


@pytest.fixture(scope="module")
def tmp_python():
    """A venv made in a fresh `tempfile.mkdtemp()` folder whose name has a space, reached through
    a symlink; a ``.pth`` puts this project's site-packages and checkout on its `sys.path`."""
    root = Path(tempfile.mkdtemp(prefix="course-llm paths "))
    venv = root / "real venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   capture_output=True, timeout=120)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    assert site.is_dir(), site
    (site / "course_llm_project.pth").write_text(
        f"{sysconfig.get_path('purelib')}\n{ROOT}\n"
        f"import os, sys; sys.executable = os.environ.get({EXECUTABLE_SWITCH!r}, sys.executable)\n")
    link = root / "link to venv"
    link.symlink_to(venv, target_is_directory=True)
    yield link / "bin" / "python"
    shutil.rmtree(root, ignore_errors=True)


def _grade_with(python: Path, folder: Path, *options, env=None):
    """`course-llm grade FOLDER` run by `python`, from a folder outside the checkout."""
    return subprocess.run(
        [str(python), "-c", "from course_llm.grading.cli import main; raise SystemExit(main())",
         "grade", str(folder), *options],
        capture_output=True, text=True, cwd=folder.parent, timeout=600,
        env={**os.environ, **(env or {})})


def _references(tmp_path: Path) -> Path:
    folder = tmp_path / "class"
    folder.mkdir()
    for name in REFERENCES:
        shutil.copy(SOLUTIONS / f"{name}.ipynb", folder)
    return folder


@BWRAP_ONLY
def test_references_get_full_marks_with_an_interpreter_under_tmp(tmp_python, tmp_path):
    assert str(tmp_python).startswith(tempfile.gettempdir()) and " " in str(tmp_python)
    folder, out = _references(tmp_path), tmp_path / "grades.json"
    result = _grade_with(tmp_python, folder, "--sandbox", "bwrap", "--seed", "1", "--quiet",
                         "--json", str(out))
    assert result.returncode == 0, result.stderr
    data = json.loads(out.read_text())
    assert len(data["submissions"]) == len(REFERENCES)
    for sub in data["submissions"]:
        assert sub["score"] == sub["max_score"] == get_exercise(sub["exercise"]).max_score, (
            sub["submission"], [c["message"] for c in sub["checks"] if not c["passed"]], sub["notes"])


@BWRAP_ONLY
def test_a_sandbox_that_cannot_start_the_interpreter_stops_the_run(tmp_python, tmp_path):
    missing = Path(tempfile.mkdtemp(prefix="course-llm-gone-")) / "bin" / "python"
    folder = _references(tmp_path)
    result = _grade_with(tmp_python, folder, "--sandbox", "bwrap", "--quiet",
                         env={EXECUTABLE_SWITCH: str(missing)})
    missing.parent.parent.rmdir()
    assert result.returncode == 2, (result.stdout, result.stderr)
    error = result.stderr.strip()
    assert len(error.splitlines()) == 1, error
    assert "cannot start the interpreter" in error and str(missing) in error, error
    assert "--sandbox rlimits" in error and "No such file" in error, error
    assert "0/" not in result.stdout  # nobody was given a zero


def test_the_interpreter_is_bound_after_the_private_tmp_and_before_the_package_copy(tmp_path):
    paths, _ = worker_paths()
    real = os.path.realpath(sys.executable)
    assert any(real == p or real.startswith(p + "/") for p in paths), (real, paths)
    assert not any(p == "/" or "/tmp".startswith(p + "/") or p == "/tmp" for p in paths), paths
    view = tmp_path / "view"
    command, _ = worker_command("bwrap", tmp_path / "work", view, "pass")
    binds = [i for i in range(len(command) - 2) if command[i] == "--ro-bind"
             and command[i + 1] == command[i + 2] and command[i + 1] in paths]
    private_tmp = command.index(str(tmp_path / "work"))
    package_copy = command.index(str(view / "course_llm"))
    assert len(binds) == len(paths) and private_tmp < min(binds) and max(binds) < package_copy


def test_the_fallback_without_bubblewrap_is_announced_on_every_run(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(shutil, "which", lambda *a, **k: None)
    path = submission(tmp_path, "ok.py", "")
    for _ in range(2):
        assert main(["grade", str(path), "--quiet"]) == 0
        err = capsys.readouterr().err
        assert err.count("bubblewrap (bwrap) not found") == 1, err
        for unprotected in ("read", "network", "signal"):
            assert unprotected in err, err
    monkeypatch.setenv("COURSE_LLM_SANDBOX", "rlimits")  # asked for: no warning
    assert main(["grade", str(path), "--quiet"]) == 0
    assert "bwrap" not in capsys.readouterr().err


@pytest.mark.parametrize("name", ["01_perplexity", "07_block_forward", "13_dpo_loss"])
def test_the_seed_switch_does_not_move_a_grade(name, monkeypatch):
    path = SOLUTIONS / f"{name}.ipynb"
    reports = {}
    for offset in ("0", "3"):
        monkeypatch.setenv("COURSE_LLM_SEED", offset)
        reports[offset] = [verdicts(r) for r in grade_seeds(path, [5, 6], sandboxed=False)]
    assert reports["0"] == reports["3"]
    assert all(passed for report in reports["0"] for _, _, passed, _ in report)
