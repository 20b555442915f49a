"""The safetensors file format, read and written directly.

Layout: 8-byte little-endian header size N, N bytes of JSON header mapping each tensor name to
``{"dtype", "shape", "data_offsets": [begin, end]}`` (offsets relative to the byte after the
header) plus an optional ``"__metadata__"`` string map, then the raw little-endian data.

Written here rather than through the ``safetensors`` package because that package's NumPy
front end has no bfloat16/float8 (NumPy lacks them; we store them through ml_dtypes), and
because writes must be atomic. Files interoperate with the package (tested both ways).

Dtypes the format has no code for (complex128, the fp6/fp4 formats) are stored in a
standard dtype (complex128 as F64 with a trailing dimension of 2; fp6/fp4 as their U8
storage bytes) and named in the ``tensorix.dtypes`` metadata entry, so tensorix reads them
back exactly while other readers still see well-formed tensors.
"""

from __future__ import annotations

import json
import math
import os
import struct

import numpy as np

from .. import dtypes as dt
from ._atomic import atomic_write

__all__ = ["write_safetensors", "read_safetensors", "CheckpointError"]

_CODES = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "int32": "I32",
          "int64": "I64", "float16": "F16", "bfloat16": "BF16", "float32": "F32",
          "float64": "F64", "complex64": "C64", "float8_e4m3fn": "F8_E4M3",
          "float8_e5m2": "F8_E5M2", "float8_e8m0fnu": "F8_E8M0"}
_FROM_CODE = {v: k for k, v in _CODES.items()}
# codes other writers use for unsigned types tensorix lacks: widened to a signed type on read
_FOREIGN = {"U16": np.dtype("<u2"), "U32": np.dtype("<u4"), "U64": np.dtype("<u8")}
_WIDEN = {np.dtype("<u2"): np.int32, np.dtype("<u4"): np.int64, np.dtype("<u8"): np.int64}
_STORED_AS = {"complex128": "float64", "float6_e3m2fn": "uint8", "float6_e2m3fn": "uint8",
              "float4_e2m1fn": "uint8"}
_NUMPY_ONLY = {np.dtype(d): code for code, d in _FOREIGN.items()}  # NumPy arrays keep them
_DTYPES_KEY = "tensorix.dtypes"
_META = "__metadata__"
_MAX_HEADER = 100 * 1024 * 1024
_MAX_DIM = 2 ** 63 - 1  # NumPy's sizes are int64
_MAX_NDIM = 64  # NumPy's limit (numpy.ndarray's maxdims)


class CheckpointError(RuntimeError):
    """A weight or checkpoint file that is truncated, corrupted or not safetensors; the
    message names the file and the problem. (A ``RuntimeError``, as torch raises for a
    damaged checkpoint.)"""


def _contiguous(arr):
    # np.ascontiguousarray would turn a 0-d array into shape (1,)
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


def _encode(name, arr, special):
    """The stored array and its code; non-native dtypes recorded in ``special``."""
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    if arr.dtype in _NUMPY_ONLY:
        return _contiguous(arr), _NUMPY_ONLY[arr.dtype]
    try:
        d = dt.from_numpy_dtype(arr.dtype)
    except TypeError:
        raise TypeError(f"save(): {name!r} has dtype {arr.dtype}, which neither tensorix nor "
                        "safetensors can store") from None
    if d.name in _STORED_AS:
        special[name] = d.name
        if d.name == "complex128":
            arr = _contiguous(arr).reshape(-1).view(np.float64).reshape(arr.shape + (2,))
        else:
            arr = _contiguous(arr).reshape(-1).view(np.uint8).reshape(arr.shape)
        d = dt.from_numpy_dtype(arr.dtype)
    if d.name not in _CODES:
        raise TypeError(f"save(): tensor {name!r} has dtype {d.name}, which has no "
                        "safetensors code")
    return _contiguous(np.asarray(arr)), _CODES[d.name]


def _serialize(arrays: dict, metadata: dict | None) -> list:
    """The file as a list of byte chunks (header, then each tensor's bytes, no copies).
    Everything is validated here, before a single byte reaches the disk."""
    header, offset, blobs, special = {}, 0, [], {}
    for name, arr in arrays.items():
        if not isinstance(name, str):
            raise TypeError(f"save(): tensor names must be strings, got {name!r}")
        if name == _META:
            raise ValueError(f"save(): a tensor cannot be named {_META!r}: safetensors keeps "
                             "the file's metadata under that name; rename it")
        data, code = _encode(name, arr, special)
        raw = memoryview(data.reshape(-1).view(np.uint8))  # bytes without a copy
        header[name] = {"dtype": code, "shape": list(data.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    meta = {str(k): str(v) for k, v in (metadata or {}).items()}
    if special:
        meta[_DTYPES_KEY] = json.dumps(special)
    if meta:
        header[_META] = meta
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)  # align the data section to 8 bytes
    return [struct.pack("<Q", len(head)), head, *blobs]


def write_safetensors(f, arrays: dict, metadata: dict | None = None) -> None:
    """Write ``{name: ndarray}`` to the path ``f`` atomically, or to a binary file object.

    A path is replaced atomically (temporary file, fsync, rename; see ``_atomic.py``):
    a crash leaves the old file or the new one, never half of one; symlinks are written
    through and an existing file keeps its permission bits. Arrays of any shape are stored
    C-ordered and little-endian; ``metadata`` is a ``{str: str}`` map.

    Example::

        write_safetensors("w.safetensors", {"w": np.ones((2, 3), np.float32)}, {"step": "3"})
    """
    chunks = _serialize(arrays, metadata)
    if hasattr(f, "write"):
        for chunk in chunks:
            f.write(chunk)
        return
    atomic_write(f, chunks)


def _label(f) -> str:
    """How messages name the source: the path, or a file object's name."""
    return os.fspath(f) if not hasattr(f, "read") else str(getattr(f, "name", repr(f)))


def _read_bytes(f) -> bytes:
    if not hasattr(f, "read"):
        with open(f, "rb") as fh:
            return fh.read()
    blob = f.read()
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise TypeError(f"load(): expected a file opened in binary mode ('rb'), got {f!r}")
    return bytes(blob)


def _header(blob: bytes, path: str) -> tuple[dict, memoryview]:
    """The parsed JSON header and the data section after it."""
    if len(blob) < 8:
        raise CheckpointError(f"load(): {path} is truncated (only {len(blob)} bytes; not a "
                              "safetensors file)")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > _MAX_HEADER or 8 + n > len(blob):
        raise CheckpointError(f"load(): {path} is truncated or corrupted (header of {n} bytes "
                              f"in a file of {len(blob)} bytes)")
    try:
        header = json.loads(blob[8:8 + n].decode())
    except (ValueError, RecursionError) as e:  # bad UTF-8 or JSON; JSON nested too deeply
        raise CheckpointError(f"load(): {path} has a corrupted header "
                              f"({type(e).__name__}: {str(e)[:200]})") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"load(): {path} has a malformed header (not a JSON object)")
    return header, memoryview(blob)[8 + n:]


def _metadata(header: dict, path: str) -> tuple[dict, dict]:
    """Pop and check ``__metadata__`` ({str: str}, as the format says) and our dtype record."""
    metadata = header.pop(_META, None)
    metadata = {} if metadata is None else metadata  # null is allowed; [] or 0 is not
    if not (isinstance(metadata, dict) and all(isinstance(v, str) for v in metadata.values())):
        raise CheckpointError(f"load(): {path} has a malformed {_META} entry (expected a map "
                              "of strings to strings)")
    try:
        special = json.loads(metadata.pop(_DTYPES_KEY, "{}"))
    except (ValueError, RecursionError):
        special = None
    if not (isinstance(special, dict) and all(
            isinstance(special.get(k), str) and special[k] in _STORED_AS and
            isinstance(header.get(k), dict) and
            header[k].get("dtype") == _CODES[_STORED_AS[special[k]]] for k in special)):
        raise CheckpointError(f"load(): {path} has a corrupted {_DTYPES_KEY} record "
                              f"({metadata.get(_DTYPES_KEY, '')[:200]!r})")
    return metadata, special


def _entry(path, name, info, special):
    """Validate one header entry; returns (numpy dtype, begin, end, shape)."""
    try:
        code = info["dtype"]
        npd = _FOREIGN[code] if code in _FOREIGN else dt._BY_NAME[_FROM_CODE[code]].np
        begin, stop = info["data_offsets"]
        shape = tuple(info["shape"])
        ok = (all(type(v) is int and 0 <= v <= _MAX_DIM for v in (begin, stop, *shape))
              and len(shape) <= _MAX_NDIM)
    except (KeyError, TypeError, ValueError):
        ok = False
    if ok and special.get(name) == "complex128":
        ok = len(shape) >= 1 and shape[-1] == 2
    if not ok:
        raise CheckpointError(f"load(): {path}: bad header entry for tensor {name!r}: "
                              f"{str(info)[:200]}")
    return npd, begin, stop, shape


def _check_layout(path, spans, size):
    """Tensors must tile the data section exactly, as the reference reader demands: no
    overlaps (two tensors sharing bytes) and no gaps (bytes that belong to nothing)."""
    expected = 0
    for begin, stop, name in sorted(spans):
        if begin != expected:
            kind = "overlaps the tensor before it" if begin < expected else \
                "leaves a gap after the tensor before it"
            raise CheckpointError(f"load(): {path} is corrupted: tensor {name!r} (bytes "
                                  f"[{begin}, {stop})) {kind}")
        expected = stop
    if expected != size:
        raise CheckpointError(f"load(): {path} is corrupted: {size - expected} trailing bytes "
                              "after the last tensor")


def _decode(arr, kind):
    """A stored array as the tensorix dtype ``kind`` named in the dtype record."""
    if kind == "complex128":
        return arr.reshape(-1).view(np.complex128).reshape(arr.shape[:-1])
    return arr.reshape(-1).view(dt._BY_NAME[kind].np).reshape(arr.shape)


def _read(f) -> tuple[dict, dict]:
    """``({name: ndarray}, metadata)`` with the file's own dtypes (U16/U32/U64 kept)."""
    path = _label(f)
    header, data = _header(_read_bytes(f), path)
    metadata, special = _metadata(header, path)
    entries = {name: _entry(path, name, info, special) for name, info in header.items()}
    for name, (npd, begin, stop, shape) in entries.items():
        # Python ints: a product of huge dims must not wrap around in int64
        nbytes = math.prod(shape) * npd.itemsize
        if stop > len(data) or begin > stop or stop - begin != nbytes:
            raise CheckpointError(f"load(): {path} is truncated or corrupted: tensor {name!r} "
                                  f"({nbytes} bytes) has bytes [{begin}, {stop}) of a "
                                  f"{len(data)}-byte data section")
    _check_layout(path, [(b, s, name) for name, (_, b, s, _) in entries.items()], len(data))
    arrays = {}
    for name, (npd, begin, stop, shape) in entries.items():
        arr = np.frombuffer(data[begin:stop], dtype=npd).reshape(shape).copy()
        arrays[name] = _decode(arr, special[name]) if name in special else arr
    return arrays, metadata


def as_tensor_array(arr, name, path):
    """``arr`` in a dtype tensorix has: unsigned types tensorix lacks are widened."""
    if arr.dtype not in _WIDEN:
        return arr
    if arr.dtype == np.uint64 and arr.size and arr.max() >= 2 ** 63:
        raise CheckpointError(f"load(): {path}: tensor {name!r} (U64) has values beyond "
                              "int64, the widest integer type of tensorix")
    return arr.astype(_WIDEN[arr.dtype])


def read_safetensors(f) -> tuple[dict, dict]:
    """Read a path or binary file object into ``({name: ndarray}, metadata)``.

    Every byte is checked the way the reference reader checks it (header, dtypes, shapes,
    offsets that tile the data section exactly); anything truncated or malformed raises
    :class:`CheckpointError` naming the file and the problem. U16/U32/U64 tensors written by
    other tools are widened to int32/int64/int64.

    Example::

        arrays, meta = read_safetensors("w.safetensors")   # {"w": ndarray (2, 3)}, {}
    """
    arrays, metadata = _read(f)
    path = _label(f)
    return {k: as_tensor_array(a, k, path) for k, a in arrays.items()}, metadata
