"""The safetensors format, read and written here so that every dtype remat has round-trips
exactly, bfloat16 included (the ``safetensors`` package's NumPy API has no bfloat16).

A file is an 8-byte little-endian header length, a JSON header (``{name: {"dtype", "shape",
"data_offsets"}}`` plus an optional ``"__metadata__"`` of strings, padded with spaces to a
multiple of 8 bytes), then the tensors' bytes, little-endian and C-ordered, back to back.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np

from . import _remat

# safetensors' dtype codes and the NumPy dtypes their bytes are read as ("BF16" through its
# bits: see _from_bf16_bits).
_NUMPY = {
    "F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2", "I64": "<i8", "I32": "<i4",
    "I16": "<i2", "I8": "i1", "U8": "u1", "U16": "<u2", "U32": "<u4", "U64": "<u8",
    "BOOL": "?",
}
_CODE = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16",
         "int64": "I64", "int32": "I32", "bool": "BOOL"}


def _bf16_bits(t: Any) -> np.ndarray:
    """A bfloat16 tensor's bits: its float32 widening's upper halves (exact)."""
    wide = np.ascontiguousarray(t.float().numpy(), dtype="<f4")
    return (wide.view("<u4") >> 16).astype("<u2")


def _from_bf16_bits(bits: np.ndarray) -> Any:
    wide = (bits.astype("<u4") << 16).view("<f4")
    return _remat.from_numpy(np.ascontiguousarray(wide)).bfloat16()


def dumps(tensors: dict[str, Any], metadata: dict[str, str] | None) -> bytes:
    """The file for ``tensors`` (name to Tensor or array), in their order."""
    header: dict[str, Any] = {}
    if metadata is not None:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise TypeError("remat.save: safetensors metadata must map str to str")
        header["__metadata__"] = metadata
    chunks, offset = [], 0
    for name, value in tensors.items():
        if isinstance(value, _remat.Tensor):
            value = value.detach().cpu()
            code = _CODE[str(value.dtype)]
            raw = (_bf16_bits(value) if code == "BF16"
                   else np.ascontiguousarray(value.numpy()).astype(_NUMPY[code])).tobytes()
            shape = list(value.shape)
        else:
            arr = np.asarray(value)
            found = next((c for c, d in _NUMPY.items()
                          if c != "BF16" and np.dtype(d) == arr.dtype.newbyteorder("<")), None)
            if found is None:
                raise TypeError(f"remat.save: {name!r} has dtype {arr.dtype}, which "
                                "safetensors cannot store")
            code = found
            raw = np.ascontiguousarray(arr).astype(_NUMPY[code]).tobytes()
            shape = list(arr.shape)
        header[name] = {"dtype": code, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def loads(data: bytes) -> list[tuple[str, Any]]:
    """The tensors of a file, in the order of their bytes."""
    if len(data) < 8:
        raise ValueError("the file is shorter than a safetensors header")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise ValueError(f"the header claims {n} bytes, more than the file holds")
    header = json.loads(data[8:8 + n].decode("utf-8"))
    body = memoryview(data)[8 + n:]
    entries = sorted(((k, v) for k, v in header.items() if k != "__metadata__"),
                     key=lambda kv: kv[1]["data_offsets"][0])
    out = []
    for name, info in entries:
        code, shape = info["dtype"], [int(s) for s in info["shape"]]
        begin, end = (int(o) for o in info["data_offsets"])
        if code not in _NUMPY:
            raise _remat.DTypeError(
                f"remat.load: {name!r} is stored as {code}, a dtype remat does not have "
                "(it has float32, float64, bfloat16, float16, int64, int32 and bool)")
        dt = np.dtype(_NUMPY[code])
        count = int(np.prod(shape)) if shape else 1
        if not 0 <= begin <= end <= len(body) or end - begin != count * dt.itemsize:
            raise ValueError(f"{name!r}: data_offsets {begin}..{end} do not fit its shape "
                             f"{shape} of {code}")
        arr = np.frombuffer(body[begin:end], dtype=dt).reshape(shape)
        if code == "BF16":
            out.append((name, _from_bf16_bits(arr)))
        else:
            out.append((name, _remat.from_numpy(np.array(arr, dtype=dt.newbyteorder("=")))))
    return out
