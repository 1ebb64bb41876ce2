"""course_llm.bow against the formula taken literally (one-hot sums) and torch's BCE."""

import pytest
import torch
import torch.nn.functional as F

from course_llm.bow import BagOfWords, accuracy, encode_texts, logistic_loss, pack_bags, train_classifier
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
    with pytest.raises(ValueError, match="vocab_size"):
        pack_bags([torch.tensor([4])], vocab_size=4)
    with pytest.raises(ValueError, match="length 0"):
        pack_bags([torch.tensor([], dtype=torch.long)], vocab_size=4)
