"""Gamma, Dirichlet and Beta, whose reparameterized samples are built from standard gamma
draws with implicit gradients (``_standard_gamma.py``): ``Gamma(a, r) = G(a) / r``,
``Dirichlet(a) = G(a) / sum G(a)``, ``Beta(a, b)`` is the first coordinate of
``Dirichlet([a, b])``, as in PyTorch."""

from __future__ import annotations

from .. import dtypes as dt
from ..ops import digamma, igamma, lgamma, stack, xlogy
from ..tensor import Size
from . import constraints
from ._standard_gamma import standard_gamma
from .distribution import Distribution, broadcast_all, expand_params

__all__ = ["Gamma", "Dirichlet", "Beta"]


def _keep_positive(x):
    """``x`` raised to the dtype's smallest normal where it underflowed to zero, keeping the
    gradient path (torch clamps the detached value in place for the same reason)."""
    floor = x.detach().clamp(min=dt.finfo(x.dtype).tiny)
    return x + (floor - x.detach())


class Gamma(Distribution):
    """The gamma distribution with shape ``concentration`` and inverse scale ``rate``
    (density ``rate^a x^(a-1) e^(-rate x) / Gamma(a)``).

    Example::

        d = Gamma(tensorix.tensor([2.0]), tensorix.tensor([3.0]))
        d.rsample((100,)).mean()      # about 2/3, differentiable in both parameters
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_params(self, Gamma, ("concentration", "rate"), batch_shape, _instance)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        return _keep_positive(value)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        a, r = self.concentration, self.rate
        return xlogy(a, r) + xlogy(a - 1, value) - r * value - lgamma(a)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return igamma(self.concentration, self.rate * value)

    def entropy(self):
        a = self.concentration
        return a - self.rate.log() + lgamma(a) + (1.0 - a) * digamma(a)


class Dirichlet(Distribution):
    """The Dirichlet distribution over the simplex, with ``concentration`` of shape
    ``batch_shape + (K,)``.

    Example::

        d = Dirichlet(tensorix.tensor([1.0, 2.0, 3.0]))
        d.rsample().sum()             # 1
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.ndim < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = concentration.shape
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape + self.event_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        g = _keep_positive(standard_gamma(self.concentration.expand(shape)))
        return g / g.sum(-1, keepdim=True)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        a = self.concentration
        return xlogy(a - 1.0, value).sum(-1) + lgamma(a.sum(-1)) - lgamma(a).sum(-1)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        a = (self.concentration - 1).clamp(min=0.0)
        return a / a.sum(-1, keepdim=True)

    @property
    def variance(self):
        a0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (a0 - self.concentration) / (a0.pow(2) * (a0 + 1))

    def entropy(self):
        a = self.concentration
        k = a.shape[-1]
        a0 = a.sum(-1)
        return (lgamma(a).sum(-1) - lgamma(a0) - (k - a0) * digamma(a0)
                - ((a - 1.0) * digamma(a)).sum(-1))


class Beta(Distribution):
    """The beta distribution on ``[0, 1]`` with ``concentration1`` (alpha) and
    ``concentration0`` (beta).

    Example::

        d = Beta(tensorix.tensor([2.0]), tensorix.tensor([5.0]))
        d.mean                         # 2/7
    """

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        c1, c0 = broadcast_all(concentration1, concentration0)
        self._dirichlet = Dirichlet(stack([c1, c0], -1), validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        batch_shape = Size(batch_shape)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def concentration1(self):
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(stack([value, 1.0 - value], -1))

    def entropy(self):
        return self._dirichlet.entropy()
