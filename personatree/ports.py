"""The ports: one ``Protocol`` per dependency the engine talks to.

Real implementations and test fakes both implement these protocols; nothing is
monkeypatched. ``Embedder``, ``Judge``, ``Store``, ``TokenCounter`` and ``Clock``
are injected into :class:`~personatree.api.PersonaTree`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

from .types import Edge, LeafDraft, Level, Node, Observation, Route, Summary, Verdict

__all__ = [
    "Embedder",
    "Judge",
    "UpdateJudge",
    "judges_updates",
    "Store",
    "AccessCounts",
    "TokenCounter",
    "Clock",
    "ChangeSet",
    "JournalEvent",
]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors."""

    @property
    def name(self) -> str:
        """A stable identifier of the model (stored with the embeddings)."""
        ...

    @property
    def dim(self) -> int:
        """The embedding dimension."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts in batches.

        Parameters
        ----------
        texts : sequence of str

        Returns
        -------
        ndarray of shape (len(texts), dim), float32, rows of unit norm
        """
        ...


@runtime_checkable
class Judge(Protocol):
    """Extraction, validation (ψ), routing and summarization."""

    @property
    def name(self) -> str:
        """Identifier of the judge (recorded with its decisions)."""
        ...

    def extract(self, observations: Sequence[Observation]) -> list[list[LeafDraft]]:
        """Typed leaf drafts for each observation (one list per observation, same order)."""
        ...

    def validate(self, pairs: Sequence[tuple[Node, Node, float]]) -> list[Verdict]:
        """Label each (leaf, candidate parent, cosine similarity) as support / conflict / unrelated."""
        ...

    def route(self, query: str) -> Route:
        """Predict the abstraction level and schema constraints a query needs."""
        ...

    def summarize(self, members: Sequence[Node], level: Level, schema_type: str) -> Summary:
        """Summarize supporting nodes into a claim of ``schema_type`` at ``level``.

        A summary whose ``attributes["named"]`` is False says the members share
        nothing the judge can state as a claim: consolidation then forms no pattern
        (or root) from them. Without the attribute the claim stands.
        """
        ...


@runtime_checkable
class UpdateJudge(Protocol):
    """A judge that also reads which earlier statements a later one changes (optional).

    Insertion asks it for every new statement, with the person's earlier statements
    closest to it, and keeps its answer on the new leaf (``attributes["updates"]``);
    recall then shows the change with what it changes, however few words they share.
    """

    @property
    def judges_updates(self) -> bool:
        """Whether :meth:`updates` reads anything (a judge may answer it offline with no links)."""
        ...

    def updates(self, groups: Sequence[tuple[Node, Sequence[Node]]]) -> list[list[int]]:
        """Per (later statement, earlier statements) group, the indices of the earlier
        statements the later one changes (ends, reverses, replaces)."""
        ...


def judges_updates(judge: object) -> bool:
    """Whether ``judge`` is an :class:`UpdateJudge` that reads updates."""
    return isinstance(judge, UpdateJudge) and bool(judge.judges_updates)


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens the way the target model's tokenizer does."""

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        ...


@runtime_checkable
class Clock(Protocol):
    """The source of "now" (injected so tests are deterministic)."""

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


@dataclass(frozen=True, slots=True)
class JournalEvent:
    """One entry of a user's operation journal, replayed in order by ``rebuild``.

    Attributes
    ----------
    kind : str
        ``"observe"`` (payload ``observation_id``), ``"forget"`` (payload ``node_id``),
        ``"consolidate"`` (payload: the applied plan's summary) and others added by
        later components.
    payload : Mapping
        JSON-serializable data.
    at : datetime
        The logical time of the operation.
    seq : int
        Position in the journal, assigned by the store (0 before storing).
    """

    kind: str
    payload: Mapping[str, Any]
    at: datetime
    seq: int = 0


@dataclass(slots=True)
class ChangeSet:
    """Everything one public call writes for one user, committed in one transaction.

    Attributes
    ----------
    user_id : str
    observations : list of Observation
        New observations to append to the verbatim log.
    upsert_nodes : list of Node
        Nodes created or changed.
    delete_nodes : list of str
        Node ids to delete (with their embeddings and incident edges).
    upsert_edges : list of Edge
        Edges created (or replaced: same src, dst).
    delete_edges : list of tuple of str
        (src, dst) pairs to delete.
    events : list of JournalEvent
        Journal entries to append.
    delete_observations : list of str
        Observation ids to remove from the log (the one exception to append-only: a
        user's right to have an interaction forgotten).
    archive_nodes : list of Node
        Leaves that leave the tree but not the memory (a consolidation's trim or stale
        orphan): written to the user's archive, where recall still finds them. They
        leave the tree through ``delete_nodes`` as usual.
    unarchive : list of str
        Node ids to remove from the archive (forget, delete_observation). A node
        upserted into the tree also leaves the archive: a node is in one or the other.
    expected_version : int or None
        When set, the commit is refused with ``StaleStateError`` unless the user's
        stored version equals it.
    stats_only : bool
        The upserted nodes differ from the stored ones only in their recall statistics
        (``recall_count``, ``t_access``), so what was derived from the user's content
        stays valid: the store keeps the user's retrieval snapshot (re-tagged to the
        new version) instead of deleting it, and the user's *content version* (the
        shipped stores' ``versions``) does not move, so copies of the content kept
        elsewhere (a shared hot tier) stay current. Honoured only for a change that
        upserts nodes and does nothing else.
    """

    user_id: str
    observations: list[Observation] = field(default_factory=list)
    upsert_nodes: list[Node] = field(default_factory=list)
    delete_nodes: list[str] = field(default_factory=list)
    upsert_edges: list[Edge] = field(default_factory=list)
    delete_edges: list[tuple[str, str]] = field(default_factory=list)
    events: list[JournalEvent] = field(default_factory=list)
    delete_observations: list[str] = field(default_factory=list)
    archive_nodes: list[Node] = field(default_factory=list)
    unarchive: list[str] = field(default_factory=list)
    expected_version: int | None = None
    stats_only: bool = False

    def is_empty(self) -> bool:
        """True when the change writes nothing."""
        return not (
            self.observations or self.upsert_nodes or self.delete_nodes
            or self.upsert_edges or self.delete_edges or self.events or self.delete_observations
            or self.archive_nodes or self.unarchive
        )


@runtime_checkable
class AccessCounts(Protocol):
    """A store that adds recall counts without the tree (an optional capability).

    A process serving a user's recalls without holding the user's tree (a stateless
    worker answering from a shared hot tier) still owes the store its access
    statistics; loading the whole tree to add a few counts would cost what the hot
    tier saved. A store without it is flushed through the tree.
    """

    def add_access(self, user_id: str, bumps: Mapping[str, tuple[int, datetime]]) -> int | None:
        """Add recall counts: one commit of recall statistics only.

        ``recall_count`` grows by the count and ``t_access`` becomes the later of the
        stored and the bumped time, for the nodes still in the tree; nodes no longer
        in it are skipped. The version moves; the content version and the retrieval
        snapshot stay (as with a ``stats_only`` :class:`ChangeSet`).

        Parameters
        ----------
        user_id : str
        bumps : mapping
            Node id → (recalls to add, when the last of them happened).

        Returns
        -------
        int or None
            The user's new version; ``None`` when nothing was written (unknown user,
            or none of the nodes left).

        Raises
        ------
        InputError
            If a bump is malformed.
        """
        ...


@runtime_checkable
class Store(Protocol):
    """Durable storage of observations, nodes, edges and the journal, for many users.

    Every ``commit`` is atomic: after a crash either all of a change set is stored
    or none of it is. Each user has a version counter that every commit increments,
    so caches and plans can tell when they are stale.

    The shipped stores also have ``versions(user_id) -> (version, content_version)``:
    the content version is the version of the last commit that was not
    ``stats_only`` (recall statistics), read with the version in one lookup. It is
    optional: where a store lacks it, the version stands for both.
    """

    def users(self) -> list[str]:
        """Ids of all users with stored data, sorted."""
        ...

    def version(self, user_id: str) -> int:
        """The user's version counter (0 when nothing is stored)."""
        ...

    def existing_observations(self, user_id: str, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are already in the user's log."""
        ...

    def observations(self, user_id: str, ids: Sequence[str] | None = None) -> list[Observation]:
        """Observations of a user in log order (all, or those with the given ids)."""
        ...

    def load_graph(self, user_id: str) -> tuple[list[Node], list[Edge]]:
        """All nodes (with embeddings) and edges of a user."""
        ...

    def load_graph_with_version(self, user_id: str) -> tuple[list[Node], list[Edge], int]:
        """Nodes, edges and the version they were read at, from one consistent snapshot."""
        ...

    def events(self, user_id: str) -> list[JournalEvent]:
        """The user's journal in order."""
        ...

    def archive_ids(self, user_id: str) -> list[str]:
        """Ids of the user's archived leaves (evidence that left the tree, not the memory)."""
        ...

    def archive(self, user_id: str, ids: Sequence[str] | None = None) -> list[Node]:
        """The user's archived leaves (all, or those with the given ids), with embeddings."""
        ...

    def counts(self, user_id: str | None = None) -> dict[str, int]:
        """Row counts per table (for one user, or the whole store)."""
        ...

    def checksum(self, user_id: str) -> str:
        """A digest of everything stored for a user, equal across store kinds for equal data."""
        ...

    def cache_get(self, namespace: str, key: str, *, user_id: str | None = None) -> str | None:
        """Read a cached value (LLM responses, watermarks); ``user_id`` scopes it for deletion."""
        ...

    def cache_put(self, namespace: str, key: str, value: str, *, user_id: str | None = None) -> None:
        """Write a cached value."""
        ...

    def integrity_check(self) -> list[str]:
        """Problems found in the stored data (empty when healthy)."""
        ...

    def commit(self, change: ChangeSet) -> int:
        """Apply a change set atomically and return the user's new version.

        Raises
        ------
        StaleStateError
            If ``change.expected_version`` is set and differs from the stored version.
        StoreBusyError
            If the store stayed locked past the configured wait.
        """
        ...

    def delete_user(self, user_id: str) -> None:
        """Remove every row of a user (observations, nodes, edges, journal, caches)."""
        ...

    def get_meta(self, key: str) -> str | None:
        """Read a store-wide metadata value (watermarks, settings)."""
        ...

    def set_meta(self, key: str, value: str) -> None:
        """Write a store-wide metadata value."""
        ...

    def close(self) -> None:
        """Release connections and files."""
        ...
