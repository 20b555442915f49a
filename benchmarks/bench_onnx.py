"""tensorix.onnx on the demo models: export time, the largest |onnxruntime - eager| and the
inference time of eager tensorix, of onnxruntime on the exported file, and of the file loaded
back by tensorix.onnx.load (the interpreter), best of ``--repeat``, with ratios to eager. All
on the CPU with ``--threads`` threads each (onnxruntime's intra-op pool, tensorix's BLAS).

    python benchmarks/bench_onnx.py            # the table in docs/onnx.md
    python benchmarks/bench_onnx.py --quick    # small batches, one repeat (a smoke run)
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _best(fn, repeat):
    fn()  # warm up (caches, first-call allocations)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _cases(quick):
    """(name, model, example inputs)."""
    import tensorix as tx
    from tensorix import demo

    tx.manual_seed(0)
    batch = 4 if quick else 64
    cnn = demo.digits_cnn().eval()
    gpt = demo.CharGPT(vocab_size=65, context=64).eval()
    return [(f"demo CNN, batch {batch} of 1x8x8", cnn, (tx.randn(batch, 1, 8, 8),)),
            (f"demo GPT (d 128, 2 blocks), batch {batch // 4 or 1} x 64 tokens", gpt,
             (tx.randint(0, 65, (batch // 4 or 1, 64)),))]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=None)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    repeat = args.repeat or (1 if args.quick else 10)

    import onnxruntime as ort

    import tensorix as tx

    tx.set_num_threads(args.threads)
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = args.threads
    rows = []
    for name, model, inputs in _cases(args.quick):
        t0 = time.perf_counter()
        proto = tx.onnx.export(model, inputs)
        export_s = time.perf_counter() - t0
        session = ort.InferenceSession(proto.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
        feeds = {i.name: t.numpy() for i, t in zip(session.get_inputs(), inputs)}
        loaded = tx.onnx.load(proto)
        with tx.no_grad():
            expected = model(*inputs).numpy()
            error = float(np.abs(session.run(None, feeds)[0] - expected).max())
            eager = _best(lambda: model(*inputs), repeat)
            interp = _best(lambda: loaded(*inputs), repeat)
        runtime = _best(lambda: session.run(None, feeds), repeat)
        rows.append((name, export_s, error, eager, runtime, interp))
    print(f"threads: {args.threads}, best of {repeat}\n")
    print("| model | export s | max abs error | eager ms | onnxruntime ms (x eager) | "
          "onnx.load ms (x eager) |")
    print("|---|---|---|---|---|---|")
    for name, export_s, error, eager, runtime, interp in rows:
        print(f"| {name} | {export_s:.2f} | {error:.1e} | {eager * 1e3:.2f} | "
              f"{runtime * 1e3:.2f} ({runtime / eager:.2f}x) | "
              f"{interp * 1e3:.2f} ({interp / eager:.2f}x) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
