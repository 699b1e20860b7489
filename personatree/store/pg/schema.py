"""The PostgreSQL schema: shipped migrations, migrating, and the embedding column type."""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from typing import Any

import psycopg
from psycopg import sql

from ...errors import ConfigError, MigrationError
from ..migrate import Migration
from .adapt import FLOAT4_ARRAY_OID
from .locks import LOCK_MIGRATE

__all__ = [
    "available_pg_migrations",
    "embedding_column",
    "latest_pg_version",
    "migrate",
    "schema_version",
    "set_search_path",
    "shipped",
]

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@lru_cache(maxsize=1)
def shipped() -> tuple[Migration, ...]:
    """The shipped migrations in order (read once per process).

    Raises
    ------
    MigrationError
        If the files are not numbered 1..n.
    """
    folder = resources.files("personatree.store").joinpath("migrations_pg")
    found = []
    for entry in folder.iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    if [m.version for m in found] != list(range(1, len(found) + 1)):
        raise MigrationError(f"PostgreSQL migrations must be numbered 1..n, got {[m.version for m in found]}")
    return tuple(found)


def available_pg_migrations() -> list[Migration]:
    """The shipped PostgreSQL migrations (``migrations_pg/NNNN_name.sql``) in order."""
    return list(shipped())


def latest_pg_version() -> int:
    """The PostgreSQL schema version this library writes."""
    return len(shipped())


def set_search_path(conn: psycopg.Connection[Any], schema: str | None) -> None:
    """Point the session at ``schema`` (``None``: keep the server's search_path)."""
    if schema is not None:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))


def schema_version(conn: psycopg.Connection[Any]) -> int:
    """The highest applied migration (0 for a database without our tables)."""
    row = conn.execute("SELECT to_regclass('schema_version') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return 0
    got = conn.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()
    return int(got[0]) if got else 0


def migrate(conn: psycopg.Connection[Any], schema: str | None, vector: bool | None) -> None:
    """Bring the schema up to :func:`latest_pg_version` (creating it when missing).

    Parameters
    ----------
    conn : psycopg.Connection
        An autocommit connection; its search_path is set to ``schema``.
    schema : str or None
        The schema holding the tables (``None``: the server's search_path).
    vector : bool or None
        The embedding column type for a new store (see
        :class:`~personatree.store.postgres.PostgresStore`).

    Raises
    ------
    MigrationError
        If the database holds a newer schema, or a migration failed.
    ConfigError
        If ``vector=True`` and pgvector cannot be installed.
    """
    steps = shipped()
    latest = len(steps)
    if schema is not None:
        set_search_path(conn, schema)
    if schema_version(conn) == latest:
        return  # the common case: no lock, no transaction
    with conn.transaction():
        # Openers of a fresh database serialize here; the second finds nothing to do.
        conn.execute(f"SELECT pg_advisory_xact_lock({LOCK_MIGRATE}, 0)")
        if schema is not None:
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        current = schema_version(conn)
        if current > latest:
            raise MigrationError(
                f"the store has schema version {current}, newer than this library supports ({latest}); "
                "upgrade personatree to open it"
            )
        if current == latest:
            return
        if current == 0:
            kind = _choose_embedding_type(conn, vector)
            conn.execute("SELECT set_config('personatree.embedding_type', %s, true)", (kind,))
        for step in steps[current:]:
            try:
                conn.execute(step.sql.encode("utf-8"))  # no parameters: a multi-statement script
            except psycopg.Error as exc:
                raise MigrationError(f"PostgreSQL migration {step.version} ({step.name}) failed: {exc}") from exc
            conn.execute("INSERT INTO schema_version (version, name) VALUES (%s, %s)", (step.version, step.name))


def _choose_embedding_type(conn: psycopg.Connection[Any], vector: bool | None) -> str:
    if vector is False:
        return "real[]"
    try:
        with conn.transaction():  # a savepoint: a refused CREATE EXTENSION leaves no trace
            has_public = conn.execute("SELECT to_regnamespace('public') IS NOT NULL").fetchone()
            target = " SCHEMA public" if has_public and has_public[0] else ""
            conn.execute(f"CREATE EXTENSION IF NOT EXISTS vector{target}")
        return "vector"
    except psycopg.Error as exc:
        if vector:
            raise ConfigError(f"vector=True but the pgvector extension is unavailable: {exc}") from None
        return "real[]"


def embedding_column(conn: psycopg.Connection[Any]) -> tuple[str, int | None]:
    """The embedding column's type: ``("vector", its oid)`` or ``("real[]", None)``.

    Raises
    ------
    MigrationError
        If the nodes table has no embedding column, or one of another type.
    """
    row = conn.execute(
        "SELECT a.atttypid, t.typname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
        "WHERE a.attrelid = to_regclass('nodes') AND a.attname = 'embedding' AND NOT a.attisdropped"
    ).fetchone()
    if row is None:
        raise MigrationError("the nodes table has no embedding column")
    oid, name = int(row[0]), str(row[1])
    if name == "vector":
        return "vector", oid
    if oid == FLOAT4_ARRAY_OID:
        return "real[]", None
    raise MigrationError(f"unexpected embedding column type {name!r}")
