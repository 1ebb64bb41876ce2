"""course_llm.generate against independent oracles: the uncached model, transformers' logits
warpers and generate() on the same weights (via GPT.to_hf), and brute-force MAP search."""
import itertools

import pytest
import torch
from transformers.generation.logits_process import TopKLogitsWarper, TopPLogitsWarper

from course_llm.kv_cache import KVCache, make_kv_cache
from course_llm.generate import beam_search, generate, top_k_filter, top_p_filter
from course_llm.gpt import GPT
from course_llm.gpt_config import GPTConfig

CONFIGS = {
    "gpt2": lambda: GPTConfig.gpt2_style(vocab_size=64, max_len=48, n_layer=2, d_model=32, n_head=4),
    "llama": lambda: GPTConfig.llama_style(vocab_size=64, max_len=48, n_layer=2, d_model=32, n_head=4),
    "llama_gqa": lambda: GPTConfig.llama_style(vocab_size=64, max_len=48, n_layer=2, d_model=32,
                                                n_head=4, n_kv_head=2),
    "llama_mqa": lambda: GPTConfig.llama_style(vocab_size=64, max_len=48, n_layer=2, d_model=32,
                                                n_head=4, n_kv_head=1),
}


def model_of(name, seed=0):
    torch.manual_seed(seed)
    return GPT(CONFIGS[name]()).eval()


def prompt(B=3, T=5, V=64, seed=1):
    return torch.randint(0, V, (B, T), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("name", list(CONFIGS))
def test_cached_equals_uncached(name):
    m, idx = model_of(name), prompt()
    assert torch.equal(generate(m, idx, 16, temperature=0), generate(m, idx, 16, temperature=0, use_cache=False))
    for kw in (dict(temperature=0.7, top_k=10), dict(temperature=1.3, top_p=0.9, top_k=20)):
        a = generate(m, idx, 16, generator=torch.Generator().manual_seed(3), **kw)
        b = generate(m, idx, 16, use_cache=False, generator=torch.Generator().manual_seed(3), **kw)
        assert torch.equal(a, b), kw


def test_cache_stores_kv_heads():
    m = model_of("llama_gqa")
    caches = make_kv_cache(m, batch_size=2, max_length=10)
    assert len(caches) == 2 and caches[0].k.shape == (2, 2, 10, 8)
    with pytest.raises(ValueError, match="overflow"):
        KVCache(1, 1, 2, 4).update(torch.zeros(1, 1, 3, 4), torch.zeros(1, 1, 3, 4))


def random_logits(seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(6, 40, generator=g) * 3
    ties = torch.randint(-2, 3, (6, 40), generator=g).float()     # many exact ties
    return torch.cat([x, ties, torch.full((1, 40), 1.5)])          # a constant row too


@pytest.mark.parametrize("seed", range(5))
def test_filters_equal_transformers(seed):
    s = random_logits(seed)
    for k in (1, 2, 5, 17, 40, 100):
        assert torch.equal(top_k_filter(s, k), TopKLogitsWarper(k)(None, s)), k
    for p in (0.01, 0.1, 0.5, 0.9, 0.999, 1.0):
        assert torch.equal(top_p_filter(s, p), TopPLogitsWarper(p)(None, s)), p
    assert torch.equal(top_p_filter(s[0], 0.5), TopPLogitsWarper(0.5)(None, s[:1])[0])   # 1-D input


@pytest.mark.parametrize("name", ["gpt2", "llama_gqa"])
def test_greedy_equals_transformers(name):
    m, idx = model_of(name), prompt()
    hf = m.to_hf().eval()
    ref = hf.generate(idx, attention_mask=torch.ones_like(idx), max_new_tokens=30, do_sample=False, num_beams=1)
    assert torch.equal(generate(m, idx, 30, temperature=0), ref)


@pytest.mark.parametrize("name", ["gpt2", "llama_gqa"])
@pytest.mark.parametrize("k", [2, 3, 5])
def test_beam_equals_transformers(name, k):
    m, hf = model_of(name), None
    hf = m.to_hf().eval()
    for seed in range(2):
        idx = prompt(B=1, seed=seed)
        ref = hf.generate(idx, attention_mask=torch.ones_like(idx), max_new_tokens=15, do_sample=False,
                          num_beams=k, length_penalty=0.0, early_stopping=True)
        assert torch.equal(beam_search(m, idx, k, 15), ref)


def test_beam_one_is_greedy():
    m, idx = model_of("llama"), prompt()
    assert torch.equal(beam_search(m, idx, 1, 20), generate(m, idx, 20, temperature=0))


def seq_logprob(m, seqs, T):
    """Total log-probability of seqs[:, T:] given seqs[:, :T], all rows in one forward pass."""
    with torch.no_grad():
        lp = m(seqs)[0][:, :-1].log_softmax(-1)
    return lp.gather(-1, seqs[:, 1:, None])[:, T - 1:, 0].sum(-1)


def test_brute_force_map_dominates():
    torch.manual_seed(0)
    m = GPT(GPTConfig.gpt2_style(vocab_size=6, max_len=8, n_layer=1, d_model=16, n_head=2, init_std=0.5)).eval()
    idx, L = torch.tensor([[1]]), 4
    every = torch.tensor([[1, *s] for s in itertools.product(range(6), repeat=L)])
    best = seq_logprob(m, every, 1).max().item()
    greedy = seq_logprob(m, generate(m, idx, L, temperature=0), 1).item()
    beam = seq_logprob(m, beam_search(m, idx, 3, L), 1).item()
    assert best >= beam - 1e-5 and best >= greedy - 1e-5 and beam >= greedy - 1e-5


def test_eos_pads_and_stops():
    m, idx = model_of("gpt2"), prompt()
    greedy = generate(m, idx, 10, temperature=0)
    eos = int(greedy[0, 5 + 2])                      # the token row 0 emits at step 3
    out = generate(m, idx, 10, temperature=0, eos_id=eos)
    for row in out:
        hits = (row[5:] == eos).nonzero()
        if len(hits):
            assert (row[5 + hits[0, 0]:] == eos).all()
    assert (out[:, 5:] == eos).any(1).all() or out.size(1) == 15


def brute_force_window(m, idx, n_new):
    """Greedy decoding that reruns the model on the last max_len tokens at every step."""
    out, L = idx, m.config.max_len
    with torch.no_grad():
        for _ in range(n_new):
            out = torch.cat([out, m(out[:, -L:])[0][:, -1].argmax(-1, keepdim=True)], 1)
    return out


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("T", [5, 47, 48, 70])
def test_sliding_window_equals_brute_force(name, T):
    m, idx = model_of(name), prompt(B=2, T=T)
    ref = brute_force_window(m, idx, 60)                       # max_len 48: 5 + 60 > 48
    assert torch.equal(generate(m, idx, 60, temperature=0), ref)
    assert torch.equal(generate(m, idx, 60, temperature=0, use_cache=False), ref)


def test_sliding_window_sampled_cached_equals_uncached():
    m, idx = model_of("llama_gqa"), prompt(T=40)
    a, b = (generate(m, idx, 30, temperature=0.9, top_k=20, use_cache=c,
                     generator=torch.Generator().manual_seed(5)) for c in (True, False))
    assert torch.equal(a, b) and a.shape == (3, 70)


def test_cache_reset_and_reorder():
    cache = KVCache(2, 1, 4, 2)
    k = torch.arange(8.).view(2, 1, 2, 2)
    cache.update(k, k)
    cache.reorder(torch.tensor([1, 1]))
    assert torch.equal(cache.k[:, :, :2], k[[1, 1]])            # both rows copy parent 1
    cache.reset()
    assert cache.length == 0 and cache.update(k, k)[0].shape == (2, 1, 2, 2)


BAD_GENERATE = [
    (dict(top_k=0), ValueError, "top_k"), (dict(top_k=2.5), TypeError, "top_k"),
    (dict(top_p=0.0), ValueError, "top_p"), (dict(top_p=1.5), ValueError, "top_p"),
    (dict(top_p=float("nan")), ValueError, "top_p"), (dict(temperature=-1.0), ValueError, "temperature"),
    (dict(temperature=float("nan")), ValueError, "temperature"),
    (dict(temperature=float("inf")), ValueError, "temperature"), (dict(temperature="hot"), TypeError, "temperature"),
    (dict(eos_id=64), ValueError, "eos_id"), (dict(eos_id=-1), ValueError, "eos_id"),
    (dict(max_new_tokens=-1), ValueError, "max_new_tokens"), (dict(max_new_tokens=2.0), TypeError, "max_new_tokens"),
    (dict(use_cache=1), TypeError, "use_cache"), (dict(generator=0), TypeError, "generator")]


@pytest.mark.parametrize("kw, err, arg", BAD_GENERATE)
def test_bad_inputs(kw, err, arg):
    m, idx = model_of("gpt2"), prompt()
    kw = {"max_new_tokens": 3, **kw}
    with pytest.raises(err, match=arg):
        generate(m, idx, **kw)


@pytest.mark.parametrize("idx, err", [
    (torch.zeros(1, 0, dtype=torch.long), ValueError), (torch.zeros(0, 3, dtype=torch.long), ValueError),
    (torch.tensor([[1, 64]]), ValueError), (torch.tensor([[-1, 2]]), ValueError),
    (torch.zeros(1, 3), TypeError), (torch.zeros(3, dtype=torch.long), ValueError), ([[1, 2]], TypeError)])
def test_bad_prompts(idx, err):
    m = model_of("gpt2")
    for decode in (lambda: generate(m, idx, 3), lambda: beam_search(m, idx, 2, 3)):
        with pytest.raises(err, match="idx"):
            decode()


def test_bad_beam_search():
    m, p1 = model_of("gpt2"), prompt(B=1)
    with pytest.raises(ValueError, match="beam_size"):
        beam_search(m, p1, 0, 3)
    with pytest.raises(ValueError, match="eos_id"):
        beam_search(m, p1, 2, 3, eos_id=99)
    with pytest.raises(ValueError, match="length_penalty"):
        beam_search(m, p1, 2, 3, length_penalty=float("nan"))
    with pytest.raises(ValueError, match="max_len"):            # beam search does not slide
        beam_search(m, p1, 2, 100)
    with pytest.raises(TypeError, match="model"):
        beam_search(torch.nn.Linear(2, 2), p1, 2, 3)


def test_bad_filters():
    with pytest.raises(TypeError, match="logits"):
        top_k_filter(torch.tensor([1, 2, 3]), 2)
    with pytest.raises(ValueError, match="logits"):
        top_p_filter(torch.tensor(1.0), 0.5)
    with pytest.raises(ValueError, match="top_p"):
        top_p_filter(torch.zeros(4), float("nan"))


def test_bad_caches():
    m = model_of("llama_gqa")
    with pytest.raises(ValueError, match="max_length"):
        make_kv_cache(m, 1, 0)
    with pytest.raises(ValueError, match="max_length"):
        make_kv_cache(m, 1, 49)                                   # past max_len 48
    with pytest.raises(ValueError, match="batch_size"):
        make_kv_cache(m, 0)
    with pytest.raises(TypeError, match="model"):
        make_kv_cache(object(), 1)
    with pytest.raises(ValueError, match="d_head"):
        KVCache(1, 1, 4, 0)
    with pytest.raises(TypeError, match="dtype"):
        KVCache(1, 1, 4, 2, dtype=torch.long)
    cache = KVCache(2, 2, 8, 4)
    with pytest.raises(ValueError, match="`k`"):
        cache.update(torch.zeros(2, 1, 1, 4), torch.zeros(2, 1, 1, 4))     # wrong number of heads
    with pytest.raises(ValueError, match="`k` and `v`"):
        cache.update(torch.zeros(2, 2, 1, 4), torch.zeros(2, 2, 2, 4))
    with pytest.raises(ValueError, match="`k`"):
        cache.update(torch.zeros(2, 2, 4), torch.zeros(2, 2, 4))
    with pytest.raises(ValueError, match="overflow"):
        cache.update(torch.zeros(2, 2, 9, 4), torch.zeros(2, 2, 9, 4))
    with pytest.raises(ValueError, match="index"):
        cache.reorder(torch.tensor([0, 2]))
    with pytest.raises(ValueError, match="index"):
        cache.reorder(torch.tensor([0]))


@pytest.mark.parametrize("filt, arg", [(top_k_filter, 2), (top_p_filter, 0.9)])
@pytest.mark.parametrize("logits", [torch.zeros(2, 0), torch.zeros(0, 5)])
def test_filters_refuse_empty_logits(filt, arg, logits):
    with pytest.raises(ValueError, match="logits"):
        filt(logits, arg)


@pytest.mark.parametrize("alpha", [float("nan"), float("inf"), "long"])
def test_beam_search_refuses_a_non_finite_length_penalty(alpha):
    with pytest.raises((ValueError, TypeError), match="length_penalty"):
        beam_search(model_of("gpt2"), prompt(B=1), 2, 3, length_penalty=alpha)


def test_beam_search_accepts_a_negative_length_penalty():
    """alpha < 0 is allowed (as in transformers, where it favours shorter sequences): it runs."""
    m, idx = model_of("gpt2"), prompt(B=1)
    out = beam_search(m, idx, 3, 6, eos_id=int(m(idx)[0][0, -1].argmax()), length_penalty=-1.0)
    assert out.shape[0] == 1 and out.shape[1] <= idx.shape[1] + 6


# Issue 31: the filters refuse NaN and +inf in `logits` by name, accept -inf (a token an
# earlier filter removed) and then still agree with transformers' warpers; `generate`
# checks once at its entry and runs the unchecked kernels at every step.
@pytest.mark.parametrize("filt, arg", [(top_k_filter, 2), (top_p_filter, 0.9)])
@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_filters_refuse_nan_and_plus_inf(filt, arg, value):
    logits = torch.randn(2, 6)
    logits[1, 3] = value
    with pytest.raises(ValueError, match="`logits` hold NaN or \\+inf"):
        filt(logits, arg)


@pytest.mark.parametrize("filt, arg", [(top_k_filter, 2), (top_p_filter, 0.9)])
def test_filters_refuse_a_row_with_no_token_left(filt, arg):
    logits = torch.randn(2, 6)
    logits[0] = float("-inf")
    with pytest.raises(ValueError, match="all -inf"):
        filt(logits, arg)


def test_filters_accept_minus_inf_and_match_transformers():
    g = torch.Generator().manual_seed(3)
    s = torch.randn(4, 30, generator=g) * 2
    s[torch.rand(4, 30, generator=g) < 0.3] = float("-inf")  # removed by an earlier filter
    s[:, 0] = 1.0  # every row keeps a token
    for k in (1, 3, 10):
        assert torch.equal(top_k_filter(s, k), TopKLogitsWarper(k)(None, s))
    for p in (0.1, 0.5, 0.9):
        assert torch.equal(top_p_filter(s, p), TopPLogitsWarper(p)(None, s))
    assert torch.equal(top_p_filter(top_k_filter(s, 5), 0.8),
                       TopPLogitsWarper(0.8)(None, TopKLogitsWarper(5)(None, s)))


def test_generate_checks_logits_zero_times_per_step(monkeypatch):
    import course_llm.generate as gen
    calls = []
    real = gen._check_logits
    monkeypatch.setattr(gen, "_check_logits", lambda x: calls.append(1) or real(x))
    out = generate(model_of("gpt2"), prompt(B=2), 6, top_k=5, top_p=0.9,
                   generator=torch.Generator().manual_seed(0))
    assert out.shape == (2, 11) and calls == []
