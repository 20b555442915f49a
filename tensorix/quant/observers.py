"""Observers: modules that watch tensors pass and turn what they saw into ``(scale,
zero_point)`` for a :class:`~tensorix.quant.QScheme` (torch.ao.quantization's observer names).

* :class:`MinMaxObserver`: the running min and max (per tensor, channel or group).
* :class:`MovingAverageMinMaxObserver`: an exponential moving average of each batch's min and
  max (``averaging_constant`` 0.01, torch's default), the activation ranges of QAT.
* :class:`HistogramObserver`: a histogram of everything seen (per tensor); the range is the
  ``percentile`` quantiles (clipping rare outliers).
* :class:`MSEObserver`: the clipped range ``[r min, r max]`` (``r`` on a grid of ``grid``
  ratios) with the least mean squared quantization error: over the histogram per tensor, over
  the observed tensor per channel or group (weights, observed once).

An observer returns its input unchanged. :meth:`calculate_qparams` before any data raises
ValueError (calibration with no data).

Example::

    >>> obs = MinMaxObserver(QScheme(symmetric=False))
    >>> _ = obs(tensorix.tensor([-1., 3.]))
    >>> obs.calculate_qparams()                     # (4/255, -64)
"""

from __future__ import annotations

import numpy as np

from ..backend import array_module
from ..nn.module import Module
from ..tensor import Tensor, _make
from .quantizer import QScheme, _check_layout, grouped, qparams_from_range, reduce_dims

__all__ = ["ObserverBase", "MinMaxObserver", "MovingAverageMinMaxObserver",
           "HistogramObserver", "MSEObserver", "OBSERVERS"]


def _affine_activations():
    return QScheme(bits=8, symmetric=False)


class ObserverBase(Module):
    """Base of every observer: ``forward`` records ``x`` and returns it; subclasses implement
    ``_observe(array)`` and ``_range()`` (min and max arrays)."""

    def __init__(self, scheme: QScheme | None = None):
        super().__init__()
        self.scheme = scheme if scheme is not None else _affine_activations()
        self.register_buffer("min_val", None)
        self.register_buffer("max_val", None)

    def forward(self, x):
        if not isinstance(x, Tensor):
            raise TypeError(f"{type(self).__name__}: expected a Tensor, got {type(x).__name__}")
        a = x._data
        _check_layout(a, self.scheme, type(self).__name__)
        if a.size:
            self._observe(a)
        return x

    def _batch_range(self, a):
        g = grouped(a, self.scheme)
        dims = reduce_dims(g.ndim, self.scheme)
        keep = self.scheme.granularity != "per_tensor"
        return g.min(axis=dims, keepdims=keep), g.max(axis=dims, keepdims=keep)

    def _observe(self, a):
        raise NotImplementedError

    def _range(self):
        return self.min_val._data, self.max_val._data

    def calculate_qparams(self):
        """``(scale, zero_point)`` Tensors from what was observed (shapes as
        :func:`~tensorix.quant.compute_qparams`)."""
        if self.min_val is None:
            raise ValueError(f"{type(self).__name__}.calculate_qparams(): no data was observed; "
                             "run calibration batches through the model first")
        lo, hi = self._range()
        scale, zp = qparams_from_range(lo, hi, self.scheme)
        return _make(scale), _make(zp)

    def extra_repr(self):
        s = self.scheme
        return f"bits={s.bits}, symmetric={s.symmetric}, granularity={s.granularity}"


class MinMaxObserver(ObserverBase):
    """The running min and max of everything observed."""

    def _observe(self, a):
        lo, hi = self._batch_range(a)
        if self.min_val is None:
            self.min_val, self.max_val = _make(lo), _make(hi)
        else:
            xp = array_module(a)
            self.min_val = _make(xp.minimum(self.min_val._data, lo))
            self.max_val = _make(xp.maximum(self.max_val._data, hi))


class MovingAverageMinMaxObserver(ObserverBase):
    """``min <- min + c (batch_min - min)`` (and max); the first batch sets them."""

    def __init__(self, scheme=None, averaging_constant=0.01):
        super().__init__(scheme)
        if not 0 < averaging_constant <= 1:
            raise ValueError(f"MovingAverageMinMaxObserver(): 'averaging_constant' must be in "
                             f"(0, 1], got {averaging_constant}")
        self.averaging_constant = averaging_constant

    def _observe(self, a):
        lo, hi = self._batch_range(a)
        if self.min_val is None:
            self.min_val, self.max_val = _make(lo), _make(hi)
            return
        c = self.averaging_constant
        self.min_val = _make(self.min_val._data + c * (lo - self.min_val._data))
        self.max_val = _make(self.max_val._data + c * (hi - self.max_val._data))


class HistogramObserver(ObserverBase):
    """A ``bins``-bin histogram over the running range (per tensor). When a batch widens the
    range the old counts move to the new bins at their centres. The range is the
    ``(100 - percentile, percentile)`` quantiles of the histogram."""

    def __init__(self, scheme=None, bins=2048, percentile=99.99):
        super().__init__(scheme)
        if self.scheme.granularity != "per_tensor":
            raise ValueError(f"{type(self).__name__}(): supports per_tensor schemes only, got "
                             f"{self.scheme.granularity}")
        if not 50 < percentile <= 100:
            raise ValueError(f"{type(self).__name__}(): 'percentile' must be in (50, 100], got "
                             f"{percentile}")
        self.bins, self.percentile = int(bins), float(percentile)
        self.register_buffer("histogram", None)

    def _observe(self, a):
        a = np.asarray(a.get() if hasattr(a, "get") else a, dtype=np.float64).ravel()
        lo, hi = float(a.min()), float(a.max())
        if self.min_val is not None:
            old_lo, old_hi = float(self.min_val.item()), float(self.max_val.item())
            lo, hi = min(lo, old_lo), max(hi, old_hi)
        hi = hi if hi > lo else lo + 1e-12
        counts, _ = np.histogram(a, self.bins, (lo, hi))
        if self.histogram is not None:  # re-bin the old counts at their bin centres
            edges = np.linspace(old_lo, old_hi if old_hi > old_lo else old_lo + 1e-12,
                                self.bins + 1)
            centres = (edges[:-1] + edges[1:]) / 2
            counts = counts + np.histogram(centres, self.bins, (lo, hi),
                                           weights=self.histogram.numpy())[0]
        self.histogram = _make(counts.astype(np.float64))
        self.min_val, self.max_val = _make(np.float64(lo)), _make(np.float64(hi))

    def _centres_counts(self):
        lo, hi = float(self.min_val.item()), float(self.max_val.item())
        edges = np.linspace(lo, hi, self.bins + 1)
        return edges, self.histogram.numpy()

    def _range(self):
        edges, counts = self._centres_counts()
        cdf = np.cumsum(counts) / counts.sum()
        q = self.percentile / 100
        lo_i = int(np.searchsorted(cdf, 1 - q, side="right"))
        hi_i = int(np.searchsorted(cdf, q, side="left"))
        return np.float64(edges[lo_i]), np.float64(edges[min(hi_i + 1, self.bins)])


class MSEObserver(HistogramObserver):
    """The clip ratio ``r`` in ``linspace(1/grid, 1, grid)`` of ``[r min, r max]`` with the
    least squared quantization error: per tensor over the histogram (bin centres weighted by
    counts), per channel or group over the observed tensor itself (weights: observe once)."""

    def __init__(self, scheme=None, bins=2048, grid=100):
        ObserverBase.__init__(self, scheme)
        self.bins, self.grid, self.percentile = int(bins), int(grid), 100.0
        self.register_buffer("histogram", None)
        self._data = None

    def _observe(self, a):
        if self.scheme.granularity == "per_tensor":
            return super()._observe(a)
        self._data = a  # a weight: the search runs on it directly
        lo, hi = self._batch_range(a)
        self.min_val, self.max_val = _make(lo), _make(hi)

    def _range(self):
        if self.scheme.granularity == "per_tensor":
            edges, counts = self._centres_counts()
            values = (edges[:-1] + edges[1:]) / 2
            lo, hi = float(self.min_val.item()), float(self.max_val.item())
            best, best_err = (lo, hi), np.inf
            for r in np.linspace(1 / self.grid, 1, self.grid):
                err = (_fq_error(values, np.float64(r * lo), np.float64(r * hi), self.scheme)
                       * counts).sum()
                if err < best_err:
                    best, best_err = (r * lo, r * hi), err
            return np.float64(best[0]), np.float64(best[1])
        g = grouped(self._data, self.scheme)
        dims = reduce_dims(g.ndim, self.scheme)
        lo, hi = self.min_val._data, self.max_val._data
        xp = array_module(g)
        best_lo, best_hi = lo, hi
        best_err = xp.full(lo.shape, np.inf)
        for r in np.linspace(1 / self.grid, 1, self.grid):
            err = _fq_error(g, r * lo, r * hi, self.scheme).sum(axis=dims, keepdims=True)
            better = err < best_err
            best_err = xp.where(better, err, best_err)
            best_lo, best_hi = xp.where(better, r * lo, best_lo), xp.where(better, r * hi, best_hi)
        return best_lo, best_hi


def _fq_error(values, lo, hi, scheme):
    """Squared error of fake-quantizing ``values`` with the qparams of range [lo, hi]."""
    xp = array_module(values)
    scale, zp = qparams_from_range(xp.asarray(lo), xp.asarray(hi), scheme)
    if scheme.is_int:
        q = xp.clip(xp.rint(values / scale) + zp, scheme.qmin, scheme.qmax)
        deq = (q - zp) * scale
    else:
        from ..numerics.casting import quantize as fq

        deq = fq(values / scale, scheme.element_format.name, saturate=True) * scale
    return (values - deq) ** 2


OBSERVERS = {"minmax": MinMaxObserver, "moving_average": MovingAverageMinMaxObserver,
             "histogram": HistogramObserver, "mse": MSEObserver}
