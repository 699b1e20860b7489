"""Inspection of the SQLite store: counts, checksums, integrity."""

from __future__ import annotations

from .. import codec, rows
from ..migrate import latest_version
from ..rows import STORE_TABLES, USER_COUNT_TABLES
from .connection import SQLiteConnection
from .statements import (
    SELECT_ARCHIVE, SELECT_EDGES, SELECT_EVENTS, SELECT_NODES, SELECT_OBS, in_rowid_order,
)

__all__ = ["SQLiteMaintenance"]


class SQLiteMaintenance(SQLiteConnection):
    """The inspection methods of :class:`~personatree.store.sqlite.SQLiteStore`."""

    def counts(self, user_id: str | None = None) -> dict[str, int]:
        """Rows per table, for one user or for the whole store.

        For a user the keys are ``users`` (0 or 1), ``observations``, ``nodes``,
        ``edges``, ``journal``, ``archive``, ``cache``; the whole store adds ``meta``. Compare two
        calls (and :meth:`checksum`) to assert that a refused call changed nothing.
        """
        with self._tx(write=False) as conn:
            if user_id is None:
                return {t: int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]) for t in STORE_TABLES}
            codec.check_text(user_id, "user_id")
            return {
                t: int(conn.execute(f"SELECT count(*) FROM {t} WHERE user_id = ?", (user_id,)).fetchone()[0])
                for t in USER_COUNT_TABLES
            }

    def checksum(self, user_id: str) -> str:
        """A store-independent SHA-256 of the user's observations, nodes, edges, journal
        and archive (see :func:`personatree.store.codec.digest`); equal data gives equal
        digests in every store."""
        codec.check_text(user_id, "user_id")
        with self._tx(write=False) as conn:
            obs = conn.execute(f"{SELECT_OBS} WHERE user_id = ? ORDER BY seq", (user_id,)).fetchall()
            nodes = in_rowid_order(conn.execute(SELECT_NODES, (user_id,)).fetchall())
            edges = in_rowid_order(conn.execute(SELECT_EDGES, (user_id,)).fetchall())
            events = conn.execute(SELECT_EVENTS, (user_id,)).fetchall()
            archive = conn.execute(SELECT_ARCHIVE, (user_id,)).fetchall()
        return rows.digest_rows(obs, nodes, edges, events, archive)

    def integrity_check(self) -> list[str]:
        """Problems found in the file; an empty list means healthy.

        Runs SQLite's ``integrity_check`` and ``foreign_key_check`` plus our own
        checks: the schema version, edges whose ends are missing, rows without a user
        row, and log counters behind the stored positions.
        """
        problems: list[str] = []
        with self._tx(write=False) as conn:
            result = [str(r[0]) for r in conn.execute("PRAGMA integrity_check")]
            if result != ["ok"]:
                problems.extend(f"integrity_check: {r}" for r in result)
            for table, rowid, parent, _fk in conn.execute("PRAGMA foreign_key_check"):
                problems.append(f"foreign_key_check: {table} row {rowid} points to a missing {parent} row")
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if version != latest_version():
                problems.append(f"schema version {version}, expected {latest_version()}")
            problems.extend(rows.integrity_problems(conn.execute))
        return problems
