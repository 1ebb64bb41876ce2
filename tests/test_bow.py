"""course_llm.bow against the formula taken literally (one-hot sums) and torch's BCE."""

import pytest
import torch
import torch.nn.functional as F

from course_llm.bow import (BagOfWords, accuracy, encode_texts, logistic_loss, pack_bags, train_classifier,
                            word_vocabulary)
from course_llm.tokenizers import WordTokenizer


def test_bow_equals_one_hot_formula():
    torch.manual_seed(0)
    n = 11
    bow = BagOfWords(n, padding_idx=None)
    with torch.no_grad():
        bow.a.normal_(); bow.b.fill_(-0.7)
    seqs = [torch.randint(0, n, (k,)) for k in (1, 5, 9)]
    counts = torch.stack([F.one_hot(s, n).sum(0).float() for s in seqs])      # sum_l tau(w_l)
    assert torch.allclose(bow(seqs), bow.b + counts @ bow.a, atol=1e-6)


def test_padding_adds_nothing():
    bow = BagOfWords(5)
    with torch.no_grad():
        bow.a.fill_(1.0)
    assert torch.allclose(bow([torch.tensor([3, 0, 0])]), bow([torch.tensor([3])]))


def test_logistic_loss_is_bce():
    f, y01 = torch.randn(50), torch.randint(0, 2, (50,))
    assert torch.allclose(logistic_loss(f, 2 * y01 - 1), F.binary_cross_entropy_with_logits(f, y01.float()))
    with pytest.raises(ValueError, match="-1/\\+1"):
        logistic_loss(f, y01)


def test_training_separates_planted_words():
    # word 2 only in positive reviews, word 3 only in negative ones, word 4 everywhere
    g = torch.Generator().manual_seed(0)
    seqs = [torch.tensor([2, 4, 4]), torch.tensor([3, 4])] * 50
    labels = [1, 0] * 50
    bow = BagOfWords(5)
    train_classifier(bow, seqs, labels, epochs=10, lr=0.05, generator=g)
    assert accuracy(bow, seqs, labels) == 1.0
    assert bow.a[2] > 0 > bow.a[3]


def test_encode_texts_and_errors():
    tok = WordTokenizer("a good film a bad film")
    assert [t.tolist() for t in encode_texts(tok, ["A GOOD film"])] == [[tok.stoi["a"], tok.stoi["good"], tok.stoi["film"]]]
    with pytest.raises(TypeError):
        encode_texts(tok, "a good film")
    with pytest.raises(ValueError, match="no tokens"):
        encode_texts(tok, ["a", "   "])
    with pytest.raises(ValueError, match="padding_idx"):
        BagOfWords(4, padding_idx=4)
    with pytest.raises(ValueError, match="vocabulary"):
        pack_bags([torch.tensor([4])], vocab_size=4)
    with pytest.raises(ValueError, match="length 0"):
        pack_bags([torch.tensor([], dtype=torch.long)], vocab_size=4)


def test_train_classifier_equals_a_plain_adam_loop():
    """fit (AdamW, weight_decay=0) must take the same steps as torch.optim.Adam on the same batches."""
    torch.manual_seed(0)
    seqs = [torch.randint(1, 9, (int(k),)) for k in torch.randint(1, 6, (40,))]
    labels = torch.randint(0, 2, (40,)).tolist()
    ours, ref = BagOfWords(9), BagOfWords(9)
    with torch.no_grad():
        ours.a.normal_(); ref.a.copy_(ours.a)
    losses = train_classifier(ours, seqs, labels, epochs=3, batch_size=16, lr=0.05, max_grad_norm=0.5,
                              generator=torch.Generator().manual_seed(1))
    g, y = torch.Generator().manual_seed(1), 2 * torch.tensor(labels, dtype=torch.float32) - 1
    opt, ref_losses = torch.optim.Adam(ref.parameters(), lr=0.05), []
    for _ in range(3):
        order = torch.randperm(40, generator=g)
        for start in range(0, 40, 16):
            idx = order[start:start + 16].tolist()
            loss = F.softplus(-y[idx] * ref([seqs[i] for i in idx])).mean()
            opt.zero_grad(); loss.backward()
            torch.nn.utils.clip_grad_norm_(ref.parameters(), 0.5)
            opt.step(); ref_losses.append(loss.item())
    assert len(losses) == 9
    assert max(abs(a - b) for a, b in zip(losses, ref_losses)) < 1e-5
    assert torch.allclose(ours.a, ref.a, atol=1e-5) and not ours.training


def test_word_vocabulary_is_the_lowercased_word_tokenizer():
    texts = ["A good film.", "a BAD film", "Good"]
    vocab = word_vocabulary(texts, min_freq=2)
    ref = WordTokenizer(" ".join(t.lower() for t in texts), min_freq=2)
    assert vocab.itos == ref.itos == ["<PAD>", "<UNK>", "<BOS>", "<EOS>", "<MASK>", "a", "film", "good"]


_BOW = BagOfWords(4)
_ONE = [torch.tensor([1])]


@pytest.mark.parametrize("make, error, match", [
    (lambda: word_vocabulary([]), ValueError, "empty"),
    (lambda: word_vocabulary("a good film"), TypeError, "texts"),
    (lambda: word_vocabulary(["a", 3]), TypeError, "texts\\[1\\]"),
    (lambda: encode_texts(None, ["a"]), TypeError, "tokenizer"),
    (lambda: encode_texts(WordTokenizer("a"), [None]), TypeError, "texts\\[0\\]"),
    (lambda: BagOfWords(2.5), TypeError, "vocab_size"),
    (lambda: BagOfWords(0), ValueError, "vocab_size"),
    (lambda: BagOfWords(4, padding_idx=-1), ValueError, "padding_idx"),
    (lambda: pack_bags([torch.tensor([1.7])], 4), TypeError, "seqs\\[0\\]"),
    (lambda: pack_bags([torch.tensor([-1])], 4), ValueError, "vocabulary"),
    (lambda: pack_bags([torch.tensor([[1, 2]])], 4), ValueError, "seqs\\[0\\]"),
    (lambda: pack_bags([], 4), ValueError, "non-empty"),
    (lambda: pack_bags("abc", 4), TypeError, "seqs"),
    (lambda: pack_bags(["abc"], 4), TypeError, "seqs\\[0\\]"),
    (lambda: pack_bags(torch.tensor([[1, 2]]), 4), TypeError, "seqs"),
    (lambda: _BOW([torch.tensor([4])]), ValueError, "vocabulary"),
    (lambda: logistic_loss(torch.tensor([float("nan")]), torch.tensor([1])), ValueError, "NaN"),
    (lambda: logistic_loss(torch.zeros(3), torch.ones(1)), ValueError, "same shape"),
    (lambda: logistic_loss(torch.zeros(3, dtype=torch.long), torch.ones(3)), TypeError, "float"),
    (lambda: train_classifier(_BOW, _ONE, [1], batch_size=0), ValueError, "batch_size"),
    (lambda: train_classifier(_BOW, _ONE, [1], epochs=0), ValueError, "epochs"),
    (lambda: train_classifier(_BOW, _ONE, [2]), ValueError, "0/1"),
    (lambda: train_classifier(_BOW, _ONE, [0.5]), ValueError, "0/1"),
    (lambda: train_classifier(_BOW, _ONE, [1], lr=float("nan")), ValueError, "lr"),
    (lambda: train_classifier(_BOW, _ONE, [1], lr=0), ValueError, "lr"),
    (lambda: train_classifier(_BOW, _ONE, [1], weight_decay=-1.0), ValueError, "weight_decay"),
    (lambda: train_classifier(_BOW, _ONE, [1], max_grad_norm=0.0), ValueError, "max_grad_norm"),
    (lambda: train_classifier(_BOW, _ONE * 2, [1]), ValueError, "one label per sequence"),
    (lambda: train_classifier(_BOW, [], []), ValueError, "non-empty"),
    (lambda: train_classifier(lambda s: s, _ONE, [1]), TypeError, "model"),
    (lambda: accuracy(_BOW, _ONE * 2, [1]), ValueError, "one label per sequence"),
    (lambda: accuracy(_BOW, [], []), ValueError, "non-empty"),
    (lambda: accuracy(_BOW, _ONE, [1], batch_size=0), ValueError, "batch_size"),
    (lambda: accuracy(_BOW, _ONE, [2]), ValueError, "0/1"),
])
def test_bad_input_is_named(make, error, match):
    with pytest.raises(error, match=match):
        make()
