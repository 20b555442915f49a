"""``torch.nn.modules.sparse``'s import path; the classes are defined in
``tensorix.nn.layers.sparse``."""

from ..layers.sparse import Embedding, EmbeddingBag

__all__ = ["Embedding", "EmbeddingBag"]
