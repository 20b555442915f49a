"""tensorix.onnx.load against onnxruntime: one-node models of every op the interpreter knows,
and small graphs; outputs must equal onnxruntime's."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import tensorix as tx  # noqa: E402
from tensorix.onnx import UnsupportedOperatorError, load  # noqa: E402
from tensorix.onnx._load_ops import HANDLERS  # noqa: E402

from ._helpers import run_ort  # noqa: E402

helper = onnx.helper
rng = np.random.default_rng(0)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def i64(*values):
    return np.array(values, dtype=np.int64)


def one_node(op, inputs, consts=None, n_out=1, opset=17, **attrs):
    """A model of one node: ``inputs`` are fed at run time, ``consts`` are initializers."""
    consts = consts or {}
    names = [f"x{i}" for i in range(len(inputs))] + list(consts)
    graph_inputs = [helper.make_tensor_value_info(f"x{i}", helper.np_dtype_to_tensor_dtype(
        a.dtype), a.shape) for i, a in enumerate(inputs)]
    inits = [onnx.numpy_helper.from_array(v, k) for k, v in consts.items()]
    outs = [f"y{i}" for i in range(n_out)]
    node = helper.make_node(op, names, outs, **attrs)
    graph = helper.make_graph([node], op.lower(), graph_inputs,
                              [helper.make_empty_tensor_value_info(o) for o in outs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return model


def check(model, inputs, atol=1e-6, rtol=1e-5):
    expected = run_ort(model, inputs)
    got = load(model)(*[tx.tensor(a) for a in inputs])
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape, (g.shape, e.shape)
        g = g.detach().numpy()  # outputs computed from parameters require grad
        assert g.dtype == e.dtype, (g.dtype, e.dtype)
        np.testing.assert_allclose(g, e, atol=atol, rtol=rtol)


UNARY = ["Abs", "Neg", "Exp", "Sqrt", "Reciprocal", "Tanh", "Sigmoid", "Relu", "Erf", "Sin",
         "Cos", "Tan", "Atan", "Sinh", "Cosh", "Asinh", "Floor", "Ceil", "Round", "Sign",
         "Softsign", "Softplus", "Mish", "HardSwish", "Identity", "IsNaN"]


@pytest.mark.parametrize("op", UNARY)
def test_unary(op):
    x = f32(3, 4)
    if op in ("Sqrt", "Reciprocal"):
        x = np.abs(x) + 0.5
    check(one_node(op, [x], opset=18), [x])


@pytest.mark.parametrize("op", ["Log", "Acos", "Asin", "Atanh", "Acosh"])
def test_unary_domain(op):
    x = rng.uniform(0.1, 0.9, (5,)).astype(np.float32)
    if op == "Acosh":
        x = x + 1.0
    check(one_node(op, [x]), [x])


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Pow", "Equal", "Less",
                                "LessOrEqual", "Greater", "GreaterOrEqual", "Max", "Min",
                                "Sum", "Mean", "PRelu"])
def test_binary_broadcast(op):
    a, b = f32(2, 3, 4), f32(3, 1)
    if op == "Pow":
        a = np.abs(a) + 0.1
    check(one_node(op, [a, b]), [a, b])


@pytest.mark.parametrize("op", ["And", "Or", "Xor", "Not"])
def test_logical(op):
    a, b = rng.random((4, 3)) > 0.5, rng.random((4, 3)) > 0.5
    inputs = [a] if op == "Not" else [a, b]
    check(one_node(op, inputs), inputs)


@pytest.mark.parametrize("fmod", [0, 1])
def test_integer_div_mod(fmod):
    a, b = i64(7, -7, 9, -9), i64(2, 2, -4, -4)
    check(one_node("Div", [a, b]), [a, b])
    check(one_node("Mod", [a, b], fmod=fmod), [a, b])


@pytest.mark.parametrize("op,attrs", [("LeakyRelu", {"alpha": 0.2}), ("Elu", {"alpha": 0.7}),
                                      ("Selu", {}), ("HardSigmoid", {"alpha": 0.3}),
                                      ("Gelu", {}), ("Gelu", {"approximate": "tanh"}),
                                      ("Softmax", {"axis": 1}), ("LogSoftmax", {}),
                                      ("Softmax", {"axis": 1, "opset": 11})])
def test_activations(op, attrs):
    attrs = dict(attrs)
    opset = attrs.pop("opset", 20 if op == "Gelu" else 17)
    x = f32(2, 3, 4)
    check(one_node(op, [x], opset=opset, **attrs), [x])


def test_where_clip_cast():
    c, a, b = rng.random((3, 4)) > 0.5, f32(3, 4), f32(4)
    check(one_node("Where", [c, a, b]), [c, a, b])
    check(one_node("Clip", [a], {"lo": np.float32(-0.5), "hi": np.float32(0.3)}), [a])
    check(one_node("Cast", [a], to=onnx.TensorProto.DOUBLE), [a])
    check(one_node("Cast", [a * 3], to=onnx.TensorProto.INT64), [a * 3])


@pytest.mark.parametrize("attrs", [{}, {"transA": 1, "alpha": 0.5, "beta": 2.0},
                                   {"transB": 1}])
def test_gemm(attrs):
    a = f32(4, 3) if attrs.get("transA") else f32(3, 4)
    b = f32(5, 4) if attrs.get("transB") else f32(4, 5)
    c = f32(5)
    check(one_node("Gemm", [a, b, c], **attrs), [a, b, c])


def test_matmul_einsum_det():
    a, b = f32(2, 3, 4), f32(4, 5)
    check(one_node("Det", [f32(2, 3, 3)]), [f32(2, 3, 3)], atol=1e-5)
    check(one_node("MatMul", [a, b]), [a, b])
    check(one_node("Einsum", [a, b], equation="bij,jk->bik"), [a, b])


@pytest.mark.parametrize("attrs", [{}, {"pads": [1, 1, 1, 1], "strides": [2, 2]},
                                   {"pads": [0, 1, 1, 2]}, {"auto_pad": "SAME_UPPER"},
                                   {"dilations": [2, 1], "group": 2}])
def test_conv2d(attrs):
    x, w, b = f32(2, 4, 7, 6), f32(6, 4 // attrs.get("group", 1), 3, 3), f32(6)
    check(one_node("Conv", [x, w, b], **attrs), [x, w, b], atol=1e-5)


def test_conv1d_no_bias():
    x, w = f32(2, 3, 9), f32(4, 3, 2)
    check(one_node("Conv", [x, w], strides=[2]), [x, w], atol=1e-5)


@pytest.mark.parametrize("op,attrs", [
    ("MaxPool", {"kernel_shape": [2, 2]}),
    ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ("MaxPool", {"kernel_shape": [2, 2], "ceil_mode": 1, "strides": [2, 2]}),
    ("AveragePool", {"kernel_shape": [2, 2], "strides": [2, 2]}),
    ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}),
    ("GlobalAveragePool", {}), ("GlobalMaxPool", {})])
def test_pool(op, attrs):
    x = f32(2, 3, 7, 7)
    check(one_node(op, [x], **attrs), [x])


def test_layer_and_batch_norm():
    x, s, b = f32(2, 5, 6), f32(6), f32(6)
    check(one_node("LayerNormalization", [x, s, b], n_out=3, epsilon=1e-3), [x, s, b])
    x = f32(2, 3, 4, 4)
    s, b, m, v = f32(3), f32(3), f32(3), np.abs(f32(3)) + 0.5
    check(one_node("BatchNormalization", [x, s, b, m, v]), [x, s, b, m, v], atol=1e-5)


@pytest.mark.parametrize("shape", [[0, -1], [3, 0, 2, 2], [-1]])
def test_reshape(shape):
    x = f32(3, 4, 2, 2)
    check(one_node("Reshape", [x], {"s": i64(*shape)}), [x])


def test_movement():
    x = f32(2, 1, 3, 4)
    check(one_node("Transpose", [x], perm=[3, 0, 2, 1]), [x])
    check(one_node("Transpose", [x]), [x])
    check(one_node("Flatten", [x], axis=2), [x])
    check(one_node("Squeeze", [x], {"a": i64(1)}), [x])
    check(one_node("Squeeze", [x]), [x])
    check(one_node("Unsqueeze", [x], {"a": i64(0, -1)}), [x])
    check(one_node("Expand", [f32(3, 1)], {"s": i64(2, 1, 4)}), [f32(3, 1)])
    check(one_node("Tile", [x], {"r": i64(1, 2, 1, 3)}), [x])
    check(one_node("Concat", [x, x], axis=-1), [x, x])
    check(one_node("Split", [f32(6, 2)], {"s": i64(2, 4)}, n_out=2), [f32(6, 2)])
    check(one_node("Split", [f32(5, 2)], n_out=2, opset=18, num_outputs=2), [f32(5, 2)])


@pytest.mark.parametrize("starts,ends,axes,steps", [
    ([1], [3], [0], [1]), ([0, 1], [10, -1], [1, 2], [2, 1]), ([-1], [-100], [3], [-1]),
    ([3], [0], [3], [-2]), ([-2], [2 ** 62], [2], [1])])
def test_slice(starts, ends, axes, steps):
    x = f32(4, 5, 6, 7)
    consts = {"st": i64(*starts), "en": i64(*ends), "ax": i64(*axes), "sp": i64(*steps)}
    check(one_node("Slice", [x], consts), [x])


def test_gather_scatter():
    x = f32(5, 4)
    check(one_node("Gather", [x], {"i": np.array([[0, -1], [2, 3]], np.int64)}, axis=0), [x])
    check(one_node("Gather", [x], {"i": np.array(1, np.int64)}, axis=1), [x])
    idx = np.array([[0, 1, 2, 3], [4, 3, 2, 1]], np.int64)
    check(one_node("GatherElements", [x], {"i": idx}, axis=0), [x])
    nd = np.array([[[0, -1], [4, 2]], [[1, 1], [-5, 0]]], np.int64)  # (2, 2, 2): pairs
    check(one_node("GatherND", [x], {"i": nd}), [x])
    check(one_node("GatherND", [x], {"i": np.array([[3], [-2]], np.int64)}), [x])  # rows


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_scatter_elements(reduction):
    # ScatterElements takes (data, indices, updates): indices and updates as initializers
    x, upd = f32(5, 4), f32(2, 4)
    idx = np.array([[0, 1, 2, 3], [4, 3, 2, 1]], np.int64)
    check(one_node("ScatterElements", [x], {"i": idx, "u": upd}, axis=0, reduction=reduction),
          [x])


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max"])
def test_scatter_nd(reduction):
    x, upd = f32(4, 3, 2), f32(2, 2)
    idx = np.array([[0, 1], [3, -1]], np.int64)
    check(one_node("ScatterND", [x], {"i": idx, "u": upd}, opset=18, reduction=reduction),
          [x])


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
def test_pad(mode):
    x = f32(2, 3, 4)
    pads = i64(0, 1, 2, 0, 2, 1) if mode == "constant" else i64(0, 0, 2, 0, 0, 1)
    check(one_node("Pad", [x], {"p": pads}, mode=mode), [x])


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
                                "ReduceProd", "ReduceLogSumExp", "ReduceL2", "ReduceL1",
                                "ReduceSumSquare"])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce(op, keepdims):
    x = f32(3, 4, 5)
    check(one_node(op, [x], {"a": i64(0, -1)}, opset=18, keepdims=keepdims), [x], atol=1e-5)
    check(one_node(op, [x], opset=18, keepdims=keepdims), [x], atol=1e-5)


def test_reduce_axes_attribute_before_18():
    x = f32(3, 4, 5)
    check(one_node("ReduceMean", [x], opset=17, axes=[1]), [x])


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("last", [0, 1])
def test_arg(op, last):
    x = np.array([[1, 3, 3, 0], [2, 2, 0, 0]], np.float32)
    check(one_node(op, [x], axis=1, keepdims=0, select_last_index=last), [x])


@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumsum(exclusive, reverse):
    x = f32(3, 4)
    check(one_node("CumSum", [x], {"a": np.array(1, np.int64)}, exclusive=exclusive,
                   reverse=reverse), [x])


def test_topk_trilu_shape_range():
    x = f32(3, 6)
    check(one_node("TopK", [x], {"k": i64(2)}, n_out=2, largest=1), [x])
    check(one_node("Trilu", [x], {"k": np.array(1, np.int64)}, upper=0), [x])
    check(one_node("Shape", [x], start=1), [x])
    check(one_node("ConstantOfShape", [i64(2, 3)],
                   value=onnx.numpy_helper.from_array(np.array([1.5], np.float32))),
          [i64(2, 3)])
    s = [np.array(v, np.float32) for v in (1.0, 4.0, 0.5)]
    check(one_node("Range", s), s)


@pytest.mark.parametrize("x", [np.array([[0.0, 1.5, 0.0], [-2.0, 0.0, 3.0]], np.float32),
                               np.array([0, 0, 4, 0, 1], np.int64),
                               np.array([[[True, False]], [[False, True]]]),
                               np.zeros((2, 3), np.float32)],
                         ids=["2d", "1d-int", "3d-bool", "none"])
def test_nonzero(x):
    check(one_node("NonZero", [x]), [x])


def test_graph_with_constant_node_and_dropout():
    x = f32(2, 4)
    nodes = [helper.make_node("Constant", [], ["c"], value_float=2.0),
             helper.make_node("Mul", ["x", "c"], ["m"]),
             helper.make_node("Dropout", ["m"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", 1, [2, 4])],
                              [helper.make_tensor_value_info("y", 1, [2, 4])])
    check(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), [x])


def test_loaded_module_has_parameters_and_is_differentiable(tmp_path):
    w = f32(4, 3)
    model = one_node("MatMul", [f32(2, 4)], {"layer.weight": w})
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    module = load(path)
    names = dict(module.named_parameters())
    assert list(names) == ["layer_weight"]
    np.testing.assert_array_equal(names["layer_weight"].detach().numpy(), w)
    x = tx.tensor(f32(2, 4))
    module(x).sum().backward()
    np.testing.assert_allclose(names["layer_weight"].grad.numpy(),
                               np.repeat(x.numpy().sum(0)[:, None], 3, 1), rtol=1e-6)
    assert "opset=17" in repr(module)


def test_unsupported_op_names_op_and_opset():
    model = one_node("NonMaxSuppression", [f32(1, 2, 4), f32(1, 1, 2)])
    with pytest.raises(UnsupportedOperatorError, match="'NonMaxSuppression'.*opset 17"):
        load(model)


def test_wrong_input_count():
    module = load(one_node("Relu", [f32(2)]))
    with pytest.raises(TypeError, match="takes 1 inputs"):
        module(tx.ones(2), tx.ones(2))


def test_handler_table_is_covered():
    tested = set(UNARY) | {"Log", "Acos", "Asin", "Atanh", "Acosh", "Add", "Sub", "Mul", "Div",
                           "Pow", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual",
                           "Max", "Min", "Sum", "Mean", "PRelu", "And", "Or", "Xor", "Not",
                           "Mod", "LeakyRelu", "Elu", "Selu", "HardSigmoid", "Gelu", "Softmax",
                           "LogSoftmax", "Where", "Clip", "Cast", "Gemm", "MatMul", "Einsum",
                           "Det", "Conv", "MaxPool", "AveragePool", "GlobalAveragePool",
                           "GlobalMaxPool", "LayerNormalization", "BatchNormalization",
                           "Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "Expand",
                           "Tile", "Concat", "Split", "Slice", "Gather", "GatherElements",
                           "GatherND", "ScatterElements", "ScatterND", "Pad", "ReduceSum",
                           "ReduceMean",
                           "ReduceMax",
                           "ReduceMin", "ReduceProd", "ReduceLogSumExp", "ReduceL2",
                           "ReduceL1", "ReduceSumSquare", "ArgMax", "ArgMin", "CumSum", "TopK",
                           "Trilu", "Shape", "ConstantOfShape", "Range", "Constant", "Dropout",
                           "NonZero", "NegativeLogLikelihoodLoss"}
    untested = set(HANDLERS) - tested
    assert untested <= {"IsInf", "CastLike", "Size", "BitwiseNot", "BitwiseAnd", "BitwiseOr",
                        "BitwiseXor"}, untested


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_negative_log_likelihood_loss(reduction, weighted):
    x, target = f32(4, 3, 2), np.array([[0, 2], [1, -1], [2, 2], [-1, 0]], np.int64)
    consts = {"w": np.array([0.5, 2.0, 1.5], np.float32)} if weighted else None
    check(one_node("NegativeLogLikelihoodLoss", [x, target], consts, reduction=reduction,
                   ignore_index=-1), [x, target])


@pytest.mark.parametrize("op", ["IsInf", "Size", "BitwiseNot", "BitwiseAnd", "BitwiseOr",
                                "BitwiseXor", "CastLike"])
def test_remaining(op):
    if op == "IsInf":
        x = np.array([1.0, np.inf, -np.inf, np.nan], np.float32)
        for pos, neg in [(1, 1), (1, 0), (0, 1)]:
            check(one_node(op, [x], detect_positive=pos, detect_negative=neg, opset=18), [x])
        return
    a, b = np.array([3, 5, -2], np.int32), np.array([6, 1, 7], np.int32)
    inputs = [a] if op in ("Size", "BitwiseNot") else [a, f32(2)] if op == "CastLike" else [a, b]
    check(one_node(op, inputs, opset=18), inputs)


def test_onnx_is_imported_lazily():
    """``import tensorix.onnx`` works without the extra: onnx loads on first export/load."""
    import subprocess
    import sys

    code = ("import sys, tensorix, tensorix.onnx; "
            "assert 'onnx' not in sys.modules and 'onnxruntime' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def _vi(name, dtype=onnx.TensorProto.FLOAT, shape=None):
    return helper.make_tensor_value_info(name, dtype, shape)


def _model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "control", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _both(model, *arrays):
    expected = run_ort(model, list(arrays))
    got = load(model)(*[tx.tensor(a) for a in arrays])
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g.detach().numpy(), e, rtol=1e-6, atol=1e-6)


def test_if_runs_the_branch_the_condition_picks():
    """Branches read the enclosing scope (x) and have initializers of their own."""
    then = helper.make_graph([helper.make_node("Mul", ["x", "two"], ["t"])], "then", [],
                             [_vi("t")], [onnx.numpy_helper.from_array(np.float32(2), "two")])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"]),
                               helper.make_node("Exp", ["e"], ["e2"])], "else", [],
                              [_vi("e2")])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)]
    model = _model(nodes, [_vi("x", shape=[4])], [_vi("y")],
                   [onnx.numpy_helper.from_array(np.float32(0), "zero")])
    _both(model, np.abs(f32(4)))
    _both(model, -np.abs(f32(4)))


@pytest.mark.parametrize("trip", [4, None])
def test_loop_carries_values_and_stacks_scan_outputs(trip):
    """A Loop with a trip count (or only its condition): a carried sum of x (outer scope), a
    scanned value per iteration, and the condition computed by the body."""
    body = helper.make_graph(
        [helper.make_node("Add", ["acc", "x"], ["acc_out"]),
         helper.make_node("Cast", ["i"], ["i_f"], to=onnx.TensorProto.FLOAT),
         helper.make_node("Mul", ["acc_out", "i_f"], ["scan"]),
         helper.make_node("Less", ["i", "three"], ["cond_out"])],
        "body", [_vi("i", onnx.TensorProto.INT64, []), _vi("cond_in", onnx.TensorProto.BOOL, []),
                 _vi("acc")], [_vi("cond_out", onnx.TensorProto.BOOL, []), _vi("acc_out"),
                              _vi("scan")],
        [onnx.numpy_helper.from_array(np.int64(3), "three")])
    inputs = ["M" if trip else "", "go", "acc0"]
    nodes = [helper.make_node("Loop", inputs, ["acc_final", "scans"], body=body)]
    inits = [onnx.numpy_helper.from_array(np.bool_(True), "go"),
             onnx.numpy_helper.from_array(np.zeros(3, np.float32), "acc0")]
    if trip:
        inits.append(onnx.numpy_helper.from_array(np.int64(trip), "M"))
    model = _model(nodes, [_vi("x", shape=[3])], [_vi("acc_final"), _vi("scans")], inits)
    _both(model, f32(3))


def test_unsupported_op_inside_a_subgraph_is_named():
    then = helper.make_graph([helper.make_node("Unique", ["x"], ["t"])], "then", [],
                             [_vi("t")])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["e"])], "else", [],
                              [_vi("e")])
    model = _model([helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
                   [_vi("c", onnx.TensorProto.BOOL, []), _vi("x", shape=[2])], [_vi("y")])
    with pytest.raises(UnsupportedOperatorError, match="'Unique'"):
        load(model)


@pytest.mark.parametrize("directions,axes", [((0, 0), (0, 0)), ((1, 0), (1, 0)),
                                             ((0, 1), (-1, 1))])
def test_scan_carries_state_over_slices_and_stacks_outputs(directions, axes):
    """An RNN-like Scan: a state updated from each slice of two scan inputs (one read in
    reverse, along any axis), a scanned output per step (stacked forward or in reverse, along
    any axis), and a value from the outer scope (w)."""
    f = onnx.TensorProto.FLOAT
    body = helper.make_graph(
        [helper.make_node("MatMul", ["h", "w"], ["hw"]),
         helper.make_node("Add", ["hw", "a"], ["s"]),
         helper.make_node("Mul", ["s", "b"], ["s2"]),
         helper.make_node("Tanh", ["s2"], ["h_out"]),
         helper.make_node("ReduceSum", ["h_out"], ["y"], keepdims=0)],
        "body", [_vi("h", f, [2, 3]), _vi("a", f, [2, 3]), _vi("b", f, [2, 3])],
        [_vi("h_out", f, [2, 3]), _vi("y", f, [])])
    in_dir, out_dir = directions
    in_axis, out_axis = axes
    node = helper.make_node("Scan", ["h0", "xa", "xb"], ["h_final", "ys"], body=body,
                            num_scan_inputs=2, scan_input_directions=[0, in_dir],
                            scan_input_axes=[0, in_axis], scan_output_directions=[out_dir],
                            scan_output_axes=[0])
    xb_shape = [5, 2, 3] if in_axis == 0 else [2, 5, 3] if in_axis == 1 else [2, 3, 5]
    model = _model([node], [_vi("h0", f, [2, 3]), _vi("xa", f, [5, 2, 3]),
                            _vi("xb", f, xb_shape)], [_vi("h_final"), _vi("ys")],
                   [onnx.numpy_helper.from_array(f32(3, 3), "w")])
    _both(model, f32(2, 3), f32(5, 2, 3), f32(*xb_shape))
