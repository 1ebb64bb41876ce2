"""course_llm.logprobs (section 13.2): the log-probability helpers shared by rlhf, ppo and grpo,
against oracles (torch's cross-entropy, one prefix at a time through the model)."""
import pytest
import torch
import torch.nn.functional as F

import course_llm.grpo as grpo
import course_llm.ppo as ppo
import course_llm.rlhf as rlhf
from course_llm.gpt import GPT, GPTConfig
from course_llm.logprobs import check_rl_models, sequence_logprobs, token_logprobs


def tiny(vocab_size=7, seed=0):
    torch.manual_seed(seed)
    cfg = GPTConfig.gpt2_style(vocab_size=vocab_size, block_size=8, n_layer=1, d_model=16)
    return GPT(cfg).eval()


def test_token_logprobs_is_minus_the_cross_entropy():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 6, 11, generator=g)
    ids = torch.randint(0, 11, (3, 6), generator=g)
    oracle = -F.cross_entropy(logits[:, :-1].reshape(-1, 11), ids[:, 1:].reshape(-1),
                              reduction="none").view(3, 5)
    assert torch.allclose(token_logprobs(logits, ids), oracle, atol=1e-6)


def test_token_logprobs_accepts_masked_logits():
    logits = torch.zeros(1, 3, 4)
    logits[..., 3] = float("-inf")  # a banned token: probability 0, the others 1/3
    out = token_logprobs(logits, torch.tensor([[0, 1, 2]]))
    assert torch.allclose(out, torch.full((1, 2), -torch.log(torch.tensor(3.0))))


def test_sequence_logprobs_is_the_sum_over_prefixes_one_at_a_time():
    m = tiny()
    ids = torch.tensor([[1, 2, 3, 4, 5], [6, 5, 4, 3, 2]])
    mask = torch.tensor([[False, False, True, True, True], [False, True, True, False, False]])
    with torch.no_grad():
        got = sequence_logprobs(m, ids, mask)
        oracle = torch.zeros(2)
        for b in range(2):
            for t in range(1, 5):
                if mask[b, t]:
                    oracle[b] += m(ids[b:b + 1, :t])[0][0, -1].log_softmax(-1)[ids[b, t]]
    assert torch.allclose(got, oracle, atol=1e-5)


def test_the_old_homes_re_export_the_same_objects():
    for name in ("token_logprobs", "sequence_logprobs", "check_rl_models"):
        assert getattr(ppo, name) is getattr(rlhf, name) is globals()[name]
        assert name in ppo.__all__ and name in rlhf.__all__
    assert grpo.token_logprobs is token_logprobs and grpo.check_rl_models is check_rl_models


@pytest.mark.parametrize("logits, ids, error, phrase", [
    (torch.zeros(2, 4), torch.zeros(2, 4, dtype=torch.long), ValueError, "logits"),        # 2-D
    (torch.zeros(1, 3, 4, dtype=torch.long), torch.zeros(1, 3, dtype=torch.long), TypeError, "logits"),
    (torch.zeros(1, 3, 4), torch.zeros(1, 3), TypeError, "ids"),                          # float ids
    (torch.zeros(1, 3, 4), torch.zeros(1, 2, dtype=torch.long), ValueError, "ids"),        # shape
    (torch.zeros(1, 3, 4), torch.tensor([[0, 4, 1]]), ValueError, "ids"),                  # id >= V
    (torch.zeros(1, 3, 4), torch.tensor([[0, -1, 1]]), ValueError, "ids"),                 # negative
    (torch.full((1, 3, 4), float("nan")), torch.zeros(1, 3, dtype=torch.long), ValueError, "NaN"),
    (torch.full((1, 3, 4), float("inf")), torch.zeros(1, 3, dtype=torch.long), ValueError, "inf"),
    (torch.zeros(1, 1, 4), torch.zeros(1, 1, dtype=torch.long), ValueError, "2 positions"),
])
def test_token_logprobs_rejects_bad_input(logits, ids, error, phrase):
    with pytest.raises(error, match=phrase):
        token_logprobs(logits, ids)


@pytest.mark.parametrize("ids, mask, error, phrase", [
    (torch.tensor([1, 2, 3]), torch.tensor([False, True, True]), ValueError, "ids"),          # 1-D
    (torch.tensor([[1.0, 2.0, 3.0]]), torch.tensor([[False, True, True]]), TypeError, "ids"),
    (torch.tensor([[1, 2, 3]]), torch.tensor([[0, 1, 1]]), TypeError, "response_mask"),       # not bool
    (torch.tensor([[1, 2, 3]]), torch.tensor([[False, True]]), ValueError, "response_mask"),  # shape
    (torch.tensor([[1, 2, 3]]), torch.tensor([[True, True, True]]), ValueError, "position 0"),
])
def test_sequence_logprobs_rejects_bad_input(ids, mask, error, phrase):
    with pytest.raises(error, match=phrase):
        sequence_logprobs(tiny(), ids, mask)


def test_check_rl_models_accepts_a_matching_pair():
    m = tiny()
    assert check_rl_models(m, tiny(seed=1), len, "reward_fn", "be callable") is None


@pytest.mark.parametrize("args, error, phrase", [
    (("policy", "ref"), TypeError, "`policy` must be a course_llm.gpt.GPT"),
    (("model", None), TypeError, "`ref` must be a course_llm.gpt.GPT, got NoneType"),
    (("model", "other vocab"), ValueError, "share a vocabulary, got 7 and 9"),
])
def test_check_rl_models_rejects_bad_models(args, error, phrase):
    models = {"model": tiny(), "other vocab": tiny(vocab_size=9), "policy": "policy", "ref": None}
    policy, ref = (models.get(a, a) for a in args)
    with pytest.raises(error, match=phrase):
        check_rl_models(policy, ref, len, "reward_fn", "be callable")


def test_check_rl_models_rejects_a_reward_that_is_not_callable():
    with pytest.raises(TypeError, match="`reward_model` must map ids"):
        check_rl_models(tiny(), tiny(), 3.0, "reward_model", "map ids to rewards")
