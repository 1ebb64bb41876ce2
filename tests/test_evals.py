"""Tests of course_llm.evals against brute-force loops and closed forms."""
import math
from types import SimpleNamespace

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from course_llm.evals import (bootstrap_ci, choice_logprobs, exact_match, extract_choice,
                              extract_number, greedy_generator, multiple_choice,
                              normalize_answer, perplexity, sliding_nll)
from course_llm.eval_tasks import task, tasks
from course_llm.gpt import GPT
from course_llm.gpt_config import GPTConfig
from course_llm.tokenizers import CharTokenizer


class FixedModel(nn.Module):
    """Predicts the same next-token distribution `probs` everywhere (known outputs)."""

    def __init__(self, probs, max_len=16):
        super().__init__()
        self.logits = nn.Parameter(torch.as_tensor(probs, dtype=torch.float32).log())
        self.config = SimpleNamespace(max_len=max_len, vocab_size=len(probs))

    def forward(self, idx, targets=None):
        assert idx.size(1) <= self.config.max_len
        return self.logits.expand(*idx.shape, -1), None


@pytest.fixture(scope="module")
def gpt():
    torch.manual_seed(0)
    return GPT(GPTConfig.gpt2_style(vocab_size=6, max_len=8, n_layer=1, d_model=16, n_head=2)).eval()


TOK = CharTokenizer("abcdef")
TEXT = "abcafedcbadeffacbdeabcfedabacadaeaf"        # 35 characters


def test_closed_form_fixed_model():
    probs = torch.tensor([0.4, 0.3, 0.1, 0.1, 0.05, 0.05])
    model = FixedModel(probs, max_len=8)
    ids = torch.tensor(TOK.encode(TEXT))
    for stride in (1, 3, 8):   # every token after the first is scored once (stride < max_len)
        want_n = len(ids) - 1 if stride < 8 else len(ids) - math.ceil((len(ids) - 1) / 8)
        nll, n = sliding_nll(model, ids, max_len=8, stride=stride)
        assert n == want_n
    want = (-probs[ids[1:]].log().mean()).exp().item()
    assert perplexity(model, TOK, TEXT, stride=4, max_len=8) == pytest.approx(want, rel=1e-5)
    uniform = FixedModel(torch.full((6,), 1 / 6))
    assert perplexity(uniform, TOK, TEXT, stride=16, max_len=16) == pytest.approx(6.0, rel=1e-5)


def test_stride_equal_max_len_is_direct_chunks(gpt):
    ids = torch.tensor(TOK.encode(TEXT))
    total, count = 0.0, 0
    for chunk in ids.split(8):                                   # the direct loop
        if len(chunk) > 1:
            _, loss = gpt(chunk[None, :-1], chunk[None, 1:])
            total, count = total + loss.item() * (len(chunk) - 1), count + len(chunk) - 1
    nll, n = sliding_nll(gpt, ids, max_len=8, stride=8)
    assert n == count and nll == pytest.approx(total, rel=1e-5)
    assert perplexity(gpt, TOK, TEXT, stride=8, max_len=8) == pytest.approx(math.exp(total / count), rel=1e-5)


@pytest.mark.parametrize("stride", [1, 3, 5])
def test_sliding_window_brute_force(gpt, stride):
    ids = torch.tensor(TOK.encode(TEXT))
    L, nll = 8, 0.0
    with torch.no_grad():
        for t in range(1, len(ids)):     # HF windows: token t is scored from ids[b:t] of its first window
            b = 0 if t < L else ((t - L) // stride + 1) * stride
            logits = gpt(ids[None, b:t])[0][0, -1]
            nll += F.cross_entropy(logits, ids[t]).item()
    got, n = sliding_nll(gpt, ids, max_len=L, stride=stride)
    assert n == len(ids) - 1 and got == pytest.approx(nll, rel=1e-5)


def test_choice_logprobs_brute_force(gpt):
    prompt, choices = [1, 2, 3], [[4], [5, 0, 1], [2, 2]]
    got = choice_logprobs(gpt, prompt, choices)
    with torch.no_grad():
        for g, c in zip(got, choices):
            row = torch.tensor(prompt + c)
            logp = gpt(row[None, :-1])[0][0].log_softmax(-1)
            want = sum(logp[len(prompt) - 1 + i, tok].item() for i, tok in enumerate(c))
            assert g == pytest.approx(want, abs=1e-5)
    fast = choice_logprobs(gpt, prompt, [[4], [5]])               # single tokens: the fast path
    slow = choice_logprobs(gpt, prompt, [[4], [5], [5, 0]])[:2]
    assert fast == pytest.approx(slow, abs=1e-5)


def test_multiple_choice_sum_against_norm():
    items = [{"prompt": "ab", "choices": [" abcd", " ab"], "answer": 0}]
    tok = CharTokenizer("abcdef ")
    model = FixedModel(torch.full((7,), 1 / 7))                   # every token costs log 7
    r = multiple_choice(model, tok, items)
    assert r["pred"] == [1] and r["correct"] == [0] and r["acc"] == 0.0   # the sum favours short
    assert r["pred_norm"] == [0] and r["acc_norm"] == 1.0                 # a tie per char: first
    assert r["logprobs"][0] == pytest.approx([-5 * math.log(7), -3 * math.log(7)], rel=1e-5)


def test_exact_match_and_normalize():
    items = [{"prompt": "2 plus 2 is", "answer": "4"}, {"prompt": "3 plus 3 is", "answer": "6"}]
    r = exact_match(lambda p: " 4.\n5 plus", items)
    assert r == {"accuracy": 0.5, "predictions": ["4", "4"], "correct": [1, 0]}
    assert normalize_answer("  cba \nabc") == "cba"


def test_bootstrap_brute_force_small_case():
    # scores (0, 0, 1): the 27 equally likely resamples give means 0, 1/3, 2/3, 1 with
    # probabilities 8/27, 12/27, 6/27, 1/27; the 20% and 80% quantiles are 0 and 2/3.
    mean, low, high = bootstrap_ci([0, 0, 1], n_boot=20000, alpha=0.4, seed=1)
    assert mean == pytest.approx(1 / 3) and low == 0.0 and high == pytest.approx(2 / 3)


def test_bootstrap_bernoulli_closed_form():
    n, k = 100, 30                 # bootstrap means of Bernoulli data ~ Binomial(n, k/n) / n
    cdf, quantiles = 0.0, {}
    for j in range(n + 1):
        cdf += math.comb(n, j) * 0.3 ** j * 0.7 ** (n - j)
        for q in (0.025, 0.975):
            if cdf >= q and q not in quantiles:
                quantiles[q] = j / n
    mean, low, high = bootstrap_ci([1] * k + [0] * (n - k), n_boot=20000, seed=0)
    assert mean == pytest.approx(0.3)
    assert abs(low - quantiles[0.025]) <= 0.011 and abs(high - quantiles[0.975]) <= 0.011
    half = 1.96 * math.sqrt(0.3 * 0.7 / n)                        # the normal approximation
    assert abs((high - low) / 2 - half) < 0.01


def test_tasks_formats_and_reproducible():
    from course_llm.zoo import load
    _, char_tok = load("gpt-shakespeare-char")
    import course_llm.eval_tasks
    assert task is course_llm.eval_tasks.task                    # re-exported by evals
    assert set(tasks()) == {"shakespeare_cloze", "sentiment", "arithmetic", "string_rules",
                            "uppercase"}
    for name, kind in tasks().items():
        items = task(name, n=5, seed=3)
        assert items == task(name, n=5, seed=3) and items != task(name, n=5, seed=4)
        for item in items:
            char_tok.encode(item["prompt"])                      # the char model can read it
            if kind == "mc":
                assert set(item) == {"prompt", "choices", "answer"}
                assert 0 <= item["answer"] < len(item["choices"])
            else:
                assert set(item) == {"prompt", "answer"} and isinstance(item["answer"], str)
    for t in range(3):
        assert [i["answer"] for i in task("sentiment", 8, 0, t)] == [i["answer"] for i in task("sentiment", 8)]
    from course_llm.data import corpus_splits
    test_text = corpus_splits("shakespeare")[2]
    for item in task("shakespeare_cloze", n=5):
        assert item["prompt"] + item["choices"][item["answer"]] in test_text
    for item in task("arithmetic", n=5):
        a, b = item["prompt"].rsplit("\n", 1)[1].removesuffix(" is").split(" plus ")
        assert int(item["answer"]) == int(a) + int(b)
    for item in task("uppercase", n=50):                          # chapter 18's task
        word = item["prompt"].removesuffix(":")
        assert len(word) == 4 and word.islower() and item["answer"] == word.upper()


def test_bad_inputs(gpt):
    with pytest.raises(ValueError, match="choices"):
        multiple_choice(gpt, TOK, [{"prompt": "ab", "answer": 0}])
    with pytest.raises(ValueError, match="choices"):
        multiple_choice(gpt, TOK, [{"prompt": "ab", "choices": [], "answer": 0}])
    with pytest.raises(ValueError, match="answer"):
        multiple_choice(gpt, TOK, [{"prompt": "ab", "choices": ["a", "b"], "answer": 2}])
    with pytest.raises(ValueError, match="items"):
        multiple_choice(gpt, TOK, [])
    with pytest.raises(ValueError, match="text"):
        perplexity(gpt, TOK, "")
    with pytest.raises(ValueError, match="stride"):
        perplexity(gpt, TOK, TEXT, stride=9, max_len=8)
    with pytest.raises(ValueError, match="stride"):
        perplexity(gpt, TOK, TEXT, stride=0, max_len=8)
    with pytest.raises(ValueError, match="max_len"):
        perplexity(gpt, TOK, TEXT, stride=4, max_len=9)
    with pytest.raises(ValueError, match="at least 2 tokens"):
        perplexity(gpt, TOK, "a")
    with pytest.raises(TypeError, match="encode"):
        perplexity(gpt, object(), TEXT)
    with pytest.raises(TypeError, match="encode"):
        multiple_choice(gpt, object(), [{"prompt": "ab", "choices": ["a", "b"], "answer": 0}])
    with pytest.raises(TypeError, match="encode"):
        perplexity(gpt, SimpleNamespace(encode=lambda s: s.encode()), TEXT)
    with pytest.raises(TypeError, match="generate_fn"):
        exact_match("not a function", [{"prompt": "a", "answer": "b"}])
    with pytest.raises(ValueError, match="answer"):
        exact_match(lambda p: p, [{"prompt": "a", "answer": 3}])
    for bad in ([], [float("nan"), 1.0], [[1, 0]]):
        with pytest.raises(ValueError, match="scores"):
            bootstrap_ci(bad)
    for alpha in (0, 1, float("nan")):
        with pytest.raises(ValueError, match="alpha"):
            bootstrap_ci([0, 1], alpha=alpha)
    with pytest.raises(ValueError, match="n_boot"):
        bootstrap_ci([0, 1], n_boot=0)
    with pytest.raises(ValueError, match="name"):
        task("mmlu")
    with pytest.raises(ValueError, match="template"):
        task("arithmetic", template=1)
    with pytest.raises(ValueError, match="template"):
        task("sentiment", template=3)


# --- issue #31: ids are checked, not wrapped, truncated or left to a raw IndexError ---------

def test_choice_logprobs_rejects_ids_outside_the_vocabulary(gpt):
    for bad in (-1, 6, 99):                                       # vocab_size is 6
        with pytest.raises(ValueError, match="choice_ids"):
            choice_logprobs(gpt, [1, 2], [[3], [bad]])
        with pytest.raises(ValueError, match="choice_ids"):
            choice_logprobs(gpt, [1, 2], [[3, 1], [bad, 2]])      # the slow path too
        with pytest.raises(ValueError, match="prompt_ids"):
            choice_logprobs(gpt, [1, bad], [[3], [4]])
    with pytest.raises(TypeError, match="choice_ids"):
        choice_logprobs(gpt, [1, 2], [[3.0], [4]])
    with pytest.raises(TypeError, match="prompt_ids"):
        choice_logprobs(gpt, torch.tensor([1.0, 2.0]), [[3], [4]])
    with pytest.raises(ValueError, match="choice_ids"):
        choice_logprobs(gpt, [1, 2], [[3], []])
    with pytest.raises(ValueError, match="choice_ids"):
        choice_logprobs(gpt, [1, 2], [])
    with pytest.raises(ValueError, match="context"):
        choice_logprobs(gpt, [1] * 8, [[3, 4]])                   # 9 tokens fed, max_len 8


def test_sliding_nll_rejects_float_and_out_of_range_ids(gpt):
    ids = torch.tensor(TOK.encode(TEXT))
    with pytest.raises(TypeError, match="ids"):
        sliding_nll(gpt, ids.float() + 0.5, max_len=8, stride=4)  # used to be truncated
    with pytest.raises(TypeError, match="ids"):
        sliding_nll(gpt, [0, 1.7, 2], max_len=8, stride=4)
    with pytest.raises(TypeError, match="ids"):
        sliding_nll(gpt, [0, True, 2], max_len=8, stride=4)
    with pytest.raises(ValueError, match="ids"):
        sliding_nll(gpt, [0, -1, 2], max_len=8, stride=4)
    with pytest.raises(ValueError, match="ids"):
        sliding_nll(gpt, [0, 6, 2], max_len=8, stride=4)
    assert sliding_nll(gpt, ids.int(), max_len=8, stride=4) == pytest.approx(
        sliding_nll(gpt, ids.tolist(), max_len=8, stride=4))


# --- the batched and cached paths against a forward pass per choice --------------------------

def _brute(model, prompt, choice):
    row = torch.tensor(prompt + choice)
    with torch.no_grad():
        logp = model(row[None, :-1])[0][0].float().log_softmax(-1)
    return sum(logp[len(prompt) - 1 + i, t].item() for i, t in enumerate(choice))


def test_multiple_choice_batched_and_cached_equal_brute_force():
    torch.manual_seed(1)
    llama = GPT(GPTConfig.llama_style(vocab_size=7, max_len=16, n_layer=2, d_model=16,
                                      n_head=4, n_kv_head=2)).eval()   # RoPE, GQA
    fixed = FixedModel(torch.tensor([0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1]), max_len=16)
    tok = CharTokenizer("abcdef ")
    items = [{"prompt": "abc", "choices": [" a", " bcd", "e"], "answer": 1},
             {"prompt": "fedcba ab", "choices": ["a", "b"], "answer": 0},   # fast path
             {"prompt": "a", "choices": [" fed", " f", "ab"], "answer": 2},
             {"prompt": "cc dd", "choices": ["e", "f", "a"], "answer": 2}]
    for model in (llama, fixed):
        r = multiple_choice(model, tok, items)
        for item, got in zip(items, r["logprobs"]):
            want = [_brute(model, tok.encode(item["prompt"]), tok.encode(c))
                    for c in item["choices"]]
            assert got == pytest.approx(want, abs=1e-4)
            assert choice_logprobs(model, tok.encode(item["prompt"]),
                                   [tok.encode(c) for c in item["choices"]]) == pytest.approx(want, abs=1e-4)


def test_greedy_generator_batched_equals_a_plain_argmax_loop():
    torch.manual_seed(2)
    model = GPT(GPTConfig.gpt2_style(vocab_size=6, max_len=16, n_layer=1, d_model=16,
                                     n_head=2)).eval()
    fn = greedy_generator(model, TOK, max_new_tokens=4)
    prompts = ["abc", "fed", "ab", "cab", "e"]

    def argmax_loop(prompt):                                      # no cache, no batch
        ids = TOK.encode(prompt)
        with torch.no_grad():
            for _ in range(4):
                ids.append(int(model(torch.tensor([ids]))[0][0, -1].argmax()))
        return TOK.decode(ids[len(prompt):])

    want = [argmax_loop(p) for p in prompts]
    assert fn(prompts) == want and [fn(p) for p in prompts] == want
    assert fn.batched is True


# --- answer extraction, against hand-checked answers ----------------------------------------

@pytest.mark.parametrize("text, want", [
    ("Natalia sold 48/2 = 24 clips in May. Natalia sold 48+24 = 72 clips altogether.", "72"),
    ("Natalia sold twenty-four clips in May.", None),
    ("She pays 3 * 4 = 12 dollars.\n#### 12", "12"),
    ("#### 1,234", "1234"),
    ("The answer is 1,234,567 grains.", "1234567"),
    ("#### -5", "-5"),
    ("The temperature is \u22128 degrees", "-8"),              # the Unicode minus sign
    ("It costs $3.50 each, $7.00 for two.", "7"),
    ("#### 3.50", "3.5"),
    ("#### 0.0", "0"),
    ("#### -0", "0"),
    ("#### 007", "7"),
    ("from 5-7 people", "7"),                                  # a range, not minus 7
    ("x = -3", "-3"),
    ("#### 42\nbut wait, 43", "42"),                          # the marker wins
    ("He has 10 apples.\n####\nno number", "10"),            # flexible fallback
    ("1,2345 is not a thousands group", "2345"),               # "1", then "2345"
    ("Counting 1,2,3", "3"),
    ("", None),
])
def test_extract_number(text, want):
    assert extract_number(text) == want


def test_extract_number_strict():
    assert extract_number("So the answer is 9", strict=True) is None
    assert extract_number("So the answer is 9\n#### 9", strict=True) == "9"
    assert extract_number("He has 10 apples.\n####\nno number", strict=True) is None


@pytest.mark.parametrize("text, n, want", [
    ("The correct answer is B. There is only one human polyomavirus.", 4, "B"),
    ("The correct answer is 10000 polyomaviruses.", 4, None),
    ("The answer is (C)", 4, "C"),
    ("Answer: d", 4, None),                                    # a bare lower-case letter
    ("Answer: (d)", 4, "D"),
    ("answer is option B", 4, "B"),
    ("The answer is: A", 4, "A"),
    ("B.", 4, "B"),
    ("(A) Paris", 4, "A"),
    ("[c] because ...", 4, "C"),
    ("D", 4, "D"),
    ("  C\nBecause the others are wrong", 4, "C"),
    ("A dog barked.", 4, None),                                # the article
    ("I think (B) is right.", 4, "B"),
    ("Either (A) or (B).", 4, None),                           # two letters: no answer
    ("The answer is E", 4, None),                              # past the last choice
    ("The answer is E", 5, "E"),
    ("Answer: A. On reflection, the answer is C.", 4, "C"),    # the last stated answer
    ("", 4, None),
])
def test_extract_choice(text, n, want):
    assert extract_choice(text, n_choices=n) == want


def test_extraction_bad_inputs_and_exact_match():
    with pytest.raises(TypeError, match="text"):
        extract_number(42)
    with pytest.raises(TypeError, match="strict"):
        extract_number("1", strict="yes")
    with pytest.raises(TypeError, match="text"):
        extract_choice(None)
    for n in (1, 27):
        with pytest.raises(ValueError, match="n_choices"):
            extract_choice("A", n_choices=n)
    items = [{"prompt": "q1", "answer": "#### 1,000"}, {"prompt": "q2", "answer": "7"}]
    outputs = {"q1": "So 10 * 100 = 1000.", "q2": "I do not know."}
    r = exact_match(outputs.get, items, extract=extract_number)
    assert r == {"accuracy": 0.5, "predictions": ["1000", None], "correct": [1, 0]}
    with pytest.raises(ValueError, match="extract"):
        exact_match(outputs.get, [{"prompt": "q1", "answer": "none"}], extract=extract_number)
    with pytest.raises(TypeError, match="extract"):
        exact_match(outputs.get, items, extract="number")
    with pytest.raises(TypeError, match="generate_fn"):
        exact_match(lambda p: 3, items)
