"""The safetensors file format, read and written directly.

Layout: 8-byte little-endian header size N, N bytes of JSON header mapping each tensor name to
``{"dtype", "shape", "data_offsets": [begin, end]}`` (offsets relative to the byte after the
header) plus an optional ``"__metadata__"`` string map, then the raw little-endian data.

Written here rather than through the ``safetensors`` package because that package's NumPy
front end has no bfloat16/float8 (NumPy lacks them; we store them through ml_dtypes), and
because writes must be atomic. Files interoperate with the package (tested both ways).
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
          "float8_e5m2": "F8_E5M2"}
_FROM_CODE = {v: k for k, v in _CODES.items()}
_MAX_HEADER = 100 * 1024 * 1024


class CheckpointError(RuntimeError):
    """A weight or checkpoint file that is truncated, corrupted or not safetensors."""


def write_safetensors(path, arrays: dict, metadata: dict | None = None) -> None:
    """Atomically write ``{name: ndarray}`` (C-order, little-endian) to ``path``.

    The data goes to a temporary file in the same directory, is flushed and fsynced, then
    renamed over ``path``: a crash leaves either the old file or the new one, never half.
    """
    header, offset, blobs = {}, 0, []
    for name, arr in arrays.items():
        if not isinstance(name, str):
            raise TypeError(f"save(): tensor names must be strings, got {name!r}")
        d = dt.from_numpy_dtype(arr.dtype)
        if d.name not in _CODES:
            raise TypeError(f"save(): dtype {d.name} has no safetensors code")
        data = np.ascontiguousarray(arr)
        if data.dtype.byteorder == ">":
            data = data.byteswap().view(data.dtype.newbyteorder("<"))
        raw = data.tobytes()
        header[name] = {"dtype": _CODES[d.name], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
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
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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
    arrays, end = {}, 0
    for name, info in header.items():
        try:
            d = dt._BY_NAME[_FROM_CODE[info["dtype"]]]
            begin, stop = info["data_offsets"]
            shape = tuple(int(s) for s in info["shape"])
        except (KeyError, TypeError, ValueError):
            raise CheckpointError(f"load(): {path}: bad header entry for tensor {name!r}: "
                                  f"{info!r}") from None
        count = int(np.prod(shape, dtype=np.int64))
        if stop > len(data) or begin > stop or stop - begin != count * d.itemsize:
            raise CheckpointError(f"load(): {path} is truncated or corrupted: tensor {name!r} "
                                  f"needs bytes [{begin}, {stop}) of a {len(data)}-byte data "
                                  "section")
        arrays[name] = np.frombuffer(data[begin:stop], dtype=d.np).reshape(shape).copy()
        end = max(end, stop)
    if end != len(data):
        raise CheckpointError(f"load(): {path} is corrupted: {len(data) - end} trailing bytes "
                              "after the last tensor")
    return arrays, metadata
