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
