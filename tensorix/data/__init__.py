"""Data loading: datasets, samplers, DataLoader, and small bundled datasets (the 8x8 digits
and a public-domain text; see ``files/README.md``)."""

from .dataset import (
                      ChainDataset,
                      ConcatDataset,
                      Dataset,
                      IterableDataset,
                      Subset,
                      TensorDataset,
                      random_split,
)
from ._workers import WorkerInfo, get_worker_info
from .collate import default_collate, default_convert
from .datasets import CharDataset, CharVocab, load_digits, load_text
from .loader import DataLoader
from .sampler import (
                      BatchSampler,
                      RandomSampler,
                      Sampler,
                      SequentialSampler,
                      SubsetRandomSampler,
                      WeightedRandomSampler,
)

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "ChainDataset", "random_split", "Sampler", "SequentialSampler", "RandomSampler",
           "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler", "DataLoader",
           "default_collate", "default_convert", "get_worker_info", "WorkerInfo", "load_digits", "load_text", "CharVocab",
           "CharDataset"]
