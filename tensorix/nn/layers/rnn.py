"""Recurrent layers: RNN, LSTM, GRU (multi-layer, bidirectional, batch_first, dropout between
layers, LSTM projections) and their cells, with PyTorch's parameter names (``weight_ih_l0``,
``bias_hh_l1_reverse``, ...), gate order (LSTM: i, f, g, o; GRU: r, z, n) and init
U(-1/sqrt(hidden), 1/sqrt(hidden)).

Each direction of a layer is one fused node (``Recurrence`` in ``_recurrence.py``, through
``layer``): the input-to-hidden products of all time steps in chunks of GEMMs beside the time
loop (per step one GEMM for all gates and one gate pass), and in the backward the weight and
input gradients as GEMMs over chunks of steps beside the backward loop; a cell's gate math is
one node (``LSTMGates``, ``GRUGates``).
"""

from __future__ import annotations

import math
import warnings

from ...ops.creation import zeros
from ...ops.shape import cat, stack
from .. import functional as F
from .. import init
from ..module import Module
from ._recurrence import GRUGates, LSTMGates, _cell, _Steps, recurrence  # noqa: F401
from ._recurrence import layer as layer_fn
from ._util import new_param, optional_param

__all__ = ["RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


class RNNBase(Module):
    """Shared machinery of RNN, LSTM and GRU."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0,
                 device=None, dtype=None):
        super().__init__()
        if not isinstance(dropout, (int, float)) or isinstance(dropout, bool) or \
                not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"dropout option adds dropout after all but last recurrent layer, so "
                          f"non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", UserWarning,
                          stacklevel=3)
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, \
            proj_size
        gate = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        dirs = 2 if bidirectional else 1
        fk = dict(device=device, dtype=dtype)
        for layer in range(num_layers):
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                width = input_size if layer == 0 else real_hidden * dirs
                setattr(self, "weight_ih" + sfx, new_param(gate, width, **fk))
                setattr(self, "weight_hh" + sfx, new_param(gate, real_hidden, **fk))
                if bias:
                    setattr(self, "bias_ih" + sfx, new_param(gate, **fk))
                    setattr(self, "bias_hh" + sfx, new_param(gate, **fk))
                if proj_size > 0:
                    setattr(self, "weight_hr" + sfx, new_param(proj_size, hidden_size, **fk))
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def _weights(self, layer, d):
        sfx = f"_l{layer}" + ("_reverse" if d else "")
        p = self._parameters
        return (p["weight_ih" + sfx], p["weight_hh" + sfx], p.get("bias_ih" + sfx),
                p.get("bias_hh" + sfx), p.get("weight_hr" + sfx))

    def _run_direction(self, x, h, c, layer, d):
        w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(layer, d)
        # the input projections of all steps, beside the time loop where it can
        return layer_fn(self.mode, x, h, c, w_ih, w_hh, b_ih, b_hh, w_hr, bool(d))

    def _check_hidden(self, hx, expected, batched, what="hidden"):
        if not batched and hx.ndim != 2:
            raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got "
                               f"{hx.ndim}-D tensor")
        if batched and hx.ndim != 3:
            raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got "
                               f"{hx.ndim}-D tensor")
        got = tuple(hx.shape) if batched else (hx.shape[0], 1, hx.shape[1])
        if got != expected:
            shown = expected if batched else (expected[0], expected[2])
            raise RuntimeError(f"Expected {what} size {shown}, got {list(hx.shape)}")

    def _prepare(self, input, hx):
        if input.ndim not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got "
                             f"{input.ndim}D tensor instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")
        batched = input.ndim == 3
        x = input if batched else input.unsqueeze(1)
        if batched and self.batch_first:
            x = x.transpose(0, 1)
        n = x.shape[1]
        dirs = 2 if self.bidirectional else 1
        out_h = self.proj_size or self.hidden_size
        h_shape = (self.num_layers * dirs, n, out_h)
        c_shape = (self.num_layers * dirs, n, self.hidden_size)
        fk = dict(dtype=input.dtype, device=input.device)
        if hx is None:
            h0 = zeros(*h_shape, **fk)
            c0 = zeros(*c_shape, **fk) if self.mode == "LSTM" else None
            return x, h0, c0, batched
        if self.mode == "LSTM":
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError("LSTM: hx must be a tuple (h_0, c_0)")
            h0, c0 = hx
            self._check_hidden(h0, h_shape, batched)
            self._check_hidden(c0, c_shape, batched, "cell")
            return x, (h0 if batched else h0.unsqueeze(1)), \
                (c0 if batched else c0.unsqueeze(1)), batched
        self._check_hidden(hx, h_shape, batched)
        return x, (hx if batched else hx.unsqueeze(1)), None, batched

    def forward(self, input, hx=None):
        x, h0, c0, batched = self._prepare(input, hx)
        dirs = 2 if self.bidirectional else 1
        hs, cs = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                out, h, c = self._run_direction(x, h0[k], None if c0 is None else c0[k],
                                                layer, d)
                outs.append(out)
                hs.append(h)
                cs.append(c)
            x = outs[0] if dirs == 1 else cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        h_n = stack(hs)
        c_n = stack(cs) if self.mode == "LSTM" else None
        if batched and self.batch_first:
            x = x.transpose(0, 1)
        if not batched:
            x, h_n = x.squeeze(1), h_n.squeeze(1)
            c_n = None if c_n is None else c_n.squeeze(1)
        return x, ((h_n, c_n) if self.mode == "LSTM" else h_n)

    def flatten_parameters(self) -> None:
        """A no-op that returns None, as on CPU torch: cuDNN wants its weights in one buffer,
        and tensorix has no cuDNN (its weights are already the arrays the GEMMs read)."""
        return None

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


_ARGS = ("num_layers", "bias", "batch_first", "dropout", "bidirectional", "proj_size")


def _named(args, kwargs, names):
    out = dict(zip(names, args))
    clash = set(out) & set(kwargs)
    if clash:
        raise TypeError(f"got multiple values for argument(s) {sorted(clash)}")
    out.update(kwargs)
    return out


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or relu).

    ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True,
    batch_first=False, dropout=0.0, bidirectional=False)``; ``forward(input, h_0=None)``
    returns ``(output, h_n)``.
    """

    def __init__(self, input_size, hidden_size, *args, **kwargs):
        kw = _named(args, kwargs, ("num_layers", "nonlinearity") + _ARGS[1:5])
        nonlinearity = kw.pop("nonlinearity", "tanh")
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, **kw)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """Long short-term memory: ``forward(input, (h_0, c_0)=None)`` returns ``(output,
    (h_n, c_n))``; ``proj_size`` projects each hidden state (LSTMP).

    Shapes: input (L, N, H_in) or (N, L, H_in) with ``batch_first`` or unbatched (L, H_in);
    output (..., D * H_out); h_n (D * num_layers, N, H_out).
    Example: ``nn.LSTM(10, 20, num_layers=2, batch_first=True)``.
    """

    def __init__(self, input_size, hidden_size, *args, **kwargs):
        super().__init__("LSTM", input_size, hidden_size, **_named(args, kwargs, _ARGS))


class GRU(RNNBase):
    """Gated recurrent unit: ``forward(input, h_0=None)`` returns ``(output, h_n)``."""

    def __init__(self, input_size, hidden_size, *args, **kwargs):
        super().__init__("GRU", input_size, hidden_size, **_named(args, kwargs, _ARGS[:5]))


class RNNCellBase(Module):
    """Shared machinery of the cells: parameters ``weight_ih``, ``weight_hh``, ``bias_ih``,
    ``bias_hh``."""

    _mode = "RNN_TANH"

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        fk = dict(device=device, dtype=dtype)
        self.weight_ih = new_param(num_chunks * hidden_size, input_size, **fk)
        self.weight_hh = new_param(num_chunks * hidden_size, hidden_size, **fk)
        self.register_parameter("bias_ih", optional_param(bias, num_chunks * hidden_size, **fk))
        self.register_parameter("bias_hh", optional_param(bias, num_chunks * hidden_size, **fk))
        self.reset_parameters()

    reset_parameters = RNNBase.reset_parameters

    def _input(self, input):
        if input.ndim not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got "
                             f"{input.ndim}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} "
                               f"expected {self.input_size}")
        return (input, True) if input.ndim == 2 else (input.unsqueeze(0), False)

    def _hidden(self, hx, x, batched):
        if hx is None:
            return zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
        return hx if batched else hx.unsqueeze(0)

    def _step(self, x, h, c=None):
        gi = F.linear(x, self.weight_ih, self.bias_ih)
        gh = F.linear(h, self.weight_hh, self.bias_hh)
        return _cell(self._mode, gi, gh, h, c)

    def forward(self, input, hx=None):
        x, batched = self._input(input)
        h, _ = self._step(x, self._hidden(hx, x, batched))
        return h if batched else h.squeeze(0)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nl = self.__dict__.get("nonlinearity")
        if nl is not None and nl != "tanh":
            s += f", nonlinearity={nl}"
        return s


class RNNCell(RNNCellBase):
    """One Elman RNN step: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity
        self._mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"


class LSTMCell(RNNCellBase):
    """One LSTM step: ``forward(input, (h, c)=None)`` returns ``(h', c')``."""

    _mode = "LSTM"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        x, batched = self._input(input)
        if hx is None:
            h = c = self._hidden(None, x, batched)
        else:
            h, c = (t if batched else t.unsqueeze(0) for t in hx)
        h, c = self._step(x, h, c)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: ``h' = (1 - z) * n + z * h``."""

    _mode = "GRU"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)
