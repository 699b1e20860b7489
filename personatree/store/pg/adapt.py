"""Embeddings in binary between the codec's float32 bytes and PostgreSQL.

The column is ``vector`` when pgvector is installed, else ``real[]``; either way the
values travel in binary and are converted with numpy, so loading a graph creates no
per-float Python objects.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import psycopg
from psycopg.adapt import Buffer, Dumper, Loader
from psycopg.pq import Format

from ...errors import StoreError

__all__ = ["FLOAT4_ARRAY_OID", "Embedding", "register_embedding"]

FLOAT4_ARRAY_OID = 1021
_FLOAT4_OID = 700


class Embedding(bytes):
    """Marks a parameter as an embedding (little-endian float32 bytes from the codec)."""

    __slots__ = ()


class _VectorDumper(Dumper):
    # pgvector's binary input: uint16 dim, uint16 unused, dim big-endian float4.
    format = Format.BINARY

    def dump(self, obj: Any) -> Buffer:
        arr = np.frombuffer(obj, dtype="<f4")
        return struct.pack(">HH", arr.size, 0) + arr.astype(">f4").tobytes()


class _VectorLoader(Loader):
    format = Format.BINARY

    def load(self, data: Buffer) -> bytes:
        return np.frombuffer(data, dtype=">f4", offset=4).astype("<f4").tobytes()


_ARRAY_ITEM = np.dtype([("len", ">i4"), ("val", ">f4")])


class _Float4ArrayDumper(Dumper):
    # PostgreSQL's binary array: ndim, has-null flag, element oid, (size, lower bound)
    # per dimension, then (length, value) per element.
    format = Format.BINARY
    oid = FLOAT4_ARRAY_OID

    def dump(self, obj: Any) -> Buffer:
        arr = np.frombuffer(obj, dtype="<f4")
        items = np.empty(arr.size, dtype=_ARRAY_ITEM)
        items["len"] = 4
        items["val"] = arr
        return struct.pack(">iiIii", 1, 0, _FLOAT4_OID, arr.size, 1) + items.tobytes()


class _Float4ArrayLoader(Loader):
    format = Format.BINARY

    def load(self, data: Buffer) -> bytes:
        ndim, has_null, _oid = struct.unpack_from(">iiI", data, 0)
        if ndim == 0:
            return b""
        if ndim != 1 or has_null:
            raise StoreError("corrupt embedding: expected a one-dimensional float4 array without NULLs")
        items = np.frombuffer(data, dtype=_ARRAY_ITEM, offset=12 + 8 * ndim)
        return items["val"].astype("<f4").tobytes()


def register_embedding(conn: psycopg.Connection[Any], vector_oid: int | None) -> None:
    """Make ``conn`` send :class:`Embedding` parameters and read the embedding column in binary.

    Parameters
    ----------
    conn : psycopg.Connection
        A connection of the store's pool (adapters are per connection).
    vector_oid : int or None
        The oid of pgvector's ``vector`` type when the column has that type (it
        differs per database), ``None`` for a ``real[]`` column.
    """
    if vector_oid is not None:
        conn.adapters.register_dumper(Embedding, type("VectorDumper", (_VectorDumper,), {"oid": vector_oid}))
        conn.adapters.register_loader(vector_oid, _VectorLoader)
    else:
        conn.adapters.register_dumper(Embedding, _Float4ArrayDumper)
        conn.adapters.register_loader(FLOAT4_ARRAY_OID, _Float4ArrayLoader)
