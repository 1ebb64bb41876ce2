"""What the grader hands to Gradescope and writes for course staff (issue #31).

A sandbox that cannot start the interpreter fails the Gradescope autograder visibly instead of
giving the student a zero; an exercise handed in several times counts once; a submission cannot
flood the terminal or the output files; honest students are not penalised for a ``helpers.py``
beside their notebook or a ``%%time`` cell, and a file that cannot be read is named as they
named it; CSV cells cannot start a formula, and invisible characters cannot make two names look
the same.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from grading_support import NGRAM_MAX, REFERENCE, ROOT

from course_llm.grading.cli import main
from course_llm.grading.report import CheckResult, Report
from course_llm.grading.formats import gradebook_csv, gradescope_results, summary_table

SOLUTION = ROOT / "exercises" / "solutions" / "01_ngram_counts.ipynb"
MARKER = "# course-llm exercise: 01_ngram_counts\n"


def _autograder(tmp_path: Path) -> Path:
    """The autograder zip of 01_ngram_counts unpacked into a fake ``/autograder`` tree."""
    zip_path = tmp_path / "autograder.zip"
    assert main(["gradescope-autograder", "01_ngram_counts", "-o", str(zip_path)]) == 0
    root = tmp_path / "autograder"
    with zipfile.ZipFile(zip_path) as z:
        z.extractall(root / "source")
    (root / "submission").mkdir()
    return root


def _run_autograder(root: Path, **env) -> subprocess.CompletedProcess:
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable, **env)
    return subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env,
                          capture_output=True, text=True, timeout=300)


def test_autograder_fails_visibly_when_the_sandbox_cannot_start_the_interpreter(tmp_path):
    root = _autograder(tmp_path)
    shutil.copy(SOLUTION, root / "submission" / "mine.ipynb")
    # the grader's interpreter believes it lives where nothing is: the probe cannot start it
    site = tmp_path / "site"
    site.mkdir()
    missing = tmp_path / "gone" / "bin" / "python"
    (site / "sitecustomize.py").write_text(f"import sys\nsys.executable = {str(missing)!r}\n")
    paths = [str(site)] + ([os.environ["PYTHONPATH"]] if "PYTHONPATH" in os.environ else [])
    run = _run_autograder(root, PYTHONPATH=os.pathsep.join(paths))
    assert run.returncode != 0, (run.stdout, run.stderr)
    assert not (root / "results" / "results.json").exists()  # no score for the student
    assert "cannot start the interpreter" in run.stderr and str(missing) in run.stderr
    assert "not of the submission" in run.stderr


def test_autograder_gives_zero_with_a_note_for_an_empty_submission(tmp_path):
    root = _autograder(tmp_path)
    (root / "submission" / "readme.txt").write_text("sorry\n")
    run = _run_autograder(root)
    assert run.returncode == 0, run.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == 0 and "no submission of 01_ngram_counts" in results["output"]


def _full(submission: str, exercise: str = "01_x") -> Report:
    return Report(exercise, submission, [CheckResult("a", 3, 3, True), CheckResult("b", 1, 1, True)])


def test_gradescope_counts_each_exercise_once_and_names_the_others():
    wrong = Report("01_x", "sub/c.ipynb", [CheckResult("a", 0, 3, False, "no"), CheckResult("b", 1, 1, True)])
    reports = [wrong, _full("sub/a.ipynb"), _full("sub/b.py"), _full("sub/y.py", "01_y"),
               Report("?", "sub/notes.py", [], 0, ["could not grade: no exercise"])]
    results = gradescope_results(reports)
    assert results["score"] == 4 + 4  # 01_x once (its best), 01_y once: not 1 + 4 + 4 + 4
    assert sum(t["score"] for t in results["tests"]) == results["score"]
    assert len(results["tests"]) == 4
    assert "01_x: counted sub/a.ipynb (4/4); not counted: sub/c.ipynb (1/4), sub/b.py (4/4)" in results["output"]
    assert "could not grade" in results["output"]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """One folder of four students graded once: the CLI's exit status, stdout, and its files."""
    folder = tmp_path_factory.mktemp("outputs") / "class"
    for student in ("ann", "ben", "cat", "dan"):
        (folder / student).mkdir(parents=True)
    # ann: a correct notebook whose function lives in helpers.py, uploaded beside it
    (folder / "ann" / "helpers.py").write_text(REFERENCE)
    nb = json.loads(SOLUTION.read_text())
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and "def count_ngrams_and_contexts" in source:
            cell["source"] = "from helpers import count_ngrams_and_contexts\n"
    (folder / "ann" / "mine.ipynb").write_text(json.dumps(nb))
    # ben: the solution cell starts with %%time; another cell is a %%bash cell
    nb = json.loads(SOLUTION.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and "def count_ngrams_and_contexts" in "".join(cell["source"]):
            cell["source"] = "%%time\n" + "".join(cell["source"])
    nb["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                        "source": "%%bash\necho hi\n"})
    (folder / "ben" / "timed.ipynb").write_text(json.dumps(nb))
    # cat: not a notebook
    (folder / "cat" / "broken.ipynb").write_text("{not json")
    # dan: a small file whose messages and notes are megabytes long
    flood = MARKER + "def count_ngrams_and_contexts(sequences, n):\n    raise ValueError('x' * 10_000_000)\n"
    flood += "# %%\nraise ValueError('y' * 200_000)\n" * 40
    (folder / "dan" / "flood.py").write_text(flood)
    files = {k: folder.parent / f"grades.{k}" for k in ("json", "csv", "gs.json")}
    stdout, stderr = io.StringIO(), io.StringIO()
    from contextlib import redirect_stderr, redirect_stdout

    with redirect_stdout(stdout), redirect_stderr(stderr):
        status = main(["grade", str(folder), "--jobs", "2", "--json", str(files["json"]),
                       "--csv", str(files["csv"]), "--gradescope", str(files["gs.json"])])
    data = json.loads(files["json"].read_text())
    subs = {Path(s["submission"]).relative_to(folder).as_posix(): s for s in data["submissions"]}
    return dict(status=status, out=stdout.getvalue(), files=files, subs=subs, folder=folder)


def test_a_flood_of_messages_is_cut_in_every_output(graded):
    assert graded["status"] == 0
    flood = graded["subs"]["dan/flood.py"]
    assert flood["score"] == 0
    assert any("... [cut " in c["message"] for c in flood["checks"]), flood["checks"][0]["message"][:200]
    assert all(len(c["message"]) <= 2100 for c in flood["checks"])
    assert len(flood["notes"]) <= 21 and all(len(n) <= 2100 for n in flood["notes"])
    assert len(graded["out"]) < 300_000, len(graded["out"])
    for path in graded["files"].values():
        assert path.stat().st_size < 300_000, (path.name, path.stat().st_size)


def test_a_helpers_py_beside_the_submission_is_importable(graded):
    ann = graded["subs"]["ann/mine.ipynb"]
    assert ann["score"] == ann["max_score"] == NGRAM_MAX, ann["notes"]


def test_a_percent_percent_time_cell_runs_and_a_skipped_cell_is_named(graded):
    ben = graded["subs"]["ben/timed.ipynb"]
    assert ben["score"] == NGRAM_MAX, (ben["notes"], [c["message"] for c in ben["checks"]])
    assert any("was not run" in n and "%%bash" in n and "timed.ipynb, cell" in n for n in ben["notes"])


def test_an_unreadable_notebook_is_named_as_the_student_named_it(graded):
    note = graded["subs"]["cat/broken.ipynb"]["notes"][0]
    assert str(graded["folder"] / "cat" / "broken.ipynb") in note and "course-llm-stage" not in note


@pytest.mark.parametrize("name", ["=cmd", "\t=cmd", "\t+1", "  -1", "@SUM(A1)", "\r=cmd"])
def test_csv_cells_cannot_start_a_formula(name):
    sheet = gradebook_csv([_full(f"s/{name}/a.py")], "s")
    row = next(csv.reader(io.StringIO(sheet.splitlines()[1])))
    assert row[0].startswith("'"), row


def test_invisible_characters_cannot_make_two_names_look_alike():
    twins = ["alice", "alice\u200b", "al\u202eecila", "\ufeffalice", "ali\u2066ce"]
    reports = [_full(f"s/{n}/a.py") for n in twins]
    students = [line.split(",")[0] for line in gradebook_csv(reports, "s").splitlines()[1:]]
    assert len(set(students)) == len(twins) and students.count("alice") == 1, students
    shown = [summary_table(reports), json.dumps(gradescope_results(reports), ensure_ascii=False),
             json.dumps([r.to_dict() for r in reports], ensure_ascii=False), "\n".join(r.table() for r in reports)]
    for text in shown:
        assert not any(ch in text for ch in "\u200b\u202e\ufeff\u2066"), text[:300]
