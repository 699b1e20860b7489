"""Inspection and upkeep of the PostgreSQL store: counts, checksums, integrity, vacuum."""

from __future__ import annotations

from typing import Any

from psycopg import sql

from .. import codec
from ..rows import STORE_TABLES, USER_COUNT_TABLES, digest_rows, integrity_problems
from . import schema as pg_schema
from .connection import PgConnection
from .statements import SELECT_ARCHIVE, SELECT_EDGES, SELECT_EVENTS, SELECT_NODES, SELECT_OBS
from .text import edge_out, esc, event_out, node_out, observation_out, unesc

__all__ = ["PgMaintenance"]


class PgMaintenance(PgConnection):
    """The inspection methods and ``vacuum`` of :class:`~personatree.store.postgres.PostgresStore`."""

    def vacuum(self, *, full: bool = False) -> None:
        """``VACUUM (ANALYZE)`` the store's tables, so space of deleted rows is reused.

        Parameters
        ----------
        full : bool
            ``VACUUM FULL``: rewrite the tables so deleted rows leave the data files
            (takes exclusive locks: every other client waits meanwhile).
        """
        tables = sql.SQL(", ").join(sql.Identifier(t) for t in STORE_TABLES)
        stmt = sql.SQL("VACUUM (FULL, ANALYZE) {}" if full else "VACUUM (ANALYZE) {}").format(tables)
        with self._conn() as conn:
            conn.execute(stmt)  # autocommit: VACUUM cannot run inside a transaction

    def counts(self, user_id: str | None = None) -> dict[str, int]:
        """Rows per table, for one user or for the whole store (the SQLite store's keys)."""
        tables: tuple[str, ...]
        if user_id is None:
            tables = STORE_TABLES
            params: tuple[Any, ...] = ()
            where = ""
        else:
            codec.check_text(user_id, "user_id")
            tables = USER_COUNT_TABLES
            where = " WHERE user_id = %s"
            params = (esc(user_id),) * len(tables)
        # One statement: all counts from one snapshot, in one round trip.
        query = "SELECT " + ", ".join(f"(SELECT count(*) FROM {t}{where})" for t in tables)
        with self._tx(snapshot=True) as conn:
            row = conn.execute(query, params).fetchone()
        assert row is not None
        return {t: int(n) for t, n in zip(tables, row)}

    def checksum(self, user_id: str) -> str:
        """A store-independent SHA-256 of the user's observations, nodes, edges, journal
        and archive (see :func:`personatree.store.codec.digest`); equal to SQLite's for
        equal data."""
        codec.check_text(user_id, "user_id")
        uid = esc(user_id)
        with self._tx(snapshot=True) as conn:
            obs = conn.execute(f"{SELECT_OBS} ORDER BY seq", (uid,)).fetchall()
            nodes = conn.execute(SELECT_NODES, (uid,), binary=True).fetchall()
            edges = conn.execute(SELECT_EDGES, (uid,)).fetchall()
            events = conn.execute(SELECT_EVENTS, (uid,)).fetchall()
            archive = conn.execute(SELECT_ARCHIVE, (uid,), binary=True).fetchall()
        return digest_rows(
            map(observation_out, obs), map(node_out, nodes), map(edge_out, edges), map(event_out, events),
            map(node_out, archive),
        )

    def integrity_check(self) -> list[str]:
        """Problems found in the database; an empty list means healthy.

        Checks the schema version, the version-floor row, edges whose ends are missing,
        rows without a user row, embedding dimensions, and log counters behind the
        stored positions.
        """
        problems: list[str] = []
        with self._tx(snapshot=True) as conn:
            version = pg_schema.schema_version(conn)
            latest = pg_schema.latest_pg_version()
            if version != latest:
                problems.append(f"schema version {version}, expected {latest}")
            if conn.execute("SELECT count(*) FROM store_state WHERE id = 1").fetchone() != (1,):
                problems.append("the store_state row is missing")
            problems.extend(integrity_problems(conn.execute, unesc))
        return problems
