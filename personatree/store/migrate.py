"""Numbered SQL migrations for the SQLite store.

Migrations ship as package data, ``personatree/store/migrations/NNNN_name.sql``,
numbered from 0001 without gaps. The applied version lives in ``PRAGMA user_version``
(read without touching any table, so a too-new file is recognised before anything
else happens) and each applied migration is recorded in the ``schema_version`` table.

All pending migrations run in one ``BEGIN IMMEDIATE`` transaction: two processes that
open a fresh file at once serialise on the write lock, the second one re-reads the
version and finds nothing to do, and a failure leaves the file exactly as it was.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache
from importlib import resources
from typing import Sequence

from ..errors import MigrationError

__all__ = ["Migration", "available_migrations", "latest_version", "migrate", "split_sql", "is_busy"]

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    """One numbered migration script."""

    version: int
    name: str
    sql: str


def _check_numbering(migrations: Sequence[Migration]) -> None:
    versions = [m.version for m in migrations]
    if versions != list(range(1, len(versions) + 1)):
        raise MigrationError(f"migrations must be numbered 1..n without gaps or duplicates, got {versions}")


@lru_cache(maxsize=1)
def _shipped() -> tuple[Migration, ...]:
    folder = resources.files("personatree.store").joinpath("migrations")
    found: list[Migration] = []
    for entry in folder.iterdir():
        match = _NAME.match(entry.name)
        if match is None:
            continue
        found.append(Migration(int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    _check_numbering(found)
    return tuple(found)


def available_migrations() -> list[Migration]:
    """The shipped migrations in order.

    Raises
    ------
    MigrationError
        If the shipped files are not numbered 1..n without gaps.
    """
    return list(_shipped())


def latest_version() -> int:
    """The schema version this library writes (the highest shipped migration)."""
    return len(_shipped())


def split_sql(script: str) -> list[str]:
    """Split a script into single statements.

    ``sqlite3.Connection.executescript`` would commit the open transaction first, so
    statements are executed one by one instead; ``sqlite3.complete_statement`` decides
    where a statement ends, which handles semicolons inside triggers, strings and
    comments.
    """
    statements: list[str] = []
    buf = ""
    for piece in script.split(";"):
        buf += piece + ";"
        if sqlite3.complete_statement(buf):
            if _has_code(buf):
                statements.append(buf.strip())
            buf = ""
    if _has_code(buf.rstrip(";")):
        raise MigrationError(f"incomplete SQL statement at the end of a migration: {buf.strip()[:80]!r}")
    return statements


def _has_code(sql: str) -> bool:
    code = re.sub(r"--[^\n]*", "", sql)
    return bool(code.strip(" \t\r\n;"))


def is_busy(exc: BaseException) -> bool:
    """Whether a sqlite3 error means "another connection holds the lock"."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    msg = str(exc).lower()
    return "locked" in msg or "busy" in msg


def _user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, migrations: Sequence[Migration] | None = None) -> int:
    """Bring the database on ``conn`` to the latest schema version.

    Parameters
    ----------
    conn : sqlite3.Connection
        A connection in autocommit mode (``isolation_level=None``), outside a transaction.
    migrations : sequence of Migration, optional
        The migrations to apply (default: the shipped ones). Tests pass extra ones.

    Returns
    -------
    int
        The schema version after migrating.

    Raises
    ------
    MigrationError
        If the file is newer than these migrations, or a migration fails (nothing of it
        is applied).
    sqlite3.OperationalError
        Left unwrapped when the lock could not be taken (see :func:`is_busy`), so that
        the caller can report it as ``StoreBusyError``.
    """
    steps = list(_shipped() if migrations is None else migrations)
    _check_numbering(steps)
    latest = len(steps)
    current = _user_version(conn)
    if current > latest:
        raise _too_new(current, latest)
    if current == latest:
        return current
    conn.execute("BEGIN IMMEDIATE")
    try:
        current = _user_version(conn)  # another process may have migrated meanwhile
        if current > latest:
            raise _too_new(current, latest)
        now = datetime.now(timezone.utc).isoformat(timespec="microseconds")
        for step in steps[current:]:
            for statement in split_sql(step.sql):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)",
                (step.version, step.name, now),
            )
            # PRAGMA cannot take parameters; the value is an int we computed.
            conn.execute(f"PRAGMA user_version = {int(step.version)}")
        conn.execute("COMMIT")
    except BaseException as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if isinstance(exc, MigrationError) or is_busy(exc):
            raise
        if isinstance(exc, sqlite3.Error):
            raise MigrationError(f"migration to schema version {latest} failed: {exc}") from exc
        raise
    return latest


def _too_new(current: int, latest: int) -> MigrationError:
    return MigrationError(
        f"the store has schema version {current}, newer than this library supports ({latest}); "
        "upgrade personatree to open it"
    )
