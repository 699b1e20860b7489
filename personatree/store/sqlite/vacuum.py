"""Vacuum of the SQLite store, and the pending-vacuum marker that survives a busy store.

A vacuum that could not finish (other connections were reading) is recorded in
``meta`` under :data:`VACUUM_KEY`, so that the next open, write or ``vacuum()`` of the
store completes it. The value names the deleted users by a hash only: the marker
itself must not keep the identity of someone whose data is being erased.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Container
from typing import cast

from ...errors import StoreError, VacuumPendingError
from .. import codec
from .connection import SQLiteConnection
from .statements import UPSERT_META

__all__ = ["VACUUM_KEY", "SQLiteVacuum", "user_mark"]

VACUUM_KEY = "vacuum_pending"
# An opportunistic attempt (on open, after a commit) does not wait for locks or readers
# at all: finishing a vacuum must never make an ordinary call slower; it tries again later.
_QUIET_BUSY_MS = 0


def user_mark(user_id: str) -> str:
    """The hash under which the pending marker names a deleted user."""
    return hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:32]


class SQLiteVacuum(SQLiteConnection):
    """``vacuum`` and the pending-vacuum bookkeeping of :class:`~personatree.store.sqlite.SQLiteStore`."""

    def vacuum(self) -> None:
        """Rebuild the file and truncate the WAL, so deleted data leaves the disk.

        Completes a pending vacuum, if one is recorded.

        Raises
        ------
        VacuumPendingError
            (a :class:`~personatree.errors.StoreBusyError`) If other connections kept
            the WAL from being truncated. The file is rebuilt already; the truncation is
            recorded as pending and completes on the next open, write or ``vacuum()``.
        """
        conn = self._conn()
        try:
            pending = self._pending()
            if pending is None or pending.get("stage") != "checkpoint":
                conn.execute("VACUUM")
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if busy:
                with self._tx(write=True) as tx:
                    self._mark_pending(tx, "checkpoint", set())
                raise VacuumPendingError(
                    f"vacuum of {self._path} could not truncate the WAL: other connections are "
                    "reading. It is recorded as pending and finishes on the next open of or write "
                    "to this store, or on vacuum() when the readers are done"
                )
            if pending is not None:
                with self._tx(write=True) as tx:
                    tx.execute("DELETE FROM meta WHERE key = ?", (VACUUM_KEY,))
                # The marker's own deletion went to the WAL: leave it empty again.
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.Error as exc:
            raise self._error(exc) from exc

    def pending_vacuum(self) -> bool:
        """Whether a vacuum is recorded as pending (see :meth:`vacuum`)."""
        return self._pending() is not None

    def vacuum_pending_for(self, user_id: str) -> bool:
        """Whether a pending vacuum is for the deletion of ``user_id``."""
        codec.check_text(user_id, "user_id")
        pending = self._pending()
        # The marker is this module's own JSON, whose "users" is a list of hashes.
        return pending is not None and user_mark(user_id) in cast(Container[str], pending.get("users", ()))

    def _pending(self) -> dict[str, object] | None:
        with self._tx(write=False) as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (VACUUM_KEY,)).fetchone()
        if row is None:
            return None
        try:
            value = json.loads(row[0])
        except ValueError:
            value = None
        return value if isinstance(value, dict) else {"stage": "vacuum", "users": []}

    @staticmethod
    def _mark_pending(conn: sqlite3.Connection, stage: str, users: set[str]) -> None:
        """Record (inside the caller's write transaction) that a vacuum is pending.

        ``stage`` is ``"vacuum"`` (the file is to be rebuilt) or ``"checkpoint"`` (it
        was; only the WAL is left to truncate); ``users`` are hashes of deleted users.
        """
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (VACUUM_KEY,)).fetchone()
        old: dict[str, object] = {}
        if row is not None:
            try:
                loaded = json.loads(row[0])
                old = loaded if isinstance(loaded, dict) else {}
            except ValueError:
                pass
        users_before = old.get("users", ())
        known = {u for u in users_before if isinstance(u, str)} if isinstance(users_before, list) else set()
        value = json.dumps({"stage": stage, "users": sorted(known | users)})
        if row is None or row[0] != value:
            conn.execute(UPSERT_META, (VACUUM_KEY, value))

    @staticmethod
    def _vacuum_marked(conn: sqlite3.Connection) -> bool:
        """Whether the pending marker is set, inside the caller's transaction."""
        return conn.execute("SELECT 1 FROM meta WHERE key = ?", (VACUUM_KEY,)).fetchone() is not None

    def _finish_pending_vacuum(self) -> None:
        """Complete a recorded vacuum if the store is free now; otherwise leave it pending."""
        try:
            if self._pending() is None:
                return
            conn = self._conn()
            conn.execute(f"PRAGMA busy_timeout = {_QUIET_BUSY_MS}")
            try:
                self.vacuum()
            finally:
                conn.execute(f"PRAGMA busy_timeout = {int(self._busy * 1000)}")
        except (StoreError, sqlite3.Error):
            pass  # still busy (or read-only): the marker stays, the next open, write or vacuum() tries again
