"""Optimizers: each a class owning param groups and state, delegating the math to one pure
update function on raw arrays; learning-rate schedules in ``optim.lr_scheduler``."""

from . import lr_scheduler
from .adam import Adam, AdamW, adam_update
from .adam_variants import Adamax, NAdam, RAdam, adamax_update, nadam_update, radam_update
from .adaptive import (
                       Adadelta,
                       Adagrad,
                       RMSprop,
                       adadelta_update,
                       adagrad_update,
                       rmsprop_update,
)
from .lbfgs import LBFGS
from .lion import Lion, lion_update
from .matrix import SOAP, Muon, Shampoo
from .offload import OffloadOptimizer
from .optimizer import Optimizer
from .sgd import SGD, sgd_update
from .smmf import SMMF, smmf_update

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adagrad", "Adadelta", "Adamax", "NAdam",
           "RAdam", "RMSprop", "Lion", "LBFGS", "Muon", "Shampoo", "SOAP", "OffloadOptimizer",
           "SMMF", "lr_scheduler", "smmf_update",
           "sgd_update", "adam_update",
           "adagrad_update", "adadelta_update", "adamax_update", "nadam_update",
           "radam_update", "rmsprop_update", "lion_update"]
