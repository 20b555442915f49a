"""tensorix.onnx.export: every registry op ONNX can express, exported and run in onnxruntime
against eager (and loaded back by tensorix.onnx.load); the demo models; the torch-style
arguments; clear errors."""

import functools
import io

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import tensorix as tx  # noqa: E402
from tensorix import demo, nn  # noqa: E402
from tensorix.onnx import UnsupportedOperatorError, export, load  # noqa: E402
from tensorix.testing.registry import all_opinfos  # noqa: E402

from ._helpers import export_and_compare, registry_case, run_ort  # noqa: E402

OPS = {info.name: info for info in all_opinfos()}


@functools.cache
def outcome(name):
    """(exported, max error or the reason export gave), once per op per session."""
    return export_and_compare(OPS[name])


@pytest.mark.parametrize("name", sorted(OPS))
def test_registry_op_exports_or_says_why(name):
    exported, detail = outcome(name)
    if not exported:  # a refusal names the op (or the data dependence) and the opset
        assert "tensorix.onnx.export" in detail
        assert any(why in detail for why in ("opset", "depends on tensor data", "Python",
                                             "other input values")), detail


def test_registry_coverage_matches_docs():
    """docs/onnx.md lists exactly the registry ops that do not export."""
    from .test_docs import DOC

    missing = sorted(n for n in OPS if not outcome(n)[0])
    listed = DOC.read_text().split("<!-- not-exported -->")[1].split("<!-- end -->")[0]
    documented = sorted(line.split("`")[1] for line in listed.splitlines()
                        if line.startswith("| `"))
    assert documented == missing
    # 336 before the einsum (boolean, broadcast label, semirings), lu_unpack, fp4/fp6 packing
    # and gcd/lcm symbolics
    assert len(OPS) - len(missing) >= 351, "export coverage regressed"


def test_supported_ops_count_matches_docs():
    """docs/onnx.md's count of primitives with a symbolic is supported_ops()' length."""
    import re

    from tensorix.onnx import supported_ops

    from .test_docs import DOC

    count = re.search(r"(\d+)\s+primitives have a symbolic", DOC.read_text())
    assert count is not None and int(count.group(1)) == len(supported_ops())


@pytest.mark.parametrize("name", ["add", "softmax", "matmul", "getitem", "cumsum", "tril",
                                  "gather", "roll", "sigmoid", "where", "sum", "std",
                                  "linalg.vector_norm", "diagonal"])
def test_round_trip_export_load_equals_eager(name):
    if not outcome(name)[0]:
        pytest.skip(f"{name} does not export")
    fn, inputs, _ = registry_case(OPS[name])
    expected = fn(*inputs)
    loaded = load(export(fn, tuple(inputs)))
    got = loaded(*inputs)
    got = got if isinstance(got, tuple) else (got,)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g.detach().numpy(), e.numpy(), rtol=1e-5, atol=1e-6)


# -- the demo models -------------------------------------------------------------------------

def _assert_eager_equals_ort(model, inputs, atol=1e-5, **kw):
    with tx.no_grad():
        expected = model(*inputs).numpy()
    proto = export(model, tuple(inputs), **kw)
    got = run_ort(proto, [t.numpy() for t in inputs])[0]
    np.testing.assert_allclose(got, expected, atol=atol, rtol=0)
    return proto


def test_demo_cnn_exports_and_equals_eager():
    tx.manual_seed(0)
    model = demo.digits_cnn()  # in training mode: export traces it in eval mode (no dropout)
    x = tx.randn(4, 1, 8, 8)
    proto = export(model, (x,))
    assert model.training, "export puts a training module back in training mode"
    kinds = [n.op_type for n in proto.graph.node]
    assert kinds.count("Conv") == 2 and "Gather" not in kinds  # im2col chains fused
    expected = model.eval()(x).detach().numpy()
    np.testing.assert_allclose(run_ort(proto, [x.numpy()])[0], expected, atol=1e-5, rtol=0)
    got = load(proto)(x)
    np.testing.assert_allclose(got.detach().numpy(), expected, atol=1e-5, rtol=0)


def test_demo_gpt_exports_and_equals_eager():
    tx.manual_seed(0)
    model = demo.CharGPT(vocab_size=65, context=64)  # the demo's size: d_model 128, 2 blocks
    ids = tx.randint(0, 65, (2, 64))
    proto = _assert_eager_equals_ort(model.eval(), [ids])
    names = {i.name for i in proto.graph.initializer}
    assert "blocks.0.attn.qkv.weight" in names  # parameters keep their module paths
    got = load(proto)(ids)
    np.testing.assert_allclose(got.detach().numpy(), model(ids).detach().numpy(), atol=1e-5)


def test_dynamic_batch_axis():
    tx.manual_seed(0)
    model = demo.CharGPT(vocab_size=30, context=16, d_model=32, n_heads=4, n_layers=1).eval()
    proto = export(model, (tx.randint(0, 30, (2, 16)),), input_names=["ids"],
                   output_names=["logits"], dynamic_axes={"ids": {0: "batch"},
                                                          "logits": {0: "batch"}})
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    ids = tx.randint(0, 30, (5, 16))
    got = run_ort(proto, [ids.numpy()])[0]
    np.testing.assert_allclose(got, model(ids).detach().numpy(), atol=1e-5)


# -- the torch.onnx.export arguments --------------------------------------------------------

def test_writes_path_and_file_with_names(tmp_path):
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    x = tx.randn(3, 4)
    path = tmp_path / "mlp.onnx"
    export(model, x, str(path), input_names=["x"], output_names=["y"])
    buffer = io.BytesIO()
    export(model, (x,), buffer)
    for proto in (onnx.load(str(path)), onnx.load_from_string(buffer.getvalue())):
        assert [i.name for i in proto.graph.input] == ["x"] or \
            [i.name for i in proto.graph.input] == ["input_0"]
        onnx.checker.check_model(proto)
    proto = onnx.load(str(path))
    assert [o.name for o in proto.graph.output] == ["y"]
    assert {i.name for i in proto.graph.initializer} >= {"0.weight", "0.bias", "2.weight"}
    expected = model(x).detach().numpy()
    np.testing.assert_allclose(run_ort(str(path), [x.numpy()])[0], expected, atol=1e-6)


def test_constants_are_folded():
    w = tx.randn(4, 3)  # (3, 4) once transposed

    def fn(x):
        return x @ (w.t() * 2 + 1)  # the weight arithmetic folds to one initializer

    proto = export(fn, (tx.randn(2, 3),))
    assert [n.op_type for n in proto.graph.node] == ["MatMul", "Identity"]
    assert len(proto.graph.initializer) == 1


@pytest.mark.parametrize("opset", [13, 17, 18, 20, 21])
def test_opsets(opset):
    model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.LayerNorm(8))
    x = tx.randn(2, 3, 4)
    proto = _assert_eager_equals_ort(model, [x], opset_version=opset)
    assert proto.opset_import[0].version == opset
    kinds = {n.op_type for n in proto.graph.node}
    assert ("Gelu" in kinds) == (opset >= 20)
    assert ("LayerNormalization" in kinds) == (opset >= 17)


# -- bad input -------------------------------------------------------------------------------

def test_op_without_onnx_form_names_op_and_opset():
    with pytest.raises(UnsupportedOperatorError, match=r"op Inv \(node .*opset 17"):
        export(tx.linalg.inv, (tx.randn(3, 3),))


def test_op_needing_a_newer_opset_names_both():
    with pytest.raises(UnsupportedOperatorError, match=r"op Tri .*needs opset >= 14.* is 13"):
        export(tx.tril, (tx.randn(3, 3),), opset_version=13)


def test_bad_opset_version():
    with pytest.raises(ValueError, match=r"opset_version 12 is not supported; expected 13"):
        export(tx.relu, (tx.randn(3),), opset_version=12)
    with pytest.raises(TypeError, match="expected opset_version to be an int"):
        export(tx.relu, (tx.randn(3),), opset_version="17")


def test_data_dependent_program_is_refused():
    with pytest.raises(UnsupportedOperatorError, match="depends on tensor data"):
        export(tx.nonzero, (tx.randn(4),))


def test_python_output_is_refused():
    with pytest.raises(UnsupportedOperatorError, match="output 'output_0' is a Python"):
        export(lambda x: 3, (tx.randn(2),))


def test_export_and_load_on_device(device):
    """A model on either device exports (initializers come back to the host) and the loaded
    module, moved to the device, runs there and equals eager. (The demo CNN: the demo GPT
    makes its positions with tx.arange on the host, so it runs on the CPU only.)"""
    tx.manual_seed(0)
    model = demo.digits_cnn().eval().to(device)
    x = tx.randn(2, 1, 8, 8).to(device)
    proto = export(model, (x,))
    expected = model(x).detach().cpu().numpy()
    np.testing.assert_allclose(run_ort(proto, [x.cpu().numpy()])[0], expected, atol=1e-5)
    loaded = load(proto).to(device)
    got = loaded(x)
    assert got.device == x.device
    np.testing.assert_allclose(got.detach().cpu().numpy(), expected, atol=1e-5)


def test_dynamic_batch_cnn():
    tx.manual_seed(0)
    model = demo.digits_cnn().eval()
    proto = export(model, (tx.randn(2, 1, 8, 8),), input_names=["x"],
                   dynamic_axes={"x": [0], "output_0": [0]})
    for batch in (1, 7):
        x = tx.randn(batch, 1, 8, 8)
        np.testing.assert_allclose(run_ort(proto, [x.numpy()])[0],
                                   model(x).detach().numpy(), atol=1e-5)


def test_dynamic_axis_the_program_bakes_in_is_refused():
    # CharGPT makes its positions with tx.arange(T) and its mask T x T: T cannot vary
    model = demo.CharGPT(vocab_size=30, context=16, d_model=32, n_heads=4, n_layers=1).eval()
    with pytest.raises(UnsupportedOperatorError, match="dynamic_axes"):
        export(model, (tx.randint(0, 30, (2, 8)),), input_names=["ids"],
               dynamic_axes={"ids": {1: "time"}})


def test_dynamic_axes_bad_axis():
    with pytest.raises(ValueError, match="axis 3 of input 'x', which has shape"):
        export(tx.relu, (tx.randn(2, 3),), input_names=["x"], dynamic_axes={"x": [3]})


@pytest.mark.parametrize("fn", [lambda x, i: x.reshape(5, 3, 1)[i, :, i * 0],
                                lambda x, i: x[None, i]],
                         ids=["index-tensors-apart", "index-tensor-and-None"])
def test_graph_replaying_example_values_is_refused(fn):
    """A trace that bakes the example's data (index tensors at dims apart, or beside a None,
    written by a position table of the example's index) is refused, not written as a model
    wrong at other inputs. (A sort's permutation, cummax's positions, svdvals and ``x[i]``,
    ``x[i, j]`` with adjacent index tensors were cases here: they are primitives or a
    Gather/GatherND by the tensors now, their export tested on new inputs in
    test_export_order.py and test_export_gather_histogram.py; svdvals is refused as an op with
    no ONNX form.)"""
    x, i = tx.randn(5, 3), tx.tensor([0, 2, 4])
    with pytest.raises(UnsupportedOperatorError,
                       match="other input values|raw array argument"):
        export(fn, (x, i))


def test_svdvals_is_refused_as_an_op_without_an_onnx_form():
    x = tx.randn(5, 3)
    with pytest.raises(UnsupportedOperatorError, match="SVDVals .* no ONNX form"):
        export(tx.linalg.svdvals, (x,))


@pytest.mark.parametrize("reduce", ["amax", "amin"])
def test_extreme_reductions_export(reduce):
    x = tx.randn(4, 5)

    def fn(x):
        return getattr(x, reduce)(1, keepdim=True) * 2

    proto = export(fn, (x,))
    assert {"amax": "ReduceMax", "amin": "ReduceMin"}[reduce] in \
        {n.op_type for n in proto.graph.node}
    y = tx.randn(4, 5)
    np.testing.assert_allclose(run_ort(proto, [y.numpy()])[0], fn(y).numpy(), rtol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("opset", [13, 21])
def test_registry_at_the_opset_range_ends(opset):
    """At the lowest and highest opsets every registry op exports and matches, or says why."""
    for name in sorted(OPS):
        exported, detail = export_and_compare(OPS[name], opset=opset, retry_newer=False)
        assert exported or f"opset {opset}" in detail or "depends on tensor data" in detail \
            or "Python" in detail or "other input values" in detail or "opset >=" in detail, \
            (name, detail)


@pytest.mark.parametrize("case", ["cumprod", "logcumsumexp", "signbit", "copysign", "cdist"])
def test_scans_and_signs_written_from_other_onnx_ops(case):
    """The symbolics with no ONNX op of their own, on the inputs where their forms could go
    wrong: negatives and zeros in a product, rows of -inf and a wide range in log-space, -0.0
    in sign tests, and every p of cdist."""
    x = tx.tensor([[-2.0, 0.5, -1.5, 3.0, 0.0, -1.0], [1.0, -0.0, 2.0, -4.0, 0.25, -0.5]])
    cases = {
        "cumprod": (lambda a: (a.cumprod(1), a.cumprod(0)), (x,)),
        "logcumsumexp": (lambda a: a.logcumsumexp(1),
                         (tx.tensor([[-float("inf")] * 3, [-60.0, 20.0, -5.0],
                                     [float("inf"), 1.0, -float("inf")]]),)),
        "signbit": (lambda a: a.signbit(), (x,)),
        "copysign": (lambda a, b: tx.copysign(a, b), (x.flip(1).abs() + 1.0, x)),
        "cdist": (lambda a, b: tuple(tx.cdist(a, b, p=p) for p in (0.0, 1.0, 2.0, 1.5,
                                                                   float("inf"))),
                  (tx.randn(4, 3), tx.randn(5, 3))),
    }
    fn, inputs = cases[case]
    expected = fn(*inputs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    model = export(fn, inputs)
    got = run_ort(model, [t.numpy() for t in inputs])
    loaded = load(model)(*inputs)
    loaded = loaded if isinstance(loaded, tuple) else (loaded,)
    for g, back, e in zip(got, loaded, expected, strict=True):
        np.testing.assert_allclose(g, e.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(back.detach().numpy(), e.numpy(), rtol=1e-5, atol=1e-6)


# -- index_put and the losses ---------------------------------------------------------------

@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("index", [
    (np.array([0, 2, 0]),),  # a repeated row: the last write wins, or both add
    (np.array([1, 3, 1]), np.array([4, 0, 4])),  # a repeated element
    (np.array([[0], [3]]), np.array([1, 2])),  # broadcast index arrays
    (np.arange(20).reshape(4, 5) % 3 == 0,),  # a boolean mask
])
def test_index_put_exports_with_eager_rule_for_repeats(index, accumulate):
    x = tx.randn(4, 5)
    shape = np.zeros((4, 5))[index].shape
    value = tx.randn(*shape)
    indices = tuple(tx.tensor(i) for i in index)  # fixed in the program, not an input
    fn = lambda x, v: x.index_put(indices, v, accumulate=accumulate)  # noqa: E731
    expected = fn(x, value).numpy()
    proto = export(fn, (x, value))
    assert "ScatterElements" in [n.op_type for n in proto.graph.node]
    np.testing.assert_allclose(run_ort(proto, [x.numpy(), value.numpy()])[0], expected,
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(load(proto)(x, value).detach().numpy(), expected, rtol=1e-6,
                               atol=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_with_weights_and_ignored_targets_exports(reduction):
    import tensorix.nn.functional as F

    x, w = tx.randn(6, 4, 3), tx.rand(4) + 0.5
    target = tx.tensor(np.array([[0, 3, 1], [2, 2, -100], [1, 0, 3], [3, -100, 0],
                                 [2, 1, 1], [0, 0, 2]]))
    fn = lambda x, t: F.cross_entropy(x, t, weight=w, reduction=reduction)  # noqa: E731
    expected = fn(x, target).numpy()
    proto = export(fn, (x, target))
    assert "NegativeLogLikelihoodLoss" in [n.op_type for n in proto.graph.node]
    got = run_ort(proto, [x.numpy(), target.numpy()])[0]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(load(proto)(x, target).detach().numpy(), expected, rtol=1e-5,
                               atol=1e-6)


def test_conv_transpose_exports_with_a_dynamic_batch():
    tx.manual_seed(0)
    model = nn.Sequential(nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1),
                          nn.ReLU())
    proto = export(model, (tx.randn(2, 3, 5, 6),), input_names=["x"], output_names=["y"],
                   dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    assert "ScatterElements" in [n.op_type for n in proto.graph.node]
    x = tx.randn(3, 3, 5, 6)
    with tx.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(run_ort(proto, [x.numpy()])[0], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(load(proto)(x).detach().numpy(), expected, rtol=1e-5,
                               atol=1e-6)
