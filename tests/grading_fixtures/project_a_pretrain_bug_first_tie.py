# Planted bug: the reference solution of project_a_pretrain with ties broken by first occurrence (dict order) instead of the smallest pair.
# course-llm exercise: project_a_pretrain
# expect-fail: ties
# expect-hint: smallest pair
import math

import regex
import torch
import torch.nn as nn
import torch.nn.functional as F

from course_llm.core import generator
from course_llm.layers import TransformerBlock, TransformerConfig
from course_llm.optim import cosine_schedule
from course_llm.pretokenizer import GPT4_SPLIT_PATTERN


def learn_merges(text, n_merges, min_count=2):
    """The BPE merges learned from `text`, in order.

    Args:
        text: the training text (str).
        n_merges: the largest number of merges to learn.
        min_count: stop when the most frequent pair occurs fewer times than this.

    Returns:
        A list of pairs ``(a, b)``; merge ``k`` creates id ``256 + k``.

    Example:
        >>> learn_merges("aaabdaaabac", 3, min_count=1)
        [(97, 97), (97, 98), (256, 257)]
    """
    chunks = {}  # distinct chunk (tuple of ids) -> how many times it occurs
    for piece in regex.findall(GPT4_SPLIT_PATTERN, text):
        key = tuple(piece.encode("utf-8"))
        chunks[key] = chunks.get(key, 0) + 1
    merges = []
    while len(merges) < n_merges:
        counts = {}
        for ids, n in chunks.items():
            for pair in zip(ids, ids[1:]):
                counts[pair] = counts.get(pair, 0) + n
        if not counts or max(counts.values()) < min_count:
            break
        best = max(counts.values())
        pair = max(counts, key=counts.get)  # BUG: the first of the tied pairs
        new_id = 256 + len(merges)
        merges.append(pair)
        merged = {}
        for ids, n in chunks.items():
            key = tuple(merge_pair(list(ids), pair, new_id))
            merged[key] = merged.get(key, 0) + n
        chunks = merged
    return merges


def merge_pair(ids, pair, new_id):
    """`ids` with each occurrence of `pair`, scanned left to right, made `new_id`.

    Example:
        >>> merge_pair([1, 2, 2, 1, 2], (1, 2), 9)
        [9, 2, 9]
    """
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and ids[i] == pair[0] and ids[i + 1] == pair[1]:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def encode_text(text, merges):
    """Token ids of `text` under the BPE `merges` (pairs, as `learn_merges` returns).

    Example:
        >>> encode_text("aaab aab", [(97, 97), (97, 98)])
        [256, 257, 32, 256, 98]
    """
    ranks = {tuple(p): 256 + k for k, p in enumerate(merges)}
    out = []
    for piece in regex.findall(GPT4_SPLIT_PATTERN, text):
        ids = list(piece.encode("utf-8"))
        while len(ids) >= 2:
            pair = min(zip(ids, ids[1:]), key=lambda p: ranks.get(p, math.inf))
            if pair not in ranks:
                break
            ids = merge_pair(ids, pair, ranks[pair])
        out += ids
    return out


def decode_ids(ids, merges):
    """The text of token `ids` under the BPE `merges`; broken UTF-8 becomes U+FFFD.

    Example:
        >>> decode_ids([256, 257, 32, 256, 98], [(97, 97), (97, 98)])
        'aaab aab'
    """
    vocab = [bytes([b]) for b in range(256)]
    for a, b in merges:
        vocab.append(vocab[a] + vocab[b])
    return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")


SEQ_LEN = 32


class TinyGPT(nn.Module):
    """A small GPT: embeddings, causal pre-LN blocks, a final norm, an untied head."""

    def __init__(self, vocab_size, max_len=SEQ_LEN, d_model=64, n_layer=2, n_head=4):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        config = TransformerConfig(
            d_model=d_model, n_head=n_head, causal=True, max_len=max_len
        )
        self.blocks = nn.ModuleList(TransformerBlock(config) for _ in range(n_layer))
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, ids):
        """Logits (batch, T, vocab_size) of the next token at every position."""
        h = self.tok(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))
        for block in self.blocks:
            h = block(h)
        return self.head(self.norm(h))


def next_token_loss(logits, ids):
    """Mean cross-entropy of predicting ids[:, t + 1] from logits[:, t]."""
    V = logits.shape[-1]
    return F.cross_entropy(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1))


def lm_forward(ids, vocab_size):
    """`(logits, loss)` of a freshly built model on `ids` (batch, T).

    Example:
        >>> logits, loss = lm_forward(torch.zeros(2, 5, dtype=torch.long), 300)
        >>> tuple(logits.shape), loss.shape
        ((2, 5, 300), torch.Size([]))
    """
    model = TinyGPT(vocab_size)
    logits = model(ids)
    return logits.detach(), next_token_loss(logits, ids).detach()


def init_weights(model, seed):
    """Weights drawn from a generator seeded with `seed`: N(0, 0.3^2) embeddings,
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)) matrices (PyTorch's default), zero biases, unit
    norm gains."""
    g = generator(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if isinstance(model.get_submodule(name.rsplit(".", 1)[0]), nn.Embedding):
                p.copy_(torch.randn(p.shape, generator=g) * 0.3)
            elif p.dim() >= 2:
                bound = p.shape[1] ** -0.5
                p.copy_((torch.rand(p.shape, generator=g) * 2 - 1) * bound)
            else:  # 1-D: a norm's gain (weight) or a bias
                p.fill_(1.0 if name.endswith("weight") else 0.0)


def train_lm(ids, vocab_size, steps, seed, batch_size=16, max_lr=1e-2, val_ids=None):
    """Train a fresh TinyGPT on random windows of `ids`; return its state as plain data.

    With `val_ids`, the validation loss is also recorded every `steps // 10` steps.

    Example:
        >>> state = train_lm(torch.arange(200) % 7, 300, 2, seed=0)
        >>> sorted(state)
        ['config', 'train_loss', 'val_loss', 'weights']
    """
    config = {"vocab_size": vocab_size}
    model = TinyGPT(**config)
    init_weights(model, seed)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
        lr=max_lr,
    )
    g = generator(seed + 1)
    history, val_history = [], []
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = cosine_schedule(step, steps, 10, max_lr, max_lr / 10)
        at = torch.randint(0, len(ids) - SEQ_LEN, (batch_size,), generator=g)
        x = torch.stack([ids[i : i + SEQ_LEN] for i in at.tolist()])
        loss = next_token_loss(model(x), x)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        history.append(loss.item())
        if val_ids is not None and (step + 1) % max(1, steps // 10) == 0:
            val_history.append((step + 1, evaluate(model, val_ids)))
    weights = {k: v.detach().clone() for k, v in model.state_dict().items()}
    return {
        "config": config,
        "weights": weights,
        "train_loss": history,
        "val_loss": val_history,
    }


def next_token_logprobs(state, contexts):
    """Log-probabilities (n, vocab_size) of the token after each context (n, T).

    Example:
        >>> state = train_lm(torch.arange(200) % 7, 300, 2, seed=0)
        >>> next_token_logprobs(state, torch.zeros(3, 8, dtype=torch.long)).shape
        torch.Size([3, 300])
    """
    model = TinyGPT(**state["config"])
    model.load_state_dict(state["weights"])
    model.eval()
    with torch.no_grad():
        return F.log_softmax(model(contexts[:, -SEQ_LEN:])[:, -1].float(), dim=-1)


def evaluate(model, val_ids):
    """Mean next-token loss of `model` over consecutive windows of `val_ids`."""
    n = (len(val_ids) - 1) // SEQ_LEN
    x = val_ids[: n * SEQ_LEN + 1]
    was_training = model.training
    model.eval()
    with torch.no_grad():
        windows = x[:-1].view(n, SEQ_LEN)
        targets = x[1:].view(n, SEQ_LEN)
        logits = model(windows)
        loss = F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)
        )
    model.train(was_training)
    return loss.item()
