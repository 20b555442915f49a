"""What the ONNX tests share: running a model in onnxruntime (the reference runtime)."""

import numpy as np


def run_ort(model, inputs):
    """Outputs of ``model`` (a ModelProto or a path) in onnxruntime, fed ``inputs`` in order."""
    import onnxruntime as ort

    data = model if isinstance(model, str) else model.SerializeToString()
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # the test machine is shared; one thread is plenty
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    feeds = {i.name: np.asarray(a) for i, a in zip(session.get_inputs(), inputs)}
    return session.run(None, feeds)


def flat_tensors(value):
    """The tensors of an op's result, in order (tuples, lists and named tuples flattened)."""
    import tensorix as tx

    if isinstance(value, tx.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in flat_tensors(v)]
    return [value]  # a Python value: export refuses it, by name


def registry_case(info, seed=0):
    """``(fn, inputs, dtype)`` for an OpInfo's first sample (drawn with ``seed``):
    ``fn(*inputs)`` calls the op with the sample's tensors as graph inputs and its other
    arguments fixed."""
    import tensorix as tx
    from tensorix import dtypes as dt

    from .._harness import tx_args

    dtype = dt.float32 if dt.float32 in info.dtypes else info.dtypes[0]
    sample = info.samples(np.random.default_rng(seed), dtype)[0]
    args, kwargs = tx_args(sample, dtype)
    slots = []  # (container, key) of every tensor, so fn can put graph inputs back

    def collect(container, key, value):
        if isinstance(value, tx.Tensor):
            slots.append((container, key))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                collect(value, i, v)

    for i, a in enumerate(args):
        collect(args, i, a)
    for k, v in kwargs.items():
        collect(kwargs, k, v)
    inputs = [c[k] for c, k in slots]

    def fn(*tensors):
        for (container, key), t in zip(slots, tensors):
            container[key] = t
        out = info.op(*[tuple(a) if isinstance(a, tuple) else a for a in args], **kwargs)
        if info.output is not None:
            out = info.output(out)
        return tuple(flat_tensors(out))

    return fn, inputs, dtype


def export_and_compare(info, opset=17, retry_newer=True):
    """``(True, max_error)`` when the op exports and onnxruntime's result, and that of the
    model loaded back by tensorix.onnx.load, equal eager's;
    ``(False, reason)`` when export refuses it (UnsupportedOperatorError). A mismatch or any
    other error raises. An op refused because it needs a newer opset is tried again at that
    opset (``retry_newer``): its coverage is at the lowest opset that has its form."""
    import re

    import tensorix as tx
    from tensorix.onnx import UnsupportedOperatorError, export, load
    from tensorix.onnx._common import MAX_OPSET

    fn, inputs, dtype = registry_case(info)
    expected = fn(*inputs)
    try:
        model = export(fn, tuple(inputs), opset_version=opset)
    except UnsupportedOperatorError as e:
        # an op that needs a newer opset (bitwise: 18) is tested at the one it names
        newer = re.search(r"needs opset >= (\d+)", str(e))
        if not (retry_newer and newer and opset < int(newer[1]) <= MAX_OPSET):
            return False, str(e)
        return export_and_compare(info, int(newer[1]), retry_newer=False)
    got = run_ort(model, [t.numpy() for t in inputs])
    loaded = load(model)(*inputs)  # the round trip: tensorix runs what it wrote
    loaded = [t.detach().numpy() for t in (loaded if isinstance(loaded, tuple) else (loaded,))]
    worst = 0.0
    assert len(got) == len(expected) == len(loaded), (len(got), len(expected), len(loaded))
    for g, e in zip(got + loaded, list(expected) * 2):
        e = e.detach().numpy() if isinstance(e, tx.Tensor) else np.asarray(e)
        assert g.shape == e.shape, (info.name, g.shape, e.shape)
        assert g.dtype == e.dtype, (info.name, g.dtype, e.dtype)
        if e.dtype.kind in "fc":
            np.testing.assert_allclose(g, e, rtol=2e-4, atol=2e-5, equal_nan=True,
                                       err_msg=info.name)
            if e.size:
                worst = max(worst, float(np.nanmax(np.abs(g.astype(np.float64) - e))))
        else:
            np.testing.assert_array_equal(g, e, err_msg=info.name)
    return True, worst
