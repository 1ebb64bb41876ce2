"""Project C (`project_c_inference`, issue #36 item 2): the reference grades at full marks and the
generated student notebook at zero on two seeds, each planted bug loses exactly its part's checks,
one sandboxed ``course-llm grade --gradescope`` run of the reference agrees, and the targets the
notebook states are the ones the checks enforce.

The oracles live in the checks (`course_llm.grading.checks.project_c`, `project_c_quant`, `project_c_spec`): the package's uncached
`GPT` forward and its `KVCache` for part 1, the closed-form bound |w - s q| <= s / 2 and the
check's own unpacking for part 2, a brute-force n-gram search, argmax and uncached greedy
`generate` for part 3. Here the course's own files are graded in this process
(`grading_support.grade_trusted`), except the one sandboxed run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from grading_support import (FIXTURES, ROOT, assert_report_of_bug, grade_trusted, reference,
                             student)

from course_llm.grading import get_exercise
from course_llm.grading.checks import project_c, project_c_quant, project_c_spec

NAME = "project_c_inference"
BUGS = sorted(FIXTURES.glob(f"{NAME}_bug_*.py"))
PARTS = {  # the checks of each part, as the notebook announces them
    "kv cache": {"prefill", "decode_step", "chunk", "greedy_generation"},
    "quantization": {"int8_rows", "int4_pack", "int4_dequantize", "quantized_model"},
    "speculative": {"lookup_draft", "greedy_accept", "speculative_output", "target_calls"},
    "hidden": {"hidden_kv_generation", "hidden_speculative", "hidden_quantization"},
}


@pytest.fixture(scope="module")
def graded():
    ref, stub = grade_trusted([reference(NAME), student(NAME)], [None, 1])
    return ref, stub


def test_parts_and_points():
    ex = get_exercise(NAME)
    assert {c.name for c in ex.checks} == set().union(*PARTS.values())
    points = {part: sum(c.points for c in ex.checks if c.name in names)
              for part, names in PARTS.items()}
    assert points == {"kv cache": 10, "quantization": 9, "speculative": 9, "hidden": 5}
    assert {c.name for c in ex.checks if c.visibility == "hidden"} == PARTS["hidden"]


def test_reference_full_marks_and_stub_zero(graded):
    ref, stub = graded
    assert [r.seed for r in ref] != [ref[0].seed] * 2
    for report in ref:
        assert report.score == report.max_score == 33, report.table()
    for report in stub:
        assert report.score == 0, report.table()


def test_every_part_has_a_planted_bug():
    failing = [set(l.split(":", 1)[1].split()) for b in BUGS
               for l in b.read_text().splitlines() if l.startswith("# expect-fail:")]
    for part in ("kv cache", "quantization", "speculative"):
        assert any(f & PARTS[part] for f in failing), part


@pytest.mark.parametrize("bug", BUGS, ids=lambda p: p.stem)
def test_planted_bug_loses_exactly_its_checks(bug):
    (report,) = grade_trusted([bug], [None])[0]
    assert_report_of_bug(bug, report)
    lost = {r.name for r in report.results if not r.passed}
    # one bug, one part: the checks it loses sit in one visible part (and its hidden check)
    visible = [p for p in ("kv cache", "quantization", "speculative") if lost & PARTS[p]]
    assert len(visible) == 1, lost


def test_the_notebook_states_the_targets_the_checks_enforce():
    cells = json.loads(reference(NAME).read_text())["cells"]
    text = "\n".join("".join(c["source"]) for c in cells)
    assert project_c_spec.COPY_PROMPT.replace("\n", "\\n") in text
    assert project_c.CHAR_PROMPT.replace("\n", "\\n") in text
    most = int(project_c_spec.SPEC_MAX_CALL_FRACTION * project_c_spec.SPEC_NEW_TOKENS)
    assert f"at most {most} target calls for {project_c_spec.SPEC_NEW_TOKENS} new tokens" in text
    assert f"at most {project_c_quant.INT8_MAX_LOSS_INCREASE} nats per character" in text
    assert f"int4: at most {project_c_quant.INT4_MAX_LOSS_INCREASE})" in text
    assert f"groups of {project_c_quant.INT4_GROUP}" in text
    assert f"decodes {project_c.GREEDY_NEW_TOKENS} tokens" in text


def test_sandboxed_grade_and_gradescope(tmp_path: Path):
    exe = Path(sys.executable).parent / "course-llm"
    out = tmp_path / "results.json"
    done = subprocess.run([str(exe), "grade", str(reference(NAME)), "--gradescope", str(out)],
                          capture_output=True, text=True, cwd=ROOT, timeout=170)
    assert done.returncode == 0, done.stderr
    assert "33/33" in done.stdout, done.stdout
    tests = json.loads(out.read_text())["tests"]
    assert sum(t["score"] for t in tests) == sum(t["max_score"] for t in tests) == 33
    hidden = {t["name"].split(": ", 1)[1] for t in tests if t.get("visibility") == "hidden"}
    assert hidden == PARTS["hidden"]
