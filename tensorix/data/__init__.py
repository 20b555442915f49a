"""Data loading: datasets, samplers, DataLoader, and small bundled datasets."""

from .dataset import (
                      BatchSampler,
                      ConcatDataset,
                      Dataset,
                      IterableDataset,
                      RandomSampler,
                      Sampler,
                      SequentialSampler,
                      Subset,
                      TensorDataset,
                      random_split,
)
from .loader import DataLoader, default_collate

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "random_split", "Sampler", "SequentialSampler", "RandomSampler", "BatchSampler",
           "DataLoader", "default_collate"]
