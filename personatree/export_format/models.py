"""The export's objects as pydantic models, and the export document of one user."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, TypeVar

import numpy as np
from pydantic import PlainSerializer, PlainValidator, ValidationInfo

from ..errors import InputError
from ..inputs import MAX_METADATA_BYTES, parse_messages
from ..ports import JournalEvent
from ..types import Edge, EdgeKind, Level, Message, Node, Observation, Provenance
from .items import Count, DecodeContext, Deferred, ExportItem, Id, OptionalTime, Text, Time, checked, context_of
from .values import (
    EXPORT_FORMAT,
    check_embedding,
    check_json_object,
    check_list,
    check_number,
    check_text,
    embedding_text,
)

__all__ = [
    "ExportDocument",
    "ExportEdge",
    "ExportEvent",
    "ExportHeader",
    "ExportNode",
    "ExportObservation",
    "ExportProvenance",
    "export_document",
    "node_json",
]

# -- the export's objects ---------------------------------------------------------------------


class ExportProvenance(ExportItem):
    """Where a leaf's statement came from."""

    observation_id: Text
    turn: Count
    sentence: Count
    at: Time
    session_id: Text

    @classmethod
    def of(cls, p: Provenance) -> "ExportProvenance":
        """The export form of ``p``."""
        return cls.model_construct(
            observation_id=p.observation_id, turn=p.turn, sentence=p.sentence, at=p.at, session_id=p.session_id
        )

    def to_domain(self) -> Provenance:
        """The decoded :class:`~personatree.types.Provenance`."""
        return Provenance(self.observation_id, self.turn, self.sentence, self.at, self.session_id)


def _message_json(m: Message) -> dict[str, Any]:
    return {"role": m.role, "content": m.content, **({"name": m.name} if m.name else {})}



def _messages(value: Any, where: str, ctx: DecodeContext) -> tuple[Message, ...]:
    raw = check_list(value, where)
    try:
        return parse_messages(list(raw), ctx.limits)
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None


def _metadata(value: Any, where: str, ctx: DecodeContext) -> dict[str, Any]:
    return check_json_object(value, where, max_bytes=MAX_METADATA_BYTES)


def _messages_json(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    return [_message_json(m) for m in messages]


class ExportObservation(ExportItem):
    """One verbatim observation of the log."""

    id: Id
    seq: Count
    session_id: Text
    at: Time
    messages: Annotated[tuple[Message, ...], checked(_messages), PlainSerializer(_messages_json)]
    metadata: Annotated[dict[str, Any], checked(_metadata)]

    check_order = ("messages", "id", "session_id", "at", "metadata", "seq")

    @classmethod
    def of(cls, o: Observation) -> "ExportObservation":
        """The export form of ``o``."""
        return cls.model_construct(
            id=o.id, seq=o.seq, session_id=o.session_id, at=o.at, messages=o.messages, metadata=dict(o.metadata)
        )

    def to_domain(self, user_id: str) -> Observation:
        """The decoded :class:`~personatree.types.Observation` of ``user_id``."""
        return Observation(
            id=self.id, user_id=user_id, session_id=self.session_id, at=self.at, messages=self.messages,
            metadata=self.metadata, seq=self.seq,
        )


Member = TypeVar("Member", Level, EdgeKind)


def _member(kind: type[Member], value: Any, where: str, choices: str) -> Member:
    """The enum member named by ``value``; ``choices`` spells the allowed names for the error."""
    text = check_text(value, where)
    try:
        return kind(text)
    except ValueError:
        raise InputError(f"{where} must be {choices}, got {text[:40]!r}") from None


def _level(value: Any, where: str, ctx: DecodeContext) -> Level:
    return _member(Level, value, where, "leaf, mid or root")


def _schema_type(value: Any, where: str, ctx: DecodeContext) -> str:
    text = check_text(value, where)
    if text not in ctx.registry:
        # Decay and priors are looked up by type; an unknown type would fail later, on read.
        raise InputError(f"{where} {text[:60]!r} is not in this store's schema registry")
    return text


def _attributes(value: Any, where: str, ctx: DecodeContext) -> dict[str, Any]:
    return check_json_object(value, where)


def _logit(value: Any, where: str, ctx: DecodeContext) -> float:
    return check_number(value, where, -ctx.logit_clip, ctx.logit_clip)


def _provenance(value: Any, where: str, ctx: DecodeContext) -> list[ExportProvenance]:
    return [ExportProvenance.decode(p, f"{where}[{j}]", ctx) for j, p in enumerate(check_list(value, where))]


def _provenance_json(items: list[ExportProvenance]) -> list[dict[str, Any]]:
    return [p.model_dump() for p in items]


def _embedding(value: Any, where: str, ctx: DecodeContext) -> np.ndarray | None:
    return check_embedding(value, where, ctx.embedder_dim)


class ExportNode(ExportItem):
    """One node of the tree (or an archived leaf)."""

    id: Id
    level: Annotated[Level, checked(_level), PlainSerializer(lambda lv: lv.value)]
    schema_type: Annotated[str, checked(_schema_type)]
    content: Text
    attributes: Annotated[dict[str, Any], checked(_attributes)]
    t_first: Time
    t_last: Time
    logit: Annotated[float, checked(_logit)]
    n_support: Count
    n_conflict: Count
    provenance: Annotated[list[ExportProvenance], checked(_provenance), PlainSerializer(_provenance_json)]
    recall_count: Count
    t_access: OptionalTime
    embedding: Annotated[np.ndarray | None, checked(_embedding), PlainSerializer(embedding_text)]

    check_order = (
        "level", "schema_type", "t_access:present", "id", "content", "attributes", "t_first", "t_last",
        "logit", "n_support", "n_conflict", "embedding", "provenance", "recall_count", "t_access",
    )

    @classmethod
    def of(cls, n: Node) -> "ExportNode":
        """The export form of ``n``."""
        return cls.model_construct(
            id=n.id, level=n.level, schema_type=n.schema_type, content=n.content, attributes=n.attributes,
            t_first=n.t_first, t_last=n.t_last, logit=n.logit, n_support=n.n_support, n_conflict=n.n_conflict,
            provenance=[ExportProvenance.of(p) for p in n.provenance], recall_count=n.recall_count,
            t_access=n.t_access, embedding=n.embedding,
        )

    def to_domain(self, user_id: str) -> Node:
        """The decoded :class:`~personatree.types.Node` of ``user_id``."""
        return Node(
            id=self.id, user_id=user_id, level=self.level, schema_type=self.schema_type, content=self.content,
            attributes=self.attributes, t_first=self.t_first, t_last=self.t_last, logit=self.logit,
            n_support=self.n_support, n_conflict=self.n_conflict, embedding=self.embedding,
            provenance=tuple(p.to_domain() for p in self.provenance), recall_count=self.recall_count,
            t_access=self.t_access,
        )


def _kind(value: Any, where: str, ctx: DecodeContext) -> EdgeKind:
    return _member(EdgeKind, value, where, "support or conflict")


def _psi(value: Any, where: str, ctx: DecodeContext) -> float:
    return check_number(value, where, -1.0, 1.0)


def _weight(value: Any, where: str, ctx: DecodeContext) -> float:
    return check_number(value, where)


class ExportEdge(ExportItem):
    """One support or conflict edge."""

    src: Text
    dst: Text
    kind: Annotated[EdgeKind, checked(_kind), PlainSerializer(lambda k: k.value)]
    psi: Annotated[float, checked(_psi)]
    weight: Annotated[float, checked(_weight)]
    reason: Text
    at: Time

    check_order = ("kind", "src", "dst", "psi", "weight", "reason", "at")

    @classmethod
    def of(cls, e: Edge) -> "ExportEdge":
        """The export form of ``e``."""
        return cls.model_construct(src=e.src, dst=e.dst, kind=e.kind, psi=e.psi, weight=e.weight, reason=e.reason,
                                   at=e.at)

    def to_domain(self) -> Edge:
        """The decoded :class:`~personatree.types.Edge`."""
        return Edge(src=self.src, dst=self.dst, kind=self.kind, psi=self.psi, weight=self.weight,
                    reason=self.reason, at=self.at)


def _event_kind(value: Any, where: str, ctx: DecodeContext) -> str:
    kind = check_text(value, where)
    if not kind:
        raise InputError(f"{where} is empty")
    return kind


def _payload_validator(value: Any, info: ValidationInfo) -> dict[str, Any]:
    # Checking a payload needs the event's kind; without a valid kind that field's own
    # error comes first, so the payload's shape alone is checked.
    context = context_of(info)
    where, ctx = f"{context['where']}.payload", context["ctx"]
    try:
        payload = check_json_object(value, where)
        kind = info.data.get("kind")
        if kind is not None:
            ctx.check_payload(kind, payload, where)
        return payload
    except Exception as exc:
        raise Deferred(exc) from None


class ExportEvent(ExportItem):
    """One journal event."""

    seq: Count
    kind: Annotated[str, checked(_event_kind)]
    payload: Annotated[dict[str, Any], PlainValidator(_payload_validator)]
    at: Time

    check_order = ("kind", "payload", "at", "seq")

    @classmethod
    def of(cls, e: JournalEvent) -> "ExportEvent":
        """The export form of ``e``."""
        return cls.model_construct(seq=e.seq, kind=e.kind, payload=dict(e.payload), at=e.at)

    def to_domain(self) -> JournalEvent:
        """The decoded :class:`~personatree.ports.JournalEvent`."""
        return JournalEvent(kind=self.kind, payload=self.payload, at=self.at, seq=self.seq)


def _format(value: Any, where: str, ctx: DecodeContext) -> str:
    if value != EXPORT_FORMAT:
        raise InputError(f"unknown export format {str(value)[:60]!r}; this version reads {EXPORT_FORMAT!r}")
    return EXPORT_FORMAT


class ExportHeader(ExportItem):
    """The export's own fields: format, whose data, at which version, embedded by what."""

    format: Annotated[str, checked(_format)]
    user_id: Id
    version: Count
    embedder: Text


class ExportDocument(ExportHeader):
    """A whole export: the header, the log, the tree, the journal and the archive."""

    observations: list[ExportObservation]
    nodes: list[ExportNode]
    edges: list[ExportEdge]
    journal: list[ExportEvent]
    archive: list[ExportNode]


def node_json(n: Node) -> dict[str, Any]:
    """One node as export data (also the form of an archived leaf)."""
    return ExportNode.of(n).model_dump()


def export_document(
    user_id: str,
    version: int,
    embedder: str,
    observations: Iterable[Observation],
    nodes: Iterable[Node],
    edges: Iterable[Edge],
    events: Iterable[JournalEvent],
    archive: Iterable[Node],
) -> dict[str, Any]:
    """Everything stored about a user as JSON-ready export data.

    Returns
    -------
    dict
        ``{"format", "user_id", "version", "embedder", "observations", "nodes",
        "edges", "journal", "archive"}``, as ``schemas/export.schema.json`` describes.
    """
    return ExportDocument.model_construct(
        format=EXPORT_FORMAT, user_id=user_id, version=version, embedder=embedder,
        observations=[ExportObservation.of(o) for o in observations],
        nodes=[ExportNode.of(n) for n in nodes],
        edges=[ExportEdge.of(e) for e in edges],
        journal=[ExportEvent.of(e) for e in events],
        archive=[ExportNode.of(n) for n in archive],
    ).model_dump()
