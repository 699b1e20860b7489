"""``MemoryStore``: an in-process fake of :class:`~personatree.ports.Store` for fast tests.

It keeps the very row tuples the SQLite store writes (:mod:`personatree.store.codec`)
and decodes them on every read, so both stores validate, normalise and copy values the
same way: callers can never mutate stored state through a returned object, and
whatever one store refuses the other refuses too. A commit is applied to a copy of the
user's state and swapped in at the end, so a refused commit leaves nothing behind.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Mapping, Sequence

from ..errors import StoreError
from ..ports import ChangeSet, JournalEvent
from ..types import Edge, Node, Observation
from . import codec
from .access_rows import bump_rows
from .closing import Closing
from .rows import EVENT_SEQ, OBS_SEQ, cache_scope, check_expected_version, with_seq
from .snapshots import Snapshot, check_snapshot
from .turn_docs import TurnDoc, check_turn_docs, turn_prefixes

__all__ = ["MemoryStore"]

Row = tuple[Any, ...]

# Where a node row holds recall_count (t_access follows it).
_COUNT = codec.NODE_COLUMNS.index("recall_count")


@dataclass
class _UserState:
    version: int = 0
    obs_seq: int = 0
    event_seq: int = 0
    observations: dict[str, Row] = field(default_factory=dict)  # id -> row, in seq order
    nodes: dict[str, Row] = field(default_factory=dict)  # id -> row, first-insertion order
    edges: dict[tuple[str, str], Row] = field(default_factory=dict)
    events: list[Row] = field(default_factory=list)
    archive: dict[str, Row] = field(default_factory=dict)  # id -> node row, archiving order
    turn_docs: dict[str, tuple[str, str]] = field(default_factory=dict)  # derived, see turn_docs
    snapshot: Snapshot | None = None  # derived, see snapshots
    content_version: int = 0  # the last commit's version that changed more than recall statistics

    def copy(self) -> "_UserState":
        # Rows are immutable tuples of immutable values, so copying the containers suffices.
        # The copy is the next version's: the retrieval snapshot is not carried over.
        return _UserState(
            self.version, self.obs_seq, self.event_seq,
            dict(self.observations), dict(self.nodes), dict(self.edges), list(self.events),
            dict(self.archive), dict(self.turn_docs), content_version=self.content_version,
        )


class MemoryStore(Closing):
    """An in-memory :class:`~personatree.ports.Store` with the SQLite store's semantics.

    Thread-safe (one lock). Nothing survives the process.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._users: dict[str, _UserState] = {}
        self._meta: dict[str, str] = {}
        self._cache: dict[tuple[str, str, str], str] = {}
        # The highest version a deleted user had: re-created users start above it, so
        # versions never repeat for a user id (same rule as the SQLite store).
        self._version_floor = 0
        self._closed = False

    def __repr__(self) -> str:
        return f"MemoryStore(users={len(self._users)})"

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("the memory store is closed")

    def close(self) -> None:
        """Mark the store closed (its data is dropped)."""
        with self._lock:
            self._closed = True
            self._users.clear()
            self._meta.clear()
            self._cache.clear()

    # -- reads ------------------------------------------------------------------------

    def users(self) -> list[str]:
        """Ids of all users with stored data, sorted."""
        with self._lock:
            self._check_open()
            return sorted(self._users)

    def version(self, user_id: str) -> int:
        """The user's version counter (0 when nothing is stored)."""
        codec.check_text(user_id, "user_id")
        with self._lock:
            self._check_open()
            st = self._users.get(user_id)
            return 0 if st is None else st.version

    def versions(self, user_id: str) -> tuple[int, int]:
        """The user's version and content version (``(0, 0)`` when nothing is stored).

        The content version is the version of the last commit that was not
        ``stats_only`` (recall statistics).
        """
        codec.check_text(user_id, "user_id")
        with self._lock:
            self._check_open()
            st = self._users.get(user_id)
            return (0, 0) if st is None else (st.version, st.content_version)

    def existing_observations(self, user_id: str, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are already in the user's log."""
        codec.check_text(user_id, "user_id")
        wanted = codec.check_ids(ids, "ids")
        with self._lock:
            self._check_open()
            st = self._users.get(user_id)
            return set() if st is None else {i for i in wanted if i in st.observations}

    def _rows_by_id(
        self, user_id: str, ids: Sequence[str] | None, table: Callable[[_UserState], dict[str, Row]]
    ) -> list[Row]:
        """Rows of one of the user's id-keyed tables (``table`` picks it from the state):
        all, or those with the given ids, in stored order."""
        codec.check_text(user_id, "user_id")
        wanted = None if ids is None else set(codec.check_ids(ids, "ids"))
        with self._lock:
            self._check_open()
            st = self._users.get(user_id)
            if st is None:
                return []
            return [r for i, r in table(st).items() if wanted is None or i in wanted]

    def observations(self, user_id: str, ids: Sequence[str] | None = None) -> list[Observation]:
        """Observations of a user in log order (all, or those with the given ids; unknown ids are skipped)."""
        return [codec.decode_observation(r) for r in self._rows_by_id(user_id, ids, lambda st: st.observations)]

    def load_graph(self, user_id: str) -> tuple[list[Node], list[Edge]]:
        """All nodes (with embeddings, in first-insertion order) and edges of a user."""
        nodes, edges, _ = self.load_graph_with_version(user_id)
        return nodes, edges

    def load_graph_with_version(self, user_id: str) -> tuple[list[Node], list[Edge], int]:
        """Nodes, edges and the version they belong to, read atomically."""
        codec.check_text(user_id, "user_id")
        with self._lock:
            self._check_open()
            st = self._users.get(user_id) or _UserState()
            node_rows, edge_rows, version = list(st.nodes.values()), list(st.edges.values()), st.version
        return codec.decode_nodes(node_rows), codec.decode_edges(edge_rows), version

    def recall_stats(self, user_id: str) -> tuple[int, dict[str, tuple[int, str | None]]]:
        """The user's version and the recall statistics of the tree's recalled nodes
        (see :meth:`SQLiteStore.recall_stats <personatree.store.sqlite.SQLiteStore.recall_stats>`)."""
        codec.check_text(user_id, "user_id")
        with self._lock:
            self._check_open()
            st = self._users.get(user_id) or _UserState()
            return st.version, {r[1]: (int(r[12]), r[13]) for r in st.nodes.values()
                                if r[12] > 0 or r[13] is not None}

    def events(self, user_id: str) -> list[JournalEvent]:
        """The user's journal in order."""
        codec.check_text(user_id, "user_id")
        with self._lock:
            self._check_open()
            st = self._users.get(user_id)
            rows = [] if st is None else list(st.events)
        return [codec.decode_event(r) for r in rows]

    def archive_ids(self, user_id: str) -> list[str]:
        """Ids of the user's archived leaves, in archiving order."""
        codec.check_text(user_id, "user_id")
        with self._lock:
            self._check_open()
            st = self._users.get(user_id)
            return [] if st is None else list(st.archive)

    def archive(self, user_id: str, ids: Sequence[str] | None = None) -> list[Node]:
        """The user's archived leaves (all, or those with the given ids), in archiving order."""
        return codec.decode_nodes(self._rows_by_id(user_id, ids, lambda st: st.archive))

    # -- writes -----------------------------------------------------------------------

    def commit(self, change: ChangeSet) -> int:
        """Apply a change set atomically and return the user's new version.

        Same semantics as :meth:`personatree.store.SQLiteStore.commit`.

        Raises
        ------
        InputError
            If the change set is malformed.
        StaleStateError
            If ``change.expected_version`` is set and differs from the stored version.
        StoreError
            If an edge references a node that does not exist; nothing is written.
        """
        prep = codec.prepare_change(change)
        uid = prep.user_id
        with self._lock:
            self._check_open()
            old = self._users.get(uid)
            current = 0 if old is None else old.version
            check_expected_version(prep, current)
            if prep.empty:
                return current
            st = _UserState(version=self._version_floor) if old is None else old.copy()
            for row in prep.observations:
                if row[1] not in st.observations:
                    st.obs_seq += 1
                    st.observations[row[1]] = with_seq(row, OBS_SEQ, st.obs_seq)
            for oid in prep.delete_observations:
                st.observations.pop(oid, None)
            for prefix in turn_prefixes(prep.delete_observations):
                st.turn_docs = {k: v for k, v in st.turn_docs.items() if not k.startswith(prefix)}
            for pair in prep.delete_edges:
                st.edges.pop(pair, None)
            if prep.delete_nodes:
                gone = set(prep.delete_nodes)
                st.edges = {k: v for k, v in st.edges.items() if k[0] not in gone and k[1] not in gone}
                for node_id in prep.delete_nodes:
                    st.nodes.pop(node_id, None)
            for row in prep.upsert_nodes:
                st.nodes[row[1]] = row
            for row in prep.upsert_edges:
                if row[1] not in st.nodes or row[2] not in st.nodes:
                    raise StoreError(
                        "commit refused: an edge references a node that does not exist for this user "
                        "(FOREIGN KEY constraint failed); nothing was written"
                    )
                st.edges[(row[1], row[2])] = row
            for row in prep.archive_nodes:
                st.archive[row[1]] = row  # a re-archived id keeps its place, as an SQL upsert does
            for node_id in prep.unarchive:
                st.archive.pop(node_id, None)
            for row in prep.events:
                st.event_seq += 1
                st.events.append(with_seq(row, EVENT_SEQ, st.event_seq))
            st.version += 1
            if prep.keeps_snapshot and old is not None and old.snapshot is not None and old.snapshot[0] == current:
                st.snapshot = (st.version, *old.snapshot[1:])
            if not (prep.keeps_snapshot and old is not None):
                st.content_version = st.version
            self._users[uid] = st
            return st.version

    def add_access(self, user_id: str, bumps: Mapping[str, tuple[int, datetime]]) -> int | None:
        """Add recall counts without the tree (:meth:`personatree.ports.AccessCounts.add_access`).

        Returns
        -------
        int or None
            The user's new version; ``None`` when nothing was written.
        """
        rows = bump_rows(user_id, bumps)
        with self._lock:
            self._check_open()
            old = self._users.get(user_id)
            hit = [r for r in rows if old is not None and r[0] in old.nodes]
            if old is None or not hit:
                return None
            st = old.copy()
            for nid, n, at in hit:
                row = list(st.nodes[nid])
                row[_COUNT] += n
                row[_COUNT + 1] = at if row[_COUNT + 1] is None or row[_COUNT + 1] < at else row[_COUNT + 1]
                st.nodes[nid] = tuple(row)
            st.version += 1
            if old.snapshot is not None and old.snapshot[0] == old.version:
                st.snapshot = (st.version, *old.snapshot[1:])
            self._users[user_id] = st
            return st.version

    def delete_user(self, user_id: str) -> None:
        """Remove every row of a user, including the user's cache rows (unknown users: no-op)."""
        codec.check_text(user_id, "user_id")
        with self._lock:
            self._check_open()
            gone = self._users.pop(user_id, None)
            if gone is not None:
                self._version_floor = max(self._version_floor, gone.version)
            for k in [k for k in self._cache if k[0] == user_id]:
                del self._cache[k]

    def turn_docs(self, user_id: str) -> dict[str, TurnDoc]:
        """Every derived turn document of a user (see :mod:`personatree.store.turn_docs`)."""
        codec.check_text(user_id, "user_id")
        with self._lock:
            self._check_open()
            st = self._users.get(user_id)
            return {} if st is None else dict(st.turn_docs)

    def put_turn_docs(self, user_id: str, docs: Mapping[str, TurnDoc], drop: Sequence[str] = ()) -> bool:
        """Write derived turn documents and remove others; ``False`` for an unknown user."""
        codec.check_text(user_id, "user_id")
        rows = check_turn_docs(docs, drop)
        with self._lock:
            self._check_open()
            st = self._users.get(user_id)
            if st is None:
                return False
            for t in drop:
                st.turn_docs.pop(t, None)
            st.turn_docs.update((t, (d, doc)) for t, d, doc in rows)
            return True

    def retrieval_snapshot(self, user_id: str) -> Snapshot | None:
        """The user's retrieval snapshot (see :mod:`personatree.store.snapshots`), if any."""
        codec.check_text(user_id, "user_id")
        with self._lock:
            self._check_open()
            st = self._users.get(user_id)
            return None if st is None else st.snapshot

    def put_retrieval_snapshot(self, user_id: str, version: int, fingerprint: str, data: bytes) -> bool:
        """Keep the user's retrieval snapshot if the user is still at ``version``."""
        codec.check_text(user_id, "user_id")
        row = check_snapshot(version, fingerprint, data)
        with self._lock:
            self._check_open()
            st = self._users.get(user_id)
            if st is None or st.version != row[0]:
                return False
            st.snapshot = row
            return True

    def vacuum(self) -> None:
        """Nothing to reclaim in memory (kept for interface parity)."""
        self._check_open()

    # -- meta and caches ----------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        """Read a store-wide metadata value (``None`` when unset)."""
        codec.check_text(key, "key")
        with self._lock:
            self._check_open()
            return self._meta.get(key)

    def set_meta(self, key: str, value: str) -> None:
        """Write a store-wide metadata value."""
        codec.check_text(key, "key", nonempty=True)
        codec.check_text(value, "value")
        with self._lock:
            self._check_open()
            self._meta[key] = value

    def cache_get(self, namespace: str, key: str, *, user_id: str | None = None) -> str | None:
        """Read a cached value (``None`` when absent); ``user_id`` scopes it to a user."""
        scope = cache_scope(user_id)
        codec.check_text(namespace, "namespace")
        codec.check_text(key, "key")
        with self._lock:
            self._check_open()
            return self._cache.get((scope, namespace, key))

    def cache_put(self, namespace: str, key: str, value: str, *, user_id: str | None = None) -> None:
        """Write (or replace) a cached value."""
        scope = cache_scope(user_id)
        codec.check_text(namespace, "namespace", nonempty=True)
        codec.check_text(key, "key")
        codec.check_text(value, "value")
        with self._lock:
            self._check_open()
            self._cache[(scope, namespace, key)] = value

    def cache_delete(self, namespace: str, key: str | None = None, *, user_id: str | None = None) -> int:
        """Delete one cached entry, or a whole namespace when ``key`` is None; returns the count."""
        scope = cache_scope(user_id)
        codec.check_text(namespace, "namespace")
        if key is not None:
            codec.check_text(key, "key")
        with self._lock:
            self._check_open()
            doomed = [
                k for k in self._cache
                if k[0] == scope and k[1] == namespace and (key is None or k[2] == key)
            ]
            for k in doomed:
                del self._cache[k]
            return len(doomed)

    # -- inspection -------------------------------------------------------------------

    def counts(self, user_id: str | None = None) -> dict[str, int]:
        """Rows per table, for one user or for the whole store (same keys as SQLite)."""
        with self._lock:
            self._check_open()
            if user_id is None:
                states = list(self._users.values())
                out = {
                    "users": len(states),
                    "observations": sum(len(s.observations) for s in states),
                    "nodes": sum(len(s.nodes) for s in states),
                    "edges": sum(len(s.edges) for s in states),
                    "journal": sum(len(s.events) for s in states),
                    "archive": sum(len(s.archive) for s in states),
                    "cache": len(self._cache),
                    "meta": len(self._meta),
                }
                return out
            codec.check_text(user_id, "user_id")
            st = self._users.get(user_id)
            cache = sum(1 for k in self._cache if k[0] == user_id)
            if st is None:
                return {"users": 0, "observations": 0, "nodes": 0, "edges": 0, "journal": 0,
                        "archive": 0, "cache": cache}
            return {
                "users": 1,
                "observations": len(st.observations),
                "nodes": len(st.nodes),
                "edges": len(st.edges),
                "journal": len(st.events),
                "archive": len(st.archive),
                "cache": cache,
            }

    def checksum(self, user_id: str) -> str:
        """Store-independent SHA-256 of the user's data (see :func:`personatree.store.codec.digest`)."""
        with self._lock:  # re-entrant: one consistent view across the three reads
            nodes, edges, _ = self.load_graph_with_version(user_id)
            return codec.digest(self.observations(user_id), nodes, edges, self.events(user_id),
                                self.archive(user_id))

    def integrity_check(self) -> list[str]:
        """Problems found (empty when healthy): dangling edges and log counters."""
        problems: list[str] = []
        with self._lock:
            self._check_open()
            for uid, st in self._users.items():
                for src, dst in st.edges:
                    if src not in st.nodes or dst not in st.nodes:
                        problems.append(f"edge {src!r}->{dst!r} of user {uid!r} references a missing node")
                if st.observations and max(r[OBS_SEQ] for r in st.observations.values()) > st.obs_seq:
                    problems.append(f"user {uid!r}: observation counter behind the log")
        return problems
