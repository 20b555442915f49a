"""tensorix.save / load as a drop-in for torch.save / torch.load: any container of tensors,
arrays, numbers, strings and None round-trips with its types, without pickle; torch's
keyword arguments and torch.serialization's allow-list are accepted."""

import io
import math
from collections import Counter, OrderedDict

import ml_dtypes
import numpy as np
import pytest

import tensorix as tx
from tensorix.io import CheckpointError


def _same(a, b, where="obj"):
    """Exact equality with types: tuple is not list, 1 is not 1.0 or True, dtypes match."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, tx.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        assert a.requires_grad == b.requires_grad, where
        assert a.detach().numpy().tobytes() == b.detach().numpy().tobytes(), where
    elif isinstance(a, (np.ndarray, np.generic)):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), where
    elif isinstance(a, dict):
        assert [(type(k), k) for k in a] == [(type(k), k) for k in b], where
        for k in a:
            _same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), where
    else:
        assert a == b, where


def _objects():
    rng = np.random.default_rng(0)
    t = tx.tensor(rng.standard_normal((2, 3)).astype(np.float32))
    return {
        "ndarray": rng.standard_normal((3, 4)),
        "ndarray-uint16": np.arange(7, dtype=np.uint16) * 9000,
        "ndarray-uint64": np.array([0, 2 ** 64 - 1], dtype=np.uint64),
        "ndarray-big-endian": np.arange(5, dtype=">i4"),
        "ndarray-fortran-0d-bool": [np.asfortranarray(np.ones((2, 3))), np.array(3.5),
                                    np.array([True, False])],
        "ndarray-bf16": np.array([1.5, -2.0], dtype=ml_dtypes.bfloat16),
        "numpy-scalars": (np.float32(1.5), np.int64(-3), np.bool_(True), np.float64(2.0)),
        "number": 3,
        "string": "hello",
        "none": None,
        "tuple": (1, 2.5, "x", None, True, (3, (4,)), [5]),
        "int-keys": {1: "one", 2: t, "2x": [t * 2], 3.5: "float key", None: 0, False: "f"},
        "nested": {"model": OrderedDict(w=t, b=tx.zeros(3)), "optim": {"state": {0: {
            "step": 7, "exp_avg": tx.ones(2, 3)}}, "param_groups": [{"lr": 0.1,
                                                                   "betas": (0.9, 0.999)}]},
            "arrays": [np.zeros(2, np.float16), {"deep": (np.ones(1, np.int8),)}],
            "floats": [float("nan"), float("-inf"), -0.0, 1e-300], "complex": 1 - 2j,
            "big": 2 ** 100, "empty": [{}, [], (), ""]},
        "requires-grad": [tx.ones(2, requires_grad=True), tx.ones(2)],
        "bare-tensor": tx.arange(5),
        "empty-dict": {},
        "ordered-state-dict": tx.nn.Linear(3, 2).state_dict(),
    }


@pytest.mark.parametrize("name", sorted(_objects()))
def test_round_trip_keeps_values_and_types(name, tmp_path):
    obj = _objects()[name]
    tx.save(obj, tmp_path / "o.safetensors")
    _same(obj, tx.load(tmp_path / "o.safetensors"))
    buffer = io.BytesIO()  # torch.save(obj, buffer) works too
    tx.save(obj, buffer)
    buffer.seek(0)
    _same(obj, tx.load(buffer))


@pytest.mark.parametrize("name", ["ndarray", "numpy-scalars", "tuple", "int-keys-plain",
                                  "nested-plain", "counter"])
def test_types_match_what_torch_load_returns(name, tmp_path):
    """torch.save + torch.load (pickle) as the reference for what a round trip keeps."""
    torch = pytest.importorskip("torch")
    objects = _objects()
    objects["int-keys-plain"] = {1: "one", "1": [2, (3,)], 3.5: None, None: 0}
    objects["counter"] = {"milestones": Counter({3: 1, 6: 2})}  # MultiStepLR's state_dict
    objects["nested-plain"] = {"a": OrderedDict(b=(1, 2.5)), "c": [np.ones(2, np.float16)],
                               "d": {0: {"e": 1 - 2j}}}
    obj = objects[name]
    torch.save(obj, tmp_path / "t.pt")
    theirs = torch.load(tmp_path / "t.pt", weights_only=False)
    tx.save(obj, tmp_path / "o.safetensors")
    _same(theirs, tx.load(tmp_path / "o.safetensors"))


def test_parameters_and_shared_tensors_stay_so(tmp_path):
    p = tx.nn.Parameter(tx.ones(3))
    tx.save({"params": [p], "again": p, "plain": tx.ones(1)}, tmp_path / "p.safetensors")
    back = tx.load(tmp_path / "p.safetensors")
    assert isinstance(back["params"][0], tx.nn.Parameter) and back["params"][0].requires_grad
    assert back["again"] is back["params"][0]
    assert not isinstance(back["plain"], tx.nn.Parameter)


def test_whole_module_points_to_state_dict(tmp_path):
    model = tx.nn.Sequential(tx.nn.Linear(2, 2))
    for obj in (model, {"model": model}, tx.optim.SGD(model.parameters(), lr=0.1)):
        with pytest.raises(TypeError, match=r"cannot store a whole .*model\.state_dict\(\)"):
            tx.save(obj, tmp_path / "m.safetensors")
    with pytest.raises(TypeError, match=r"cannot store a set at \['s'\]"):
        tx.save({"s": {1, 2}}, tmp_path / "m.safetensors")
    with pytest.raises(TypeError, match=r"'x' has dtype object"):
        tx.save({"x": np.array([None])}, tmp_path / "m.safetensors")
    assert list(tmp_path.iterdir()) == []


def test_plain_state_dict_file_has_no_structure_record(tmp_path):
    from tensorix.io import read_safetensors

    tx.save({"w": tx.ones(2), "b": tx.zeros(1)}, tmp_path / "p.safetensors")
    assert read_safetensors(tmp_path / "p.safetensors")[1] == {}  # what any reader expects


# -- torch.load's keywords -----------------------------------------------------------------------
def test_load_accepts_torch_keywords(tmp_path):
    path = tmp_path / "w.safetensors"
    tx.save({"w": tx.ones(2), "n": {"step": 3, "t": tx.zeros(1)}}, path)
    calls = [dict(map_location="cpu"), dict(map_location=tx.device("cpu")),
             dict(map_location={"cpu": "cpu"}), dict(map_location={"cuda:0": "cpu"}),
             dict(map_location=lambda storage, loc: storage), dict(weights_only=True),
             dict(weights_only=False), dict(mmap=False), dict(map_location="cpu", mmap=True),
             dict(pickle_module=None, encoding="utf-8")]
    for kwargs in calls:
        back = tx.load(path, **kwargs)
        assert back["w"].tolist() == [1.0, 1.0] and back["n"]["step"] == 3, kwargs
        assert back["w"].device == tx.device("cpu")
    seen = []
    tx.load(path, map_location=lambda t, loc: seen.append(loc))
    assert seen == ["cpu", "cpu"]


def test_load_with_a_torch_device(tmp_path):
    torch = pytest.importorskip("torch")
    tx.save({"w": tx.ones(2)}, tmp_path / "w.safetensors")
    back = tx.load(tmp_path / "w.safetensors", map_location=torch.device("cpu"))
    assert back["w"].device == tx.device("cpu")


def test_load_rejects_bad_keywords_before_reading(tmp_path):
    missing = tmp_path / "missing.safetensors"
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        tx.load(missing, bogus=1)
    with pytest.raises(TypeError, match="weights_only must be True, False or None"):
        tx.load(missing, weights_only="yes")
    with pytest.raises(TypeError, match="map_location must be"):
        tx.load(missing, map_location=5)
    with pytest.raises(ValueError, match="expected 'cpu' or 'cuda'"):
        tx.load(missing, map_location="tpu")
    tx.save({"w": tx.ones(1)}, tmp_path / "w.safetensors")
    with pytest.raises(TypeError, match="map_location returned a list"):
        tx.load(tmp_path / "w.safetensors", map_location=lambda t, loc: [t])


def test_load_from_a_damaged_buffer_names_it():
    with pytest.raises(CheckpointError, match="truncated"):
        tx.load(io.BytesIO(b"\x10\0\0"))


# -- torch.serialization ------------------------------------------------------------------------
def test_serialization_module_mirrors_torch():
    torch = pytest.importorskip("torch")
    for name in ("save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
                 "safe_globals"):
        assert hasattr(torch.serialization, name) and hasattr(tx.serialization, name), name
    assert tx.serialization is tx.io.serialization and tx.serialization.load is tx.load


def test_safe_globals_are_accepted_and_change_nothing(tmp_path):
    class Config:
        pass

    ser = tx.serialization
    ser.clear_safe_globals()
    tx.save({"w": tx.ones(1), "step": 1}, tmp_path / "c.safetensors")
    ser.add_safe_globals([Config, (np.dtype, "numpy.dtype")])
    assert ser.get_safe_globals() == [Config, (np.dtype, "numpy.dtype")]
    with ser.safe_globals([np.ndarray]):
        assert ser.get_safe_globals()[-1] is np.ndarray
        assert tx.load(tmp_path / "c.safetensors", weights_only=True)["step"] == 1
    assert ser.get_safe_globals() == [Config, (np.dtype, "numpy.dtype")]
    ser.clear_safe_globals()
    assert ser.get_safe_globals() == []
    with pytest.raises(TypeError, match="add_safe_globals\\(\\): expected a list"):
        ser.add_safe_globals(Config)
    with pytest.raises(TypeError, match="safe_globals\\(\\): expected a list"):
        ser.safe_globals(Config)
