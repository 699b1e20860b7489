"""Row codec: domain objects ⇄ flat row tuples shared by every store.

Both the SQLite store and the in-memory fake keep exactly these tuples, so the two
normalise and reject values identically (a tuple in ``attributes`` comes back as a
list from both; a lone surrogate is refused by both). Conventions:

* datetimes: ISO-8601 UTC text with microseconds (``2024-05-01T09:30:00.000123+00:00``),
  fixed width so that text order is time order, and exact on round trip;
* JSON: orjson, UTF-8 text; only JSON-native values (dict with str keys, list, str,
  int, float, bool, None; numpy scalars/arrays are accepted and become plain JSON);
* embeddings: little-endian float32 bytes plus the dimension.

Every encoder validates its input and raises :class:`~personatree.errors.InputError`
naming the field, before any storage is touched, so a bad change set writes nothing.

The codec is split by concept: :mod:`.values` (scalars, times, JSON, embeddings),
:mod:`.records` (the row tuples and their column orders), :mod:`.changes` (change sets)
and :mod:`.digest` (checksums); this module gathers their public names.
"""

from __future__ import annotations

from .changes import PreparedChange, check_ids, prepare_change
from .digest import digest
from .records import (
    EDGE_COLUMNS,
    EVENT_COLUMNS,
    NODE_COLUMNS,
    OBSERVATION_COLUMNS,
    decode_edge,
    decode_edges,
    decode_event,
    decode_node,
    decode_nodes,
    decode_observation,
    encode_edge,
    encode_event,
    encode_node,
    encode_observation,
)
from .values import check_text, decode_embedding, decode_time, dumps, encode_embedding, encode_time, loads

__all__ = [
    "OBSERVATION_COLUMNS",
    "NODE_COLUMNS",
    "EDGE_COLUMNS",
    "EVENT_COLUMNS",
    "encode_time",
    "decode_time",
    "dumps",
    "loads",
    "encode_embedding",
    "decode_embedding",
    "encode_observation",
    "decode_observation",
    "encode_node",
    "decode_node",
    "decode_nodes",
    "decode_edges",
    "encode_edge",
    "decode_edge",
    "encode_event",
    "decode_event",
    "check_text",
    "check_ids",
    "digest",
    "PreparedChange",
    "prepare_change",
]
