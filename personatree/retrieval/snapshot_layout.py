"""The binary layout of a stored snapshot: one JSON document and named flat arrays.

A snapshot is mostly numbers (embedding rows, times, row and turn indexes, BM25
postings). Kept as JSON they were decoded number by number into Python objects on
every restart; here they are raw little-endian arrays after the document, each read
back as a read-only numpy view over the stored bytes, without a copy. Reading never
runs code from the data (no pickle): each array's type is one of a few plain numeric
types, and its shape and place are checked against the data's length.

Layout: a 4-byte magic, the document's length (8 bytes, little-endian), the orjson
document (whose ``"arrays"`` entry gives each array's type, shape and offset), then
the arrays, each at an offset that is a multiple of 16 bytes.
"""

from __future__ import annotations

import struct
from typing import Any, Mapping

import numpy as np
import orjson

__all__ = ["pack", "unpack"]

_HEAD = struct.Struct("<4sQ")
_ALIGN = 16
#: The only array types a snapshot holds (little-endian whatever the machine).
_TYPES: dict[str, np.dtype[Any]] = {"f4": np.dtype("<f4"), "f8": np.dtype("<f8"), "i1": np.dtype("<i1"), "i4": np.dtype("<i4"),
          "i8": np.dtype("<i8")}
_NAMES = {v: k for k, v in _TYPES.items()}


def pack(magic: bytes, doc: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> bytes:
    """The bytes of ``doc`` and ``arrays`` under ``magic``.

    Parameters
    ----------
    magic : bytes
        Four bytes naming the format (what :func:`unpack` must be given to read it).
    doc : mapping
        JSON-ready values; the key ``"arrays"`` is reserved.
    arrays : mapping of str to ndarray
        Arrays of one of the types float32, float64, int8, int32, int64.

    Returns
    -------
    bytes
    """
    if len(magic) != 4 or "arrays" in doc:
        raise ValueError("a 4-byte magic and a document without 'arrays' expected")
    table: dict[str, list[Any]] = {}
    blobs: list[bytes] = []
    offset = 0
    for name, arr in arrays.items():
        kind = _NAMES.get(np.dtype(arr.dtype).newbyteorder("<"))
        if kind is None:
            raise ValueError(f"array {name!r} of an unsupported type {arr.dtype}")
        raw = np.ascontiguousarray(arr, dtype=_TYPES[kind]).tobytes()
        table[name] = [kind, list(arr.shape), offset]
        blobs.append(raw)
        blobs.append(b"\0" * (-len(raw) % _ALIGN))
        offset += len(raw) + (-len(raw) % _ALIGN)
    body = orjson.dumps({**doc, "arrays": table})
    head = _HEAD.pack(magic, len(body))
    pad = b"\0" * (-(len(head) + len(body)) % _ALIGN)
    return b"".join((head, body, pad, *blobs))


def unpack(magic: bytes, data: bytes) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The document and arrays :func:`pack` wrote under ``magic``.

    Parameters
    ----------
    magic : bytes
    data : bytes

    Returns
    -------
    (dict, dict of str to ndarray)
        The arrays are read-only views over ``data``.

    Raises
    ------
    ValueError
        Data of another format or magic, or whose arrays do not fit in it.
    """
    if len(data) < _HEAD.size:
        raise ValueError("too short for a snapshot")
    found, size = _HEAD.unpack_from(data)
    if found != magic:
        raise ValueError("not a snapshot of this format")
    start = _HEAD.size
    if start + size > len(data):
        raise ValueError("a document longer than the data")
    doc = orjson.loads(memoryview(data)[start:start + size])
    if not isinstance(doc, dict) or not isinstance(doc.get("arrays"), dict):
        raise ValueError("no table of arrays")
    base = start + size + (-(start + size) % _ALIGN)
    out: dict[str, np.ndarray] = {}
    for name, entry in doc.pop("arrays").items():
        kind, shape, offset = entry
        dtype = _TYPES[kind]
        if not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in (*shape, offset)):
            raise ValueError(f"array {name!r} of a bad shape or offset")
        count = int(np.prod(shape, dtype=np.int64))
        if base + offset + count * dtype.itemsize > len(data):
            raise ValueError(f"array {name!r} beyond the data")
        out[name] = np.frombuffer(data, dtype=dtype, count=count, offset=base + offset).reshape(shape)
    return doc, out
