"""Domain types: observations, nodes, edges and the reports the engine returns.

These types know nothing about storage or models. Nodes are mutable dataclasses
because the engine updates their confidence and counts in place; everything a
caller receives from the public API is either frozen or a copy.

Times are timezone-aware UTC :class:`datetime.datetime` values.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from enum import Enum
from typing import Any, Literal, Mapping

import numpy as np

__all__ = [
    "Level",
    "EdgeKind",
    "Message",
    "Observation",
    "Provenance",
    "LeafDraft",
    "Node",
    "Edge",
    "Verdict",
    "Route",
    "Summary",
    "CandidateScore",
    "LeafDecision",
    "InsertReport",
    "SearchHit",
    "utc",
]


def utc(value: datetime) -> datetime:
    """Return ``value`` as an aware UTC datetime (naive values are taken as UTC).

    Parameters
    ----------
    value : datetime
        Any datetime.

    Returns
    -------
    datetime
        The same instant with ``tzinfo=timezone.utc``.
    """
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


class Level(str, Enum):
    """The three levels of the evidence tree."""

    LEAF = "leaf"
    MID = "mid"
    ROOT = "root"

    @property
    def rank(self) -> int:
        """0 for leaves, 1 for mids, 2 for roots."""
        return _LEVEL_RANK[self]


_LEVEL_RANK = {Level.LEAF: 0, Level.MID: 1, Level.ROOT: 2}


class EdgeKind(str, Enum):
    """``support`` edges form the tree; ``conflict`` edges record counter-evidence."""

    SUPPORT = "support"
    CONFLICT = "conflict"


Role = Literal["user", "assistant", "system", "tool"]


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message of an interaction.

    Attributes
    ----------
    role : str
        ``"user"``, ``"assistant"``, ``"system"`` or ``"tool"``.
    content : str
        The verbatim text.
    name : str or None
        Optional speaker name (e.g. in a multi-party conversation).
    """

    role: str
    content: str
    name: str | None = None


@dataclass(frozen=True, slots=True)
class Observation:
    """One raw interaction, stored verbatim in the append-only log.

    Attributes
    ----------
    id : str
        Stable id; ingestion is idempotent on it.
    user_id : str
        The owner of the memory.
    session_id : str
        The conversation session this interaction belongs to.
    at : datetime
        When it happened (UTC).
    messages : tuple of Message
        The verbatim messages.
    metadata : Mapping
        Caller-supplied JSON-serializable metadata (kept verbatim).
    seq : int
        Position in the user's log, assigned by the store (0 before storing).
    """

    id: str
    user_id: str
    session_id: str
    at: datetime
    messages: tuple[Message, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict)
    seq: int = 0


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a leaf's statement came from: observation, turn and sentence."""

    observation_id: str
    turn: int
    sentence: int
    at: datetime
    session_id: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return {
            "observation_id": self.observation_id,
            "turn": self.turn,
            "sentence": self.sentence,
            "at": self.at.isoformat(),
            "session_id": self.session_id,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Provenance":
        """Inverse of :meth:`to_dict`."""
        return cls(
            observation_id=str(data["observation_id"]),
            turn=int(data["turn"]),
            sentence=int(data["sentence"]),
            at=utc(datetime.fromisoformat(str(data["at"]))),
            session_id=str(data["session_id"]),
        )


@dataclass(frozen=True, slots=True)
class LeafDraft:
    """A typed statement extracted from an observation, before insertion.

    Attributes
    ----------
    content : str
        The verbatim sentence.
    schema_type : str
        A leaf-level schema type from the registry.
    attributes : Mapping
        ``polarity`` (-1, 0, 1), ``negated`` (bool), ``topic`` (str), ``time``
        (str or None), ``entities`` (list of str), ``speaker`` (str or None) and
        ``type_score`` (float); judges may add more.
    provenance : Provenance
        Observation, turn and sentence it came from.
    embedding : ndarray or None
        L2-normalised float32 embedding when the judge computed one.
    """

    content: str
    schema_type: str
    attributes: Mapping[str, Any]
    provenance: Provenance
    embedding: np.ndarray | None = None


@dataclass(slots=True, eq=False)
class Node:
    """A node of the evidence tree.

    Attributes
    ----------
    id : str
        Stable id (leaves: derived from their provenance, so replay is deterministic).
    user_id : str
        Owner.
    level : Level
        leaf, mid or root.
    schema_type : str
        Type from the schema registry.
    content : str
        The verbatim sentence (leaf) or the summary claim (mid, root).
    attributes : dict
        Free-form typed attributes (see :class:`LeafDraft`).
    t_first, t_last : datetime
        First and last time evidence touched this node; confidence decays from ``t_last``.
    logit : float
        Confidence in log-odds at ``t_last`` (decay is applied lazily on read).
    n_support, n_conflict : int
        Counts of supporting and conflicting evidence ever seen (they survive pruning
        of the supporting leaves).
    embedding : ndarray or None
        L2-normalised float32 vector.
    provenance : tuple of Provenance
        Where the statement came from (leaves) or empty (derived nodes).
    recall_count : int
        How many recalls used this node.
    t_access : datetime or None
        Last time a recall used this node.
    """

    id: str
    user_id: str
    level: Level
    schema_type: str
    content: str
    attributes: dict[str, Any]
    t_first: datetime
    t_last: datetime
    logit: float
    n_support: int = 0
    n_conflict: int = 0
    embedding: np.ndarray | None = None
    provenance: tuple[Provenance, ...] = ()
    recall_count: int = 0
    t_access: datetime | None = None

    def copy(self) -> "Node":
        """A shallow copy with its own attribute dict (the embedding is shared, read-only)."""
        return replace(self, attributes=dict(self.attributes))

    def same_state(self, other: "Node", *, atol: float = 1e-9) -> bool:
        """Whether two nodes hold the same stored state (embeddings compared numerically)."""
        if (
            self.id != other.id
            or self.user_id != other.user_id
            or self.level != other.level
            or self.schema_type != other.schema_type
            or self.content != other.content
            or self.attributes != other.attributes
            or self.t_first != other.t_first
            or self.t_last != other.t_last
            or abs(self.logit - other.logit) > atol
            or self.n_support != other.n_support
            or self.n_conflict != other.n_conflict
            or self.provenance != other.provenance
        ):
            return False
        if (self.embedding is None) != (other.embedding is None):
            return False
        if self.embedding is not None and other.embedding is not None:
            return bool(np.allclose(self.embedding, other.embedding, atol=1e-5))
        return True


@dataclass(frozen=True, slots=True)
class Edge:
    """A typed edge: ``src`` supports or conflicts with ``dst``.

    Attributes
    ----------
    src, dst : str
        Child and parent node ids.
    kind : EdgeKind
        support or conflict.
    psi : float
        The validator's score in [-1, 1].
    weight : float
        Evidence weight applied to the parent's logit (psi * gamma).
    reason : str
        One-line reason from the validator, shown by ``explain``.
    at : datetime
        When the edge was created.
    """

    src: str
    dst: str
    kind: EdgeKind
    psi: float
    weight: float
    reason: str
    at: datetime


@dataclass(frozen=True, slots=True)
class Verdict:
    """The validator's label for a (leaf, candidate) pair.

    ``psi`` is in [-1, 1]: positive for support, negative for conflict, near 0 for
    unrelated. ``label`` is the discrete reading of the same judgement.
    """

    label: Literal["support", "conflict", "unrelated"]
    psi: float
    reason: str


@dataclass(frozen=True, slots=True)
class Route:
    """The router's prediction for a query: the abstraction level and schema constraints.

    Attributes
    ----------
    level : Level
        The level the query needs (L, M or R in ARCHITECTURE.md).
    probabilities : Mapping[Level, float]
        Class probabilities, summing to 1.
    schema_types : tuple of str
        Schema types the query is about (empty means no constraint).
    """

    level: Level
    probabilities: Mapping[Level, float]
    schema_types: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Summary:
    """A summary claim for a new mid or root."""

    content: str
    schema_type: str
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CandidateScore:
    """How one candidate parent scored for a new leaf."""

    node_id: str
    similarity: float
    psi: float
    match: float
    label: str
    reason: str


@dataclass(frozen=True, slots=True)
class LeafDecision:
    """What the inserter did with one new leaf.

    ``action`` is ``"attach"`` (support edge to ``target``), ``"conflict"`` (conflict
    edge to ``target``, negative evidence, not attached) or ``"orphan"``.
    """

    leaf_id: str
    content: str
    schema_type: str
    action: Literal["attach", "conflict", "orphan"]
    target: str | None
    candidates: tuple[CandidateScore, ...] = ()


@dataclass(frozen=True, slots=True)
class InsertReport:
    """The result of one ``observe`` call."""

    user_id: str
    observation_id: str
    duplicate: bool
    decisions: tuple[LeafDecision, ...]

    @property
    def leaf_ids(self) -> tuple[str, ...]:
        """Ids of the leaves created."""
        return tuple(d.leaf_id for d in self.decisions)

    @property
    def attached(self) -> int:
        """How many leaves were attached to a parent."""
        return sum(d.action == "attach" for d in self.decisions)

    @property
    def conflicts(self) -> int:
        """How many leaves recorded a conflict."""
        return sum(d.action == "conflict" for d in self.decisions)

    @property
    def orphans(self) -> int:
        """How many leaves stayed orphans."""
        return sum(d.action == "orphan" for d in self.decisions)


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One result of plain similarity search."""

    node_id: str
    level: Level
    schema_type: str
    content: str
    score: float
    confidence: float
    #: True for an archived leaf (outside the tree, still found by recall).
    archived: bool = False
