"""Reads of the PostgreSQL store: users, versions, the log, the graph, the journal."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from ...ports import JournalEvent
from ...types import Edge, Node, Observation
from .. import codec
from .connection import PgConnection
from .statements import SELECT_ARCHIVE, SELECT_EDGES, SELECT_EVENTS, SELECT_NODES, SELECT_OBS
from .text import edge_out, esc, event_out, node_out, observation_out, unesc

__all__ = ["PgReads"]


class PgReads(PgConnection):
    """The read methods of :class:`~personatree.store.postgres.PostgresStore`."""

    def users(self) -> list[str]:
        """Ids of all users with stored data, sorted (by code point, as ``sorted``)."""
        with self._conn() as conn:
            return sorted(unesc(r[0]) for r in conn.execute("SELECT user_id FROM users"))

    def versions(self, user_id: str) -> tuple[int, int]:
        """The user's version and content version (``(0, 0)`` when nothing is stored):
        one primary-key lookup. The content version is the version of the last commit
        that was not ``stats_only`` (recall statistics)."""
        codec.check_text(user_id, "user_id")
        with self._conn() as conn:
            row = conn.execute("SELECT version, content_version FROM users WHERE user_id = %s",
                               (esc(user_id),)).fetchone()
        return (0, 0) if row is None else (int(row[0]), int(row[1]))

    def version(self, user_id: str) -> int:
        """The user's version counter (0 when nothing is stored): one primary-key lookup."""
        codec.check_text(user_id, "user_id")
        with self._conn() as conn:
            row = conn.execute("SELECT version FROM users WHERE user_id = %s", (esc(user_id),)).fetchone()
        return 0 if row is None else int(row[0])

    @staticmethod
    def _existing(conn: psycopg.Connection[Any], uid: str, ids: Sequence[str]) -> set[str]:
        if not ids:
            return set()
        rows = conn.execute(
            "SELECT id FROM observations WHERE user_id = %s AND id = ANY(%s::text[])", (uid, list(ids))
        )
        return {r[0] for r in rows}

    def existing_observations(self, user_id: str, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are already in the user's log."""
        codec.check_text(user_id, "user_id")
        wanted = [esc(i) for i in dict.fromkeys(codec.check_ids(ids, "ids"))]
        with self._conn() as conn:
            return {unesc(i) for i in self._existing(conn, esc(user_id), wanted)}

    def observations(self, user_id: str, ids: Sequence[str] | None = None) -> list[Observation]:
        """Observations of a user in log order (all, or those with the given ids; unknown ids are skipped)."""
        codec.check_text(user_id, "user_id")
        uid = esc(user_id)
        with self._conn() as conn:
            if ids is None:
                rows = conn.execute(f"{SELECT_OBS} ORDER BY seq", (uid,)).fetchall()
            else:
                wanted = [esc(i) for i in dict.fromkeys(codec.check_ids(ids, "ids"))]
                rows = conn.execute(
                    f"{SELECT_OBS} AND id = ANY(%s::text[]) ORDER BY seq", (uid, wanted)
                ).fetchall() if wanted else []
        return [codec.decode_observation(observation_out(r)) for r in rows]

    def load_graph(self, user_id: str) -> tuple[list[Node], list[Edge]]:
        """All nodes (with embeddings, in first-insertion order) and edges of a user."""
        nodes, edges, _ = self.load_graph_with_version(user_id)
        return nodes, edges

    def load_graph_with_version(self, user_id: str) -> tuple[list[Node], list[Edge], int]:
        """Nodes, edges and the version they belong to, read from one snapshot."""
        codec.check_text(user_id, "user_id")
        version, (node_rows, edge_rows) = self._at_version(
            esc(user_id), (SELECT_NODES, True), (SELECT_EDGES, False))
        nodes = codec.decode_nodes(node_out(r) for r in node_rows)
        edges = codec.decode_edges(edge_out(r) for r in edge_rows)
        return nodes, edges, version

    def recall_stats(self, user_id: str) -> tuple[int, dict[str, tuple[int, str | None]]]:
        """The user's version and the recall statistics of the tree's recalled nodes,
        read from one snapshot (see :meth:`SQLiteStore.recall_stats
        <personatree.store.sqlite.SQLiteStore.recall_stats>`)."""
        codec.check_text(user_id, "user_id")
        version, (found,) = self._at_version(esc(user_id), (
            "SELECT id, recall_count, t_access FROM nodes "
            "WHERE user_id = %s AND (recall_count > 0 OR t_access IS NOT NULL)", False))
        return version, {unesc(r[0]): (int(r[1]), r[2]) for r in found}

    def _at_version(self, uid: str, *queries: tuple[str, bool]) -> tuple[int, list[list[Any]]]:
        """The user's version and the rows of ``queries`` (SQL taking the escaped
        user id, whether to read it in binary), read from one snapshot in one round
        trip: the transaction and its queries are pipelined."""
        with self._snapshot() as conn:
            with conn.pipeline():
                conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                vcur = conn.execute("SELECT version FROM users WHERE user_id = %s", (uid,))
                curs = [conn.execute(sql, (uid,), binary=binary) for sql, binary in queries]
                conn.execute("COMMIT")
            row = vcur.fetchone()
            found = [cur.fetchall() for cur in curs]
        return (0 if row is None else int(row[0])), found

    def archive_ids(self, user_id: str) -> list[str]:
        """Ids of the user's archived leaves, in archiving order."""
        codec.check_text(user_id, "user_id")
        with self._conn() as conn:
            rows = conn.execute("SELECT id FROM archive WHERE user_id = %s ORDER BY pos", (esc(user_id),))
            return [unesc(r[0]) for r in rows]

    def archive(self, user_id: str, ids: Sequence[str] | None = None) -> list[Node]:
        """The user's archived leaves (all, or those with the given ids), in archiving order."""
        codec.check_text(user_id, "user_id")
        uid = esc(user_id)
        with self._conn() as conn:
            if ids is None:
                rows = conn.execute(f"{SELECT_ARCHIVE} ORDER BY pos", (uid,), binary=True).fetchall()
            else:
                wanted = [esc(i) for i in codec.check_ids(ids, "ids")]
                rows = conn.execute(
                    f"{SELECT_ARCHIVE} AND id = ANY(%s::text[]) ORDER BY pos", (uid, wanted), binary=True
                ).fetchall() if wanted else []
        return codec.decode_nodes(node_out(r) for r in rows)

    def events(self, user_id: str) -> list[JournalEvent]:
        """The user's journal in order."""
        codec.check_text(user_id, "user_id")
        with self._conn() as conn:
            rows = conn.execute(SELECT_EVENTS, (esc(user_id),)).fetchall()
        return [codec.decode_event(event_out(r)) for r in rows]
