"""Bernoulli and Categorical, each given by ``probs`` or by ``logits`` (exactly one); the other
parametrization is computed on first use (and stays differentiable)."""

from __future__ import annotations

from .. import dtypes as dt
from ..ops import arange, bernoulli, broadcast_tensors, multinomial, softplus
from ..tensor import Size
from . import constraints
from .distribution import (
    Distribution,
    broadcast_all,
    expand_params,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)

__all__ = ["Bernoulli", "Categorical"]


def _one_of(probs, logits, name):
    if (probs is None) == (logits is None):
        raise ValueError(f"{name}: either `probs` or `logits` must be specified, but not both.")


class Bernoulli(Distribution):
    """The Bernoulli distribution: 1 with probability ``probs`` (``sigmoid(logits)``), else 0.

    Example::

        d = Bernoulli(logits=tensorix.tensor([0.0, 2.0]))
        d.sample((5,)).shape           # (5, 2), values 0. or 1.
        d.log_prob(tensorix.tensor([1.0, 0.0]))
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits, "Bernoulli")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            param = self.probs
        else:
            (self.logits,) = broadcast_all(logits)
            param = self.logits
        self._param = param
        super().__init__(param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        names = ("probs",) if "probs" in self.__dict__ else ("logits",)
        new = expand_params(self, Bernoulli, names, batch_shape, _instance)
        new._param = getattr(new, names[0])
        return new

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.shape

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return mode.masked_fill(self.probs == 0.5, float("nan"))

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return bernoulli(self.probs.detach().expand(shape).contiguous())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return value * logits - softplus(logits)  # -BCE-with-logits, stable both ways

    def entropy(self):
        return softplus(self.logits) - self.probs * self.logits

    def enumerate_support(self, expand=True):
        values = arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


class Categorical(Distribution):
    """A categorical distribution over ``0 .. K-1`` with (unnormalized) ``probs`` or
    ``logits`` of shape ``batch_shape + (K,)``; samples are int64 of ``batch_shape``.

    Example::

        d = Categorical(logits=tensorix.zeros(2, 4))
        d.sample((3,)).shape           # (3, 2)
        d.entropy()                    # log 4 each
    """

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits, "Categorical")
        if probs is not None:
            if probs.ndim < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            param = self.probs
        else:
            if logits.ndim < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
            param = self.logits
        self._param = param
        self._num_events = param.shape[-1]
        super().__init__(param.shape[:-1], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = Size(batch_shape)
        shape = batch_shape + (self._num_events,)
        for name in ("probs", "logits"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(shape))
                new._param = getattr(new, name)
        new._num_events = self._num_events
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return self._param.shape

    @property
    def mean(self):
        return self.probs.new_full(tuple(self._batch_shape), float("nan"))

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return self.probs.new_full(tuple(self._batch_shape), float("nan"))

    def sample(self, sample_shape=()):
        sample_shape = Size(sample_shape if isinstance(sample_shape, (tuple, list, Size))
                            else (sample_shape,))
        probs_2d = self.probs.detach().reshape(-1, self._num_events)
        n = max(sample_shape.numel(), 1)
        samples = multinomial(probs_2d, n, True).T
        return samples.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self):
        min_real = dt.finfo(self.logits.dtype).min
        logits = self.logits.clamp(min=min_real)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = arange(self._num_events, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values

