"""``autocast`` with torch's signature, on top of ``tensorix.numerics.autocast``.

``autocast(device_type, dtype=None, enabled=True)`` makes numerics' ``"bf16"`` or ``"fp16"``
precision policy current: GEMM operands are rounded to the 16-bit format, products accumulate
in float32, and the result and the output gradient are rounded to it, as an autocast GEMM on a
tensor core computes. Tensors keep their float32 dtype (the rounded values are exact in it).

The policy reaches every GEMM primitive through the one dispatch point (``Function.apply``):
``tensorix.matmul``, ``bmm``, ``einsum``, ``nn.functional.linear`` / ``nn.Linear``, the
convolutions and attention's products. Other ops run as without autocast.

Example::

    with tensorix.autocast("cpu", dtype=tensorix.bfloat16):
        loss = loss_fn(model(x), y)        # every Linear/Conv GEMM in bf16, fp32 accumulation
"""

from __future__ import annotations

import functools
import threading
import warnings

from .. import dtypes
from ..backend import cuda_available
from ..numerics.policy import autocast as policy_autocast
from ..tensor import Tensor

__all__ = ["autocast", "is_autocast_available", "is_autocast_enabled", "get_autocast_dtype",
           "custom_fwd", "custom_bwd"]

_DEVICES = {"cpu": "bfloat16", "cuda": "float16"}  # torch's default dtype per device type
_POLICY = {dtypes.bfloat16: "bf16", dtypes.float16: "fp16"}  # numerics policy per dtype
_state = threading.local()  # per thread, as torch's autocast state: a stack of (device, dtype)


def _stack():
    if not hasattr(_state, "stack"):
        _state.stack = []
    return _state.stack


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast supports ``device_type`` ("cpu" and "cuda")."""
    return device_type in _DEVICES


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for ``device_type`` (None: "cuda", as in torch) in this
    thread."""
    device_type = device_type or "cuda"
    for dev, dt in reversed(_stack()):
        if dev == device_type:
            return dt is not None
    return False


def get_autocast_dtype(device_type: str):
    """The dtype autocast runs ``device_type``'s GEMMs in (the innermost block's, else the
    device's default: bfloat16 on the CPU, float16 on CUDA)."""
    if not is_autocast_available(device_type):
        raise RuntimeError(f"get_autocast_dtype: unsupported device_type {device_type!r}; "
                           f"expected one of {sorted(_DEVICES)}")
    for dev, dt in reversed(_stack()):
        if dev == device_type and dt is not None:
            return dt
    return getattr(dtypes, _DEVICES[device_type])


class autocast:  # noqa: N801 - torch's name; a context manager and a decorator
    """Mixed precision for a block (or, as a decorator, a function): GEMMs in ``dtype``
    (bfloat16 or float16; default bfloat16 on "cpu", float16 on "cuda") with float32
    accumulation, through tensorix's precision policy (see the module docstring for which
    GEMMs it reaches). ``enabled=False`` turns an enclosing autocast off inside the block.
    As in torch, an unsupported dtype, or "cuda" where there is no GPU, warns and disables.

    Example::

        with tensorix.autocast("cpu", dtype=tensorix.bfloat16):
            y = tensorix.numerics.linear(x, w)     # bf16 operands, fp32 accumulation
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"autocast: expected `device_type` of type `str`, got: "
                             f"`{type(device_type).__name__}`")
        if not is_autocast_available(device_type):
            raise RuntimeError(f"autocast: unsupported device_type {device_type!r}; tensorix "
                               f"supports {sorted(_DEVICES)}")
        self.device = device_type
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self._enabled = bool(enabled)
        if self._enabled and device_type == "cuda" and not cuda_available():
            warnings.warn("autocast: device_type 'cuda' was given but CUDA is not available; "
                          "disabling autocast", UserWarning, stacklevel=2)
            self._enabled = False
        if self._enabled and self.fast_dtype not in _POLICY:
            warnings.warn(f"autocast: {device_type} autocast supports torch.bfloat16 and "
                          f"torch.float16, got {self.fast_dtype}; disabling autocast",
                          UserWarning, stacklevel=2)
            self._enabled = False
        self._policy_cm = None

    def __enter__(self):
        self._policy_cm = policy_autocast(_POLICY.get(self.fast_dtype, "fp32"),
                                          enabled=self._enabled)
        self._policy_cm.__enter__()
        _stack().append((self.device, self.fast_dtype if self._enabled else None))
        return self

    def __exit__(self, *exc):
        _stack().pop()
        cm, self._policy_cm = self._policy_cm, None
        return cm.__exit__(*exc)

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled):
                return func(*args, **kwargs)

        return wrapper


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorator for a custom ``Function.forward`` (torch's ``amp.custom_fwd``): with
    ``cast_inputs`` set, inside an enabled autocast the floating-point Tensor arguments are
    cast to it and ``fwd`` runs with autocast off; otherwise ``fwd`` runs unchanged.

    Example: ``@staticmethod @custom_fwd(device_type="cpu", cast_inputs=tensorix.float32)``.
    """
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)
    if not is_autocast_available(device_type):
        raise RuntimeError(f"custom_fwd: unsupported device_type {device_type!r}")

    @functools.wraps(fwd)
    def wrapper(*args, **kwargs):
        if cast_inputs is None or not is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        def cast(v):
            return v.to(cast_inputs) if isinstance(v, Tensor) and v.is_floating_point() else v

        with autocast(device_type, enabled=False):
            return fwd(*[cast(a) for a in args], **{k: cast(v) for k, v in kwargs.items()})

    return wrapper


def custom_bwd(bwd=None, *, device_type):
    """Decorator for a custom ``Function.backward`` (torch's ``amp.custom_bwd``). tensorix's
    autocast policy rounds only in the forward GEMMs it reaches, so ``bwd`` runs unchanged."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    if not is_autocast_available(device_type):
        raise RuntimeError(f"custom_bwd: unsupported device_type {device_type!r}")
    return bwd
