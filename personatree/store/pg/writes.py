"""Writes of the PostgreSQL store: commits (log, graph and journal rows), user deletion,
and the per-user job lock.

Write order inside one commit (as in every store): observations, delete_edges,
delete_nodes (with incident edges), upsert_nodes, upsert_edges, events.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg import sql

from ...errors import ConfigError, StoreBusyError, StoreError
from ...ports import ChangeSet
from .. import codec
from ..access_rows import bump_rows
from ..rows import EVENT_SEQ, OBS_SEQ, check_expected_version, delete_user_sql, numbered
from ..turn_docs import turn_prefixes
from .connection import PgConnection, rollback_open
from .locks import LOCK_JOB, LOCK_TURN, LOCK_WRITE, USER_KEY
from .statements import INSERT_EVENT, INSERT_OBS, UPSERT_ARCHIVE, UPSERT_EDGE, UPSERT_NODE
from .text import edge_in, esc, event_in, node_in, observation_in

__all__ = ["PgWrites"]

_DELETE_USER = delete_user_sql("%s", "GREATEST")


@contextmanager
def _unlocked_after(conn: psycopg.Connection[Any], space: int, uid: str) -> Iterator[None]:
    """Release the session-level advisory lock ``(space, uid)`` when the block ends."""
    try:
        yield
    finally:
        if not conn.closed:
            conn.execute(f"SELECT pg_advisory_unlock({space}, {USER_KEY})", (uid,))


class PgWrites(PgConnection):
    """The write methods of :class:`~personatree.store.postgres.PostgresStore`."""

    def commit(self, change: ChangeSet) -> int:
        """Apply a change set in one transaction and return the user's new version.

        Same semantics as :meth:`personatree.store.SQLiteStore.commit`: already-logged
        observation ids are skipped, an empty change writes nothing and returns the
        current version (after the ``expected_version`` check).

        Raises
        ------
        InputError
            If the change set is malformed (checked before the database is touched).
        StaleStateError
            If ``change.expected_version`` is set and differs from the stored version.
        StoreBusyError
            If another writer of this user held the lock past ``busy_timeout_s``.
        StoreError
            If PostgreSQL refused the change (e.g. an edge to a missing node); nothing
            is written.
        """
        prep = codec.prepare_change(change)
        uid = esc(prep.user_id)
        obs_rows = [observation_in(r) for r in prep.observations]
        with self._conn() as conn:
            # Three round trips whatever the change's size: (1) begin + the user's lock,
            # (2) the user's counters and which observations are logged already, (3) all
            # writes and COMMIT in one pipeline. The lock is taken in a statement of its
            # own: a statement's snapshot predates the wait, so reading the counters in
            # the same statement could miss a commit that happened while waiting.
            conn.execute(
                sql.SQL("BEGIN; SELECT pg_advisory_xact_lock({}, hashtext({}))").format(
                    sql.Literal(LOCK_WRITE), sql.Literal(uid))
            )
            try:
                new_version = self._apply(conn, prep, uid, obs_rows)
            except BaseException:
                rollback_open(conn)
                raise
        return new_version

    @staticmethod
    def _apply(
        conn: psycopg.Connection[Any], prep: codec.PreparedChange, uid: str, obs_rows: list[tuple[Any, ...]]
    ) -> int:
        """The body of :meth:`commit`, inside the transaction that holds the user's lock."""
        row = conn.execute(
            "SELECT u.version, u.obs_seq, u.event_seq, s.version_floor, u.content_version, "
            "ARRAY(SELECT o.id FROM observations o WHERE o.user_id = %s AND o.id = ANY(%s::text[])) "
            "FROM store_state s LEFT JOIN users u ON u.user_id = %s WHERE s.id = 1",
            (uid, [r[1] for r in obs_rows], uid),
        ).fetchone()
        if row is None:
            raise StoreError("the store_state row is missing (run integrity_check)")
        exists = row[0] is not None
        current = int(row[0]) if exists else 0
        obs_seq, event_seq = (int(row[1]), int(row[2])) if exists else (0, 0)
        check_expected_version(prep, current)
        if prep.empty:
            conn.execute("COMMIT")
            return current
        if not exists:
            # Start above every version a deleted user had: versions never repeat.
            current = int(row[3])
        known = set(row[5])
        # A commit of recall statistics only (ChangeSet.stats_only) leaves the content version.
        content = int(row[4]) if prep.keeps_snapshot and exists else current + 1
        fresh = [r for r in obs_rows if r[1] not in known]
        new_version = current + 1
        with conn.pipeline(), conn.cursor() as cur:
            if not exists:
                cur.execute("INSERT INTO users (user_id, version) VALUES (%s, %s)", (uid, current))
            if fresh:
                cur.executemany(INSERT_OBS, numbered(fresh, OBS_SEQ, obs_seq))
            if prep.delete_observations:
                cur.execute(
                    "DELETE FROM observations WHERE user_id = %s AND id = ANY(%s::text[])",
                    (uid, [esc(o) for o in prep.delete_observations]),
                )
                # Recall's derived documents of those turns hold their words: they go too.
                cur.execute(
                    "DELETE FROM turn_docs t USING unnest(%s::text[]) AS p(prefix) "
                    "WHERE t.user_id = %s AND starts_with(t.turn, p.prefix)",
                    ([esc(p) for p in turn_prefixes(prep.delete_observations)], uid),
                )
            if prep.delete_edges:
                cur.execute(
                    "DELETE FROM edges e USING unnest(%s::text[], %s::text[]) AS d(src, dst) "
                    "WHERE e.user_id = %s AND e.src = d.src AND e.dst = d.dst",
                    ([esc(s) for s, _ in prep.delete_edges], [esc(d) for _, d in prep.delete_edges], uid),
                )
            if prep.delete_nodes:
                gone = [esc(n) for n in prep.delete_nodes]
                # Explicit rather than relying on ON DELETE CASCADE alone (as in SQLite).
                cur.execute(
                    "DELETE FROM edges WHERE user_id = %s AND (src = ANY(%s::text[]) OR dst = ANY(%s::text[]))",
                    (uid, gone, gone),
                )
                cur.execute("DELETE FROM nodes WHERE user_id = %s AND id = ANY(%s::text[])", (uid, gone))
            if prep.upsert_nodes:
                # Row by row (pipelined): a repeated id updates the row it just
                # inserted, as in SQLite, where one multi-row upsert would fail.
                cur.executemany(UPSERT_NODE, [node_in(r) for r in prep.upsert_nodes])
            if prep.upsert_edges:
                cur.executemany(UPSERT_EDGE, [edge_in(r) for r in prep.upsert_edges])
            if prep.archive_nodes:
                cur.executemany(UPSERT_ARCHIVE, [node_in(r) for r in prep.archive_nodes])
            if prep.unarchive:
                cur.execute("DELETE FROM archive WHERE user_id = %s AND id = ANY(%s::text[])",
                            (uid, [esc(n) for n in prep.unarchive]))
            if prep.events:
                cur.executemany(INSERT_EVENT, numbered([event_in(r) for r in prep.events], EVENT_SEQ, event_seq))
            # The user's retrieval snapshot was built from the data this commit changes,
            # unless the commit only updates recall statistics.
            if prep.keeps_snapshot:
                cur.execute("UPDATE retrieval_snapshots SET version = %s WHERE user_id = %s AND version = %s",
                            (new_version, uid, current))
            else:
                cur.execute("DELETE FROM retrieval_snapshots WHERE user_id = %s", (uid,))
            cur.execute(
                "UPDATE users SET version = %s, obs_seq = %s, event_seq = %s, content_version = %s, "
                "updated_at = now() WHERE user_id = %s",
                (new_version, obs_seq + len(fresh), event_seq + len(prep.events), content, uid),
            )
            cur.execute("COMMIT")
        return new_version

    def add_access(self, user_id: str, bumps: Mapping[str, tuple[int, datetime]]) -> int | None:
        """Add recall counts without the tree (:meth:`personatree.ports.AccessCounts.add_access`)."""
        rows = bump_rows(user_id, bumps)
        uid = esc(user_id)
        if not rows:
            return None
        with self._tx(user=uid) as conn:
            row = conn.execute("SELECT version FROM users WHERE user_id = %s", (uid,)).fetchone()
            if row is None:
                return None
            # t_access is fixed-width ISO text: text order is time order (GREATEST
            # skips a NULL).
            cur = conn.execute(
                "UPDATE nodes n SET recall_count = n.recall_count + b.n, t_access = GREATEST(n.t_access, b.t) "
                "FROM unnest(%s::text[], %s::bigint[], %s::text[]) AS b(id, n, t) "
                "WHERE n.user_id = %s AND n.id = b.id",
                ([esc(r[0]) for r in rows], [r[1] for r in rows], [r[2] for r in rows], uid),
            )
            if not cur.rowcount:
                return None
            current = int(row[0])
            conn.execute("UPDATE retrieval_snapshots SET version = %s WHERE user_id = %s AND version = %s",
                         (current + 1, uid, current))
            conn.execute("UPDATE users SET version = %s, updated_at = now() WHERE user_id = %s", (current + 1, uid))
        return current + 1

    def delete_user(self, user_id: str) -> None:
        """Remove every row of a user: log, nodes, edges, journal, version and the
        user's cache rows. Unknown users are a no-op.

        The store-wide version floor is raised to the deleted version, so a user
        re-created later gets versions never seen before. PostgreSQL keeps dead row
        versions until ``VACUUM`` reclaims them (see :meth:`vacuum`).
        """
        codec.check_text(user_id, "user_id")
        uid = esc(user_id)
        with self._tx(user=uid) as conn:
            for statement in _DELETE_USER:
                conn.execute(statement, (uid,))

    def _session_lock(self, conn: psycopg.Connection[Any], space: int, uid: str, wait: float, busy: str) -> None:
        """Take the session-level advisory lock ``(space, uid)``, waiting at most ``wait`` seconds.

        Raises
        ------
        StoreBusyError
            With the message ``busy``, if the wait ran out.
        """
        conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{max(1, int(wait * 1000))}ms",))
        try:
            conn.execute(f"SELECT pg_advisory_lock({space}, {USER_KEY})", (uid,))
        except pg_errors.LockNotAvailable:
            raise StoreBusyError(busy) from None
        finally:
            # Back to the store's own bound for every other statement of the session.
            conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{int(self._busy * 1000)}ms",))

    @contextmanager
    def lock_user(self, user_id: str, *, timeout_s: float | None = None) -> Iterator[None]:
        """Hold the user's job lock (across processes and machines) for the ``with`` block.

        For long per-user jobs such as consolidation: two jobs for one user never
        overlap. Commits are not blocked (they stay guarded by ``expected_version``).
        Not re-entrant. The lock dies with the session, so a crashed holder frees it.

        Parameters
        ----------
        user_id : str
        timeout_s : float, optional
            How long to wait (default ``busy_timeout_s``; 0 = do not wait).

        Raises
        ------
        StoreBusyError
            If another holder kept the lock past the wait.
        """
        codec.check_text(user_id, "user_id")
        wait = self._busy if timeout_s is None else float(timeout_s)
        if not math.isfinite(wait) or wait < 0:
            raise ConfigError(f"timeout_s must be >= 0, got {timeout_s!r}")
        uid = esc(user_id)
        with self._conn() as conn:
            if wait == 0:
                got = conn.execute(f"SELECT pg_try_advisory_lock({LOCK_JOB}, {USER_KEY})", (uid,)).fetchone()
                if not got or not got[0]:
                    raise StoreBusyError(f"user {user_id!r} is locked by another job")
            else:
                self._session_lock(conn, LOCK_JOB, uid, wait,
                                   f"user {user_id!r} stayed locked by another job for more than {wait:g} s")
            with _unlocked_after(conn, LOCK_JOB, uid):
                yield

    @contextmanager
    def hold_user(self, user_id: str, *, timeout_s: float | None = None) -> Iterator[None]:
        """Hold the user's write turn (across processes and machines) for the ``with`` block.

        Writers of one user that take turns never build a change on a tree that another
        commits under them; PostgreSQL queues the waiters. The lock is session-level on
        a pooled connection of its own and dies with the session, so a crashed holder
        frees it. With ``pool_size`` 1 there is no connection to spare: no turn is taken
        (the version check alone guards commits). Not re-entrant.

        Raises
        ------
        StoreBusyError
            If another holder kept the turn for longer than ``timeout_s`` (default
            ``busy_timeout_s``).
        """
        codec.check_text(user_id, "user_id")
        if self._pool_size < 2:
            yield
            return
        wait = self._busy if timeout_s is None else float(timeout_s)
        uid = esc(user_id)
        with self._conn() as conn:
            self._session_lock(conn, LOCK_TURN, uid, wait,
                               f"another writer held user {user_id!r} for more than {wait:g} s (busy_timeout_s)")
            with _unlocked_after(conn, LOCK_TURN, uid):
                yield
