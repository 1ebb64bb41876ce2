"""Nothing the project ships records where it was built (issue #30, item 6).

A shipped artifact (the zoo's checkpoints and any other data file inside the package) holds no
absolute path at all: not the checkout, not the interpreter's prefix, not the home folder, not
a temporary or home-like folder of the machine that made it. A source file or notebook may name
a conventional path (the grader's sandbox mounts the submission at /tmp/submission), but never
this machine's checkout, venv or home. Built pages and cached outputs are scanned the same way
by `book_static_check.py`, after the book is built.
"""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
from course_build import hide_machine_paths, machine_paths, this_machine_roots  # noqa: E402


def _tracked() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    return [ROOT / p for p in out.stdout.decode().split("\0") if p and (ROOT / p).is_file()]


def _text(path: Path) -> str:
    return path.read_bytes().decode("latin-1")  # binary files too: their headers are text


def test_the_scan_finds_a_planted_path(tmp_path):
    planted = tmp_path / "run" / "ckpt.pt"
    assert machine_paths(f'{{"out_dir": "{planted}"}}')  # a temporary folder
    assert str(ROOT) in machine_paths(f"wrote {ROOT}/x", this_machine_roots(ROOT))
    assert machine_paths('{"out_dir": "/work/zoo_run"}') == ["/work/zoo_run"]
    assert machine_paths("runs/zoo and https://example.org/home/x") == []


def test_shipped_artifacts_hold_no_absolute_path():
    package = ROOT / "course_llm"
    artifacts = [p for p in _tracked() if package in p.parents and p.suffix not in {".py"}]
    assert any(p.suffix == ".safetensors" for p in artifacts)  # the zoo's weights are scanned
    bad = {str(p.relative_to(ROOT)): machine_paths(_text(p), this_machine_roots(ROOT))
           for p in artifacts}
    assert not {k: v for k, v in bad.items() if v}, bad


def test_no_tracked_file_names_this_checkout_venv_or_home():
    roots = this_machine_roots(ROOT)
    bad = {}
    for path in _tracked():
        hits = [r for r in roots if r in _text(path)]
        if hits:
            bad[str(path.relative_to(ROOT))] = hits
    assert not bad, bad


def test_executed_outputs_lose_this_machines_paths(tmp_path):
    import sys

    text = (f"saved {tmp_path}/ckpt.pt from {ROOT}/nbs with {sys.prefix}/bin/python "
            "and train/run.py")
    cell = {"cell_type": "code", "outputs": [
        {"output_type": "stream", "name": "stdout", "text": text},
        {"output_type": "error", "ename": "ValueError", "evalue": text, "traceback": [text]},
        {"output_type": "execute_result", "data": {"text/plain": [text]}}]}
    shown = hide_machine_paths(cell)
    assert machine_paths(str(cell), this_machine_roots(ROOT))  # the scan sees the raw output
    assert not machine_paths(str(shown), this_machine_roots(ROOT)), shown
    assert "ckpt.pt" in str(shown) and "train/run.py" in str(shown)  # file names survive
