"""Reads of the SQLite store: users, versions, the log, the graph, the journal, the archive."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ...ports import JournalEvent
from ...types import Edge, Node, Observation
from .. import codec
from ..rows import OBS_SEQ
from .connection import SQLiteConnection
from .statements import (
    RECALL_STATS, SELECT_ARCHIVE, SELECT_EDGES, SELECT_EVENTS, SELECT_NODES, SELECT_OBS, in_rowid_order, select_in,
)

__all__ = ["SQLiteReads", "logged_ids", "stored_version"]


def stored_version(conn: sqlite3.Connection, user_id: str) -> int:
    """The user's version counter inside the caller's transaction (0 when absent)."""
    row = conn.execute("SELECT version FROM users WHERE user_id = ?", (user_id,)).fetchone()
    return 0 if row is None else int(row[0])


def logged_ids(conn: sqlite3.Connection, user_id: str, ids: Sequence[str]) -> set[str]:
    """Which of ``ids`` are in the user's log, inside the caller's transaction."""
    return {r[0] for r in select_in(conn, "SELECT id FROM observations WHERE user_id = ?", user_id, ids)}


class SQLiteReads(SQLiteConnection):
    """The read methods of :class:`~personatree.store.sqlite.SQLiteStore`."""

    def users(self) -> list[str]:
        """Ids of all users with stored data, sorted (by code point, as ``sorted``)."""
        with self._tx(write=False) as conn:
            return [r[0] for r in conn.execute("SELECT user_id FROM users ORDER BY user_id")]

    def versions(self, user_id: str) -> tuple[int, int]:
        """The user's version and content version (``(0, 0)`` when nothing is stored).

        The content version is the version of the last commit that was not
        ``stats_only`` (recall statistics).
        """
        codec.check_text(user_id, "user_id")
        with self._tx(write=False) as conn:
            row = conn.execute("SELECT version, content_version FROM users WHERE user_id = ?",
                               (user_id,)).fetchone()
        return (0, 0) if row is None else (int(row[0]), int(row[1]))

    def version(self, user_id: str) -> int:
        """The user's version counter (0 when nothing is stored)."""
        codec.check_text(user_id, "user_id")
        with self._tx(write=False) as conn:
            return stored_version(conn, user_id)

    def existing_observations(self, user_id: str, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are already in the user's log."""
        codec.check_text(user_id, "user_id")
        wanted = list(dict.fromkeys(codec.check_ids(ids, "ids")))
        with self._tx(write=False) as conn:
            return logged_ids(conn, user_id, wanted)

    def observations(self, user_id: str, ids: Sequence[str] | None = None) -> list[Observation]:
        """Observations of a user in log order (all, or those with the given ids; unknown ids are skipped)."""
        codec.check_text(user_id, "user_id")
        with self._tx(write=False) as conn:
            if ids is None:
                found = conn.execute(f"{SELECT_OBS} WHERE user_id = ? ORDER BY seq", (user_id,)).fetchall()
            else:
                wanted = list(dict.fromkeys(codec.check_ids(ids, "ids")))
                found = select_in(conn, f"{SELECT_OBS} WHERE user_id = ?", user_id, wanted)
                found.sort(key=lambda r: r[OBS_SEQ])
        return [codec.decode_observation(r) for r in found]

    def load_graph(self, user_id: str) -> tuple[list[Node], list[Edge]]:
        """All nodes (with embeddings, in first-insertion order) and edges of a user."""
        nodes, edges, _ = self.load_graph_with_version(user_id)
        return nodes, edges

    def load_graph_with_version(self, user_id: str) -> tuple[list[Node], list[Edge], int]:
        """Nodes, edges and the version they belong to, read from one snapshot.

        A cache keyed by the returned version is exact: a concurrent commit cannot slip
        between reading the graph and reading the version.
        """
        codec.check_text(user_id, "user_id")
        with self._tx(write=False) as conn:
            version = stored_version(conn, user_id)
            node_rows = in_rowid_order(conn.execute(SELECT_NODES, (user_id,)).fetchall())
            edge_rows = in_rowid_order(conn.execute(SELECT_EDGES, (user_id,)).fetchall())
        return codec.decode_nodes(node_rows), codec.decode_edges(edge_rows), version

    def recall_stats(self, user_id: str) -> tuple[int, dict[str, tuple[int, str | None]]]:
        """The user's version and the recall statistics of the tree's recalled nodes.

        Read in one transaction. Each node that was ever recalled maps to its recall
        count and last access (stored ISO text); the others are absent. A user's tree
        kept elsewhere (a retrieval snapshot) with older statistics is brought up to
        date from this without reading every node row.
        """
        codec.check_text(user_id, "user_id")
        with self._tx(write=False) as conn:
            version = stored_version(conn, user_id)
            found = conn.execute(RECALL_STATS, (user_id,)).fetchall()
        return version, {r[0]: (int(r[1]), r[2]) for r in found}

    def events(self, user_id: str) -> list[JournalEvent]:
        """The user's journal in order."""
        codec.check_text(user_id, "user_id")
        with self._tx(write=False) as conn:
            found = conn.execute(SELECT_EVENTS, (user_id,)).fetchall()
        return [codec.decode_event(r) for r in found]

    def archive_ids(self, user_id: str) -> list[str]:
        """Ids of the user's archived leaves, in archiving order."""
        codec.check_text(user_id, "user_id")
        with self._tx(write=False) as conn:
            return [r[0] for r in conn.execute(
                "SELECT id FROM archive WHERE user_id = ? ORDER BY rowid", (user_id,))]

    def archive(self, user_id: str, ids: Sequence[str] | None = None) -> list[Node]:
        """The user's archived leaves (all, or those with the given ids), in archiving order."""
        codec.check_text(user_id, "user_id")
        wanted = None if ids is None else codec.check_ids(ids, "ids")
        with self._tx(write=False) as conn:
            if wanted is None:
                found = conn.execute(f"{SELECT_ARCHIVE} ORDER BY rowid", (user_id,)).fetchall()
            else:
                found = select_in(conn, SELECT_ARCHIVE, user_id, wanted, " ORDER BY rowid")
        return codec.decode_nodes(found)
