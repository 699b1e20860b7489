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
"""

from __future__ import annotations

import gc
import hashlib
import math
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from datetime import datetime
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np
import orjson

from ..errors import InputError, StoreError
from ..ports import ChangeSet, JournalEvent
from ..types import Edge, EdgeKind, Level, Message, Node, Observation, Provenance, utc

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

# Column orders of the row tuples; the SQL of the SQLite store is generated from them,
# so the codec and the schema cannot disagree about positions.
OBSERVATION_COLUMNS = ("user_id", "id", "seq", "session_id", "at", "messages", "metadata")
NODE_COLUMNS = (
    "user_id", "id", "level", "schema_type", "content", "attributes", "t_first", "t_last",
    "logit", "n_support", "n_conflict", "provenance", "recall_count", "t_access",
    "embedding", "dim",
)
EDGE_COLUMNS = ("user_id", "src", "dst", "kind", "psi", "weight", "reason", "at")
EVENT_COLUMNS = ("user_id", "seq", "kind", "payload", "at")

_INT64 = (-(2**63), 2**63 - 1)
_JSON_OPTS = orjson.OPT_SERIALIZE_NUMPY
_LEVELS = {lv.value: lv for lv in Level}
_KINDS = {k.value: k for k in EdgeKind}
_F32 = np.dtype("<f4")


# -- scalars -----------------------------------------------------------------------------


def check_text(value: object, field: str, *, nonempty: bool = False) -> str:
    """Validate a string destined for storage.

    Parameters
    ----------
    value : object
        The candidate value.
    field : str
        Name used in the error message.
    nonempty : bool
        Also refuse the empty string (ids).

    Returns
    -------
    str
        ``value`` unchanged.

    Raises
    ------
    InputError
        If it is not a ``str``, is empty when it must not be, or is not encodable as
        UTF-8 (lone surrogates), which SQLite and JSON both require.
    """
    if not isinstance(value, str):
        raise InputError(f"{field} must be a str, got {type(value).__name__}")
    if nonempty and not value:
        raise InputError(f"{field} must not be empty")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{field} is not valid text (it contains a lone surrogate)") from None
    return value


def _int(value: object, field: str) -> int:
    # bool is an int subclass but storing True as a count is a caller bug.
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{field} must be an int, got {type(value).__name__}")
    out = int(value)
    if not _INT64[0] <= out <= _INT64[1]:
        raise InputError(f"{field} does not fit in 64 bits")
    return out


def _float(value: object, field: str) -> float:
    # SQLite stores NaN as NULL, so a non-finite score would silently change meaning.
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"{field} must be a number, got {type(value).__name__}")
    out = float(value)
    if not math.isfinite(out):
        raise InputError(f"{field} must be finite, got {out}")
    return out


@lru_cache(maxsize=8192)
def _iso(value: datetime) -> str:
    return utc(value).isoformat(timespec="microseconds")


def encode_time(value: object, field: str = "datetime") -> str:
    """A datetime as fixed-width ISO-8601 UTC text with microseconds.

    Naive datetimes are taken as UTC (:func:`personatree.types.utc`).

    Raises
    ------
    InputError
        If ``value`` is not a datetime.
    """
    if not isinstance(value, datetime):
        raise InputError(f"{field} must be a datetime, got {type(value).__name__}")
    # Cached: a node's t_first, t_last and provenance usually share one instant, and
    # equal instants encode equally whatever their timezone.
    return _iso(value)


@lru_cache(maxsize=8192)
def decode_time(text: str) -> datetime:
    """Inverse of :func:`encode_time` (an aware UTC datetime; datetimes are immutable,
    so decoded values are cached and shared)."""
    return datetime.fromisoformat(text)


def _opt_time(value: datetime | None, field: str) -> str | None:
    return None if value is None else encode_time(value, field)


def dumps(value: Any, field: str) -> str:
    """JSON text of ``value``.

    Raises
    ------
    InputError
        If it is not JSON-serializable (non-str keys, sets, objects, huge ints,
        invalid text).
    """
    try:
        return orjson.dumps(value, option=_JSON_OPTS).decode("utf-8")
    except (orjson.JSONEncodeError, TypeError, ValueError) as exc:
        raise InputError(f"{field} is not JSON-serializable: {exc}") from None


def loads(text: str) -> Any:
    """Parse JSON text written by :func:`dumps`."""
    return orjson.loads(text)


def _mapping(value: object, field: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise InputError(f"{field} must be a mapping, got {type(value).__name__}")
    return dict(value)


# -- embeddings --------------------------------------------------------------------------


def encode_embedding(value: object, field: str = "embedding") -> tuple[bytes | None, int | None]:
    """An embedding as (little-endian float32 bytes, dim), or (None, None).

    Raises
    ------
    InputError
        If it is not a finite 1-D numeric vector.
    """
    if value is None:
        return None, None
    try:
        arr = np.asarray(value, dtype=_F32)
    except (TypeError, ValueError):
        raise InputError(f"{field} must be a numeric vector") from None
    if arr.ndim != 1 or arr.shape[0] == 0:
        raise InputError(f"{field} must be a non-empty 1-D vector, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise InputError(f"{field} must be finite")
    return arr.tobytes(), int(arr.shape[0])


def decode_embedding(blob: bytes | None, dim: int | None) -> np.ndarray | None:
    """Inverse of :func:`encode_embedding`: a read-only float32 view over ``blob``."""
    if blob is None:
        return None
    arr = np.frombuffer(blob, dtype=_F32)
    if dim is not None and arr.shape[0] != dim:
        raise StoreError(f"corrupt embedding: {arr.shape[0]} floats stored, dimension says {dim}")
    return arr


# -- observations ------------------------------------------------------------------------


def _encode_message(m: object, i: int) -> dict[str, Any]:
    if not isinstance(m, Message):
        raise InputError(f"messages[{i}] must be a Message, got {type(m).__name__}")
    out: dict[str, Any] = {
        "role": check_text(m.role, f"messages[{i}].role"),
        "content": check_text(m.content, f"messages[{i}].content"),
    }
    if m.name is not None:
        out["name"] = check_text(m.name, f"messages[{i}].name")
    return out


def encode_observation(obs: Observation, user_id: str) -> tuple[Any, ...]:
    """Row tuple (see ``OBSERVATION_COLUMNS``) with ``seq`` = 0, to be assigned by the store.

    Raises
    ------
    InputError
        If a field is malformed or the observation belongs to another user.
    """
    if not isinstance(obs, Observation):
        raise InputError(f"observations must hold Observation objects, got {type(obs).__name__}")
    if obs.user_id != user_id:
        raise InputError(f"change set for user {user_id!r} holds an observation of user {obs.user_id!r}")
    messages = [_encode_message(m, i) for i, m in enumerate(obs.messages)]
    return (
        user_id,
        check_text(obs.id, "observation.id", nonempty=True),
        0,
        check_text(obs.session_id, "observation.session_id"),
        encode_time(obs.at, "observation.at"),
        dumps(messages, "observation.messages"),
        dumps(_mapping(obs.metadata, "observation.metadata"), "observation.metadata"),
    )


def decode_observation(row: Sequence[Any]) -> Observation:
    """Inverse of :func:`encode_observation` (with the stored ``seq``)."""
    user_id, id_, seq, session_id, at, messages, metadata = row
    return Observation(
        id=id_,
        user_id=user_id,
        session_id=session_id,
        at=decode_time(at),
        messages=tuple(Message(m["role"], m["content"], m.get("name")) for m in loads(messages)),
        metadata=loads(metadata),
        seq=seq,
    )


# -- nodes -------------------------------------------------------------------------------


def _encode_provenance(p: object, i: int) -> dict[str, Any]:
    if not isinstance(p, Provenance):
        raise InputError(f"provenance[{i}] must be a Provenance, got {type(p).__name__}")
    return {
        "observation_id": check_text(p.observation_id, f"provenance[{i}].observation_id"),
        "turn": _int(p.turn, f"provenance[{i}].turn"),
        "sentence": _int(p.sentence, f"provenance[{i}].sentence"),
        "at": encode_time(p.at, f"provenance[{i}].at"),
        "session_id": check_text(p.session_id, f"provenance[{i}].session_id"),
    }


def _decode_provenance(text: str) -> tuple[Provenance, ...]:
    if text == "[]":  # the common case for mids and roots: skip the parser
        return ()
    return tuple(
        Provenance(d["observation_id"], d["turn"], d["sentence"], decode_time(d["at"]), d["session_id"])
        for d in loads(text)
    )


def encode_node(node: Node, user_id: str) -> tuple[Any, ...]:
    """Row tuple of a node (see ``NODE_COLUMNS``).

    Raises
    ------
    InputError
        If a field is malformed or the node belongs to another user.
    """
    if not isinstance(node, Node):
        raise InputError(f"upsert_nodes must hold Node objects, got {type(node).__name__}")
    if node.user_id != user_id:
        raise InputError(f"change set for user {user_id!r} holds a node of user {node.user_id!r}")
    level = node.level.value if isinstance(node.level, Level) else node.level
    if level not in _LEVELS:
        raise InputError(f"node.level must be one of {sorted(_LEVELS)}, got {node.level!r}")
    blob, dim = encode_embedding(node.embedding, f"node {node.id!r} embedding")
    return (
        user_id,
        check_text(node.id, "node.id", nonempty=True),
        level,
        check_text(node.schema_type, "node.schema_type"),
        check_text(node.content, "node.content"),
        dumps(_mapping(node.attributes, "node.attributes"), "node.attributes"),
        encode_time(node.t_first, "node.t_first"),
        encode_time(node.t_last, "node.t_last"),
        _float(node.logit, "node.logit"),
        _int(node.n_support, "node.n_support"),
        _int(node.n_conflict, "node.n_conflict"),
        dumps([_encode_provenance(p, i) for i, p in enumerate(node.provenance)], "node.provenance"),
        _int(node.recall_count, "node.recall_count"),
        _opt_time(node.t_access, "node.t_access"),
        blob,
        dim,
    )


def decode_node(row: Sequence[Any]) -> Node:
    """Inverse of :func:`encode_node` (the embedding is a read-only float32 array)."""
    (user_id, id_, level, schema_type, content, attributes, t_first, t_last, logit,
     n_support, n_conflict, provenance, recall_count, t_access, blob, dim) = row
    return Node(
        id=id_,
        user_id=user_id,
        level=_LEVELS[level],
        schema_type=schema_type,
        content=content,
        attributes={} if attributes == "{}" else loads(attributes),
        t_first=decode_time(t_first),
        t_last=decode_time(t_last),
        logit=logit,
        n_support=n_support,
        n_conflict=n_conflict,
        embedding=decode_embedding(blob, dim),
        provenance=_decode_provenance(provenance),
        recall_count=recall_count,
        t_access=None if t_access is None else decode_time(t_access),
    )


@contextmanager
def _gc_paused() -> Iterator[None]:
    # Bulk decoding allocates many small objects that all survive; the cyclic GC would
    # rescan them again and again for nothing (about half the time of a large load).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def decode_nodes(rows: Iterable[Sequence[Any]]) -> list[Node]:
    """Decode many node rows at once (the cold-cache path of ``load_graph``)."""
    with _gc_paused():
        return [decode_node(r) for r in rows]


def decode_edges(rows: Iterable[Sequence[Any]]) -> list[Edge]:
    """Decode many edge rows at once."""
    with _gc_paused():
        return [decode_edge(r) for r in rows]


# -- edges and events --------------------------------------------------------------------


def encode_edge(edge: Edge, user_id: str) -> tuple[Any, ...]:
    """Row tuple of an edge (see ``EDGE_COLUMNS``).

    Raises
    ------
    InputError
        If a field is malformed.
    """
    if not isinstance(edge, Edge):
        raise InputError(f"upsert_edges must hold Edge objects, got {type(edge).__name__}")
    kind = edge.kind.value if isinstance(edge.kind, EdgeKind) else edge.kind
    if kind not in _KINDS:
        raise InputError(f"edge.kind must be one of {sorted(_KINDS)}, got {edge.kind!r}")
    return (
        user_id,
        check_text(edge.src, "edge.src", nonempty=True),
        check_text(edge.dst, "edge.dst", nonempty=True),
        kind,
        _float(edge.psi, "edge.psi"),
        _float(edge.weight, "edge.weight"),
        check_text(edge.reason, "edge.reason"),
        encode_time(edge.at, "edge.at"),
    )


def decode_edge(row: Sequence[Any]) -> Edge:
    """Inverse of :func:`encode_edge`."""
    _user, src, dst, kind, psi, weight, reason, at = row
    return Edge(src=src, dst=dst, kind=_KINDS[kind], psi=psi, weight=weight, reason=reason, at=decode_time(at))


def encode_event(event: JournalEvent, user_id: str) -> tuple[Any, ...]:
    """Row tuple of a journal event (see ``EVENT_COLUMNS``) with ``seq`` = 0.

    Raises
    ------
    InputError
        If a field is malformed.
    """
    if not isinstance(event, JournalEvent):
        raise InputError(f"events must hold JournalEvent objects, got {type(event).__name__}")
    return (
        user_id,
        0,
        check_text(event.kind, "event.kind", nonempty=True),
        dumps(_mapping(event.payload, "event.payload"), "event.payload"),
        encode_time(event.at, "event.at"),
    )


def decode_event(row: Sequence[Any]) -> JournalEvent:
    """Inverse of :func:`encode_event`."""
    _user, seq, kind, payload, at = row
    return JournalEvent(kind=kind, payload=loads(payload), at=decode_time(at), seq=seq)


# -- change sets -------------------------------------------------------------------------


def check_ids(ids: object, field: str) -> list[str]:
    """Validate a sequence of ids (a bare ``str`` is refused: it would iterate characters).

    Raises
    ------
    InputError
        If ``ids`` is not a sequence of valid strings.
    """
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
        raise InputError(f"{field} must be a sequence of str, got {type(ids).__name__}")
    return [check_text(i, f"{field}[]") for i in ids]


@dataclass(frozen=True, slots=True)
class PreparedChange:
    """A validated, encoded :class:`~personatree.ports.ChangeSet` (rows with seq 0).

    Observations are de-duplicated by id within the change (the first one wins), as
    they are against the stored log.
    """

    user_id: str
    expected_version: int | None
    observations: list[tuple[Any, ...]]
    upsert_nodes: list[tuple[Any, ...]]
    delete_nodes: list[str]
    upsert_edges: list[tuple[Any, ...]]
    delete_edges: list[tuple[str, str]]
    events: list[tuple[Any, ...]]
    empty: bool
    delete_observations: list[str] = field(default_factory=list)
    # Archive rows (node rows of leaves that left the tree) and archive ids to drop:
    # the ids of upserted tree nodes are in ``unarchive`` too (one place or the other).
    archive_nodes: list[tuple[Any, ...]] = field(default_factory=list)
    unarchive: list[str] = field(default_factory=list)


def prepare_change(change: ChangeSet) -> PreparedChange:
    """Validate and encode a change set before any storage is touched.

    Raises
    ------
    InputError
        If anything in it is malformed or belongs to another user.
    """
    if not isinstance(change, ChangeSet):
        raise InputError(f"commit takes a ChangeSet, got {type(change).__name__}")
    user_id = check_text(change.user_id, "user_id", nonempty=True)
    expected = change.expected_version
    if expected is not None and (isinstance(expected, bool) or not isinstance(expected, int) or expected < 0):
        raise InputError(f"expected_version must be None or an int >= 0, got {expected!r}")
    observations: list[tuple[Any, ...]] = []
    seen: set[str] = set()
    for obs in change.observations:
        row = encode_observation(obs, user_id)
        if row[1] not in seen:
            seen.add(row[1])
            observations.append(row)
    delete_edges: list[tuple[str, str]] = []
    for pair in change.delete_edges:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise InputError(f"delete_edges must hold (src, dst) tuples, got {pair!r}")
        delete_edges.append((check_text(pair[0], "delete_edges src"), check_text(pair[1], "delete_edges dst")))
    archive_rows = []
    for n in change.archive_nodes:
        if not isinstance(n, Node) or n.level is not Level.LEAF:
            raise InputError("archive_nodes must hold leaf nodes")
        archive_rows.append(encode_node(n, user_id))
    upserts = [encode_node(n, user_id) for n in change.upsert_nodes]
    unarchive = check_ids(change.unarchive, "unarchive")
    return PreparedChange(
        user_id=user_id,
        expected_version=expected,
        observations=observations,
        upsert_nodes=upserts,
        delete_nodes=check_ids(change.delete_nodes, "delete_nodes"),
        upsert_edges=[encode_edge(e, user_id) for e in change.upsert_edges],
        delete_edges=delete_edges,
        events=[encode_event(e, user_id) for e in change.events],
        empty=change.is_empty(),
        delete_observations=check_ids(change.delete_observations, "delete_observations"),
        archive_nodes=archive_rows,
        unarchive=list(dict.fromkeys([*unarchive, *(r[1] for r in upserts)])),
    )


# -- checksums ---------------------------------------------------------------------------


def _canon(text: str) -> Any:
    return loads(text)


def digest(
    observations: Iterable[Observation],
    nodes: Iterable[Node],
    edges: Iterable[Edge],
    events: Iterable[JournalEvent],
    archive: Iterable[Node] = (),
) -> str:
    """A store-independent SHA-256 of one user's data.

    Rows are re-encoded with sorted JSON keys and sorted by key, so two stores that
    hold the same data give the same digest whatever their internal order (used to
    verify copies between stores). The archived leaves are part of the data; a user
    without any has the digest it had before the archive existed.

    Returns
    -------
    str
        Hex digest.
    """
    h = hashlib.sha256()

    def feed(tag: str, rows: list[list[Any]]) -> None:
        h.update(tag.encode())
        h.update(orjson.dumps(rows, option=orjson.OPT_SORT_KEYS))

    obs_rows = []
    for o in sorted(observations, key=lambda o: o.seq):
        r = list(encode_observation(o, o.user_id))
        r[2] = o.seq
        r[5], r[6] = _canon(r[5]), _canon(r[6])
        obs_rows.append(r)
    def node_rows(found: Iterable[Node]) -> list[list[Any]]:
        out = []
        for n in sorted(found, key=lambda n: n.id):
            r = list(encode_node(n, n.user_id))
            r[5], r[11] = _canon(r[5]), _canon(r[11])
            r[14] = None if r[14] is None else r[14].hex()
            out.append(r)
        return out

    edge_rows = [list(encode_edge(e, "")) for e in sorted(edges, key=lambda e: (e.src, e.dst))]
    event_rows = []
    for ev in sorted(events, key=lambda e: e.seq):
        r = list(encode_event(ev, ""))
        r[1], r[3] = ev.seq, _canon(r[3])
        event_rows.append(r)
    feed("observations", obs_rows)
    feed("nodes", node_rows(nodes))
    feed("edges", edge_rows)
    feed("events", event_rows)
    archived = node_rows(archive)
    if archived:
        feed("archive", archived)
    return h.hexdigest()
