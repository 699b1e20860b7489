"""Writes of the SQLite store: commits (log, graph, archive and journal rows), user
deletion, and the per-user write turn.

Write order inside one commit (the same in every store): observations, delete_edges,
delete_nodes (with incident edges), upsert_nodes, upsert_edges, events. Deletes come
before upserts, so everything named in an upsert list exists after the commit.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime

from ...errors import StoreError
from ...ports import ChangeSet
from .. import codec, rows
from ..access_rows import bump_rows
from ..rows import EVENT_SEQ, OBS_SEQ
from ..turn_docs import turn_prefixes
from .connection import now_text
from .reads import logged_ids
from .statements import (
    DELETE_USER,
    INSERT_EVENT,
    INSERT_OBS,
    UPSERT_ARCHIVE,
    UPSERT_EDGE,
    UPSERT_NODE,
)
from .vacuum import SQLiteVacuum, user_mark

__all__ = ["SQLiteWrites"]


def _create_user(conn: sqlite3.Connection, uid: str, now: str) -> int:
    """Insert the user's row and return the version it starts from.

    A (re-)created user starts above every version a deleted user ever had, so a
    cached (user, version) pair can never refer to other data.
    """
    row = conn.execute("SELECT version_floor FROM store_state WHERE id = 1").fetchone()
    conn.execute(
        "INSERT INTO users (user_id, version, obs_seq, event_seq, created_at, updated_at) "
        "VALUES (?, 0, 0, 0, ?, ?)",
        (uid, now, now),
    )
    return 0 if row is None else int(row[0])


def _log_observations(conn: sqlite3.Connection, prep: codec.PreparedChange, obs_seq: int) -> int:
    """Append the observations not logged yet; returns the log's new last position."""
    if not prep.observations:
        return obs_seq
    known = logged_ids(conn, prep.user_id, [r[1] for r in prep.observations])
    fresh = [r for r in prep.observations if r[1] not in known]
    conn.executemany(INSERT_OBS, rows.numbered(fresh, OBS_SEQ, obs_seq))
    return obs_seq + len(fresh)


def _delete_rows(conn: sqlite3.Connection, prep: codec.PreparedChange) -> None:
    """The change's deletions: observations, edges, then nodes with their incident edges."""
    uid = prep.user_id
    if prep.delete_observations:
        conn.executemany(
            "DELETE FROM observations WHERE user_id = ? AND id = ?",
            [(uid, o) for o in prep.delete_observations],
        )
        # Recall's derived documents of those turns hold their words: they go too.
        conn.executemany(
            "DELETE FROM turn_docs WHERE user_id = ? AND substr(turn, 1, length(?)) = ?",
            [(uid, p, p) for p in turn_prefixes(prep.delete_observations)],
        )
    if prep.delete_edges:
        conn.executemany(
            "DELETE FROM edges WHERE user_id = ? AND src = ? AND dst = ?",
            [(uid, s, d) for s, d in prep.delete_edges],
        )
    if prep.delete_nodes:
        params = [(uid, n) for n in prep.delete_nodes]
        # Explicit rather than relying on ON DELETE CASCADE alone: the same
        # statements work on stores without foreign keys.
        conn.executemany("DELETE FROM edges WHERE user_id = ? AND src = ?", params)
        conn.executemany("DELETE FROM edges WHERE user_id = ? AND dst = ?", params)
        conn.executemany("DELETE FROM nodes WHERE user_id = ? AND id = ?", params)


def _upsert_rows(conn: sqlite3.Connection, prep: codec.PreparedChange) -> None:
    """The change's upserts: nodes, edges, archived leaves, and the archive ids to drop."""
    if prep.upsert_nodes:
        conn.executemany(UPSERT_NODE, prep.upsert_nodes)
    if prep.upsert_edges:
        conn.executemany(UPSERT_EDGE, prep.upsert_edges)
    if prep.archive_nodes:
        conn.executemany(UPSERT_ARCHIVE, prep.archive_nodes)
    if prep.unarchive:
        conn.executemany("DELETE FROM archive WHERE user_id = ? AND id = ?",
                         [(prep.user_id, n) for n in prep.unarchive])


def _append_events(conn: sqlite3.Connection, prep: codec.PreparedChange, event_seq: int) -> int:
    """Append the change's journal events; returns the journal's new last position."""
    if not prep.events:
        return event_seq
    conn.executemany(INSERT_EVENT, rows.numbered(prep.events, EVENT_SEQ, event_seq))
    return event_seq + len(prep.events)


class SQLiteWrites(SQLiteVacuum):
    """The write methods of :class:`~personatree.store.sqlite.SQLiteStore`."""

    def commit(self, change: ChangeSet) -> int:
        """Apply a change set in one transaction and return the user's new version.

        Observations whose id is already logged are skipped (idempotent ingestion); the
        others get the next log positions. An empty change set writes nothing and
        returns the current version (after the ``expected_version`` check).

        Raises
        ------
        InputError
            If the change set is malformed (checked before the store is touched).
        StaleStateError
            If ``change.expected_version`` is set and differs from the stored version.
        StoreBusyError
            If another writer held the lock past ``busy_timeout_s``.
        StoreError
            If SQLite refused the change (e.g. an edge to a missing node); nothing is
            written.
        """
        prep = codec.prepare_change(change)
        now = now_text()
        uid = prep.user_id
        with self._tx(write=True) as conn:
            row = conn.execute(
                "SELECT version, obs_seq, event_seq, content_version FROM users WHERE user_id = ?", (uid,)
            ).fetchone()
            current, obs_seq, event_seq, content = (0, 0, 0, 0) if row is None else row
            rows.check_expected_version(prep, current)
            if prep.empty:
                return int(current)
            if row is None:
                current = _create_user(conn, uid, now)
            obs_seq = _log_observations(conn, prep, obs_seq)
            _delete_rows(conn, prep)
            _upsert_rows(conn, prep)
            event_seq = _append_events(conn, prep, event_seq)
            new_version = int(current) + 1
            # The user's retrieval snapshot was built from the data this commit changes,
            # unless the commit only updates recall statistics.
            if prep.keeps_snapshot:
                conn.execute("UPDATE retrieval_snapshots SET version = ? WHERE user_id = ? AND version = ?",
                             (new_version, uid, int(current)))
            else:
                conn.execute("DELETE FROM retrieval_snapshots WHERE user_id = ?", (uid,))
            # A commit of recall statistics only (ChangeSet.stats_only) leaves the content version.
            content = content if prep.keeps_snapshot and row is not None else new_version
            conn.execute(
                "UPDATE users SET version = ?, obs_seq = ?, event_seq = ?, content_version = ?, updated_at = ? "
                "WHERE user_id = ?",
                (new_version, obs_seq, event_seq, content, now, uid),
            )
            pending = self._vacuum_marked(conn)
        if pending:
            self._finish_pending_vacuum()
        return new_version

    def add_access(self, user_id: str, bumps: Mapping[str, tuple[int, datetime]]) -> int | None:
        """Add recall counts without the tree (:meth:`personatree.ports.AccessCounts.add_access`)."""
        rows = bump_rows(user_id, bumps)
        if not rows:
            return None
        with self._tx(write=True) as conn:
            row = conn.execute("SELECT version FROM users WHERE user_id = ?", (user_id,)).fetchone()
            if row is None:
                return None
            # t_access is fixed-width ISO text: text order is time order.
            changed = 0
            for nid, n, at in rows:
                changed += conn.execute(
                    "UPDATE nodes SET recall_count = recall_count + ?, "
                    "t_access = CASE WHEN t_access IS NULL OR t_access < ? THEN ? ELSE t_access END "
                    "WHERE user_id = ? AND id = ?", (n, at, at, user_id, nid)).rowcount
            if not changed:
                return None
            current = int(row[0])
            conn.execute("UPDATE retrieval_snapshots SET version = ? WHERE user_id = ? AND version = ?",
                         (current + 1, user_id, current))
            conn.execute("UPDATE users SET version = ?, updated_at = ? WHERE user_id = ?",
                         (current + 1, now_text(), user_id))
        return current + 1

    def delete_user(self, user_id: str, *, vacuum: bool = False) -> None:
        """Remove every row of a user: log, nodes, edges, journal, version and the
        user's cache rows. Unknown users are a no-op.

        The store-wide version floor is raised to the deleted version, so a user
        re-created later gets versions never seen before (caches elsewhere notice).

        Deleted content is zeroed in place (``secure_delete``); with ``vacuum`` the
        file is then rebuilt and the WAL truncated (see :meth:`vacuum`), so that no
        copy of the deleted text is left in either.

        Parameters
        ----------
        user_id : str
        vacuum : bool
            Also vacuum. The vacuum is recorded as pending in the same transaction as
            the delete, so that if it cannot finish now it finishes later.

        Raises
        ------
        VacuumPendingError
            With ``vacuum``, when other connections kept the WAL from being truncated:
            the delete is committed and the vacuum is pending (it completes on the next
            open, write or :meth:`vacuum` once the store is free).
        """
        codec.check_text(user_id, "user_id")
        with self._tx(write=True) as conn:
            for statement in DELETE_USER:
                conn.execute(statement, (user_id,))
            if vacuum:
                self._mark_pending(conn, "vacuum", {user_mark(user_id)})
        if vacuum:
            self.vacuum()

    @contextmanager
    def hold_user(self, user_id: str, *, timeout_s: float | None = None) -> Iterator[None]:
        """Hold the user's write turn (across processes) for the ``with`` block.

        Writers of one user that take turns never build a change on a tree that another
        commits under them (see :mod:`personatree.store.userlock`). Not re-entrant.

        Raises
        ------
        StoreBusyError
            If another process held the turn for longer than ``timeout_s`` (default
            ``busy_timeout_s``).
        """
        from ..userlock import lock_path, user_file_turn

        codec.check_text(user_id, "user_id")
        if self._closed:
            raise StoreError(f"the store {self._path} is closed")
        with user_file_turn(lock_path(self._path), user_id, self._busy if timeout_s is None else timeout_s):
            yield
