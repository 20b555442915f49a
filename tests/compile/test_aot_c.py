"""AOT C (tensorix._compile.cgen): the generated C, built by the system compiler, against eager.

Tolerance: the C program computes in double and stores float32, eager computes in float32, so
they agree to float32 rounding of the intermediate values: rtol 1e-5, atol 1e-6 here.
"""

import subprocess

import numpy as np
import pytest

import tensorix as tx
import tensorix.nn.functional as F
from tensorix._compile.cgen import aot_c, find_c_compiler

needs_cc = pytest.mark.skipif(find_c_compiler() is None, reason="no C compiler (cc/gcc/clang)")
RTOL, ATOL = 1e-5, 1e-6


def _eager(model, *args):
    if hasattr(model, "eval"):
        model.eval()
    with tx.no_grad():
        out = model(*args)
    return out if isinstance(out, tuple) else (out,)


def _check(model, args, name):
    prog = aot_c(model, args, name=name)
    built = prog.build()
    got = built(*args)
    got = got if isinstance(got, tuple) else (got,)
    for g, e in zip(got, _eager(model, *args), strict=True):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=RTOL, atol=ATOL)
    fresh = [tx.randn(*a.shape) for a in args]  # the weights are baked in, the inputs are not
    got = built(*fresh)
    got = got if isinstance(got, tuple) else (got,)
    for g, e in zip(got, _eager(model, *fresh), strict=True):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=RTOL, atol=ATOL)
    return prog


def _mlp():
    tx.manual_seed(0)
    return tx.nn.Sequential(tx.nn.Linear(8, 32), tx.nn.ReLU(), tx.nn.Linear(32, 32),
                            tx.nn.GELU(), tx.nn.Linear(32, 16), tx.nn.GELU("tanh"),
                            tx.nn.Linear(16, 4), tx.nn.Tanh(), tx.nn.Sigmoid())


def _cnn():
    tx.manual_seed(1)
    cnn = tx.nn.Sequential(
        tx.nn.Conv2d(3, 8, 3, padding=1), tx.nn.BatchNorm2d(8), tx.nn.ReLU(),
        tx.nn.MaxPool2d(2),
        tx.nn.Conv2d(8, 8, 3, stride=2, padding=2, dilation=2, groups=4), tx.nn.SiLU(),
        tx.nn.MaxPool2d(3, stride=1, padding=1),
        tx.nn.Conv2d(8, 6, 1), tx.nn.ReLU(), tx.nn.AvgPool2d(2), tx.nn.Flatten(),
        tx.nn.Linear(6 * 2 * 2, 10), tx.nn.LogSoftmax(-1))
    bn = cnn[1]  # running statistics that are not the identity, so the folding shows
    bn.running_mean.copy_(tx.randn(8))
    bn.running_var.copy_(tx.rand(8) + 0.5)
    return cnn


@needs_cc
def test_mlp_matches_eager():
    prog = _check(_mlp(), (tx.randn(5, 8),), "mlp")
    assert "#include <math.h>" in prog.source and prog.source.count("#include") == 1


@needs_cc
def test_cnn_matches_eager_and_reuses_workspace():
    prog = _check(_cnn(), (tx.randn(2, 3, 16, 16),), "cnn")
    assert prog.source.count("= conv(") == 3  # each traced convolution is one loop nest
    assert "BatchNorm" not in prog.source and prog.memory.planned_bytes < \
        prog.memory.no_reuse_bytes


@needs_cc
def test_functions_with_views_broadcasts_and_several_outputs():
    def fn(x, y):
        s = (x @ y.transpose(-1, -2)) / 4.0                  # batched matmul (2, 6, 6)
        w = F.pad(x[:, ::2, 1:], (1, 0, 0, 2), value=-1.0)   # slices with steps, padding
        e = x.unsqueeze(1).expand(2, 3, 6, 5) * y[:, None]  # a broadcast view
        return s.softmax(-1), w.exp(), e.sum((1, 3)), x
    _check(fn, (tx.randn(2, 6, 5), tx.randn(2, 6, 5)), "views")


@needs_cc
def test_integral_and_extreme_weights():
    """Weights that print as integers (a zero bias: ``0f`` is no C literal) or at float32's
    ends are written exactly."""
    lin = tx.nn.Linear(4, 5)
    with tx.no_grad():
        lin.weight.copy_(tx.tensor([[0.0, 1.0, -2.0, 3e30], [1e-38, -0.0, 7.0, 0.5]] * 2 +
                                   [[1.0, 1.0, 1.0, 1.0]]))
        lin.bias.zero_()
    _check(lin, (tx.randn(3, 4),), "lin")


@needs_cc
def test_standalone_executable(tmp_path):
    """The C file links into a program of its own (no Python, only libm) and prints eager's
    numbers."""
    model, x = _mlp(), tx.randn(3, 8)
    prog = aot_c(model, (x,), name="mlp")
    (tmp_path / "mlp.c").write_text(prog.source)
    values = ", ".join(f"{v:.9g}f" for v in x.numpy().ravel())
    (tmp_path / "main.c").write_text(
        f"#include <stdio.h>\n{prog.header}\n"
        f"static const float x[{x.numel()}] = {{{values}}};\n"
        "int main(void) {\n    float y[12];\n    mlp(x, y);\n"
        "    for (int i = 0; i < 12; ++i) printf(\"%.9g\\n\", y[i]);\n    return 0;\n}\n")
    exe = tmp_path / "mlp"
    subprocess.run([find_c_compiler(), "-std=c99", "-O2", "-Wall", "-Werror", "-o", str(exe),
                    str(tmp_path / "main.c"), str(tmp_path / "mlp.c"), "-lm"], check=True)
    printed = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    got = np.array([float(v) for v in printed.split()], dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(got, _eager(model, x)[0].numpy(), rtol=RTOL, atol=ATOL)


def test_bad_inputs_are_named():
    with pytest.raises(TypeError, match="argument 0 must be a float32 Tensor"):
        aot_c(lambda a: a * 2, (tx.arange(3),))
    with pytest.raises(ValueError, match="C identifier"):
        aot_c(lambda a: a * 2, (tx.randn(3),), name="my model")
    with pytest.raises(NotImplementedError, match="op CumSum .*no C form"):
        aot_c(lambda a: a.cumsum(0), (tx.randn(3),))
    with pytest.raises(NotImplementedError, match="aot_c: the traced program depends on "
                                                  "tensor data"):
        aot_c(lambda a: a * a.sum().item(), (tx.randn(3),))


@needs_cc
def test_built_function_checks_shapes():
    built = aot_c(lambda a: a.relu(), (tx.randn(2, 3),), name="r").build()
    with pytest.raises(ValueError, match=r"input 0 must have shape \(2, 3\)"):
        built(tx.randn(3, 2))
    with pytest.raises(TypeError, match="expected 1 inputs"):
        built(tx.randn(2, 3), tx.randn(2, 3))
