"""The bundled datasets: digits and the text corpus, CharVocab and CharDataset."""

import os

import numpy as np
import pytest

import tensorix as tx
from tensorix.data import CharDataset, CharVocab, DataLoader, load_digits, load_text
from tensorix.data.datasets import files_dir

# sklearn.datasets.load_digits().images[0] (the first sample is a zero)
FIRST_DIGIT = [[0, 0, 5, 13, 9, 1, 0, 0], [0, 0, 13, 15, 10, 15, 5, 0],
               [0, 3, 15, 2, 0, 11, 8, 0], [0, 4, 12, 0, 0, 8, 8, 0],
               [0, 5, 8, 0, 0, 9, 8, 0], [0, 4, 11, 0, 1, 12, 7, 0],
               [0, 2, 14, 5, 10, 12, 0, 0], [0, 0, 6, 13, 10, 0, 0, 0]]
# the documented class distribution of the UCI optdigits test set
CLASS_COUNTS = [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]


def test_digits():
    x, y = load_digits()
    assert tuple(x.shape) == (1797, 1, 8, 8) and x.dtype == tx.float32
    assert tuple(y.shape) == (1797,) and y.dtype == tx.int64
    xs = x.numpy()
    assert xs.min() == 0.0 and xs.max() == 1.0
    np.testing.assert_array_equal(xs[0, 0] * 16, FIRST_DIGIT)
    assert np.bincount(y.numpy()).tolist() == CLASS_COUNTS
    assert y[:10].tolist() == list(range(10))
    assert np.all(np.isclose(xs * 16, np.round(xs * 16)))  # integer counts 0..16 / 16
    xn, yn = load_digits(as_numpy=True)
    assert isinstance(xn, np.ndarray) and np.array_equal(xn, xs) and yn.dtype == np.int64


def test_digits_are_learnable_by_a_linear_model():
    """A sanity check that images and labels line up: least squares on one-hot labels of a
    training half classifies the other half well (a mismatched file would give ~10%)."""
    x, y = load_digits(as_numpy=True)
    a = np.hstack([x.reshape(len(x), -1), np.ones((len(x), 1), np.float32)]).astype(np.float64)
    w = np.linalg.lstsq(a[:1000], np.eye(10)[y[:1000]], rcond=None)[0]
    acc = (np.argmax(a[1000:] @ w, 1) == y[1000:]).mean()
    assert acc > 0.85


def test_text_corpus():
    text = load_text()
    assert isinstance(text, str) and len(text) >= 100_000
    assert text.isascii() and text.startswith("MACBETH")
    for line in ("To be, or not to be", "Friends, Romans, countrymen",
                 "O Romeo, Romeo! wherefore art thou Romeo?"):
        assert line in text
    assert "Gutenberg" not in text  # no license boilerplate in the training text
    with pytest.raises(ValueError, match="load_text\\(\\): unknown text 'moby'"):
        load_text("moby")


def test_bundled_files_are_small_and_documented():
    names = sorted(os.listdir(files_dir()))
    assert {"README.md", "digits.csv.gz", "shakespeare.txt.gz"} <= set(names)
    total = sum(os.path.getsize(os.path.join(files_dir(), n)) for n in names)
    assert total < 1_000_000
    with open(os.path.join(files_dir(), "README.md"), encoding="utf-8") as f:
        readme = f.read()
    assert "CC BY 4.0" in readme and "public domain" in readme


def test_char_vocab():
    v = CharVocab("hello world")
    assert v.chars == [" ", "d", "e", "h", "l", "o", "r", "w"] and len(v) == 8
    ids = v.encode("hold")
    assert ids == [3, 5, 4, 1] and v.decode(ids) == "hold"
    assert v.decode(tx.tensor(ids)) == "hold"
    with pytest.raises(KeyError, match="character 'z' is not in the vocabulary"):
        v.encode("z")


def test_char_dataset_windows_and_loader():
    text = load_text()
    ds = CharDataset(text, block_size=32)
    assert len(ds) == len(text) - 32 and len(ds.vocab) == len(set(text))
    x, y = ds[100]
    assert x.dtype == tx.int64 and tuple(x.shape) == (32,)
    assert ds.vocab.decode(x) == text[100:132] and ds.vocab.decode(y) == text[101:133]
    assert ds.vocab.decode(ds[-1][1]) == text[-32:]
    loader = DataLoader(ds, batch_size=8, shuffle=True,
                        generator=tx.Generator().manual_seed(0))
    xb, yb = next(iter(loader))
    assert tuple(xb.shape) == (8, 32) and tuple(yb.shape) == (8, 32)
    np.testing.assert_array_equal(xb.numpy()[:, 1:], yb.numpy()[:, :-1])
    with pytest.raises(IndexError, match="CharDataset: index out of range"):
        ds[len(ds)]
    with pytest.raises(ValueError, match="block_size must be a positive integer"):
        CharDataset("abc", 0)
    with pytest.raises(ValueError, match="must be longer than block_size"):
        CharDataset("abc", 3)
