# Planted bug: the reference solution of project_b_finetune with grpo_finetune minimising the objective instead of the loss (the sign flipped).
# course-llm exercise: project_b_finetune
# expect-fail: grpo_gain
# expect-hint: the target is a gain of 15 points
import math
import os

import torch
import torch.nn.functional as F

from course_llm.core import generator, set_seed
from course_llm.generate import generate
from course_llm.gpt import GPT
from course_llm.gpt_config import GPTConfig

N_LETTERS, SEP, EOS = 8, 8, 9
ALPHABET = "abcdefgh>."
CONFIG = dict(vocab_size=10, max_len=14, n_layer=2, d_model=64, n_head=4)


def build_model(config, state=None):
    """A `GPT` from `config` (kwargs of GPTConfig.gpt2_style), loaded with `state`."""
    model = GPT(GPTConfig.gpt2_style(**config))
    if state is not None:
        model.load_state_dict(state)
    return model


def show(ids):
    return "".join(ALPHABET[i] for i in ids)


def is_heldout(strings):
    """True for the held-out strings: (n, L) letters -> (n,) bool."""
    weights = torch.arange(1, strings.size(1) + 1)
    return (strings * weights).sum(1) % 5 == 0


def draw_strings(n, length, gen, heldout=False):
    """`n` random strings of `length` letters (lists of ids), held out or not."""
    s = torch.randint(N_LETTERS, (10 * n, length), generator=gen)
    return s[is_heldout(s) == heldout][:n].tolist()


def make_batch(prompts, answers):
    """Right-pad prompt + answer with EOS: ids (B, T) and response_mask (B, T), True
    at the answer tokens."""
    T = max(len(p) + len(a) for p, a in zip(prompts, answers))
    ids, mask = [], []
    for p, a in zip(prompts, answers):
        pad = T - len(p) - len(a)
        ids.append(list(p) + list(a) + [EOS] * pad)
        mask.append([False] * len(p) + [True] * len(a) + [False] * pad)
    return torch.tensor(ids), torch.tensor(mask)


def reverse_reward(prompts, responses):
    """1.0 when a response starts with the reversed prompt letters and EOS, else 0.0."""
    rewards = []
    for p, r in zip(prompts, responses):
        want = list(p[:-1])[::-1] + [EOS]
        rewards.append(float(list(r[: len(want)]) == want))
    return torch.tensor(rewards)


@torch.no_grad()
def greedy_correct(state, config, strings):
    """One bool per string: does the model's greedy answer match exactly?"""
    model = build_model(config, state).eval()
    correct = {}
    for L in sorted({len(s) for s in strings}):
        group = [s for s in strings if len(s) == L]
        prompts = torch.tensor([s + [SEP] for s in group])
        out = generate(model, prompts, L + 1, temperature=0, eos_id=EOS)
        rewards = reverse_reward(prompts.tolist(), out[:, L + 1 :].tolist())
        correct.update({tuple(s): bool(r) for s, r in zip(group, rewards)})
    return [correct[tuple(s)] for s in strings]



def response_nll(logits, ids, response_mask):
    """Mean negative log-likelihood of the response tokens, over the whole batch.

    Args:
        logits: float tensor (B, T, V), the model's outputs on `ids`.
        ids: long tensor (B, T), the token ids.
        response_mask: bool tensor (B, T), True at the response tokens (never at
            position 0, which nothing predicts).

    Returns:
        A scalar tensor, differentiable with respect to `logits`.

    Example:
        >>> logits = torch.zeros(1, 3, 4)  # uniform over 4 tokens
        >>> mask = torch.tensor([[False, True, True]])
        >>> round(response_nll(logits, torch.tensor([[0, 1, 2]]), mask).item(), 4)
        1.3863
    """
    logp = logits[:, :-1].float().log_softmax(-1)
    nll = -logp.gather(-1, ids[:, 1:, None]).squeeze(-1)  # (B, T - 1)
    m = response_mask[:, 1:].to(nll.dtype)  # does the *target* count?
    return (nll * m).sum() / m.sum()

def accumulated_grads(state, config, ids, response_mask, micro_batch_size):
    """The gradient of `response_nll` on the whole batch, accumulated over microbatches.

    Args:
        state: the model's state_dict (tensors).
        config: kwargs of `GPTConfig.gpt2_style`.
        ids: long tensor (B, T).
        response_mask: bool tensor (B, T), as for `response_nll`.
        micro_batch_size: rows per microbatch (the last one may be smaller).

    Returns:
        A dict ``{name: gradient}`` over ``model.named_parameters()``, float tensors of
        the parameters' shapes.

    Example:
        >>> cfg = dict(vocab_size=10, max_len=8, n_layer=1, d_model=16, n_head=2)
        >>> ids, mask = make_batch([[0, SEP], [1, 2, SEP]], [[0, EOS], [2, 1, EOS]])
        >>> state = build_model(cfg).state_dict()
        >>> grads = accumulated_grads(state, cfg, ids, mask, 1)
        >>> sorted(grads)[:2]
        ['blocks.0.attn.c_proj.bias', 'blocks.0.attn.c_proj.weight']
    """
    model = build_model(config, state)
    total = response_mask[:, 1:].sum()  # response tokens of the whole batch
    for i in range(0, len(ids), micro_batch_size):
        x = ids[i : i + micro_batch_size]
        m = response_mask[i : i + micro_batch_size]
        n = m[:, 1:].sum()
        if n == 0:
            continue
        (response_nll(model(x)[0], x, m) * n / total).backward()
    return {
        name: p.grad.clone() if p.grad is not None else torch.zeros_like(p)
        for name, p in model.named_parameters()
    }

def clipped_policy_loss(
    logprobs, old_logprobs, rewards, mask, group_size, eps_low=0.2, eps_high=0.28
):
    """The clipped surrogate loss with group-mean baselines, mean over response tokens.

    Args:
        logprobs: float tensor (N, T), log pi_theta of the sampled tokens (with
            gradient).
        old_logprobs: float tensor (N, T), the same under the sampling policy
            (constant).
        rewards: float tensor (N,), groups of `group_size` consecutive responses.
        mask: bool tensor (N, T), True at the response tokens.
        group_size: G, responses per prompt; divides N.
        eps_low: the ratio is clipped below at 1 - eps_low.
        eps_high: ... and above at 1 + eps_high.

    Returns:
        A scalar tensor.

    Example:
        >>> lp = torch.full((2, 3), -1.0)
        >>> mask = torch.ones(2, 3, dtype=torch.bool)
        >>> clipped_policy_loss(lp, lp, torch.tensor([1.0, 0.0]), mask, 2)
        tensor(-0.)
    """
    r = rewards.reshape(-1, group_size)
    adv = (r - r.mean(1, keepdim=True)).reshape(-1, 1)
    ratio = torch.exp(logprobs - old_logprobs.detach())
    clipped = ratio.clamp(1 - eps_low, 1 + eps_high)
    surrogate = torch.minimum(ratio * adv, clipped * adv)
    m = mask.to(surrogate.dtype)
    return -(surrogate * m).sum() / m.sum()

def wilson_interval(k, n, z=1.96):
    """The Wilson score interval of an accuracy of `k` right out of `n`.

    Args:
        k: int, 0 <= k <= n.
        n: int >= 1.
        z: the normal quantile of the level (1.96 for 95%).

    Returns:
        ``(low, high)``, two floats with 0 <= low <= k / n <= high <= 1.

    Example:
        >>> [round(x, 4) for x in wilson_interval(0, 10)]
        [0.0, 0.2775]
    """
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (max(0.0, centre - half), min(1.0, centre + half))


def mcnemar_p(correct_a, correct_b):
    """McNemar's exact two-sided p-value for two models scored on the same items.

    Args:
        correct_a: list of bools, model A right on item i.
        correct_b: list of bools of the same length, model B right on item i.

    Returns:
        A float in (0, 1].

    Example:
        >>> round(mcnemar_p([True] * 8 + [False] * 2, [False] * 8 + [True] * 2), 4)
        0.1094
    """
    b = sum(1 for x, y in zip(correct_a, correct_b) if x and not y)
    c = sum(1 for x, y in zip(correct_a, correct_b) if y and not x)
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)

def sft_finetune(state, config, prompts, answers, steps, seed):
    """`steps` AdamW steps of SFT (part 1's loss) on batches of 32 random pairs.

    Args:
        state: the starting state_dict.
        config: kwargs of `GPTConfig.gpt2_style`.
        prompts: list of prompts (lists of ids, each ending with SEP).
        answers: list of answers (lists of ids, each ending with EOS), one per prompt.
        steps: number of optimizer steps.
        seed: seeds the choice of the batches.

    Returns:
        The trained model's state_dict.
    """
    model = build_model(config, state).train()
    gen = generator(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    for _ in range(steps):
        ix = torch.randint(len(prompts), (32,), generator=gen).tolist()
        ids, mask = make_batch([prompts[i] for i in ix], [answers[i] for i in ix])
        loss = response_nll(model(ids)[0], ids, mask)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def grpo_finetune(state, config, prompts, steps, seed):
    """`steps` GRPO steps: 8 prompts x 8 samples, `reverse_reward`, part 3's loss.

    Args:
        state: the starting state_dict (an SFT model).
        config: kwargs of `GPTConfig.gpt2_style`.
        prompts: list of prompts (lists of ids, each ending with SEP).
        steps: number of optimizer steps.
        seed: seeds the choice of prompts and the sampling.

    Returns:
        The trained model's state_dict.
    """
    model = build_model(config, state)
    gen = generator(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.0)
    by_length = {}
    for p in prompts:
        by_length.setdefault(len(p), []).append(p)
    lengths = sorted(by_length)
    for step in range(steps):
        pool = by_length[lengths[step % len(lengths)]]
        P = len(pool[0])
        ix = torch.randint(len(pool), (8,), generator=gen).tolist()
        group = torch.tensor([pool[i] for i in ix]).repeat_interleave(8, 0)
        model.eval()
        with torch.no_grad():
            ids = generate(model, group, P, temperature=1.0, eos_id=EOS, generator=gen)
        ids = ids.clone()
        responses = ids[:, P:]
        is_eos = (responses == EOS).long()
        mask = (is_eos.cumsum(1) - is_eos) == 0  # up to and including the first EOS
        rewards = reverse_reward(group.tolist(), responses.tolist())
        model.train()
        logp = model(ids)[0][:, :-1].log_softmax(-1)
        logp = logp.gather(-1, ids[:, 1:, None]).squeeze(-1)[:, P - 1 :]
        loss = -clipped_policy_loss(logp, logp.detach(), rewards, mask, 8)  # BUG: sign
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    return {k: v.detach().clone() for k, v in model.state_dict().items()}
