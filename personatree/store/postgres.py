"""The shared store: PostgreSQL through psycopg 3 and a connection pool.

Many app instances (processes, machines) share one database; every user's rows are
keyed by ``user_id`` first. The semantics are those of :class:`SQLiteStore` (the
contract suite in ``tests/test_store_contract.py`` runs against both), and the rows
are the codec's (:mod:`personatree.store.codec`), so a user's :meth:`checksum` is the
same in both stores for the same data. Choices, and why:

* **Writes** run in one transaction that first takes a per-user advisory lock,
  ``pg_advisory_xact_lock(class, hashtext(user_id))``: commits of one user serialize
  (log positions and the version stay gap-free) while other users' commits run in
  parallel; the lock goes with the transaction, so a crashed client cannot leak it.
  The wait is bounded by ``busy_timeout_s`` (``lock_timeout``), then
  :class:`~personatree.errors.StoreBusyError`.
* **Optimistic versions**: a change with ``expected_version`` is refused with
  :class:`~personatree.errors.StaleStateError` unless the stored version equals it, so
  a write or plan computed from a stale tree is never applied on top of a newer one.
  Versions never repeat for a user id, even across ``delete_user`` (a store-wide
  floor), so ``(user, version)`` identifies one state and :meth:`version` (one
  primary-key lookup) is enough for caches in other processes to notice changes.
* **Reads** that need several statements (``load_graph_with_version``, ``checksum``)
  run in one ``REPEATABLE READ READ ONLY`` transaction: one snapshot.
* **Embeddings** live in a ``vector`` column when the pgvector extension is installed
  (or can be), else in a ``real[]`` column. They travel in binary, converted with numpy
  (no per-float Python objects). Search stays exact numpy in the engine: per-user
  trees are small, and a shared ANN index loses results under a user filter.
* PostgreSQL text cannot hold NUL, which the other stores accept; id and content
  columns escape it reversibly (``\\x00`` → ``U+FFFE 0``, ``U+FFFE`` → ``U+FFFE U+FFFE``).
  U+FFFE is a noncharacter, so the escape is a no-op for real text.
* :meth:`lock_user` holds a session-level advisory lock in another key space, for
  long jobs (consolidation) that must not overlap for one user. It does not block
  ``commit``: a job may run for minutes, and its final commit is guarded by
  ``expected_version`` anyway.
* One pool per process: a forked child never touches its parent's connections
  (libpq would terminate the parent's sessions) and opens its own.

Write order inside one commit (as in every store): observations, delete_edges,
delete_nodes (with incident edges), upsert_nodes, upsert_edges, events.
"""

from __future__ import annotations

import math
import os
import re
import struct
import threading
from contextlib import contextmanager
from functools import lru_cache
from importlib import resources
from types import TracebackType
from typing import Any, Iterator, Sequence
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np
import psycopg
from psycopg import errors as pg_errors
from psycopg import sql
from psycopg.adapt import Buffer, Dumper, Loader
from psycopg.pq import Format
from psycopg_pool import ConnectionPool, PoolTimeout

from ..errors import ConfigError, MigrationError, StaleStateError, StoreBusyError, StoreError
from ..ports import ChangeSet, JournalEvent
from ..types import Edge, Node, Observation
from . import codec
from .codec import EDGE_COLUMNS, EVENT_COLUMNS, NODE_COLUMNS, OBSERVATION_COLUMNS
from .migrate import Migration

__all__ = ["PostgresStore", "available_pg_migrations", "latest_pg_version", "split_url"]

# Advisory-lock key spaces (the first int of the two-int form), so our locks never
# collide with an application's own advisory locks on ``hashtext`` keys.
_LOCK_WRITE = 0x5054_0001  # per-user commits
_LOCK_JOB = 0x5054_0002  # lock_user: consolidation and other long per-user jobs
_LOCK_MIGRATE = 0x5054_0003  # schema migrations (second key 0)

_USER_TABLES = ("observations", "nodes", "edges", "journal")
_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_FLOAT4_ARRAY_OID = 1021
_FLOAT4_OID = 700
# Pools abandoned by a fork: kept referenced so that garbage collection in the child
# never closes (terminates) connections that belong to the parent.
_ABANDONED: list[ConnectionPool] = []


# -- migrations ----------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _shipped() -> tuple[Migration, ...]:
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
    return list(_shipped())


def latest_pg_version() -> int:
    """The PostgreSQL schema version this library writes."""
    return len(_shipped())


# -- text and embedding adaptation -------------------------------------------------------------

_ESC = "\ufffe"


def _esc(text: str) -> str:
    """Make ``text`` storable in a PostgreSQL text column (reversibly; see the module doc)."""
    if "\x00" not in text and _ESC not in text:
        return text
    return text.replace(_ESC, _ESC + _ESC).replace("\x00", _ESC + "0")


def _unesc(text: str) -> str:
    """Inverse of :func:`_esc`."""
    if _ESC not in text:
        return text
    out: list[str] = []
    i = 0
    while True:
        j = text.find(_ESC, i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        nxt = text[j + 1 : j + 2]
        out.append("\x00" if nxt == "0" else _ESC)
        i = j + 2


class _Embedding(bytes):
    """Marks a parameter as an embedding (little-endian float32 bytes from the codec)."""

    __slots__ = ()


class _VectorDumper(Dumper):
    # pgvector's binary input: uint16 dim, uint16 unused, dim big-endian float4.
    format = Format.BINARY

    def dump(self, obj: Any) -> Buffer:
        arr = np.frombuffer(obj, dtype="<f4")
        return struct.pack(">HH", arr.size, 0) + arr.astype(">f4").tobytes()


class _VectorLoader(Loader):
    format = Format.BINARY

    def load(self, data: Buffer) -> bytes:
        return np.frombuffer(data, dtype=">f4", offset=4).astype("<f4").tobytes()


_ARRAY_ITEM = np.dtype([("len", ">i4"), ("val", ">f4")])


class _Float4ArrayDumper(Dumper):
    # PostgreSQL's binary array: ndim, has-null flag, element oid, (size, lower bound)
    # per dimension, then (length, value) per element.
    format = Format.BINARY
    oid = _FLOAT4_ARRAY_OID

    def dump(self, obj: Any) -> Buffer:
        arr = np.frombuffer(obj, dtype="<f4")
        items = np.empty(arr.size, dtype=_ARRAY_ITEM)
        items["len"] = 4
        items["val"] = arr
        return struct.pack(">iiIii", 1, 0, _FLOAT4_OID, arr.size, 1) + items.tobytes()


class _Float4ArrayLoader(Loader):
    format = Format.BINARY

    def load(self, data: Buffer) -> bytes:
        ndim, has_null, _oid = struct.unpack_from(">iiI", data, 0)
        if ndim == 0:
            return b""
        if ndim != 1 or has_null:
            raise StoreError("corrupt embedding: expected a one-dimensional float4 array without NULLs")
        items = np.frombuffer(data, dtype=_ARRAY_ITEM, offset=12 + 8 * ndim)
        return items["val"].astype("<f4").tobytes()


# -- URLs -------------------------------------------------------------------------------------


def split_url(url: str) -> tuple[str, str | None]:
    """Split ``?schema=name`` off a PostgreSQL URL and normalise the scheme for libpq.

    Parameters
    ----------
    url : str
        ``postgresql://``, ``postgres://`` or ``postgresql+driver://`` URL.

    Returns
    -------
    (str, str or None)
        The libpq connection URL and the schema (``None``: the server's search_path).
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower().split("+", 1)[0]
    if scheme not in ("postgresql", "postgres"):
        raise ConfigError(f"not a PostgreSQL URL: {_mask(url)!r}")
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = None
    kept = []
    for key, value in query:
        if key == "schema":
            schema = value
        else:
            kept.append((key, value))
    return urlunsplit(("postgresql", parts.netloc, parts.path, urlencode(kept), parts.fragment)), schema


def _mask(url: str) -> str:
    """The URL with any password replaced (for messages and repr)."""
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)


# -- the store ----------------------------------------------------------------------------------


def _cols(columns: Sequence[str]) -> str:
    return ", ".join(columns)


def _ph(n: int) -> str:
    return ", ".join(["%s"] * n)


_NODE_VALUES = ", ".join(["%s"] * (len(NODE_COLUMNS) - 2) + ["%b", "%s"])  # embedding in binary
_INSERT_OBS = f"INSERT INTO observations ({_cols(OBSERVATION_COLUMNS)}) VALUES ({_ph(len(OBSERVATION_COLUMNS))})"
_UPSERT_NODE = (
    f"INSERT INTO nodes ({_cols(NODE_COLUMNS)}) VALUES ({_NODE_VALUES}) "
    "ON CONFLICT (user_id, id) DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in NODE_COLUMNS[2:])
)
_UPSERT_EDGE = (
    f"INSERT INTO edges ({_cols(EDGE_COLUMNS)}) VALUES ({_ph(len(EDGE_COLUMNS))}) "
    "ON CONFLICT (user_id, src, dst) DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in EDGE_COLUMNS[3:])
)
_INSERT_EVENT = f"INSERT INTO journal ({_cols(EVENT_COLUMNS)}) VALUES ({_ph(len(EVENT_COLUMNS))})"
_SELECT_OBS = f"SELECT {_cols(OBSERVATION_COLUMNS)} FROM observations WHERE user_id = %s"
_SELECT_NODES = f"SELECT {_cols(NODE_COLUMNS)} FROM nodes WHERE user_id = %s ORDER BY pos"
_SELECT_EDGES = f"SELECT {_cols(EDGE_COLUMNS)} FROM edges WHERE user_id = %s ORDER BY pos"
_SELECT_EVENTS = f"SELECT {_cols(EVENT_COLUMNS)} FROM journal WHERE user_id = %s ORDER BY seq"
_USER_KEY = "hashtext(%s)"


def _obs_out(r: Sequence[Any]) -> Observation:
    return codec.decode_observation((_unesc(r[0]), _unesc(r[1]), r[2], _unesc(r[3]), *r[4:]))


def _node_row_in(r: tuple[Any, ...]) -> tuple[Any, ...]:
    blob = r[14]
    return (_esc(r[0]), _esc(r[1]), r[2], _esc(r[3]), _esc(r[4]), *r[5:14],
            None if blob is None else _Embedding(blob), r[15])


def _node_row_out(r: Sequence[Any]) -> tuple[Any, ...]:
    return (_unesc(r[0]), _unesc(r[1]), r[2], _unesc(r[3]), _unesc(r[4]), *r[5:])


def _edge_row_in(r: tuple[Any, ...]) -> tuple[Any, ...]:
    return (_esc(r[0]), _esc(r[1]), _esc(r[2]), r[3], r[4], r[5], _esc(r[6]), r[7])


def _edge_row_out(r: Sequence[Any]) -> tuple[Any, ...]:
    return (_unesc(r[0]), _unesc(r[1]), _unesc(r[2]), r[3], r[4], r[5], _unesc(r[6]), r[7])


def _event_out(r: Sequence[Any]) -> JournalEvent:
    return codec.decode_event((r[0], r[1], _unesc(r[2]), *r[3:]))


def _positive(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{name} must be a positive number, got {value!r}")
    return float(value)


class PostgresStore:
    """A :class:`~personatree.ports.Store` in a PostgreSQL database, shared by many processes.

    Parameters
    ----------
    url : str
        ``postgresql://user:password@host:port/dbname`` (any libpq URL; ``postgres://``
        and ``postgresql+psycopg://`` are accepted). ``?schema=name`` keeps the tables
        in that schema (created when missing); without it they go to the first schema
        of the server's ``search_path`` (usually ``public``).
    busy_timeout_s : float
        How long a write waits for another writer of the same user (and any call for a
        free pooled connection) before :class:`~personatree.errors.StoreBusyError`.
    pool_size : int
        Most connections this process opens (one is kept open).
    schema : str, optional
        The schema, overriding the URL's.
    vector : bool or None
        Embedding column type when the tables are created: ``None`` uses pgvector if it
        is installed or can be installed (``CREATE EXTENSION``), else ``real[]``;
        ``True`` requires pgvector; ``False`` always uses ``real[]``. An existing
        store keeps its column type.

    Raises
    ------
    ConfigError
        For a bad URL or parameter, or ``vector=True`` without pgvector.
    MigrationError
        If the database holds a newer personatree schema, or migrating failed.
    StoreError
        If the database cannot be reached.

    Notes
    -----
    Thread-safe. Use as a context manager or call :meth:`close`.
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
        self._url = _mask(url)
        self._pool_size = pool_size
        self._closed = False
        self._guard = threading.Lock()
        self._pool: ConnectionPool | None = None
        self._pid = os.getpid()
        self._vector_oid: int | None = None
        self.embedding_type = "real[]"
        try:
            with psycopg.connect(self._conninfo, autocommit=True, connect_timeout=max(2, int(self._busy))) as conn:
                self._migrate(conn, vector)
                self.embedding_type, self._vector_oid = self._embedding_column(conn)
        except psycopg.Error as exc:
            raise self._error(exc) from exc

    # -- plumbing -------------------------------------------------------------------------

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

    def __enter__(self) -> "PostgresStore":
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _set_search_path(self, conn: psycopg.Connection[Any]) -> None:
        if self._schema is not None:
            conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self._schema)))

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        """Per-connection setup (runs once per pooled connection)."""
        self._set_search_path(conn)
        # Bounds every lock wait (advisory and row locks) of this session.
        conn.execute(sql.SQL("SET lock_timeout = {}").format(sql.Literal(f"{int(self._busy * 1000)}ms")))
        if self._vector_oid is not None:
            conn.adapters.register_dumper(_Embedding, type("VectorDumper", (_VectorDumper,), {"oid": self._vector_oid}))
            conn.adapters.register_loader(self._vector_oid, _VectorLoader)
        else:
            conn.adapters.register_dumper(_Embedding, _Float4ArrayDumper)
            conn.adapters.register_loader(_FLOAT4_ARRAY_OID, _Float4ArrayLoader)

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
                    conn.execute(f"SELECT pg_advisory_xact_lock({_LOCK_WRITE}, {_USER_KEY})", (user,))
                yield conn
            except BaseException:
                if not conn.closed:
                    try:
                        conn.execute("ROLLBACK")
                    except psycopg.Error:
                        pass
                raise
            conn.execute("COMMIT")

    @contextmanager
    def _snapshot(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection for a pipelined read transaction; rolled back if anything fails."""
        with self._conn() as conn:
            try:
                yield conn
            except BaseException:
                if not conn.closed and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    try:
                        conn.execute("ROLLBACK")
                    except psycopg.Error:
                        pass
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

    # -- schema -------------------------------------------------------------------------------

    def _migrate(self, conn: psycopg.Connection[Any], vector: bool | None) -> None:
        steps = _shipped()
        latest = len(steps)
        if self._schema is not None:
            self._set_search_path(conn)
        if self._schema_version(conn) == latest:
            return  # the common case: no lock, no transaction
        with conn.transaction():
            # Openers of a fresh database serialize here; the second finds nothing to do.
            conn.execute(f"SELECT pg_advisory_xact_lock({_LOCK_MIGRATE}, 0)")
            if self._schema is not None:
                conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self._schema)))
            current = self._schema_version(conn)
            if current > latest:
                raise MigrationError(
                    f"the store has schema version {current}, newer than this library supports ({latest}); "
                    "upgrade personatree to open it"
                )
            if current == latest:
                return
            if current == 0:
                kind = self._choose_embedding_type(conn, vector)
                conn.execute("SELECT set_config('personatree.embedding_type', %s, true)", (kind,))
            for step in steps[current:]:
                try:
                    conn.execute(step.sql.encode("utf-8"))  # no parameters: a multi-statement script
                except psycopg.Error as exc:
                    raise MigrationError(f"PostgreSQL migration {step.version} ({step.name}) failed: {exc}") from exc
                conn.execute("INSERT INTO schema_version (version, name) VALUES (%s, %s)", (step.version, step.name))

    @staticmethod
    def _schema_version(conn: psycopg.Connection[Any]) -> int:
        row = conn.execute("SELECT to_regclass('schema_version') IS NOT NULL").fetchone()
        if not row or not row[0]:
            return 0
        got = conn.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()
        return int(got[0]) if got else 0

    @staticmethod
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

    @staticmethod
    def _embedding_column(conn: psycopg.Connection[Any]) -> tuple[str, int | None]:
        row = conn.execute(
            "SELECT a.atttypid, t.typname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
            "WHERE a.attrelid = to_regclass('nodes') AND a.attname = 'embedding' AND NOT a.attisdropped"
        ).fetchone()
        if row is None:
            raise MigrationError("the nodes table has no embedding column")
        oid, name = int(row[0]), str(row[1])
        if name == "vector":
            return "vector", oid
        if oid == _FLOAT4_ARRAY_OID:
            return "real[]", None
        raise MigrationError(f"unexpected embedding column type {name!r}")

    def schema_version(self) -> int:
        """The schema version of the database (the highest applied migration)."""
        with self._conn() as conn:
            return self._schema_version(conn)

    # -- reads ----------------------------------------------------------------------------------

    def users(self) -> list[str]:
        """Ids of all users with stored data, sorted (by code point, as ``sorted``)."""
        with self._conn() as conn:
            return sorted(_unesc(r[0]) for r in conn.execute("SELECT user_id FROM users"))

    def version(self, user_id: str) -> int:
        """The user's version counter (0 when nothing is stored): one primary-key lookup."""
        codec.check_text(user_id, "user_id")
        with self._conn() as conn:
            row = conn.execute("SELECT version FROM users WHERE user_id = %s", (_esc(user_id),)).fetchone()
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
        wanted = [_esc(i) for i in dict.fromkeys(codec.check_ids(ids, "ids"))]
        with self._conn() as conn:
            return {_unesc(i) for i in self._existing(conn, _esc(user_id), wanted)}

    def observations(self, user_id: str, ids: Sequence[str] | None = None) -> list[Observation]:
        """Observations of a user in log order (all, or those with the given ids; unknown ids are skipped)."""
        codec.check_text(user_id, "user_id")
        uid = _esc(user_id)
        with self._conn() as conn:
            if ids is None:
                rows = conn.execute(f"{_SELECT_OBS} ORDER BY seq", (uid,)).fetchall()
            else:
                wanted = [_esc(i) for i in dict.fromkeys(codec.check_ids(ids, "ids"))]
                rows = conn.execute(
                    f"{_SELECT_OBS} AND id = ANY(%s::text[]) ORDER BY seq", (uid, wanted)
                ).fetchall() if wanted else []
        return [_obs_out(r) for r in rows]

    def load_graph(self, user_id: str) -> tuple[list[Node], list[Edge]]:
        """All nodes (with embeddings, in first-insertion order) and edges of a user."""
        nodes, edges, _ = self.load_graph_with_version(user_id)
        return nodes, edges

    def load_graph_with_version(self, user_id: str) -> tuple[list[Node], list[Edge], int]:
        """Nodes, edges and the version they belong to, read from one snapshot."""
        codec.check_text(user_id, "user_id")
        uid = _esc(user_id)
        with self._snapshot() as conn:
            # One round trip: the transaction and its three queries are pipelined.
            with conn.pipeline():
                conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                vcur = conn.execute("SELECT version FROM users WHERE user_id = %s", (uid,))
                ncur = conn.execute(_SELECT_NODES, (uid,), binary=True)
                ecur = conn.execute(_SELECT_EDGES, (uid,))
                conn.execute("COMMIT")
            row = vcur.fetchone()
            node_rows = ncur.fetchall()
            edge_rows = ecur.fetchall()
        version = 0 if row is None else int(row[0])
        nodes = codec.decode_nodes(_node_row_out(r) for r in node_rows)
        edges = codec.decode_edges(_edge_row_out(r) for r in edge_rows)
        return nodes, edges, version

    def events(self, user_id: str) -> list[JournalEvent]:
        """The user's journal in order."""
        codec.check_text(user_id, "user_id")
        with self._conn() as conn:
            rows = conn.execute(_SELECT_EVENTS, (_esc(user_id),)).fetchall()
        return [_event_out(r) for r in rows]

    # -- writes ---------------------------------------------------------------------------------

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
        uid = _esc(prep.user_id)
        obs_rows = [(_esc(r[0]), _esc(r[1]), r[2], _esc(r[3]), *r[4:]) for r in prep.observations]
        with self._conn() as conn:
            # Three round trips whatever the change's size: (1) begin + the user's lock,
            # (2) the user's counters and which observations are logged already, (3) all
            # writes and COMMIT in one pipeline. The lock is taken in a statement of its
            # own: a statement's snapshot predates the wait, so reading the counters in
            # the same statement could miss a commit that happened while waiting.
            conn.execute(
                sql.SQL("BEGIN; SELECT pg_advisory_xact_lock({}, hashtext({}))").format(
                    sql.Literal(_LOCK_WRITE), sql.Literal(uid))
            )
            try:
                new_version = self._apply(conn, prep, uid, obs_rows)
            except BaseException:
                if not conn.closed and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    try:
                        conn.execute("ROLLBACK")
                    except psycopg.Error:
                        pass
                raise
        return new_version

    @staticmethod
    def _apply(
        conn: psycopg.Connection[Any], prep: codec.PreparedChange, uid: str, obs_rows: list[tuple[Any, ...]]
    ) -> int:
        """The body of :meth:`commit`, inside the transaction that holds the user's lock."""
        row = conn.execute(
            "SELECT u.version, u.obs_seq, u.event_seq, s.version_floor, "
            "ARRAY(SELECT o.id FROM observations o WHERE o.user_id = %s AND o.id = ANY(%s::text[])) "
            "FROM store_state s LEFT JOIN users u ON u.user_id = %s WHERE s.id = 1",
            (uid, [r[1] for r in obs_rows], uid),
        ).fetchone()
        if row is None:
            raise StoreError("the store_state row is missing (run integrity_check)")
        exists = row[0] is not None
        current = int(row[0]) if exists else 0
        obs_seq, event_seq = (int(row[1]), int(row[2])) if exists else (0, 0)
        if prep.expected_version is not None and prep.expected_version != current:
            raise StaleStateError(
                f"user {prep.user_id!r} is at version {current}, the change expected "
                f"{prep.expected_version}; reload and retry"
            )
        if prep.empty:
            conn.execute("COMMIT")
            return current
        if not exists:
            # Start above every version a deleted user had: versions never repeat.
            current = int(row[3])
        known = set(row[4])
        fresh = [r for r in obs_rows if r[1] not in known]
        new_version = current + 1
        with conn.pipeline(), conn.cursor() as cur:
            if not exists:
                cur.execute("INSERT INTO users (user_id, version) VALUES (%s, %s)", (uid, current))
            if fresh:
                cur.executemany(_INSERT_OBS, [(r[0], r[1], obs_seq + i + 1, *r[3:]) for i, r in enumerate(fresh)])
            if prep.delete_observations:
                cur.execute(
                    "DELETE FROM observations WHERE user_id = %s AND id = ANY(%s::text[])",
                    (uid, [_esc(o) for o in prep.delete_observations]),
                )
            if prep.delete_edges:
                cur.execute(
                    "DELETE FROM edges e USING unnest(%s::text[], %s::text[]) AS d(src, dst) "
                    "WHERE e.user_id = %s AND e.src = d.src AND e.dst = d.dst",
                    ([_esc(s) for s, _ in prep.delete_edges], [_esc(d) for _, d in prep.delete_edges], uid),
                )
            if prep.delete_nodes:
                gone = [_esc(n) for n in prep.delete_nodes]
                # Explicit rather than relying on ON DELETE CASCADE alone (as in SQLite).
                cur.execute(
                    "DELETE FROM edges WHERE user_id = %s AND (src = ANY(%s::text[]) OR dst = ANY(%s::text[]))",
                    (uid, gone, gone),
                )
                cur.execute("DELETE FROM nodes WHERE user_id = %s AND id = ANY(%s::text[])", (uid, gone))
            if prep.upsert_nodes:
                # Row by row (pipelined): a repeated id updates the row it just
                # inserted, as in SQLite, where one multi-row upsert would fail.
                cur.executemany(_UPSERT_NODE, [_node_row_in(r) for r in prep.upsert_nodes])
            if prep.upsert_edges:
                cur.executemany(_UPSERT_EDGE, [_edge_row_in(r) for r in prep.upsert_edges])
            if prep.events:
                cur.executemany(
                    _INSERT_EVENT,
                    [(uid, event_seq + i + 1, _esc(r[2]), *r[3:]) for i, r in enumerate(prep.events)],
                )
            cur.execute(
                "UPDATE users SET version = %s, obs_seq = %s, event_seq = %s, updated_at = now() WHERE user_id = %s",
                (new_version, obs_seq + len(fresh), event_seq + len(prep.events), uid),
            )
            cur.execute("COMMIT")
        return new_version

    def delete_user(self, user_id: str) -> None:
        """Remove every row of a user: log, nodes, edges, journal, version and the
        user's cache rows. Unknown users are a no-op.

        The store-wide version floor is raised to the deleted version, so a user
        re-created later gets versions never seen before. PostgreSQL keeps dead row
        versions until ``VACUUM`` reclaims them (see :meth:`vacuum`).
        """
        codec.check_text(user_id, "user_id")
        uid = _esc(user_id)
        with self._tx(user=uid) as conn:
            conn.execute(
                "UPDATE store_state SET version_floor = GREATEST(version_floor, "
                "coalesce((SELECT version FROM users WHERE user_id = %s), 0)) WHERE id = 1",
                (uid,),
            )
            for table in ("edges", "nodes", "observations", "journal", "cache", "users"):
                conn.execute(f"DELETE FROM {table} WHERE user_id = %s", (uid,))

    def vacuum(self, *, full: bool = False) -> None:
        """``VACUUM (ANALYZE)`` the store's tables, so space of deleted rows is reused.

        Parameters
        ----------
        full : bool
            ``VACUUM FULL``: rewrite the tables so deleted rows leave the data files
            (takes exclusive locks: every other client waits meanwhile).
        """
        tables = sql.SQL(", ").join(sql.Identifier(t) for t in ("users", *_USER_TABLES, "cache", "meta"))
        stmt = sql.SQL("VACUUM (FULL, ANALYZE) {}" if full else "VACUUM (ANALYZE) {}").format(tables)
        with self._conn() as conn:
            conn.execute(stmt)  # autocommit: VACUUM cannot run inside a transaction

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
        uid = _esc(user_id)
        with self._conn() as conn:
            if wait == 0:
                got = conn.execute(f"SELECT pg_try_advisory_lock({_LOCK_JOB}, {_USER_KEY})", (uid,)).fetchone()
                if not got or not got[0]:
                    raise StoreBusyError(f"user {user_id!r} is locked by another job")
            else:
                conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{max(1, int(wait * 1000))}ms",))
                try:
                    conn.execute(f"SELECT pg_advisory_lock({_LOCK_JOB}, {_USER_KEY})", (uid,))
                except pg_errors.LockNotAvailable:
                    raise StoreBusyError(
                        f"user {user_id!r} stayed locked by another job for more than {wait:g} s"
                    ) from None
                finally:
                    conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{int(self._busy * 1000)}ms",))
            try:
                yield
            finally:
                if not conn.closed:
                    conn.execute(f"SELECT pg_advisory_unlock({_LOCK_JOB}, {_USER_KEY})", (uid,))

    # -- meta and caches --------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        """Read a store-wide metadata value (``None`` when unset)."""
        codec.check_text(key, "key")
        with self._conn() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = %s", (_esc(key),)).fetchone()
        return None if row is None else _unesc(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Write a store-wide metadata value."""
        codec.check_text(key, "key", nonempty=True)
        codec.check_text(value, "value")
        with self._conn() as conn:
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (_esc(key), _esc(value)),
            )

    def cache_get(self, namespace: str, key: str, *, user_id: str | None = None) -> str | None:
        """Read a cached value (``None`` when absent); ``user_id`` scopes it to a user."""
        scope = _scope(user_id)
        codec.check_text(namespace, "namespace")
        codec.check_text(key, "key")
        with self._conn() as conn:
            row = conn.execute(
                "SELECT value FROM cache WHERE user_id = %s AND namespace = %s AND key = %s",
                (scope, _esc(namespace), _esc(key)),
            ).fetchone()
        return None if row is None else _unesc(row[0])

    def cache_put(self, namespace: str, key: str, value: str, *, user_id: str | None = None) -> None:
        """Write (or replace) a cached value."""
        scope = _scope(user_id)
        codec.check_text(namespace, "namespace", nonempty=True)
        codec.check_text(key, "key")
        codec.check_text(value, "value")
        with self._conn() as conn:
            conn.execute(
                "INSERT INTO cache (user_id, namespace, key, value) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (user_id, namespace, key) DO UPDATE SET value = excluded.value, updated_at = now()",
                (scope, _esc(namespace), _esc(key), _esc(value)),
            )

    def cache_delete(self, namespace: str, key: str | None = None, *, user_id: str | None = None) -> int:
        """Delete one cached entry, or a whole namespace when ``key`` is None; returns the count."""
        scope = _scope(user_id)
        codec.check_text(namespace, "namespace")
        with self._conn() as conn:
            if key is None:
                cur = conn.execute(
                    "DELETE FROM cache WHERE user_id = %s AND namespace = %s", (scope, _esc(namespace))
                )
            else:
                codec.check_text(key, "key")
                cur = conn.execute(
                    "DELETE FROM cache WHERE user_id = %s AND namespace = %s AND key = %s",
                    (scope, _esc(namespace), _esc(key)),
                )
            return int(cur.rowcount)

    def _extras(self) -> tuple[list[tuple[str, str]], list[tuple[str, str, str, str]]]:
        """Every metadata and cache row, from one snapshot (for :mod:`personatree.store.copy`)."""
        with self._tx(snapshot=True) as conn:
            meta = [(_unesc(k), _unesc(v)) for k, v in conn.execute("SELECT key, value FROM meta")]
            cache = [
                (_unesc(u), _unesc(n), _unesc(k), _unesc(v))
                for u, n, k, v in conn.execute("SELECT user_id, namespace, key, value FROM cache")
            ]
        return sorted(meta), sorted(cache)

    # -- inspection ---------------------------------------------------------------------------------

    def counts(self, user_id: str | None = None) -> dict[str, int]:
        """Rows per table, for one user or for the whole store (the SQLite store's keys)."""
        tables: tuple[str, ...]
        if user_id is None:
            tables = ("users", *_USER_TABLES, "cache", "meta")
            params: tuple[Any, ...] = ()
            where = ""
        else:
            codec.check_text(user_id, "user_id")
            tables = ("users", *_USER_TABLES, "cache")
            where = " WHERE user_id = %s"
            params = (_esc(user_id),) * len(tables)
        query = "SELECT " + ", ".join(f"(SELECT count(*) FROM {t}{where})" for t in tables)
        with self._tx(snapshot=True) as conn:
            row = conn.execute(query, params).fetchone()
        assert row is not None
        return {t: int(n) for t, n in zip(tables, row)}

    def checksum(self, user_id: str) -> str:
        """A store-independent SHA-256 of the user's observations, nodes, edges and journal
        (see :func:`personatree.store.codec.digest`); equal to SQLite's for equal data."""
        codec.check_text(user_id, "user_id")
        uid = _esc(user_id)
        with self._tx(snapshot=True) as conn:
            obs = conn.execute(f"{_SELECT_OBS} ORDER BY seq", (uid,)).fetchall()
            nodes = conn.execute(_SELECT_NODES, (uid,), binary=True).fetchall()
            edges = conn.execute(_SELECT_EDGES, (uid,)).fetchall()
            events = conn.execute(_SELECT_EVENTS, (uid,)).fetchall()
        return codec.digest(
            [_obs_out(r) for r in obs],
            [codec.decode_node(_node_row_out(r)) for r in nodes],
            [codec.decode_edge(_edge_row_out(r)) for r in edges],
            [_event_out(r) for r in events],
        )

    def integrity_check(self) -> list[str]:
        """Problems found in the database; an empty list means healthy.

        Checks the schema version, the version-floor row, edges whose ends are missing,
        rows without a user row, embedding dimensions, and log counters behind the
        stored positions.
        """
        problems: list[str] = []
        with self._tx(snapshot=True) as conn:
            version = self._schema_version(conn)
            if version != latest_pg_version():
                problems.append(f"schema version {version}, expected {latest_pg_version()}")
            if conn.execute("SELECT count(*) FROM store_state WHERE id = 1").fetchone() != (1,):
                problems.append("the store_state row is missing")
            for uid, src, dst in conn.execute(
                "SELECT e.user_id, e.src, e.dst FROM edges e "
                "LEFT JOIN nodes a ON a.user_id = e.user_id AND a.id = e.src "
                "LEFT JOIN nodes b ON b.user_id = e.user_id AND b.id = e.dst "
                "WHERE a.id IS NULL OR b.id IS NULL"
            ):
                problems.append(f"edge {_unesc(src)!r}->{_unesc(dst)!r} of user {_unesc(uid)!r} references a missing node")
            for table in ("observations", "nodes", "journal"):
                row = conn.execute(
                    f"SELECT count(*) FROM {table} t WHERE NOT EXISTS "
                    "(SELECT 1 FROM users u WHERE u.user_id = t.user_id)"
                ).fetchone()
                if row and row[0]:
                    problems.append(f"{row[0]} {table} rows belong to no user row")
            for uid, counter, top in conn.execute(
                "SELECT u.user_id, u.obs_seq, max(o.seq) FROM users u JOIN observations o "
                "ON o.user_id = u.user_id GROUP BY u.user_id, u.obs_seq HAVING max(o.seq) > u.obs_seq"
            ):
                problems.append(f"user {_unesc(uid)!r}: observation counter {counter} behind seq {top}")
            for uid, counter, top in conn.execute(
                "SELECT u.user_id, u.event_seq, max(j.seq) FROM users u JOIN journal j "
                "ON j.user_id = u.user_id GROUP BY u.user_id, u.event_seq HAVING max(j.seq) > u.event_seq"
            ):
                problems.append(f"user {_unesc(uid)!r}: journal counter {counter} behind seq {top}")
        return problems


def _scope(user_id: str | None) -> str:
    # '' is the unscoped cache; a real user id must therefore be non-empty.
    if user_id is None:
        return ""
    return _esc(codec.check_text(user_id, "user_id", nonempty=True))
