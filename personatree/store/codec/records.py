"""Row tuples of the four stored kinds: observations, nodes, edges and journal events.

The column orders below are the stores' schemas: the SQL of every SQL store is
generated from them, so the codec and the schema cannot disagree about positions.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from ...collector import paused_gc
from ...errors import InputError
from ...ports import JournalEvent
from ...types import Edge, EdgeKind, Level, Message, Node, Observation, Provenance
from .values import (
    check_float,
    check_int,
    check_mapping,
    check_text,
    decode_embedding,
    decode_time,
    dumps,
    encode_embedding,
    encode_optional_time,
    encode_time,
    loads,
)

__all__ = [
    "EDGE_COLUMNS",
    "EVENT_COLUMNS",
    "NODE_COLUMNS",
    "OBSERVATION_COLUMNS",
    "decode_edge",
    "decode_edges",
    "decode_event",
    "decode_node",
    "decode_nodes",
    "decode_observation",
    "encode_edge",
    "encode_event",
    "encode_node",
    "encode_observation",
]

# Column orders of the row tuples.
OBSERVATION_COLUMNS = ("user_id", "id", "seq", "session_id", "at", "messages", "metadata")
NODE_COLUMNS = (
    "user_id", "id", "level", "schema_type", "content", "attributes", "t_first", "t_last",
    "logit", "n_support", "n_conflict", "provenance", "recall_count", "t_access",
    "embedding", "dim",
)
EDGE_COLUMNS = ("user_id", "src", "dst", "kind", "psi", "weight", "reason", "at")
EVENT_COLUMNS = ("user_id", "seq", "kind", "payload", "at")

_LEVELS = {lv.value: lv for lv in Level}
_KINDS = {k.value: k for k in EdgeKind}


# -- observations ------------------------------------------------------------------------


def _check_owned(item: object, cls: type[Observation] | type[Node], field: str, noun: str, user_id: str) -> None:
    """Refuse an item of the wrong class or of another user than the change set's."""
    if not isinstance(item, cls):
        raise InputError(f"{field} must hold {cls.__name__} objects, got {type(item).__name__}")
    if item.user_id != user_id:
        raise InputError(f"change set for user {user_id!r} holds {noun} of user {item.user_id!r}")


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
    _check_owned(obs, Observation, "observations", "an observation", user_id)
    messages = [_encode_message(m, i) for i, m in enumerate(obs.messages)]
    return (
        user_id,
        check_text(obs.id, "observation.id", nonempty=True),
        0,
        check_text(obs.session_id, "observation.session_id"),
        encode_time(obs.at, "observation.at"),
        dumps(messages, "observation.messages"),
        dumps(check_mapping(obs.metadata, "observation.metadata"), "observation.metadata"),
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
        "turn": check_int(p.turn, f"provenance[{i}].turn"),
        "sentence": check_int(p.sentence, f"provenance[{i}].sentence"),
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
    _check_owned(node, Node, "upsert_nodes", "a node", user_id)
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
        dumps(check_mapping(node.attributes, "node.attributes"), "node.attributes"),
        encode_time(node.t_first, "node.t_first"),
        encode_time(node.t_last, "node.t_last"),
        check_float(node.logit, "node.logit"),
        check_int(node.n_support, "node.n_support"),
        check_int(node.n_conflict, "node.n_conflict"),
        dumps([_encode_provenance(p, i) for i, p in enumerate(node.provenance)], "node.provenance"),
        check_int(node.recall_count, "node.recall_count"),
        encode_optional_time(node.t_access, "node.t_access"),
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


def decode_nodes(rows: Iterable[Sequence[Any]]) -> list[Node]:
    """Decode many node rows at once (the cold-cache path of ``load_graph``)."""
    with paused_gc():
        return [decode_node(r) for r in rows]


def decode_edges(rows: Iterable[Sequence[Any]]) -> list[Edge]:
    """Decode many edge rows at once."""
    with paused_gc():
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
        check_float(edge.psi, "edge.psi"),
        check_float(edge.weight, "edge.weight"),
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
        dumps(check_mapping(event.payload, "event.payload"), "event.payload"),
        encode_time(event.at, "event.at"),
    )


def decode_event(row: Sequence[Any]) -> JournalEvent:
    """Inverse of :func:`encode_event`."""
    _user, seq, kind, payload, at = row
    return JournalEvent(kind=kind, payload=loads(payload), at=decode_time(at), seq=seq)
