"""histc, nonzero_static and isin exported (tensorix/onnx/_symbolic_count.py) and run in onnxruntime
on inputs other than the traced example: equal to eager and to torch there (their export baked
the example's result while they were raw-array code wrapped outside the dispatcher)."""

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import tensorix as tx  # noqa: E402
from tensorix.onnx import export, load  # noqa: E402

from ._helpers import run_ort  # noqa: E402

EXAMPLE = np.array([[0.5, -1.0, 2.0, 2.0], [3.0, -0.25, 0.0, 1.0]], np.float32)
OTHERS = [
    np.array([[2.75, 2.75, -3.0, 0.0], [1.0, 1.0, 1.0, -0.5]], np.float32),
    np.array([[np.nan, 1.0, np.inf, 1.0], [-np.inf, 1.0, 1.0, 1.0]], np.float32),  # one value
    np.array([[np.nan, np.inf, -np.inf, np.nan], [np.nan] * 4], np.float32),  # none finite
    np.array([[-2.0, 1e-3, 2.0, 1.9999999], [0.0, -0.0, 5.0, -5.0]], np.float32),
]
CASES = {
    "histc-range": (lambda x: tx.histc(x, bins=5, min=-2, max=2),
                    lambda t, x: t.histc(x, bins=5, min=-2, max=2)),
    "histc-data-range": (lambda x: tx.histc(x, bins=7), lambda t, x: t.histc(x, bins=7)),
    "isin": (lambda x: tx.isin(x, x[0, :2]), lambda t, x: t.isin(x, x[0, :2])),
    "isin-invert-scalar": (lambda x: tx.isin(x, 1.0, invert=True),
                           lambda t, x: t.isin(x, 1.0, invert=True)),
    "nonzero_static-pad": (lambda x: tx.nonzero_static(x, size=9),
                           lambda t, x: t.nonzero_static(x, size=9)),
    "nonzero_static-cut": (lambda x: tx.nonzero_static(x > 0.5, size=2, fill_value=-7),
                           lambda t, x: t.nonzero_static(x > 0.5, size=2, fill_value=-7)),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("which", range(len(OTHERS)))
def test_export_equals_eager_and_torch_on_other_inputs(case, which):
    fn, torch_fn = CASES[case]
    proto = export(fn, (tx.tensor(EXAMPLE),))
    x = OTHERS[which]
    if case.startswith("nonzero"):
        x = np.nan_to_num(x, nan=0.0, posinf=4.0, neginf=-4.0)
    want = fn(tx.tensor(x)).numpy()
    got = run_ort(proto, [x])[0]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(load(proto)(tx.tensor(x)).numpy(), want)
    if case == "histc-data-range" and not np.isfinite(x).all():
        return  # torch refuses a non-finite data range; eager tensorix takes the finite one
    torch = pytest.importorskip("torch")
    np.testing.assert_array_equal(want, torch_fn(torch, torch.tensor(x)).numpy())
