"""Random numbers: the seeded :class:`Generator`, sampling ops and in-place fills.

Every draw comes from a NumPy ``PCG64`` bit generator on the host, whatever the output device
(results are then moved to the device): one stream per generator, bit-identical on NumPy and
CuPy, and a state of 45 bytes that :meth:`Generator.get_state` returns as a uint8 tensor, so a
training checkpoint resumes the exact stream. The default generator (``tensorix.manual_seed``,
``tensorix.get_rng_state``, ...) is seeded from OS entropy at import, like PyTorch's.

Sampled tensors are leaves: no gradient flows into ``mean``/``std``/``p`` arguments.
"""

from __future__ import annotations

import numbers

import ml_dtypes
import numpy as np

from .. import backend
from .. import dtypes as dt
from ..autograd.grad_mode import modes
from ..tensor import Tensor, _make
from . import inplace
from .creation import _shape

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state", "rand", "randn", "randint", "randperm", "normal",
           "bernoulli", "multinomial", "poisson", "rand_like", "randn_like", "randint_like"]

_DEFAULT_SEED = 67280421310721  # torch.Generator()'s initial seed
_STATE_BYTES = 45  # PCG64 state (16) + increment (16) + has_uint32 (1) + uinteger (4) + seed (8)
_U64 = 1 << 64


class Generator:
    """A random number generator with its own seed and state (``torch.Generator``).

    Example::

        >>> g = tensorix.Generator().manual_seed(0)
        >>> a = tensorix.rand(3, generator=g)
        >>> state = g.get_state(); b = tensorix.rand(3, generator=g)
        >>> g.set_state(state); bool((tensorix.rand(3, generator=g) == b).all())
        True
    """

    def __init__(self, device="cpu"):
        self.device = backend.Device(device)
        self.manual_seed(_DEFAULT_SEED)

    def manual_seed(self, seed) -> Generator:
        """Re-seed; ``seed`` is an int in [-2**63, 2**64) (negatives wrap, as in PyTorch)."""
        if isinstance(seed, Tensor):
            seed = seed.item()
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
            raise TypeError(f"manual_seed(): expected an int seed, got {type(seed).__name__}")
        seed = int(seed)
        if not -(1 << 63) <= seed < _U64:
            raise ValueError(f"manual_seed(): seed must be within the range [-2**63, 2**64 - 1], "
                             f"got {seed}")
        self._seed = seed % _U64
        self._bits = np.random.PCG64(self._seed)
        self._rng = np.random.Generator(self._bits)
        return self

    def seed(self) -> int:
        """Re-seed from OS entropy and return the new seed."""
        new = int(np.random.SeedSequence().entropy) % _U64
        self.manual_seed(new)
        return new

    def initial_seed(self) -> int:
        """The seed this generator was last seeded with."""
        return self._seed

    def get_state(self) -> Tensor:
        """The full state as a uint8 tensor of 45 bytes (save it with a checkpoint)."""
        st = self._bits.state
        raw = (st["state"]["state"].to_bytes(16, "little") +
               st["state"]["inc"].to_bytes(16, "little") +
               bytes([st["has_uint32"]]) + st["uinteger"].to_bytes(4, "little") +
               self._seed.to_bytes(8, "little"))
        return _make(np.frombuffer(raw, dtype=np.uint8).copy(), dt.uint8)

    def set_state(self, new_state) -> Generator:
        """Restore a state from :meth:`get_state`; the stream continues bit-identically."""
        if not isinstance(new_state, Tensor) or new_state.dtype is not dt.uint8 or \
                tuple(new_state.shape) != (_STATE_BYTES,):
            got = (f"{new_state.dtype.name} tensor of shape {list(new_state.shape)}"
                   if isinstance(new_state, Tensor) else type(new_state).__name__)
            raise RuntimeError(f"set_state(): expected a uint8 tensor of {_STATE_BYTES} bytes "
                               f"(from get_state()), got {got}")
        raw = bytes(new_state.__array__().tolist())
        self._seed = int.from_bytes(raw[37:45], "little")
        self._bits = np.random.PCG64()
        self._bits.state = {
            "bit_generator": "PCG64",
            "state": {"state": int.from_bytes(raw[0:16], "little"),
                      "inc": int.from_bytes(raw[16:32], "little")},
            "has_uint32": raw[32], "uinteger": int.from_bytes(raw[33:37], "little")}
        self._rng = np.random.Generator(self._bits)
        return self

    def __getstate__(self):
        return {"device": str(self.device), "state": self.get_state().__array__().tobytes()}

    def __setstate__(self, st):
        self.device = backend.Device(st["device"])
        self.set_state(_make(np.frombuffer(st["state"], dtype=np.uint8).copy(), dt.uint8))

    def __repr__(self):
        return f"<tensorix.Generator device='{self.device}' initial_seed={self._seed}>"


default_generator = Generator()
default_generator.seed()


# The default generators of the GPUs (tensorix.cuda), made on first use; each starts from the
# CPU generator's current seed, so ``manual_seed(s)`` seeds every device, as in PyTorch.
_device_generators: dict = {}


def device_generator(device) -> Generator:
    """The default generator of ``device`` (``default_generator`` for the CPU)."""
    dev = backend.Device(device)
    if dev.type == "cpu":
        return default_generator
    gen = _device_generators.get(dev)
    if gen is None:
        gen = _device_generators[dev] = Generator(dev).manual_seed(default_generator._seed)
    return gen


def manual_seed(seed) -> Generator:
    """Seed the default generator of every device; returns the CPU one.
    Example: ``tensorix.manual_seed(0)``."""
    out = default_generator.manual_seed(seed)
    for gen in _device_generators.values():
        gen.manual_seed(seed)
    return out


def seed() -> int:
    """Seed the default generator from OS entropy; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The default generator's last seed."""
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The default generator's state (uint8 tensor; see :meth:`Generator.get_state`)."""
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    """Restore the default generator's state from :func:`get_rng_state`."""
    default_generator.set_state(new_state)


# -- samplers (raw host arrays) ----------------------------------------------------------------
def _gen(generator, op, device=None):
    state = modes.state
    brk = getattr(state.tracer, "graph_break", None) if state.hooked else None
    if brk is not None:
        # a draw outside any primitive while a graph is captured: the graph would hold its
        # numbers as constants (a draw inside a primitive, F.dropout's, is a node instead)
        brk(f"{op}(): random numbers were drawn outside the dispatcher")
    if generator is None:
        if device is None or backend.Device(device).type == "cpu":
            return default_generator._rng
        return device_generator(device)._rng
    if not isinstance(generator, Generator):
        raise TypeError(f"{op}(): argument 'generator' must be tensorix.Generator, not "
                        f"{type(generator).__name__}")
    return generator._rng


def _digits(d):
    """Significand bits of a float dtype (24 for float32): uniforms are multiples of
    2**-digits, so they are exact in ``d`` and never round up to 1."""
    return int(ml_dtypes.finfo(d.np).nmant) + 1


def _uniform01(rng, shape, d):
    if d.is_complex:
        parts = _uniform01(rng, tuple(shape) + (2,), d.to_real())
        return (parts[..., 0] + 1j * parts[..., 1]).astype(d.np)
    if d.np in (np.float32, np.float64):
        return rng.random(shape, dtype=d.np)
    k = _digits(d)
    return (rng.integers(0, 1 << k, size=shape) * 2.0 ** -k).astype(d.np)


def _standard_normal(rng, shape, d):
    if d.is_complex:  # real and imaginary parts each N(0, 1/2), so E|z|^2 = 1 (PyTorch)
        parts = rng.standard_normal(tuple(shape) + (2,)) * np.sqrt(0.5)
        return (parts[..., 0] + 1j * parts[..., 1]).astype(d.np)
    if d.np in (np.float32, np.float64):
        return rng.standard_normal(shape, dtype=d.np)
    return rng.standard_normal(shape, dtype=np.float32).astype(d.np)


def _float_dtype(dtype, op, complex_ok=True):
    d = dt.as_dtype(dtype) if dtype is not None else dt.get_default_dtype()
    if not (d.is_floating_point or (complex_ok and d.is_complex)):
        raise TypeError(f"{op}(): expected a floating point dtype, got {d.name}")
    return d


def _out(arr, d, device, requires_grad):
    dev = backend.Device(device) if device is not None else backend.cpu
    arr = np.asarray(arr, dtype=d.np)
    if not arr.flags.c_contiguous:
        arr = arr.copy()
    t = _make(backend.to_device(arr, dev), d)
    return t.requires_grad_() if requires_grad else t


# -- creation ----------------------------------------------------------------------------------
def rand(*size, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uniform samples on ``[0, 1)`` of shape ``size`` (default dtype).

    Example: ``tensorix.rand(2, 3, generator=tensorix.Generator().manual_seed(0))``.
    """
    d = _float_dtype(dtype, "rand")
    return _out(_uniform01(_gen(generator, "rand", device), _shape(size, "rand"), d), d, device,
                requires_grad)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Standard normal samples of shape ``size``. Example: ``tensorix.randn(4)``."""
    d = _float_dtype(dtype, "randn")
    return _out(_standard_normal(_gen(generator, "randn", device), _shape(size, "randn"), d), d,
                device, requires_grad)


def _int_bound(v, op, arg):
    if isinstance(v, Tensor):
        v = v.item()
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
        raise TypeError(f"{op}(): argument '{arg}' must be an int, not {type(v).__name__}")
    return int(v)


def _randint_values(rng, low, high, shape, op):
    if low >= high:
        raise RuntimeError(f"{op}(): random_ expects 'from' to be less than 'to', but got "
                           f"from={low} >= to={high}")
    return rng.integers(low, high, size=shape, dtype=np.int64)


def randint(*args, size=None, generator=None, dtype=None, device=None,
            requires_grad=False) -> Tensor:
    """Integers uniform on ``[low, high)``: ``randint(high, size)`` or ``randint(low, high,
    size)``; int64 unless ``dtype``.

    Example: ``tensorix.randint(0, 10, (2, 3))``.
    """
    if size is not None:
        args = args + (size,)
    if len(args) not in (2, 3):
        raise TypeError(f"randint(): expected (high, size) or (low, high, size), got "
                        f"{len(args)} positional arguments")
    low, high = (0, args[0]) if len(args) == 2 else args[:2]
    low, high = _int_bound(low, "randint", "low"), _int_bound(high, "randint", "high")
    shape = _shape((args[-1],), "randint")
    d = dt.as_dtype(dtype) if dtype is not None else dt.int64
    arr = _randint_values(_gen(generator, "randint", device), low, high, shape, "randint")
    return _out(arr.astype(d.np), d, device, requires_grad)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A random permutation of ``0 .. n-1`` (int64 unless ``dtype``).

    Example: ``tensorix.randperm(5)``.
    """
    n = _int_bound(n, "randperm", "n")
    if n < 0:
        raise RuntimeError(f"randperm(): n must be non-negative, got {n}")
    d = dt.as_dtype(dtype) if dtype is not None else dt.int64
    return _out(_gen(generator, "randperm", device).permutation(n).astype(d.np), d, device,
                requires_grad)


def _like(fn, input, dtype, device, requires_grad, op, *args, generator=None):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be a Tensor, not {type(input).__name__}")
    dtype = input.dtype if dtype is None else dtype
    if fn is not randint:
        _float_dtype(dtype, op)
    return fn(*args, tuple(input.shape), generator=generator, dtype=dtype,
              device=input.device if device is None else device, requires_grad=requires_grad)


def rand_like(input, *, generator=None, dtype=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    """:func:`rand` with the shape, dtype and device of ``input``."""
    return _like(rand, input, dtype, device, requires_grad, "rand_like", generator=generator)


def randn_like(input, *, generator=None, dtype=None, device=None, requires_grad=False,
               memory_format=None) -> Tensor:
    """:func:`randn` with the shape, dtype and device of ``input``."""
    return _like(randn, input, dtype, device, requires_grad, "randn_like", generator=generator)


def randint_like(input, low=0, high=None, *, generator=None, dtype=None, device=None,
                 requires_grad=False, memory_format=None) -> Tensor:
    """:func:`randint` shaped like ``input``: ``randint_like(x, high)`` or
    ``randint_like(x, low, high)``; keeps ``input``'s dtype unless ``dtype``."""
    if high is None:
        low, high = 0, low
    return _like(randint, input, dtype, device, requires_grad, "randint_like", low, high,
                 generator=generator)


# -- distributions -----------------------------------------------------------------------------
def _param(v, op, arg):
    """A distribution parameter as a host float64 array (or a Python float)."""
    if isinstance(v, Tensor):
        if not (v.dtype.is_floating_point or v.dtype.is_complex):
            raise TypeError(f"{op}(): argument '{arg}' must be a floating point tensor, got "
                            f"{v.dtype.name}")
        return np.asarray(v.__array__(), dtype=np.float64)
    if isinstance(v, numbers.Real) and not isinstance(v, bool):
        return float(v)
    raise TypeError(f"{op}(): argument '{arg}' must be a Tensor or a float, not "
                    f"{type(v).__name__}")


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False) -> Tensor:
    """Normal samples with elementwise ``mean`` and ``std`` (tensors broadcast together, or
    floats); with two floats, ``size`` gives the shape.

    Example: ``tensorix.normal(tensorix.zeros(3), 2.0)``;
    ``tensorix.normal(0.0, 1.0, size=(2, 2))``.
    """
    tensors = [v for v in (mean, std) if isinstance(v, Tensor)]
    m, s = _param(mean, "normal", "mean"), _param(std, "normal", "std")
    if np.any(np.asarray(s) < 0):
        raise RuntimeError("normal(): expects all elements of std >= 0.0")
    if tensors:
        shape = np.broadcast_shapes(*(tuple(t.shape) for t in tensors))
        d = dt.result_type(*tensors) if dtype is None else dt.as_dtype(dtype)
        device = tensors[0].device if device is None else device
    else:
        if size is None:
            raise TypeError("normal(): with a float mean and std, 'size' is required")
        shape, d = _shape((size,), "normal"), _float_dtype(dtype, "normal", complex_ok=False)
    z = _standard_normal(_gen(generator, "normal", device), shape, d).astype(np.float64)
    return _out(m + s * z, d, device, requires_grad)


def _probability(p, op):
    """p as a checked host array or float in [0, 1]."""
    arr = _param(p, op, "p")
    bad = np.isnan(arr) | (np.asarray(arr) < 0) | (np.asarray(arr) > 1)
    if np.any(bad):
        shown = arr if isinstance(arr, float) else "a value outside it"
        raise RuntimeError(f"{op}(): expects p to be in [0, 1], but got p={shown}")
    return arr


def bernoulli(input, p=None, *, generator=None) -> Tensor:
    """0/1 samples with probability ``input`` (elementwise), or ``p`` in the shape of
    ``input``; the result has ``input``'s dtype.

    Example: ``tensorix.bernoulli(tensorix.full((4,), 0.3))``.
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"bernoulli(): argument 'input' must be a Tensor, not "
                        f"{type(input).__name__}")
    if p is None and not input.dtype.is_floating_point:
        raise TypeError(f"bernoulli(): expected a floating point probability tensor, got "
                        f"{input.dtype.name}")
    probs = _probability(input if p is None else p, "bernoulli")
    u = _gen(generator, "bernoulli", input.device).random(tuple(input.shape))
    return _out(u < probs, input.dtype, input.device, False)


def _check_probs(arr, op):
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise RuntimeError(f"{op}(): probability tensor contains either `inf`, `nan` or "
                           "element < 0")
    if np.any(arr.sum(-1) <= 0):
        raise RuntimeError(f"{op}(): invalid multinomial distribution (sum of probabilities "
                           "<= 0)")


def multinomial(input, num_samples, replacement=False, *, generator=None) -> Tensor:
    """Category indices drawn from the (unnormalised) weights in each row of ``input`` (1-d or
    2-d): shape ``(num_samples,)`` or ``(rows, num_samples)``, int64.

    Without replacement each category is drawn at most once (weighted sampling by exponential
    keys, equivalent to drawing one at a time and renormalising).

    Example: ``tensorix.multinomial(tensorix.tensor([0.1, 0.9]), 5, replacement=True)``.
    """
    if not isinstance(input, Tensor) or not input.dtype.is_floating_point:
        raise TypeError("multinomial(): argument 'input' must be a floating point Tensor")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"multinomial(): prob_dist must be 1 or 2 dim, got {input.ndim}")
    n = _int_bound(num_samples, "multinomial", "num_samples")
    if n <= 0:
        raise RuntimeError(f"multinomial(): cannot sample n_sample <= 0 samples (got {n})")
    probs = np.atleast_2d(np.asarray(input.__array__(), dtype=np.float64))
    k = probs.shape[-1]
    if not replacement and n > k:
        raise RuntimeError(f"multinomial(): cannot sample n_sample > prob_dist.size(-1) "
                           f"samples without replacement ({n} > {k})")
    _check_probs(probs, "multinomial")
    rng = _gen(generator, "multinomial", input.device)
    if replacement:
        cdf = np.cumsum(probs / probs.sum(-1, keepdims=True), axis=-1)
        cdf[:, -1] = 1.0
        u = rng.random((probs.shape[0], n))
        out = np.stack([np.searchsorted(c, row, side="right") for c, row in zip(cdf, u)])
    else:
        with np.errstate(divide="ignore"):  # zero weights get an infinite key: drawn last
            keys = rng.standard_exponential(probs.shape) / probs
        out = np.argsort(keys, axis=-1, kind="stable")[:, :n]
    out = np.minimum(out, k - 1).astype(np.int64)
    return _out(out if input.ndim == 2 else out[0], dt.int64, input.device, False)


def poisson(input, generator=None) -> Tensor:
    """Poisson samples with elementwise rates ``input``, in ``input``'s dtype.

    Example: ``tensorix.poisson(tensorix.full((3,), 4.0))``.
    """
    if not isinstance(input, Tensor) or not input.dtype.is_floating_point:
        raise TypeError("poisson(): argument 'input' must be a floating point Tensor")
    lam = np.asarray(input.__array__(), dtype=np.float64)
    if np.any(lam < 0) or np.any(np.isnan(lam)):
        raise RuntimeError("poisson(): invalid Poisson rate, expected rate to be non-negative")
    out = _gen(generator, "poisson", input.device).poisson(lam).astype(np.float64)
    return _out(out, input.dtype, input.device, False)


# -- in-place fills (Tensor methods; nn.init uses uniform_ and normal_) -------------------------
def _fill(self, arr):
    """A tensor of ``self``'s dtype/device holding host values ``arr`` (what ``op_`` writes)."""
    return _out(np.asarray(arr).astype(self.dtype.np), self.dtype, self.device, False)


def _need_float(self, op):
    if not (self.dtype.is_floating_point or self.dtype.is_complex and op == "normal_"):
        raise TypeError(f"{op}(): expected a floating point tensor, got {self.dtype.name}")


def _uniform(self, a=0.0, b=1.0, *, generator=None):
    _need_float(self, "uniform_")
    if a > b:
        raise RuntimeError(f"uniform_(): expects to return a [from, to) range, but found "
                           f"from={a} > to={b}")
    u = _uniform01(_gen(generator, "uniform_", self.device), tuple(self.shape), self.dtype)
    return _fill(self, a + (b - a) * u.astype(np.float64))


def _normal(self, mean=0.0, std=1.0, *, generator=None):
    _need_float(self, "normal_")
    if std < 0:
        raise RuntimeError(f"normal_(): expects std >= 0.0, but found std {std}")
    z = _standard_normal(_gen(generator, "normal_", self.device), tuple(self.shape), self.dtype)
    return _fill(self, mean + std * z.astype(np.complex128 if self.dtype.is_complex
                                             else np.float64))


def _bernoulli(self, p=0.5, *, generator=None):
    probs = _probability(p, "bernoulli_")
    u = _gen(generator, "bernoulli_", self.device).random(tuple(self.shape))
    return _fill(self, u < probs)


def _random_range(d):
    """random_()'s default ``[0, high]``: every integer the dtype holds exactly."""
    if d.is_floating_point:
        return 0, (1 << _digits(d)) + 1
    if d is dt.bool:
        return 0, 2
    return 0, int(np.iinfo(d.np).max) + 1


_MISSING = object()


def _random(self, from_=0, to=_MISSING, *, generator=None):
    """``random_()``: the dtype's exact range; ``random_(to)``: [0, to); ``random_(from,
    to)``: [from, to), ``to=None`` meaning the dtype's maximum."""
    if self.dtype.is_complex:
        raise TypeError("random_(): complex tensors are not supported")
    low, high = _random_range(self.dtype)
    if to is _MISSING:
        if from_ != 0:  # random_(to)
            high = _int_bound(from_, "random_", "to")
    else:
        low = _int_bound(from_, "random_", "from")
        high = high if to is None else _int_bound(to, "random_", "to")
    return _fill(self, _randint_values(_gen(generator, "random_", self.device), low, high,
                                       tuple(self.shape), "random_"))


def _exponential(self, lambd=1.0, *, generator=None):
    _need_float(self, "exponential_")
    if not lambd > 0:
        raise RuntimeError(f"exponential_(): expects lambda > 0.0, but found lambda={lambd}")
    e = _gen(generator, "exponential_", self.device).standard_exponential(tuple(self.shape))
    return _fill(self, e / lambd)


def _log_normal(self, mean=1.0, std=2.0, *, generator=None):
    _need_float(self, "log_normal_")
    if not std > 0:
        raise RuntimeError(f"log_normal_(): expects std > 0.0, but found std={std}")
    z = _gen(generator, "log_normal_", self.device).standard_normal(tuple(self.shape))
    return _fill(self, np.exp(mean + std * z))


def _geometric(self, p, *, generator=None):
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_(): expects p to be in (0, 1), but got p={p}")
    rng = _gen(generator, "geometric_", self.device)
    return _fill(self, rng.geometric(p, size=tuple(self.shape)))


def _cauchy(self, median=0.0, sigma=1.0, *, generator=None):
    _need_float(self, "cauchy_")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_(): expects sigma > 0.0, but found sigma={sigma}")
    return _fill(self, median + sigma * _gen(generator, "cauchy_", self.device).standard_cauchy(
        tuple(self.shape)))


TENSOR_METHODS = {
    "uniform_": inplace.make(_uniform, "uniform_"), "normal_": inplace.make(_normal, "normal_"),
    "bernoulli_": inplace.make(_bernoulli, "bernoulli_"),
    "random_": inplace.make(_random, "random_"),
    "exponential_": inplace.make(_exponential, "exponential_"),
    "log_normal_": inplace.make(_log_normal, "log_normal_"),
    "geometric_": inplace.make(_geometric, "geometric_"),
    "cauchy_": inplace.make(_cauchy, "cauchy_"),
    "bernoulli": bernoulli, "multinomial": multinomial,
}
