"""tensorix.save / load: dtypes, interop with the safetensors package, atomic writes, clear
errors for damaged files, nested checkpoints."""

import json
import os
import struct
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import tensorix as tx
from tensorix.io import CheckpointError, read_safetensors, write_safetensors

NATIVE = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
          "float32", "float64", "complex64", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu"]
SPECIAL = ["complex128", "float6_e3m2fn", "float6_e2m3fn", "float4_e2m1fn"]


def _array(name, shape=(3, 4), seed=0):
    rng = np.random.default_rng(seed)
    d = tx.dtypes._BY_NAME[name].np
    if name == "bool":
        return rng.random(shape) > 0.5
    if d.kind in "iu":
        info = np.iinfo(d)
        return rng.integers(info.min, info.max, shape, dtype=d, endpoint=True)
    if d.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(d)
    return (rng.standard_normal(shape) * 3).astype(d)


def _same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()  # bit-exact, NaN payloads included


@pytest.mark.parametrize("name", NATIVE + SPECIAL)
def test_round_trip_every_dtype(name, tmp_path):
    arrays = {"w": _array(name), "scalar": _array(name, ()), "empty": _array(name, (0, 5)),
              "long": _array(name, (7,), seed=1)}
    sd = {k: tx.tensor(v) for k, v in arrays.items()}
    tx.save(sd, tmp_path / "m.safetensors")
    back = tx.load(tmp_path / "m.safetensors")
    assert list(back) == list(sd)
    for k, v in arrays.items():
        assert back[k].dtype == sd[k].dtype
        _same(back[k].numpy(), v)


def test_non_native_dtypes_are_recorded_in_metadata(tmp_path):
    write_safetensors(tmp_path / "a.safetensors", {"z": _array("complex128"),
                                                   "f4": _array("float4_e2m1fn")})
    raw = (tmp_path / "a.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    assert header["z"]["dtype"] == "F64" and header["z"]["shape"] == [3, 4, 2]
    assert header["f4"]["dtype"] == "U8"
    assert json.loads(header["__metadata__"]["tensorix.dtypes"]) == {
        "z": "complex128", "f4": "float4_e2m1fn"}
    arrays, meta = read_safetensors(tmp_path / "a.safetensors")
    assert arrays["z"].dtype == np.complex128 and meta == {}


def test_header_is_aligned_and_data_contiguous(tmp_path):
    write_safetensors(tmp_path / "a.safetensors", {"a": np.ones(3, np.float32),
                                                   "b": np.ones((2, 2), np.int64)},
                      {"note": "hi"})
    raw = (tmp_path / "a.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    assert (8 + n) % 8 == 0
    header = json.loads(raw[8:8 + n])
    assert header["a"]["data_offsets"] == [0, 12] and header["b"]["data_offsets"] == [12, 44]
    assert header["__metadata__"] == {"note": "hi"}
    assert len(raw) == 8 + n + 44


# -- interop with the safetensors package (the oracle) ----------------------------------------
def test_interop_numpy_both_ways(tmp_path):
    stn = pytest.importorskip("safetensors.numpy")
    arrays = {n: _array(n) for n in ["bool", "uint8", "int8", "int16", "int32", "int64",
                                     "float16", "float32", "float64", "complex64"]}
    tx.save({k: tx.tensor(v) for k, v in arrays.items()}, tmp_path / "ours.safetensors")
    theirs = stn.load_file(str(tmp_path / "ours.safetensors"))
    for k, v in arrays.items():
        _same(theirs[k], v)
    stn.save_file(arrays, str(tmp_path / "theirs.safetensors"), metadata={"m": "1"})
    back = tx.load(tmp_path / "theirs.safetensors")
    for k, v in arrays.items():
        _same(back[k].numpy(), v)


def test_interop_torch_both_ways_with_bf16_and_fp8(tmp_path):
    stt = pytest.importorskip("safetensors.torch")
    torch = pytest.importorskip("torch")
    names = {"bfloat16": torch.bfloat16, "float8_e4m3fn": torch.float8_e4m3fn,
             "float8_e5m2": torch.float8_e5m2, "float32": torch.float32,
             "float16": torch.float16, "int64": torch.int64, "bool": torch.bool}
    arrays = {n: _array(n) for n in names}

    def to_torch(v, tdtype):  # same bits, torch dtype
        if tdtype in (torch.float8_e4m3fn, torch.float8_e5m2):
            return torch.from_numpy(v.view(np.uint8)).view(tdtype)
        if tdtype == torch.bfloat16:
            return torch.from_numpy(v.view(np.int16)).view(tdtype)
        return torch.from_numpy(v)

    def raw(t):
        return t.numpy().tobytes() if t.dtype == torch.bool else \
            t.view(torch.uint8).numpy().tobytes()

    tx.save({k: tx.tensor(v) for k, v in arrays.items()}, tmp_path / "ours.safetensors")
    theirs = stt.load_file(str(tmp_path / "ours.safetensors"))
    for k, v in arrays.items():
        assert theirs[k].dtype == names[k] and raw(theirs[k]) == v.tobytes()
    stt.save_file({k: to_torch(v, names[k]) for k, v in arrays.items()},
                  str(tmp_path / "theirs.safetensors"))
    back = tx.load(tmp_path / "theirs.safetensors")
    for k, v in arrays.items():
        assert back[k].dtype.name == k
        _same(back[k].numpy(), v)


def test_interop_model_state_dict_with_torch(tmp_path):
    """A torch model's weights saved by safetensors.torch load into tensorix by name, and
    ours load back into torch."""
    stt = pytest.importorskip("safetensors.torch")
    torch = pytest.importorskip("torch")
    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    stt.save_file(net.state_dict(), str(tmp_path / "torch.safetensors"))
    sd = tx.load(tmp_path / "torch.safetensors")
    assert sorted(sd) == sorted(net.state_dict())
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(sd[k].numpy(), v.numpy())
    sd = {k: v * 2 for k, v in sd.items()}
    tx.save(sd, tmp_path / "ours.safetensors")
    net.load_state_dict(stt.load_file(str(tmp_path / "ours.safetensors")))
    np.testing.assert_array_equal(net[0].weight.detach().numpy(), sd["0.weight"].numpy())


# -- atomic writes -------------------------------------------------------------------------------
def _tmp_files(directory):
    return [n for n in os.listdir(directory) if ".tensorix-tmp-" in n]


def test_failed_write_leaves_old_file_and_no_temp(tmp_path, monkeypatch):
    path = tmp_path / "w.safetensors"
    tx.save({"a": tx.ones(3)}, path)
    before = path.read_bytes()

    def broken_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="No space left"):
        tx.save({"a": tx.zeros(1000)}, path)
    monkeypatch.undo()
    assert path.read_bytes() == before and _tmp_files(tmp_path) == []
    assert tx.load(path)["a"].tolist() == [1.0, 1.0, 1.0]


def test_unsavable_value_leaves_old_file(tmp_path):
    path = tmp_path / "w.safetensors"
    tx.save({"a": tx.ones(2)}, path)
    with pytest.raises(TypeError, match=r"save\(\): cannot store a object at \['x'\]\[1\]"):
        tx.save({"x": [tx.ones(2), object()]}, path)
    assert tx.load(path)["a"].tolist() == [1.0, 1.0] and _tmp_files(tmp_path) == []


@pytest.mark.skipif(sys.platform == "win32", reason="needs POSIX signals")
def test_process_killed_mid_write_keeps_old_file(tmp_path):
    """SIGKILL between writing and renaming: the old checkpoint is still whole."""
    path = tmp_path / "w.safetensors"
    tx.save({"a": tx.ones(3)}, path)
    code = (
        "import os, signal, tensorix as tx\n"
        "os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)\n"
        f"tx.save({{'a': tx.zeros(100000)}}, {str(path)!r})\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert proc.returncode == -9
    assert tx.load(path)["a"].tolist() == [1.0, 1.0, 1.0]


def test_overwrite_replaces_and_keeps_usual_permissions(tmp_path):
    path = tmp_path / "w.safetensors"
    tx.save({"a": tx.ones(3)}, path)
    tx.save({"b": tx.zeros(2)}, path)
    assert list(tx.load(path)) == ["b"] and _tmp_files(tmp_path) == []
    mask = os.umask(0)
    os.umask(mask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~mask


# -- damaged files -------------------------------------------------------------------------------
def _good_file(tmp_path):
    path = tmp_path / "good.safetensors"
    tx.save({"w": tx.arange(12, dtype=tx.float32).reshape(3, 4), "b": tx.ones(5)}, path)
    return path, path.read_bytes()


def _damaged(tmp_path, raw, name="bad.safetensors"):
    p = tmp_path / name
    p.write_bytes(raw)
    return p


def test_truncated_files(tmp_path):
    path, raw = _good_file(tmp_path)
    for cut in (0, 5, 8, 20, len(raw) - 60, len(raw) - 1):
        bad = _damaged(tmp_path, raw[:cut])
        with pytest.raises(CheckpointError, match=f"{bad}.*(truncated|corrupted)"):
            tx.load(bad)


def test_corrupted_header_and_garbage(tmp_path):
    path, raw = _good_file(tmp_path)
    (n,) = struct.unpack("<Q", raw[:8])
    cases = {
        "garbage": os.urandom(64),
        "text": b"this is not a checkpoint at all, just some text" * 3,
        "bad-json": raw[:8] + b"X" + raw[9:8 + n] + raw[8 + n:],
        "not-object": struct.pack("<Q", 8) + b"[1,2,3] " + raw[8 + n:],
        "huge-header": struct.pack("<Q", 1 << 40) + raw[8:],
        "trailing": raw + b"\0" * 16,
        "bad-dtype": raw.replace(b'"F32"', b'"X32"'),
        "bad-offsets": raw.replace(b'"data_offsets":[0,', b'"data_offsets":[8,'),
        "bad-shape": raw.replace(b'"shape":[3,4]', b'"shape":[3,5]'),
    }
    for name, blob in cases.items():
        bad = _damaged(tmp_path, blob, f"{name}.safetensors")
        with pytest.raises(CheckpointError, match=str(bad)):
            tx.load(bad)


def test_corrupted_structure_record(tmp_path):
    path = tmp_path / "nested.safetensors"
    tx.save({"model": {"w": tx.ones(2)}, "step": 3}, path)
    arrays, meta = read_safetensors(path)
    meta["tensorix.structure"] = meta["tensorix.structure"].replace("model/w", "model/q")
    write_safetensors(tmp_path / "broken.safetensors", arrays, meta)
    with pytest.raises(CheckpointError, match="structure record that does not match"):
        tx.load(tmp_path / "broken.safetensors")
    meta["tensorix.structure"] = "{not json"
    write_safetensors(tmp_path / "broken2.safetensors", arrays, meta)
    with pytest.raises(CheckpointError, match="corrupted structure record"):
        tx.load(tmp_path / "broken2.safetensors")


def test_missing_file():
    with pytest.raises(FileNotFoundError, match="load\\(\\): no such file"):
        tx.load("/nonexistent/dir/x.safetensors")


def test_save_errors(tmp_path):
    with pytest.raises(TypeError, match=r"dict keys must be str, int, float, bool or None, "
                                        r"got \(1, 2\) at \[.a.\]"):
        tx.save({"a": {(1, 2): tx.ones(1)}}, tmp_path / "x.safetensors")
    assert _tmp_files(tmp_path) == []


# -- nested checkpoints --------------------------------------------------------------------------
def test_nested_checkpoint_with_optimizer_state(tmp_path):
    w = tx.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
    opt = tx.optim.AdamW([w], lr=0.1, amsgrad=True)
    (w * w).sum().backward()
    opt.step()
    ck = {"model": {"w": w.detach()}, "optim": opt.state_dict(), "step": 7, "lr": 0.1,
          "name": "run-1", "flags": [True, None, 2.5], "pair": (1, "x"),
          "nan": float("nan"), "inf": float("-inf"), "rng": tx.get_rng_state(),
          "half": tx.ones(2, dtype=tx.bfloat16)}
    tx.save(ck, tmp_path / "ck.safetensors")
    back = tx.load(tmp_path / "ck.safetensors")
    assert back["step"] == 7 and back["name"] == "run-1" and back["flags"] == [True, None, 2.5]
    assert back["pair"] == (1, "x") and isinstance(back["pair"], tuple)
    assert math_isnan(back["nan"]) and back["inf"] == float("-inf")
    assert back["rng"].dtype == tx.uint8 and back["half"].dtype == tx.bfloat16
    st = back["optim"]["state"]
    assert list(st) == [0] and st[0]["step"] == 1
    for key in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
        _same(st[0][key].numpy(), opt.state[w][key].numpy())
    assert back["optim"]["param_groups"][0]["betas"] == [0.9, 0.999] or \
        tuple(back["optim"]["param_groups"][0]["betas"]) == (0.9, 0.999)
    # the saved file is still plain safetensors for other readers
    stn = pytest.importorskip("safetensors.numpy")
    names = set(stn.load_file(str(tmp_path / "ck.safetensors")))
    assert {"model/w", "optim/state/0/exp_avg", "rng"} <= names


def math_isnan(x):
    return x != x


def test_requires_grad_flag_round_trips(tmp_path):
    tx.save({"p": [tx.ones(2, requires_grad=True), tx.ones(2)]}, tmp_path / "g.safetensors")
    p = tx.load(tmp_path / "g.safetensors")["p"]
    assert p[0].requires_grad and not p[1].requires_grad


def test_bfloat16_values_survive(tmp_path):
    x = np.array([1.0, -2.5, 3.140625, 1e-3, np.inf], dtype=ml_dtypes.bfloat16)
    tx.save({"x": tx.tensor(x)}, tmp_path / "b.safetensors")
    _same(tx.load(tmp_path / "b.safetensors")["x"].numpy(), x)
