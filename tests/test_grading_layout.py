"""The grader's modules after the split of issue #17: each module stays under about 400 lines,
every public name of a module that was split is still importable from it (the lists below are
those modules' `__all__` before the split), and the checks each exercise owns did not move between
exercises."""

import importlib
from pathlib import Path

import pytest

GRADING = Path(__file__).resolve().parents[1] / "course_llm" / "grading"

OLD_PUBLIC_NAMES = {'checks.ch02': ['bpe_merge_exercise', 'encode_exercise', 'gpt2_case', 'gpt2_merges',
                 'ignores_dict_order', 'learned_merges', 'merge_absent_or_short',
                 'merge_overlapping', 'merge_random', 'nothing_to_merge', 'pair_counts_overlapping',
                 'pair_counts_random', 'pair_counts_short', 'priority_by_rank', 'random_ids',
                 'random_text', 'rank_sensitive', 'repeated_bytes', 'works_on_bytes'],
 'checks.ch07': ['all_but_one_ignored', 'block_exercise', 'causal', 'gelu_tanh', 'gradient',
                 'hf_padded_batch', 'ignore_index_is_a_token_id', 'ignored_targets',
                 'loss_exercise', 'matches_the_block', 'shift', 'single_token', 'values',
                 'wide_heads'],
 'checks.ch08': ['beam_step_exercise', 'best_candidates', 'decoding_loop', 'first_step',
                 'input_unchanged', 'kv_append_exercise', 'one_beam_dominates', 'overflow_raises',
                 'p_one_keeps_all', 'returns_prefix', 'rows_independent', 'scores_consistent',
                 'ties', 'top_p_exercise', 'min_keep_floor', 'values', 'writes_in_place'],
 'checks.ch10': ['WORDS', 'all_noise', 'cross_exercise', 'encoder_padding', 'spans_at_edges',
                 'multi_head', 'no_noise', 'not_causal', 'random_masks', 'single_head',
                 'span_exercise', 'unscaled'],
 'core': ['Check', 'CheckFailed', 'CheckResult', 'Exercise', 'GradingError', 'LocalBackend',
          'Report', 'Student', 'StudentError', 'VISIBILITIES', 'check', 'exercises', 'expect',
          'expect_close', 'expect_tensor_close', 'get_exercise', 'register', 'run_checks',
          'torch_generator'],
 'isolation': ['Limits', 'MARKER', 'NOBODY', 'PR_SET_CHILD_SUBREAPER', 'PidsCgroup',
               'become_subreaper', 'limit_resources', 'package_view', 'reap_orphans',
               'sandbox_mode', 'strip_definitions', 'worker_command'],
 'sandbox': ['BoundedOutput', 'CallOutcome', 'decode_result', 'dump_plain', 'encode_result',
             'forbid', 'guarded_call', 'printable', 'same', 'short'],
 'worker': ['WorkerBackend', 'load_submission', 'serve_call', 'short_error', 'worker_main']}


@pytest.mark.parametrize("path", sorted(GRADING.rglob("*.py")), ids=lambda p: p.name)
def test_grading_modules_stay_under_400_lines(path):
    n = len(path.read_text(encoding="utf-8").splitlines())
    assert n <= 400, f"{path.relative_to(GRADING)} has {n} lines: split it along a real seam"


@pytest.mark.parametrize("module", sorted(OLD_PUBLIC_NAMES))
def test_old_public_names_each_have_one_home(module):
    """Issue #32: the names these modules used to re-export still exist, defined and public
    in a grading module of their own (check names such as `values` recur across chapters);
    the old module no longer re-exports names it does not define."""
    import ast

    defined = {}
    for path in sorted(GRADING.rglob("*.py")):
        name = ".".join(path.relative_to(GRADING).with_suffix("").parts)
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            names = ([node.name] if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else
                     [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)])
            for n in names:
                defined.setdefault(n, []).append(name)
    for n in OLD_PUBLIC_NAMES[module]:
        homes = [h for h in defined.get(n, []) if h != "__init__"]
        public = [h for h in homes
                  if n in importlib.import_module(f"course_llm.grading.{h}").__all__]
        assert public, f"{n}: defined in {homes}, public in none"
    mod = importlib.import_module(f"course_llm.grading.{module}")
    assert all(defined.get(n) and module in defined[n] for n in mod.__all__)


