"""``torch.nn.modules.distance``'s import path; the classes are defined in
``tensorix.nn.layers.shape``."""

from ..layers.shape import CosineSimilarity, PairwiseDistance

__all__ = ["PairwiseDistance", "CosineSimilarity"]
