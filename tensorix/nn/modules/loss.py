"""``torch.nn.modules.loss``'s import path; the classes are defined in
``tensorix.nn.layers.loss``."""

from ..layers.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CrossEntropyLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    MSELoss,
    MultiLabelMarginLoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    NLLLoss,
    PoissonNLLLoss,
    SmoothL1Loss,
    SoftMarginLoss,
    TripletMarginLoss,
    TripletMarginWithDistanceLoss,
)

__all__ = ["L1Loss", "MSELoss", "SmoothL1Loss", "HuberLoss", "NLLLoss", "CrossEntropyLoss",
           "BCELoss", "BCEWithLogitsLoss", "KLDivLoss", "CosineEmbeddingLoss", "MarginRankingLoss",
           "TripletMarginLoss", "TripletMarginWithDistanceLoss", "PoissonNLLLoss",
           "GaussianNLLLoss", "SoftMarginLoss", "MultiLabelSoftMarginLoss", "MultiLabelMarginLoss",
           "MultiMarginLoss", "HingeEmbeddingLoss"]
