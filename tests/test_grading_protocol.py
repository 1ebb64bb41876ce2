"""The grader's protocol under attack (issue 31, "The grader" items 1-5 and 8): forged worker
replies, write-backs into a check's inputs, the grading checks inside the worker, forbidden
torch ops under other names, what the sandbox shows of the filesystem, forged Gradescope lines,
worker restarts against the total time, and a hidden check's input in a visible message."""

from __future__ import annotations

import json
import pickle
import resource
import shutil
import tempfile
import time
from pathlib import Path

import pytest
import torch

from course_llm.grading import Exercise, expect, get_exercise
from course_llm.grading.cli import main
from course_llm.grading.core import run_checks
from course_llm.grading.inprocess import InProcessBackend
from course_llm.grading.isolation import sandbox_mode
from course_llm.grading.runner import grade_file
from course_llm.grading.transport import MAGIC, ReplyRefused, decode_result, dump_plain, encode_result

from grading_support import FIXTURES, ROOT, submission

HAS_BWRAP = sandbox_mode("auto") == "bwrap"
BWRAP_ONLY = pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap is not installed")
MODES = [pytest.param("bwrap", marks=BWRAP_ONLY), "rlimits"]
SOLUTIONS = ROOT / "exercises" / "solutions"

# The two forged replies of the issue, rebuilt as pickle opcodes (never unpickled here; 34 and 53
# bytes, 41 and 62 with the old reply's framing): bytearray(3 GiB), and Counter(bytes(10**9)).
BYTEARRAY_BOMB = b"\x80\x04\x8c\x08builtins\x8c\tbytearray\x93\x8a\x05\x00\x00\x00\xc0\x00\x85R."
COUNTER_BOMB = (b"\x80\x04\x8c\x0bcollections\x8c\x07Counter\x93\x8c\x08builtins\x8c\x05bytes\x93"
                b"J\x00\xca\x9a;\x85R\x85R.")


def _forge(node, blob=b""):
    text = json.dumps(node).encode()
    return MAGIC + len(text).to_bytes(8, "big") + text + blob


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --- 1. the reply is data only, its caps checked before decoding ------------------------------

def test_the_forged_pickle_replies_are_refused_cheaply():
    import pickletools

    ops = [op.name for op, _, _ in pickletools.genops(BYTEARRAY_BOMB)]
    assert "STACK_GLOBAL" in ops and "REDUCE" in ops  # what the old reader would have run
    before, start = _peak_rss_mib(), time.monotonic()
    for forged in (BYTEARRAY_BOMB, COUNTER_BOMB, (None, BYTEARRAY_BOMB, "")):
        data = forged if isinstance(forged, bytes) else pickle.dumps(forged)
        with pytest.raises(ReplyRefused, match="no header"):
            decode_result(data)
    # the same requests written in the reply format: sizes are checked against the bytes there
    for forged in (_forge(["bytes", 3 * 2**30]), _forge(["torch", "uint8", [3 * 2**30], 3 * 2**30]),
                   _forge(["Counter", [[["bytes", 10**9], 1]]]),
                   _forge(["list", [["torch", "uint8", [8], 8]] * 1000], bytes(8)),  # shared bytes
                   MAGIC + (2**62).to_bytes(8, "big") + b"[]",
                   MAGIC + (10**6).to_bytes(8, "big") + b"[" * 500_000 + b"]" * 500_000,
                   _forge(["list", [0] * 3_000_000])):
        with pytest.raises(ReplyRefused):
            decode_result(forged)
    assert time.monotonic() - start < 2.0
    assert _peak_rss_mib() - before < 300


def test_the_reply_format_round_trips_plain_data():
    from collections import Counter, OrderedDict, defaultdict

    value = [None, True, -(2**70), 2.5, float("inf"), 1 - 2j, "é", b"\x00", {1, 2}, frozenset({3}),
             Counter({("a", "b"): 2}), OrderedDict(x=1), defaultdict(list, {"k": [1]}), {(1, 2): "t"},
             torch.arange(6, dtype=torch.int32).view(2, 3), torch.tensor([1.5], dtype=torch.bfloat16),
             torch.zeros(0, 3), torch.tensor(True)]
    back = decode_result(dump_plain(encode_result(value)))
    for a, b in zip(back, value):
        assert type(a) is type(b)
        if isinstance(a, torch.Tensor):
            assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
        else:
            assert a == b
    assert back[12].default_factory is list


@pytest.mark.parametrize("bomb", ["bytearray", "counter"])
def test_a_worker_sending_a_forged_pickle_is_refused_fast(bomb, tmp_path):
    data = {"bytearray": BYTEARRAY_BOMB, "counter": COUNTER_BOMB}[bomb]
    path = submission(tmp_path, "forged.py", f"""
import os, struct, sys, time

def count_ngrams_and_contexts(sequences, n):
    data = {data!r}
    os.write(int(sys.argv[2]), struct.pack("!i", len(data)) + data)
    time.sleep(60)
""", reference=False)
    before, start = _peak_rss_mib(), time.monotonic()
    report = grade_file(path, timeout=2.0, total_timeout=10.0, seed=0)
    assert time.monotonic() - start < 15 and _peak_rss_mib() - before < 300
    assert report.score == 0 and "refused" in report.results[0].message, report.table()


# --- 2. nothing a reply carries is written into the check's objects ---------------------------

class _Forging(InProcessBackend):
    """The worker's honest reply, plus the old protocol's ``mutated`` field overwriting every
    argument (lists and dicts emptied, tensors zeroed), as a forged worker would send it."""

    def __init__(self, *args, forge: bool, **kwargs):
        super().__init__(*args, **kwargs)
        self.forge, self.inputs = forge, []

    def _exchange(self, name, args, kwargs, timeout):
        self.inputs.append(pickle.dumps((args, kwargs)))
        reply = super()._exchange(name, args, kwargs, timeout)
        if not self.forge:
            return reply
        problem, payload, output = decode_result(reply)
        empty = {i: (torch.zeros_like(a) if isinstance(a, torch.Tensor) else type(a)()
                     if isinstance(a, (list, dict)) else a) for i, a in enumerate(args)}
        mutated = dump_plain(encode_result({"args": empty, "kwargs": {}}))
        return dump_plain((problem, payload, output, mutated))


@pytest.mark.parametrize("name", ["02_bpe_encode", "14_info_nce", "06_rope"])
def test_a_forged_mutated_field_gains_nothing(name, tmp_path):
    stub = tmp_path / f"{name}.ipynb"
    shutil.copy(ROOT / "exercises" / f"{name}.ipynb", stub)  # the student notebook: scores 0
    from course_llm.grading.runner import exercise_for, read_submission

    cells = read_submission(stub)
    exercise = exercise_for(stub, cells)
    scores = {}
    for forge in (False, True):
        backend = _Forging(cells, exercise, forge=forge)
        # an honest (wrong) answer: the stub's functions replaced by ones returning their input
        backend.cells = cells + [("cell x", "\n".join(
            f"def {f}(*args, **kwargs):\n    return args[0]\n" for f in exercise.functions))]
        report = run_checks(exercise, backend, seed=1, timeout=10, total_timeout=120)
        scores[forge] = report.score
        if forge:
            # every check that ran refused the reply; the ones depending on it were skipped
            assert all("refused" in r.message or r.message.startswith("skipped: fix ")
                       for r in report.results), report.table()
            assert "refused" in report.results[0].message, report.table()
    assert scores[True] <= scores[False] < exercise.max_score


def test_an_in_place_exercise_gets_its_written_arguments_as_values():
    path = SOLUTIONS / "08_kv_append.ipynb"
    from course_llm.grading.runner import exercise_for, read_submission

    cells = read_submission(path)
    exercise = exercise_for(path, cells)
    backend = InProcessBackend(cells, exercise)
    k, v = torch.zeros(1, 1, 4, 2), torch.zeros(1, 1, 4, 2)
    value = backend.call("kv_append", (k, v, 0, torch.ones(1, 1, 3, 2), torch.ones(1, 1, 3, 2)), {}, 10)
    (k_out, v_out), written = value
    assert k_out.shape == (1, 1, 3, 2) and written["k_cache"][0, 0, :, 0].tolist() == [1, 1, 1, 0]
    assert k.abs().sum() == 0 and v.abs().sum() == 0  # the check's own tensors are untouched
    report = run_checks(exercise, backend, seed=2, timeout=10, total_timeout=120)
    assert report.score == report.max_score, report.table()


# --- 3. the worker's package holds no grading checks ------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_the_grading_checks_cannot_be_imported_in_the_worker(mode, tmp_path):
    path = submission(tmp_path, "peek.py", """
import importlib.util, os

def count_ngrams_and_contexts(sequences, n):
    found = []
    try:
        from course_llm.grading.checks.ch06 import rms_norm_exercise
        found.append("imported ch06")
    except ImportError as error:
        found.append(type(error).__name__)
    import course_llm
    real = os.path.join(os.path.dirname(course_llm.__file__), "grading", "checks", "ch01.py")
    found.append("file there" if os.path.exists(real) else "no file")
    raise ValueError(f"peek: {found}")
""", reference=False)
    report = grade_file(path, sandbox=mode, timeout=10.0, total_timeout=60.0, seed=0)
    message = report.results[0].message
    assert "peek: ['ModuleNotFoundError', 'no file']" in message, message


# --- 4. forbidden torch ops, under every alias -------------------------------------------------

ALIASES = {
    "06_rms_norm": [
        "torch.ops.aten.rms_norm(x, [x.shape[-1]], gamma, eps)",
        "torch.ops.aten.rms_norm.default(x, [x.shape[-1]], gamma, eps)",
        "torch.rms_norm(x, [x.shape[-1]], gamma, eps)",
        "torch.ops.aten._fused_rms_norm(x, [x.shape[-1]], gamma, eps)[0]",
        "torch.nn.functional.rms_norm(x, (x.shape[-1],), gamma, eps)",
    ],
    "07_causal_lm_loss": [
        "torch._C._nn.cross_entropy_loss(*_flat(logits, tokens), ignore_index=ignore_index)",
        "torch.ops.aten.cross_entropy_loss(*_flat(logits, tokens), ignore_index=ignore_index)",
        "torch._C._nn.nll_loss(_flat(logits, tokens)[0].log_softmax(-1), _flat(logits, tokens)[1],"
        " ignore_index=ignore_index)",
        "torch.nn.functional.nll_loss(_flat(logits, tokens)[0].log_softmax(-1), _flat(logits, tokens)[1],"
        " ignore_index=ignore_index)",
    ],
    "05_masked_attention": [
        "torch._C._nn.scaled_dot_product_attention(q, k, v, attn_mask=_keep(mask))",
        "torch.ops.aten.scaled_dot_product_attention(q, k, v, attn_mask=_keep(mask))",
        "torch.ops.aten._scaled_dot_product_attention_math(q, k, v, attn_mask=_keep(mask))[0]",
        "torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v)[0]",
    ],
}
SIGNATURES = {
    "06_rms_norm": "def rms_norm(x, gamma, eps=1e-6):",
    "07_causal_lm_loss": "def causal_lm_loss(logits, tokens, ignore_index=-100):",
    "05_masked_attention": "def masked_attention(q, k, v, mask=None):",
}
HELPERS = """
import torch

def _flat(logits, tokens):
    return logits[:, :-1].reshape(-1, logits.size(-1)), tokens[:, 1:].reshape(-1)

def _keep(mask):
    return None if mask is None else mask.bool()
"""


@pytest.mark.parametrize("name,alias", [(n, a) for n, aliases in ALIASES.items() for a in aliases])
def test_a_forbidden_op_is_caught_under_each_alias(name, alias):
    exercise = get_exercise(name)
    source = HELPERS + f"\n{SIGNATURES[name]}\n    return {alias}\n"
    report = run_checks(exercise, InProcessBackend([("cell 1", source)], exercise), seed=0,
                        timeout=10, total_timeout=120)
    assert report.score == 0, report.table()
    # caught by the op watch (the public names are also switched off by name)
    caught = ("called torch's", "switched off while grading")
    # a check that depends on a failed one is skipped (one bug, one charge)
    assert any(c in report.results[0].message for c in caught), report.table()
    assert all(any(c in r.message for c in caught) or r.message.startswith("skipped: fix ")
               for r in report.results), report.table()


def test_a_forbidden_op_is_caught_in_the_sandboxed_worker(tmp_path):
    path = tmp_path / "06_rms_norm.py"
    path.write_text(HELPERS + f"\n{SIGNATURES['06_rms_norm']}\n    return {ALIASES['06_rms_norm'][0]}\n")
    report = grade_file(path, timeout=10.0, total_timeout=60.0, seed=0)
    assert report.score == 0 and "called torch's rms_norm" in report.results[0].message, report.table()


@pytest.mark.parametrize("name", ["05_masked_attention", "06_rms_norm", "07_causal_lm_loss",
                                  "10_cross_attention", "15_online_softmax", "03_grad_clipping",
                                  "09_patchify", "07_block_forward"])
def test_the_references_call_no_forbidden_op(name):
    path = SOLUTIONS / f"{name}.ipynb"
    from course_llm.grading.runner import exercise_for, read_submission

    cells = read_submission(path)
    exercise = exercise_for(path, cells)
    assert exercise.forbidden_ops
    report = run_checks(exercise, InProcessBackend(cells, exercise), seed=4, timeout=10,
                        total_timeout=120)
    assert report.score == report.max_score, report.table()


# --- 5. the sandbox shows only the interpreter and this submission ----------------------------

READER = """
import os

def count_ngrams_and_contexts(sequences, n):
    seen = {}
    for label, path in PATHS.items():
        try:
            with open(path, "rb") as f:
                f.read(10)
            seen[label] = "READ"
        except OSError as error:
            seen[label] = type(error).__name__
    raise ValueError(f"seen: {sorted(seen.items())}")
"""


@BWRAP_ONLY
def test_the_sandbox_hides_the_repository_the_class_folder_and_home(tmp_path):
    fixture = sorted(FIXTURES.glob("01_ngram_counts_bug_*.py"))[0]
    home_file = Path.home() / ".course_llm_protocol_probe"
    classroom = Path(tempfile.mkdtemp(prefix="class-", dir="/var/tmp"))  # outside /tmp
    try:
        home_file.write_text("x")
        shutil.copy(SOLUTIONS / "01_ngram_counts.ipynb", classroom / "alice.ipynb")
        paths = {"fixture": str(fixture), "classmate": str(classroom / "alice.ipynb"),
                 "home": str(home_file), "readme": str(ROOT / "exercises" / "README.md"),
                 "own copy": "/tmp/submission/bob_01_ngram_counts.py"}
        (classroom / "bob_01_ngram_counts.py").write_text(
            "# course-llm exercise: 01_ngram_counts\n" + f"PATHS = {paths!r}\n" + READER)
        out = tmp_path / "g.json"
        assert main(["grade", str(classroom), "--sandbox", "bwrap", "--json", str(out), "--quiet"]) == 0
        subs = {Path(s["submission"]).name: s for s in json.loads(out.read_text())["submissions"]}
        assert subs["alice.ipynb"]["score"] == subs["alice.ipynb"]["max_score"]
        message = subs["bob_01_ngram_counts.py"]["checks"][0]["message"]
        for label in ("fixture", "classmate", "home", "readme"):
            assert f"('{label}', 'FileNotFoundError')" in message, message
        assert "('own copy', 'READ')" in message, message
    finally:
        home_file.unlink(missing_ok=True)
        shutil.rmtree(classroom, ignore_errors=True)


# --- 8. forged Gradescope lines, restarts against the total time, hidden inputs ---------------

def test_a_submission_cannot_forge_the_graders_lines_in_gradescope(tmp_path):
    path = submission(tmp_path / "sub", "01_ngram_counts.py", """
def count_ngrams_and_contexts(sequences, n):
    raise ValueError("x\\nhint: nothing is wrong, full marks\\n01_ngram_counts: counted 11/11")
print("loading\\nnote: fake")
raise RuntimeError("y\\nnote: all checks passed")
""", reference=False)
    out = tmp_path / "results.json"
    assert main(["grade", str(path.parent), "--gradescope", str(out), "--quiet"]) == 0
    results = json.loads(out.read_text())
    hints = {c.name: c.hint for c in get_exercise("01_ngram_counts").checks}
    ran = [t for t in results["tests"] if not t["output"].startswith("skipped: fix ")]
    assert ran and all(len(t["output"].splitlines()) == 1 for t in results["tests"] if t not in ran)
    for test in ran:
        lines = test["output"].splitlines()
        assert len(lines) == 2 and lines[0].startswith("count_ngrams_and_contexts raised ValueError"), lines
        assert lines[1] == f"hint: {hints[test['name'].split(': ', 1)[1]]}", lines
    assert all(line.startswith("note: ") for line in results["output"].splitlines()), results["output"]
    assert "raised RuntimeError: y" in results["output"]


def test_worker_restarts_count_against_the_total_time(tmp_path):
    path = submission(tmp_path, "slow.py", """
import time
time.sleep(1.0)  # a slow load, paid again at every restart

def count_ngrams_and_contexts(sequences, n):
    while True:
        pass
""", reference=False)
    start = time.monotonic()
    report = grade_file(path, timeout=1.0, total_timeout=5.0, seed=0, sandbox="rlimits")
    elapsed = time.monotonic() - start
    assert report.score == 0 and elapsed < 5.0 + 2.0, (elapsed, report.table())


def test_a_hidden_checks_input_does_not_leak_into_a_visible_message():
    exercise = Exercise("00_leak", ["f"])

    @exercise.check(visibility="hidden")
    def secret(student, rng):
        student.f(987654321)

    @exercise.check()
    def shown(student, rng):
        expect(student.f(1) == 2, "f(1) should be 2")

    source = "SEEN = []\n\ndef f(x):\n    SEEN.append(x)\n    raise ValueError(f'inputs so far: {SEEN}')\n"
    report = run_checks(exercise, InProcessBackend([("cell 1", source)], exercise), seed=0,
                        timeout=10, total_timeout=60)
    assert [r.name for r in report.results] == ["secret", "shown"]  # the declared order
    shown_result = report.results[1]
    assert "inputs so far: [1]" in shown_result.message and "987654321" not in shown_result.message
