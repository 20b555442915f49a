"""Optimizers: each a class owning param groups and state, delegating the math to one pure
update function on raw arrays; learning-rate schedules in ``optim.lr_scheduler``."""

from .adam import Adam, AdamW, adam_update
from .optimizer import Optimizer
from .sgd import SGD, sgd_update

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "sgd_update", "adam_update"]
