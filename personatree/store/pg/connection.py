"""The PostgreSQL store's base: settings, the per-process pool, transactions, errors.

The store's methods live in mixins of :class:`PgConnection` (:mod:`.reads`,
:mod:`.writes`, :mod:`.keyvalue`, :mod:`.maintenance`); they reach the database only
through :meth:`PgConnection._conn`, :meth:`PgConnection._tx` and
:meth:`PgConnection._snapshot`, so pooling, fork safety and error translation are
decided here once.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg import sql
from psycopg_pool import ConnectionPool, PoolTimeout

from ...errors import ConfigError, StoreBusyError, StoreError
from ..closing import Closing
from . import schema as pg_schema
from .adapt import register_embedding
from .locks import LOCK_WRITE, USER_KEY
from .url import mask, split_url

__all__ = ["PgConnection", "rollback_open"]

# Pools abandoned by a fork: kept referenced so that garbage collection in the child
# never closes (terminates) connections that belong to the parent.
_ABANDONED: list[ConnectionPool] = []


def _positive(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{name} must be a positive number, got {value!r}")
    return float(value)


def rollback_open(conn: psycopg.Connection[Any]) -> None:
    """Roll back whatever transaction ``conn`` has open, ignoring failures.

    For a caller that is already raising: the connection goes back to the pool idle,
    and the original exception, not a failed ROLLBACK, reaches the user.
    """
    if not conn.closed and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        try:
            conn.execute("ROLLBACK")
        except psycopg.Error:
            pass


class PgConnection(Closing):
    """Settings, pool and transactions of :class:`~personatree.store.postgres.PostgresStore`.

    The constructor's parameters are documented on ``PostgresStore``.
    """

    def __init__(
        self,
        url: str,
        *,
        busy_timeout_s: float = 10.0,
        pool_size: int = 4,
        schema: str | None = None,
        vector: bool | None = None,
    ) -> None:
        self._busy = _positive(busy_timeout_s, "busy_timeout_s")
        if isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 1:
            raise ConfigError(f"pool_size must be a positive int, got {pool_size!r}")
        if not isinstance(url, str):
            raise ConfigError(f"url must be a str, got {type(url).__name__}")
        self._conninfo, url_schema = split_url(url)
        self._schema = schema if schema is not None else url_schema
        if self._schema is not None and (not self._schema or "\x00" in self._schema):
            raise ConfigError(f"schema must be a non-empty name, got {self._schema!r}")
        self._url = mask(url)
        self._pool_size = pool_size
        self._closed = False
        self._guard = threading.Lock()
        self._pool: ConnectionPool | None = None
        self._pid = os.getpid()
        self._vector_oid: int | None = None
        self.embedding_type = "real[]"
        try:
            with psycopg.connect(self._conninfo, autocommit=True, connect_timeout=max(2, int(self._busy))) as conn:
                pg_schema.migrate(conn, self._schema, vector)
                self.embedding_type, self._vector_oid = pg_schema.embedding_column(conn)
        except psycopg.Error as exc:
            raise self._error(exc) from exc

    @property
    def url(self) -> str:
        """The URL with the password masked."""
        return self._url

    @property
    def schema(self) -> str | None:
        """The schema holding the tables (``None``: the server's search_path)."""
        return self._schema

    @property
    def busy_timeout_s(self) -> float:
        """The configured lock wait in seconds."""
        return self._busy

    def __repr__(self) -> str:
        extra = f", schema={self._schema!r}" if self._schema else ""
        return f"PostgresStore({self._url!r}{extra})"

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        """Per-connection setup (runs once per pooled connection)."""
        pg_schema.set_search_path(conn, self._schema)
        # Bounds every lock wait (advisory and row locks) of this session.
        conn.execute(sql.SQL("SET lock_timeout = {}").format(sql.Literal(f"{int(self._busy * 1000)}ms")))
        register_embedding(conn, self._vector_oid)

    def _get_pool(self) -> ConnectionPool:
        if self._closed:
            raise StoreError(f"the store {self._url} is closed")
        with self._guard:
            if self._pool is not None and os.getpid() != self._pid:
                _ABANDONED.append(self._pool)  # the parent's; never close it from here
                self._pool = None
            if self._pool is None:
                self._pid = os.getpid()
                self._pool = ConnectionPool(
                    self._conninfo,
                    min_size=1,
                    max_size=self._pool_size,
                    kwargs={"autocommit": True},
                    configure=self._configure,
                    timeout=self._busy,
                    name=f"personatree-{os.getpid()}",
                    open=True,
                )
            return self._pool

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection in autocommit mode; psycopg errors are translated."""
        pool = self._get_pool()
        try:
            with pool.connection() as conn:
                yield conn
        except PoolTimeout as exc:
            raise StoreBusyError(
                f"no free connection to {self._url} within {self._busy:g} s (pool_size={self._pool_size}); "
                "raise pool_size or busy_timeout_s"
            ) from exc
        except psycopg.Error as exc:
            raise self._error(exc) from exc

    @contextmanager
    def _tx(self, *, user: str | None = None, snapshot: bool = False) -> Iterator[psycopg.Connection[Any]]:
        """One transaction. ``user``: a write holding that user's advisory lock;
        ``snapshot``: a read-only REPEATABLE READ snapshot; neither: a plain write."""
        with self._conn() as conn:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" if snapshot else "BEGIN")
            try:
                if user is not None:
                    conn.execute(f"SELECT pg_advisory_xact_lock({LOCK_WRITE}, {USER_KEY})", (user,))
                yield conn
            except BaseException:
                rollback_open(conn)
                raise
            conn.execute("COMMIT")

    @contextmanager
    def _snapshot(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection for a pipelined read transaction; rolled back if anything fails."""
        with self._conn() as conn:
            try:
                yield conn
            except BaseException:
                rollback_open(conn)
                raise

    def _error(self, exc: psycopg.Error) -> StoreError:
        """Translate a psycopg error into the library's exception tree."""
        if isinstance(exc, (pg_errors.LockNotAvailable, pg_errors.DeadlockDetected)):
            return StoreBusyError(
                f"the store {self._url} stayed locked by another writer for more than "
                f"{self._busy:g} s (busy_timeout_s); retry later or raise busy_timeout_s"
            )
        if isinstance(exc, pg_errors.ForeignKeyViolation):
            return StoreError(
                "commit refused: an edge references a node that does not exist for this user "
                "(FOREIGN KEY constraint failed); nothing was written"
            )
        if isinstance(exc, psycopg.OperationalError):
            return StoreError(f"cannot use the PostgreSQL store {self._url}: {str(exc).strip()}")
        return StoreError(f"PostgreSQL error on {self._url}: {str(exc).strip()}")

    def close(self) -> None:
        """Close this process's connections (idempotent)."""
        self._closed = True
        with self._guard:
            pool, self._pool = self._pool, None
        if pool is not None and os.getpid() == self._pid:
            pool.close()

    def schema_version(self) -> int:
        """The schema version of the database (the highest applied migration)."""
        with self._conn() as conn:
            return pg_schema.schema_version(conn)
