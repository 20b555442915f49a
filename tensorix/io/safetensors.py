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
import os
import struct
import tempfile

import numpy as np

from .. import dtypes as dt

__all__ = ["write_safetensors", "read_safetensors", "CheckpointError"]

_CODES = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "int32": "I32",
          "int64": "I64", "float16": "F16", "bfloat16": "BF16", "float32": "F32",
          "float64": "F64", "complex64": "C64", "float8_e4m3fn": "F8_E4M3",
          "float8_e5m2": "F8_E5M2", "float8_e8m0fnu": "F8_E8M0"}
_FROM_CODE = {v: k for k, v in _CODES.items()}
# codes other writers use for unsigned types tensorix lacks: widened to a signed type on read
_FOREIGN = {"U16": np.dtype("<u2"), "U32": np.dtype("<u4"), "U64": np.dtype("<u8")}
_WIDEN = {"U16": np.int32, "U32": np.int64, "U64": np.int64}
_STORED_AS = {"complex128": "float64", "float6_e3m2fn": "uint8", "float6_e2m3fn": "uint8",
              "float4_e2m1fn": "uint8"}
_DTYPES_KEY = "tensorix.dtypes"
_MAX_HEADER = 100 * 1024 * 1024


class CheckpointError(RuntimeError):
    """A weight or checkpoint file that is truncated, corrupted or not safetensors."""


def _contiguous(arr):
    # np.ascontiguousarray would turn a 0-d array into shape (1,)
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


def _encode(name, arr, special):
    """The stored array and its code; non-native dtypes recorded in ``special``."""
    d = dt.from_numpy_dtype(arr.dtype)
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
    data = _contiguous(np.asarray(arr))
    if data.dtype.byteorder == ">":
        data = data.byteswap().view(data.dtype.newbyteorder("<"))
    return data, _CODES[d.name]


def _decode(arr, name, special):
    kind = special.get(name)
    if kind is None:
        return arr
    if kind == "complex128":
        return arr.reshape(-1).view(np.complex128).reshape(arr.shape[:-1])
    return arr.reshape(-1).view(dt._BY_NAME[kind].np).reshape(arr.shape)


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_safetensors(path, arrays: dict, metadata: dict | None = None) -> None:
    """Atomically write ``{name: ndarray}`` (C-order, little-endian) to ``path``.

    The data goes to a temporary file in the same directory, is flushed and fsynced, then
    renamed over ``path`` (and the directory fsynced): a crash leaves either the old file or
    the new one, never half of one. A failed write removes its temporary file.
    """
    header, offset, blobs, special = {}, 0, [], {}
    for name, arr in arrays.items():
        if not isinstance(name, str):
            raise TypeError(f"save(): tensor names must be strings, got {name!r}")
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
        header["__metadata__"] = meta
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)  # align the data section to 8 bytes
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".safetensors", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(struct.pack("<Q", len(head)))
            f.write(head)
            for raw in blobs:
                f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual mode
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)


def _fsync_dir(directory):
    """Make the rename durable (POSIX); a no-op where directories can't be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _entry(path, name, info):
    """Validate one header entry; returns (numpy dtype, begin, end, shape)."""
    try:
        code = info["dtype"]
        npd = _FOREIGN[code] if code in _FOREIGN else dt._BY_NAME[_FROM_CODE[code]].np
        begin, stop = info["data_offsets"]
        shape = tuple(info["shape"])
        ok = all(type(v) is int and v >= 0 for v in (begin, stop, *shape))
    except (KeyError, TypeError, ValueError):
        ok = False
    if not ok:
        raise CheckpointError(f"load(): {path}: bad header entry for tensor {name!r}: "
                              f"{info!r}")
    return npd, begin, stop, shape


def read_safetensors(path) -> tuple[dict, dict]:
    """Read ``path`` into ``({name: ndarray}, metadata)``; raise :class:`CheckpointError`
    naming the file and the problem for anything truncated or malformed."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise CheckpointError(f"load(): {path} is truncated (only {len(blob)} bytes; not a "
                              "safetensors file)")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > _MAX_HEADER or 8 + n > len(blob):
        raise CheckpointError(f"load(): {path} is truncated or corrupted (header of {n} bytes "
                              f"in a file of {len(blob)} bytes)")
    try:
        header = json.loads(blob[8:8 + n].decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"load(): {path} has a corrupted header ({e})") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"load(): {path} has a malformed header (not a JSON object)")
    data = memoryview(blob)[8 + n:]
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict):
        raise CheckpointError(f"load(): {path} has a malformed __metadata__ entry")
    try:
        special = json.loads(metadata.get(_DTYPES_KEY, "{}"))
    except json.JSONDecodeError:
        raise CheckpointError(f"load(): {path} has a corrupted {_DTYPES_KEY} record") from None
    arrays, end = {}, 0
    for name, info in header.items():
        npd, begin, stop, shape = _entry(path, name, info)
        count = int(np.prod(shape, dtype=np.int64))
        if stop > len(data) or begin > stop or stop - begin != count * npd.itemsize:
            raise CheckpointError(f"load(): {path} is truncated or corrupted: tensor {name!r} "
                                  f"needs bytes [{begin}, {stop}) of a {len(data)}-byte data "
                                  "section")
        arr = np.frombuffer(data[begin:stop], dtype=npd).reshape(shape).copy()
        if info["dtype"] in _WIDEN:
            if info["dtype"] == "U64" and arr.size and arr.max() >= 2 ** 63:
                raise CheckpointError(f"load(): {path}: tensor {name!r} (U64) has values "
                                      "beyond int64, the widest integer type of tensorix")
            arr = arr.astype(_WIDEN[info["dtype"]])
        arrays[name] = _decode(arr, name, special)
        end = max(end, stop)
    if end != len(data):
        raise CheckpointError(f"load(): {path} is corrupted: {len(data) - end} trailing bytes "
                              "after the last tensor")
    metadata.pop(_DTYPES_KEY, None)
    return arrays, metadata
