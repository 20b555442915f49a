"""The :class:`Distribution` base and the helpers the distributions share.

Shapes follow PyTorch: a sample has shape ``sample_shape + batch_shape + event_shape``;
``log_prob(value)`` reduces the event dims and returns ``sample_shape + batch_shape``.
"""

from __future__ import annotations

import functools
import warnings

from .. import dtypes as dt
from ..autograd.grad_mode import enable_grad, no_grad
from ..ops import broadcast_tensors, tensor
from ..tensor import Size, Tensor
from . import constraints

__all__ = ["Distribution", "broadcast_all", "lazy_property", "logits_to_probs",
           "probs_to_logits", "clamp_probs", "sum_rightmost", "expand_params"]


class lazy_property:  # noqa: N801 - torch's name
    """A property computed on first access and then stored on the instance (Bernoulli's
    ``probs`` from ``logits``); computed with grad enabled, so it stays differentiable."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _LazyConstraintless(self)
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _LazyConstraintless:
    """What a lazy_property reads as on the class: marks a parameter that validation skips
    until it has been computed."""

    def __init__(self, prop):
        self.prop = prop


def broadcast_all(*values):
    """Broadcast tensors and numbers to one shape; numbers become tensors of the tensors'
    dtype and device (the default dtype when all are numbers).

    Example: ``broadcast_all(tensorix.zeros(3), 1.0)`` gives two tensors of shape ``(3,)``.
    """
    tensors = [v for v in values if isinstance(v, Tensor)]
    for v in values:
        if not isinstance(v, (Tensor, int, float)) or isinstance(v, bool):
            raise ValueError(f"Input arguments must all be instances of numbers or Tensors, "
                             f"got {type(v).__name__}")
    if tensors:
        d, device = dt.result_type(*tensors), tensors[0].device
        if not (d.is_floating_point or d.is_complex):
            d = dt.get_default_dtype()
    else:
        d, device = dt.get_default_dtype(), None
    lifted = [v if isinstance(v, Tensor) and v.dtype is d else
              v.to(d) if isinstance(v, Tensor) else tensor(v, dtype=d, device=device)
              for v in values]
    return tuple(broadcast_tensors(*lifted))


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities kept within ``[eps, 1 - eps]`` of their dtype, so logs stay finite."""
    eps = dt.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary=False) -> Tensor:
    """Log-odds of binary probabilities, or log-probabilities of categorical ones."""
    p = clamp_probs(probs)
    return p.log() - (-p).log1p() if is_binary else p.log()


def logits_to_probs(logits: Tensor, is_binary=False) -> Tensor:
    """Sigmoid of binary logits, softmax over the last dim of categorical ones."""
    return logits.sigmoid() if is_binary else logits.softmax(-1)


def sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """Sum over the rightmost ``dim`` dims (none for ``dim == 0``)."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:value.ndim - dim]) + (-1,)).sum(-1)


def expand_params(self, cls, names, batch_shape, _instance):
    """The shared body of ``expand``: a ``cls`` instance whose parameters ``names`` are
    ``self``'s expanded (views) to ``batch_shape``."""
    new = self._get_checked_instance(cls, _instance)
    batch_shape = Size(batch_shape)
    for name in names:
        setattr(new, name, getattr(self, name).expand(batch_shape))
    Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
    new._validate_args = self._validate_args
    return new


class Distribution:
    """Base class of probability distributions (``torch.distributions.Distribution``).

    Subclasses set ``arg_constraints`` (parameter name -> constraint), ``support``, and
    implement what they can of ``sample``/``rsample``, ``log_prob``, ``cdf``, ``icdf``,
    ``entropy``, ``mean``, ``mode``, ``variance`` and ``expand``. With ``validate_args`` (on by
    default, as in PyTorch) parameters are checked against their constraints at construction
    and values against the support in ``log_prob``, raising ValueError.
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument validation on or off for every distribution created later."""
        if value not in (True, False):
            raise ValueError("set_default_validate_args(): expected True or False")
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_parameters()

    def _check_parameters(self):
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            warnings.warn(f"{type(self).__name__} does not define `arg_constraints`. Please "
                          "set `arg_constraints = {}` or initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=3)
            return
        for param, constraint in arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue
            if param not in self.__dict__ and isinstance(
                    getattr(type(self), param, None), _LazyConstraintless):
                continue  # not computed yet: checking would compute it
            value = getattr(self, param)
            valid = constraint.check(value)
            if not bool(valid.all()):
                raise ValueError(
                    f"Expected parameter {param} ({type(value).__name__} of shape "
                    f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                    f"{constraint!r}, but found invalid values:\n{value}")

    # -- shapes --------------------------------------------------------------------------------
    @property
    def batch_shape(self) -> Size:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        """The shape of a single sample (without batching)."""
        return self._event_shape

    def _extended_shape(self, sample_shape=()) -> Size:
        if not isinstance(sample_shape, (tuple, list, Size)):
            sample_shape = (sample_shape,)
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def expand(self, batch_shape, _instance=None):
        """A new distribution with parameters expanded to ``batch_shape`` (no copy)."""
        raise NotImplementedError

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {type(self).__name__} of {cls.__name__} that "
                                      "defines a custom __init__ method must also define a "
                                      "custom .expand() method.")
        return type(self).__new__(type(self)) if _instance is None else _instance

    # -- interface -----------------------------------------------------------------------------
    @property
    def arg_constraints(self) -> dict:
        raise NotImplementedError

    @property
    def support(self):
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement mean")

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement variance")

    @property
    def stddev(self) -> Tensor:
        """The standard deviation: ``variance.sqrt()``."""
        return self.variance.sqrt()

    def sample(self, sample_shape=()) -> Tensor:
        """A sample of shape ``sample_shape + batch_shape + event_shape``, with no gradient."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        """A reparameterized sample: differentiable with respect to the parameters."""
        raise NotImplementedError(f"{type(self).__name__} does not implement rsample")

    def sample_n(self, n) -> Tensor:
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning,
                      stacklevel=2)
        return self.sample((n,))

    def log_prob(self, value) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement log_prob")

    def cdf(self, value) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement cdf")

    def icdf(self, value) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement icdf")

    def enumerate_support(self, expand=True) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement "
                                  "enumerate_support")

    def entropy(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement entropy")

    def perplexity(self) -> Tensor:
        """``exp(entropy)``."""
        return self.entropy().exp()

    def _validate_sample(self, value):
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = value.ndim - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{tuple(value.shape)} vs {tuple(self._event_shape)}.")
        actual, expected = tuple(value.shape), tuple(self._batch_shape + self._event_shape)
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{actual} vs {expected}.")
        try:
            support = self.support
        except NotImplementedError:
            return
        if not bool(support.check(value).all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape "
                             f"{actual}) to be within the support ({support!r}) of the "
                             f"distribution {self!r}, but found invalid values:\n{value}")

    def __repr__(self):
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(
            f"{k}: {self.__dict__[k] if self.__dict__[k].numel() == 1 else self.__dict__[k].size()}"
            for k in names)
        return f"{type(self).__name__}({args})"
