"""Every damaged file is a CheckpointError naming it: never a KeyError, OverflowError,
RecursionError or ValueError from deep inside, never a file the reference reader (the
``safetensors`` package) rejects. A seeded fuzzer holds the line."""

import io
import json
import re
import struct
from collections import OrderedDict

import ml_dtypes
import numpy as np
import pytest

import tensorix as tx
from tensorix.io import CheckpointError, load_checkpoint, save_checkpoint


def _file(header: dict, data: bytes) -> bytes:
    head = json.dumps(header).encode()
    return struct.pack("<Q", len(head)) + head + data


def _split(raw: bytes):
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def _f32(shape, begin):
    end = begin + 4 * int(np.prod(shape))
    return {"dtype": "F32", "shape": list(shape), "data_offsets": [begin, end]}


# -- offsets: the tensors must tile the data section, as the reference reader demands -----------
LAYOUTS = {
    "gap": ({"a": _f32([3], 0), "b": _f32([3], 16)}, 28, "leaves a gap"),
    "overlap": ({"a": _f32([3], 0), "b": _f32([3], 8)}, 20, "overlaps"),
    "same-bytes": ({"a": _f32([3], 0), "b": _f32([3], 0)}, 12, "overlaps"),
    "gap-at-start": ({"a": _f32([3], 4)}, 16, "leaves a gap"),
    "unsorted": ({"b": _f32([3], 12), "a": _f32([3], 0), "e": _f32([0], 12)}, 24, None),
}


@pytest.mark.parametrize("case", sorted(LAYOUTS))
def test_offsets_are_checked_as_the_reference_reader_does(case, tmp_path):
    stn = pytest.importorskip("safetensors.numpy")
    header, size, problem = LAYOUTS[case]
    data = np.arange(size // 4, dtype=np.float32).tobytes()
    path = tmp_path / f"{case}.safetensors"
    path.write_bytes(_file(header, data))
    if problem is None:
        theirs, ours = stn.load_file(str(path)), tx.load(path)
        assert sorted(theirs) == sorted(ours)
        for k in theirs:
            np.testing.assert_array_equal(ours[k].numpy(), theirs[k])
        return
    from safetensors import SafetensorError

    with pytest.raises(SafetensorError):
        stn.load_file(str(path))
    with pytest.raises(CheckpointError, match=f"{re.escape(str(path))}.*{problem}"):
        tx.load(path)


# -- the crashes from the outside-testing report, one by one ------------------------------------
def _with_meta(meta, header=None, data=b"\0" * 12):
    header = dict(header or {"w": {"dtype": "U8", "shape": [12], "data_offsets": [0, 12]}})
    return _file({**header, "__metadata__": meta}, data)


DEEP = 100_000
CRASHES = {  # name: (file bytes, what the old reader raised)
    "deep-json-header": (struct.pack("<Q", 2 * DEEP + 6) + b'{"a":' + b"[" * DEEP
                         + b"]" * DEEP + b"}", "RecursionError"),
    "deep-structure-record": (_with_meta({"tensorix.structure": "[" * DEEP + "]" * DEEP}),
                              "RecursionError"),
    "shape-wraps-int64": (_file({"w": {"dtype": "F32", "shape": [2 ** 62 + 1, 4],
                                       "data_offsets": [0, 16]}}, b"\0" * 16), "ValueError"),
    "shape-2-pow-64": (_file({"w": {"dtype": "F32", "shape": [2 ** 64],
                                 "data_offsets": [0, 8]}}, b"\0" * 8), "OverflowError"),
    "65-dims": (_file({"w": {"dtype": "F32", "shape": [1] * 65, "data_offsets": [0, 4]}},
                      b"\0" * 4), "ValueError"),
    "dtype-record-unknown": (_with_meta({"tensorix.dtypes": '{"w": "float99"}'}), "KeyError"),
    "dtype-record-wrong-storage": (_with_meta({"tensorix.dtypes": '{"w": "complex128"}'}),
                                   "ValueError"),
    "dtype-record-not-a-map": (_with_meta({"tensorix.dtypes": "[1]"}), "AttributeError"),
    "dtype-record-names-nothing": (_with_meta({"tensorix.dtypes": '{"q": "float4_e2m1fn"}'}),
                                   "silently ignored"),
    "metadata-not-strings": (_with_meta({"tensorix.dtypes": 5}), "TypeError"),
    "metadata-empty-list": (_with_meta([]), "accepted; the reference rejects it"),
    "structure-unknown-node": (_with_meta({"tensorix.structure": '{"bogus": 1}'}),
                               "loaded as a dict"),
    "structure-bad-kind": (_with_meta({"tensorix.structure": json.dumps(
        {"__tensor__": "w", "kinds": ["os.system"]})}), "imported a module named by the file"),
}


@pytest.mark.parametrize("case", sorted(CRASHES))
def test_each_reported_crash_is_a_checkpoint_error(case, tmp_path):
    raw, _old = CRASHES[case]
    path = tmp_path / f"{case}.safetensors"
    path.write_bytes(raw)
    with pytest.raises(CheckpointError, match=re.escape(str(path))):
        tx.load(path)


def test_load_checkpoint_of_a_record_without_rng(tmp_path):
    model = tx.nn.Linear(3, 2)
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    path = tmp_path / "c.safetensors"
    tx.save({"format": "tensorix.checkpoint/1", "step": 1, "extra": None,
             "model": tx.nn.Linear(3, 2).state_dict()}, path)
    with pytest.raises(CheckpointError, match=f"{path} is a damaged training checkpoint"):
        load_checkpoint(path, model=model)
    save_checkpoint(path, model=tx.nn.Linear(3, 2), step=2)
    record = tx.load(path)
    record["rng"]["default"] = tx.zeros(7, dtype=tx.uint8)
    tx.save(record, path)
    with pytest.raises(CheckpointError, match="damaged state for generator 'default'"):
        load_checkpoint(path, model=model)
    for k, v in model.state_dict().items():  # nothing was restored from the damaged file
        np.testing.assert_array_equal(v.numpy(), before[k])


# -- the fuzzer ----------------------------------------------------------------------------------
EVIL = [-1, 0, 2 ** 64, 2 ** 63, 2 ** 62 + 1, 1.5, float("inf"), "x", "", None, True, [], {},
        [1, 2, 3], [[1]], [0, 2 ** 63], "F32", "U64", "BF16", "C64", "F8_E8M0",
        {"__tensor__": "w"}, {"__dict__": [[[1], 2]]}, {"__tuple__": 5}, ["a", "b"],
        "tensorix.nn.parameter.Parameter", ["tensorix.nope.X"], {"__complex__": [1]},
        {"__ndarray__": "w", "scalar": True}]


def _paths(tree, prefix=()):
    """Every (parent, key) position in a JSON tree."""
    items = tree.items() if isinstance(tree, dict) else \
        enumerate(tree) if isinstance(tree, list) else ()
    for k, v in items:
        yield tree, k
        yield from _paths(v, prefix + (k,))


def _mutate_json(tree, rng):
    positions = list(_paths(tree))
    if not positions:
        return EVIL[rng.integers(len(EVIL))]
    parent, key = positions[rng.integers(len(positions))]
    if rng.random() < 0.2:
        del parent[key]
    else:
        parent[key] = EVIL[rng.integers(len(EVIL))]
    return tree


def _mutant(raw, rng):
    kind = ["truncate", "flip", "flip-header", "length", "header", "record"][rng.integers(6)]
    header, data = _split(raw)
    head_end = len(raw) - len(data)
    if kind == "truncate":
        return kind, raw[:rng.integers(len(raw))]
    if kind.startswith("flip"):
        out = bytearray(raw)
        span = head_end if kind == "flip-header" else len(raw)
        for pos in rng.integers(0, span, rng.integers(1, 5)):
            out[pos] ^= int(rng.integers(1, 256))
        return kind, bytes(out)
    if kind == "length":
        n = [0, 1, 7, head_end - 9, head_end - 7, len(raw), 2 ** 63, int(rng.integers(2 ** 32))]
        return kind, struct.pack("<Q", n[rng.integers(len(n))] % 2 ** 64) + raw[8:]
    meta = header.get("__metadata__", {})
    records = [k for k in meta if k.startswith("tensorix.")]
    if kind == "record" and records:
        key = records[rng.integers(len(records))]
        meta[key] = json.dumps(_mutate_json(json.loads(meta[key]), rng))
    else:
        header = _mutate_json(header, rng)
    return kind, _file(header, data)


def _bases(tmp_path):
    model = tx.nn.Linear(3, 2)
    opt = tx.optim.Adam(model.parameters(), lr=0.1)
    model(tx.ones(4, 3)).sum().backward()
    opt.step()
    save_checkpoint(tmp_path / "ckpt.safetensors", model=model, optimizer=opt, step=3,
                    extra={"note": "x", "pair": (1, 2.5)},
                    generators={"g": tx.Generator().manual_seed(1)})
    tx.save({"w": tx.arange(6.0).reshape(2, 3), "b": tx.ones(2, dtype=tx.int64)},
            tmp_path / "flat.safetensors")
    fp4 = np.array([0.5, -1.0, 6.0], dtype=ml_dtypes.float4_e2m1fn)
    tx.save({"z": tx.tensor(np.array([1 + 2j, 3j])), "f4": tx.tensor(fp4),
             "arr": np.arange(5, dtype=np.uint16), "scalar": np.float32(2.5),
             "od": OrderedDict(a=tx.nn.Parameter(tx.ones(2))), "c": 1 - 1j, 7: [None]},
            tmp_path / "nested.safetensors")
    return [(tmp_path / n).read_bytes() for n in
            ("ckpt.safetensors", "flat.safetensors", "nested.safetensors")]


def test_fuzzed_files_give_checkpoint_errors_only(tmp_path):
    """Truncations, byte flips, bad header lengths and hostile header values: each load
    succeeds or raises CheckpointError; and what the reference reader rejects, we reject."""
    st = pytest.importorskip("safetensors")
    rng = np.random.default_rng(20261201)
    bases = _bases(tmp_path)
    wrong, lenient, outcomes = [], [], {"ok": 0, "error": 0}
    for i in range(1500):
        kind, blob = _mutant(bases[i % 3], rng)
        for op in (tx.load, lambda f: load_checkpoint(f, restore_rng=False)):
            try:
                op(io.BytesIO(blob))  # in memory: the same reader, no disk traffic
                outcomes["ok"] += 1
            except CheckpointError:
                outcomes["error"] += 1
            except Exception as e:  # noqa: BLE001 - the point of the test
                wrong.append((i, kind, f"{type(e).__name__}: {str(e)[:120]}"))
        try:
            st.deserialize(blob)  # the reference's validating reader, without a framework
        except st.SafetensorError:  # the reference rejects the file: so must we
            try:
                tx.io.read_safetensors(io.BytesIO(blob))
                lenient.append((i, kind))
            except CheckpointError:
                pass
    assert not wrong, f"{len(wrong)} loads raised something else: {wrong[:5]}"
    assert not lenient, f"files the reference rejects but we load: {lenient[:5]}"
    assert outcomes["ok"] > 50 and outcomes["error"] > 1000, outcomes  # both sides reached
