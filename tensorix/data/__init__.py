"""Data loading: datasets, samplers, DataLoader, and small bundled datasets (the 8x8 digits
and a public-domain text; see ``files/README.md``)."""

from ._workers import WorkerInfo, get_worker_info
from .collate import default_collate, default_convert
from .dataset import (
                      ChainDataset,
                      ConcatDataset,
                      Dataset,
                      IterableDataset,
                      StackDataset,
                      Subset,
                      TensorDataset,
                      random_split,
)
from .datasets import CharDataset, CharVocab, load_digits, load_text
from .loader import DataLoader
from .sampler import (
                      BatchSampler,
                      DistributedSampler,
                      RandomSampler,
                      Sampler,
                      SequentialSampler,
                      SubsetRandomSampler,
                      WeightedRandomSampler,
)

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "ChainDataset", "random_split", "Sampler", "SequentialSampler", "RandomSampler",
           "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler", "DataLoader",
           "default_collate", "default_convert", "load_digits", "load_text", "CharVocab",
           "CharDataset",
           "get_worker_info", "WorkerInfo", "StackDataset", "DistributedSampler"]
