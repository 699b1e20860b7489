"""The default store: one SQLite file for many users (stdlib ``sqlite3``).

Durability and concurrency choices, and why:

* WAL journal with ``synchronous=FULL``: every acknowledged commit is fsynced to the
  WAL, so a crash or SIGKILL loses nothing that ``commit`` returned for (NORMAL could
  lose the last commits on power loss).
* Writes take the lock up front with ``BEGIN IMMEDIATE``; a deferred transaction that
  later upgrades to a writer can fail with SQLITE_BUSY without waiting. The wait is
  bounded by ``busy_timeout_s``; beyond it :class:`~personatree.errors.StoreBusyError`.
* Reads run in a (deferred) transaction too, so ``load_graph`` sees one snapshot of
  nodes and edges even while other processes write.
* One connection per thread (and a fresh set after ``fork``): sqlite3 connections must
  not be shared across processes, and per-thread connections let threads read in
  parallel under WAL.
* ``foreign_keys=ON`` makes dangling edges impossible; ``secure_delete=ON`` zeroes
  deleted content so that ``delete_user`` followed by :meth:`SQLiteStore.vacuum`
  leaves none of the user's bytes in the file.

Write order inside one commit (the same in every store): observations, delete_edges,
delete_nodes (with incident edges), upsert_nodes, upsert_edges, events. Deletes come
before upserts, so everything named in an upsert list exists after the commit.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator, Sequence

from ..errors import ConfigError, StoreBusyError, StoreError, VacuumPendingError
from ..ports import ChangeSet, JournalEvent
from ..types import Edge, Node, Observation
from . import codec, rows
from .closing import Closing
from .codec import EDGE_COLUMNS, EVENT_COLUMNS, NODE_COLUMNS, OBSERVATION_COLUMNS
from .migrate import is_busy, latest_version, migrate
from .rows import (
    EVENT_SEQ,
    OBS_SEQ,
    STORE_TABLES,
    USER_COUNT_TABLES,
    cache_scope,
)

__all__ = ["SQLiteStore"]

# SQLite's default limit on bound parameters is 32766 (3.32+); stay far below it.
_CHUNK = 500


def _marks(n: int) -> str:
    return rows.placeholders(n, "?")


_INSERT_OBS = rows.insert_sql("observations", OBSERVATION_COLUMNS, _marks(len(OBSERVATION_COLUMNS)))
_UPSERT_NODE = rows.upsert_sql("nodes", NODE_COLUMNS, 2, _marks(len(NODE_COLUMNS)))
_UPSERT_EDGE = rows.upsert_sql("edges", EDGE_COLUMNS, 3, _marks(len(EDGE_COLUMNS)))
_INSERT_EVENT = rows.insert_sql("journal", EVENT_COLUMNS, _marks(len(EVENT_COLUMNS)))
_SELECT_OBS = rows.select_sql("observations", OBSERVATION_COLUMNS)
# rowid order is first-insertion order: an upsert keeps the row (and its rowid).
_SELECT_NODES = rows.select_sql("nodes", NODE_COLUMNS, where="user_id = ?", order_by="rowid")
_SELECT_EDGES = rows.select_sql("edges", EDGE_COLUMNS, where="user_id = ?", order_by="rowid")
_SELECT_EVENTS = rows.select_sql("journal", EVENT_COLUMNS, where="user_id = ?", order_by="seq")
_UPSERT_ARCHIVE = rows.upsert_sql("archive", NODE_COLUMNS, 2, _marks(len(NODE_COLUMNS)))
_SELECT_ARCHIVE = rows.select_sql("archive", NODE_COLUMNS, where="user_id = ?")
_DELETE_USER = rows.delete_user_sql("?", "max")


# A vacuum that could not finish (other connections were reading) is recorded in ``meta``
# under this key, so that the next open, write or vacuum() of the store completes it.
# The value names the deleted users by a hash only: the marker itself must not keep
# the identity of someone whose data is being erased.
_VACUUM_KEY = "vacuum_pending"
# An opportunistic attempt (on open, after a commit) does not wait for locks or readers
# at all: finishing a vacuum must never make an ordinary call slower; it tries again later.
_QUIET_BUSY_MS = 0


def _user_mark(user_id: str) -> str:
    return hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:32]


def _now() -> str:
    return codec.encode_time(datetime.now(timezone.utc))


class SQLiteStore(Closing):
    """A :class:`~personatree.ports.Store` in one SQLite file.

    Parameters
    ----------
    path : str or Path
        The database file (created with its parent folders when missing).
    busy_timeout_s : float
        How long a write waits for another writer's lock before
        :class:`~personatree.errors.StoreBusyError`.

    Raises
    ------
    ConfigError
        If ``busy_timeout_s`` is not a positive finite number.
    MigrationError
        If the file was written by a newer personatree, or migrating it failed.
    StoreError
        If the file cannot be opened or is not a SQLite database.

    Notes
    -----
    Thread-safe; usable from several processes at once. Use as a context manager or
    call :meth:`close`.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_s: float = 10.0) -> None:
        if (
            isinstance(busy_timeout_s, bool)
            or not isinstance(busy_timeout_s, (int, float))
            or not math.isfinite(busy_timeout_s)
            or busy_timeout_s <= 0
        ):
            raise ConfigError(f"busy_timeout_s must be a positive number of seconds, got {busy_timeout_s!r}")
        self._path = Path(path).expanduser()
        self._busy = float(busy_timeout_s)
        self._closed = False
        self._pid = os.getpid()
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._registry = threading.Lock()
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the folder for the store {self._path}: {exc}") from None
        try:
            conn = self._conn()
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreError(f"{self._path}: SQLite refused WAL mode (journal_mode={mode})")
            migrate(conn)
        except sqlite3.Error as exc:
            self.close()
            raise self._error(exc) from exc
        except BaseException:
            self.close()
            raise
        self._finish_pending_vacuum()

    # -- plumbing ---------------------------------------------------------------------

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    @property
    def busy_timeout_s(self) -> float:
        """The configured lock wait in seconds."""
        return self._busy

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self._path)!r})"

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                str(self._path), timeout=self._busy, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise self._error(exc) from exc
        try:
            # Per-connection settings (not stored in the file).
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA secure_delete = ON")
        except sqlite3.Error as exc:
            conn.close()
            raise self._error(exc) from exc
        return conn

    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreError(f"the store {self._path} is closed")
        if os.getpid() != self._pid:
            # A forked child must never touch the parent's connections (SQLite forbids
            # it); drop them without closing and start afresh.
            self._pid = os.getpid()
            self._local = threading.local()
            self._conns = []
            self._registry = threading.Lock()
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
            with self._registry:
                self._conns.append(conn)
        return conn

    def _error(self, exc: sqlite3.Error) -> StoreError:
        """Translate a sqlite3 error into the library's exception tree."""
        msg = str(exc)
        if is_busy(exc):
            return StoreBusyError(
                f"the store {self._path} stayed locked by another writer for more than "
                f"{self._busy:g} s (busy_timeout_s); retry later or raise busy_timeout_s"
            )
        if isinstance(exc, sqlite3.IntegrityError) and "FOREIGN KEY" in msg:
            return StoreError(
                "commit refused: an edge references a node that does not exist for this user "
                "(FOREIGN KEY constraint failed); nothing was written"
            )
        if "not a database" in msg or "malformed" in msg:
            return StoreError(f"{self._path} is not a usable personatree SQLite store: {msg}")
        return StoreError(f"SQLite error on {self._path}: {msg}")

    @contextmanager
    def _tx(self, *, write: bool) -> Iterator[sqlite3.Connection]:
        """One transaction: ``BEGIN IMMEDIATE`` for writes, a snapshot for reads.

        Any exception rolls everything back; sqlite3 errors are translated.
        """
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        except sqlite3.Error as exc:
            raise self._error(exc) from exc
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
            if isinstance(exc, sqlite3.Error):
                raise self._error(exc) from exc
            raise

    def close(self) -> None:
        """Close every connection this store opened (idempotent)."""
        self._closed = True
        if os.getpid() != self._pid:
            return
        with self._registry:
            conns, self._conns = self._conns, []
        for conn in conns:
            try:
                conn.close()
            except sqlite3.Error:
                pass
        self._local = threading.local()

    def schema_version(self) -> int:
        """The schema version of the file (``PRAGMA user_version``)."""
        with self._tx(write=False) as conn:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])

    # -- reads ------------------------------------------------------------------------

    def users(self) -> list[str]:
        """Ids of all users with stored data, sorted (by code point, as ``sorted``)."""
        with self._tx(write=False) as conn:
            return [r[0] for r in conn.execute("SELECT user_id FROM users ORDER BY user_id")]

    def version(self, user_id: str) -> int:
        """The user's version counter (0 when nothing is stored)."""
        codec.check_text(user_id, "user_id")
        with self._tx(write=False) as conn:
            return self._version(conn, user_id)

    @staticmethod
    def _version(conn: sqlite3.Connection, user_id: str) -> int:
        row = conn.execute("SELECT version FROM users WHERE user_id = ?", (user_id,)).fetchone()
        return 0 if row is None else int(row[0])

    @staticmethod
    def _version_floor(conn: sqlite3.Connection) -> int:
        row = conn.execute("SELECT version_floor FROM store_state WHERE id = 1").fetchone()
        return 0 if row is None else int(row[0])

    @staticmethod
    def _existing(conn: sqlite3.Connection, user_id: str, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for i in range(0, len(ids), _CHUNK):
            chunk = ids[i : i + _CHUNK]
            sql = f"SELECT id FROM observations WHERE user_id = ? AND id IN ({_marks(len(chunk))})"
            found.update(r[0] for r in conn.execute(sql, (user_id, *chunk)))
        return found

    def existing_observations(self, user_id: str, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are already in the user's log."""
        codec.check_text(user_id, "user_id")
        wanted = list(dict.fromkeys(codec.check_ids(ids, "ids")))
        with self._tx(write=False) as conn:
            return self._existing(conn, user_id, wanted)

    def observations(self, user_id: str, ids: Sequence[str] | None = None) -> list[Observation]:
        """Observations of a user in log order (all, or those with the given ids; unknown ids are skipped)."""
        codec.check_text(user_id, "user_id")
        with self._tx(write=False) as conn:
            if ids is None:
                found = conn.execute(f"{_SELECT_OBS} WHERE user_id = ? ORDER BY seq", (user_id,)).fetchall()
            else:
                wanted = list(dict.fromkeys(codec.check_ids(ids, "ids")))
                found = []
                for i in range(0, len(wanted), _CHUNK):
                    chunk = wanted[i : i + _CHUNK]
                    sql = f"{_SELECT_OBS} WHERE user_id = ? AND id IN ({_marks(len(chunk))})"
                    found.extend(conn.execute(sql, (user_id, *chunk)))
                found.sort(key=lambda r: r[OBS_SEQ])
        return [codec.decode_observation(r) for r in found]

    def load_graph(self, user_id: str) -> tuple[list[Node], list[Edge]]:
        """All nodes (with embeddings, in first-insertion order) and edges of a user."""
        nodes, edges, _ = self.load_graph_with_version(user_id)
        return nodes, edges

    def load_graph_with_version(self, user_id: str) -> tuple[list[Node], list[Edge], int]:
        """Nodes, edges and the version they belong to, read from one snapshot.

        A cache keyed by the returned version is exact: a concurrent commit cannot slip
        between reading the graph and reading the version.
        """
        codec.check_text(user_id, "user_id")
        with self._tx(write=False) as conn:
            version = self._version(conn, user_id)
            node_rows = conn.execute(_SELECT_NODES, (user_id,)).fetchall()
            edge_rows = conn.execute(_SELECT_EDGES, (user_id,)).fetchall()
        return codec.decode_nodes(node_rows), codec.decode_edges(edge_rows), version

    def events(self, user_id: str) -> list[JournalEvent]:
        """The user's journal in order."""
        codec.check_text(user_id, "user_id")
        with self._tx(write=False) as conn:
            found = conn.execute(_SELECT_EVENTS, (user_id,)).fetchall()
        return [codec.decode_event(r) for r in found]

    def archive_ids(self, user_id: str) -> list[str]:
        """Ids of the user's archived leaves, in archiving order."""
        codec.check_text(user_id, "user_id")
        with self._tx(write=False) as conn:
            return [r[0] for r in conn.execute(
                "SELECT id FROM archive WHERE user_id = ? ORDER BY rowid", (user_id,))]

    def archive(self, user_id: str, ids: Sequence[str] | None = None) -> list[Node]:
        """The user's archived leaves (all, or those with the given ids), in archiving order."""
        codec.check_text(user_id, "user_id")
        wanted = None if ids is None else codec.check_ids(ids, "ids")
        with self._tx(write=False) as conn:
            if wanted is None:
                found = conn.execute(f"{_SELECT_ARCHIVE} ORDER BY rowid", (user_id,)).fetchall()
            else:
                found = []
                for i in range(0, len(wanted), _CHUNK):
                    chunk = wanted[i : i + _CHUNK]
                    sql = f"{_SELECT_ARCHIVE} AND id IN ({_marks(len(chunk))}) ORDER BY rowid"
                    found.extend(conn.execute(sql, (user_id, *chunk)))
        return codec.decode_nodes(found)

    # -- writes -----------------------------------------------------------------------

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
        now = _now()
        uid = prep.user_id
        with self._tx(write=True) as conn:
            row = conn.execute(
                "SELECT version, obs_seq, event_seq FROM users WHERE user_id = ?", (uid,)
            ).fetchone()
            current, obs_seq, event_seq = (0, 0, 0) if row is None else row
            rows.check_expected_version(prep, current)
            if prep.empty:
                return int(current)
            if row is None:
                # A (re-)created user starts above every version a deleted user ever
                # had, so a cached (user, version) pair can never refer to other data.
                current = self._version_floor(conn)
                conn.execute(
                    "INSERT INTO users (user_id, version, obs_seq, event_seq, created_at, updated_at) "
                    "VALUES (?, 0, 0, 0, ?, ?)",
                    (uid, now, now),
                )
            if prep.observations:
                known = self._existing(conn, uid, [r[1] for r in prep.observations])
                fresh = [r for r in prep.observations if r[1] not in known]
                conn.executemany(_INSERT_OBS, rows.numbered(fresh, OBS_SEQ, obs_seq))
                obs_seq += len(fresh)
            if prep.delete_observations:
                conn.executemany(
                    "DELETE FROM observations WHERE user_id = ? AND id = ?",
                    [(uid, o) for o in prep.delete_observations],
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
            if prep.upsert_nodes:
                conn.executemany(_UPSERT_NODE, prep.upsert_nodes)
            if prep.upsert_edges:
                conn.executemany(_UPSERT_EDGE, prep.upsert_edges)
            if prep.archive_nodes:
                conn.executemany(_UPSERT_ARCHIVE, prep.archive_nodes)
            if prep.unarchive:
                conn.executemany("DELETE FROM archive WHERE user_id = ? AND id = ?",
                                 [(uid, n) for n in prep.unarchive])
            if prep.events:
                conn.executemany(_INSERT_EVENT, rows.numbered(prep.events, EVENT_SEQ, event_seq))
                event_seq += len(prep.events)
            new_version = int(current) + 1
            conn.execute(
                "UPDATE users SET version = ?, obs_seq = ?, event_seq = ?, updated_at = ? WHERE user_id = ?",
                (new_version, obs_seq, event_seq, now, uid),
            )
            pending = conn.execute("SELECT 1 FROM meta WHERE key = ?", (_VACUUM_KEY,)).fetchone() is not None
        if pending:
            self._finish_pending_vacuum()
        return new_version

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
            for statement in _DELETE_USER:
                conn.execute(statement, (user_id,))
            if vacuum:
                self._mark_pending(conn, "vacuum", {_user_mark(user_id)})
        if vacuum:
            self.vacuum()

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
                    tx.execute("DELETE FROM meta WHERE key = ?", (_VACUUM_KEY,))
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
        return pending is not None and _user_mark(user_id) in pending.get("users", ())

    def _pending(self) -> dict[str, object] | None:
        with self._tx(write=False) as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (_VACUUM_KEY,)).fetchone()
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
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (_VACUUM_KEY,)).fetchone()
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
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (_VACUUM_KEY, value),
            )

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

    # -- meta and caches ----------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        """Read a store-wide metadata value (``None`` when unset)."""
        codec.check_text(key, "key")
        with self._tx(write=False) as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Write a store-wide metadata value."""
        codec.check_text(key, "key", nonempty=True)
        codec.check_text(value, "value")
        with self._tx(write=True) as conn:
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def cache_get(self, namespace: str, key: str, *, user_id: str | None = None) -> str | None:
        """Read a cached value (``None`` when absent).

        Parameters
        ----------
        namespace : str
            The cache (e.g. ``"llm"``, ``"watermark"``).
        key : str
            The entry.
        user_id : str, optional
            Scope the entry to a user, so that ``delete_user`` removes it. Caches that
            hold a user's text must be scoped.
        """
        scope = cache_scope(user_id)
        codec.check_text(namespace, "namespace")
        codec.check_text(key, "key")
        with self._tx(write=False) as conn:
            row = conn.execute(
                "SELECT value FROM cache WHERE user_id = ? AND namespace = ? AND key = ?",
                (scope, namespace, key),
            ).fetchone()
        return None if row is None else str(row[0])

    def cache_put(self, namespace: str, key: str, value: str, *, user_id: str | None = None) -> None:
        """Write (or replace) a cached value; see :meth:`cache_get`."""
        scope = cache_scope(user_id)
        codec.check_text(namespace, "namespace", nonempty=True)
        codec.check_text(key, "key")
        codec.check_text(value, "value")
        with self._tx(write=True) as conn:
            conn.execute(
                "INSERT INTO cache (user_id, namespace, key, value, updated_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (user_id, namespace, key) DO UPDATE SET value = excluded.value, "
                "updated_at = excluded.updated_at",
                (scope, namespace, key, value, _now()),
            )

    def cache_delete(self, namespace: str, key: str | None = None, *, user_id: str | None = None) -> int:
        """Delete one cached entry, or a whole namespace when ``key`` is None.

        Returns
        -------
        int
            How many entries were removed.
        """
        scope = cache_scope(user_id)
        codec.check_text(namespace, "namespace")
        with self._tx(write=True) as conn:
            if key is None:
                cur = conn.execute("DELETE FROM cache WHERE user_id = ? AND namespace = ?", (scope, namespace))
            else:
                codec.check_text(key, "key")
                cur = conn.execute(
                    "DELETE FROM cache WHERE user_id = ? AND namespace = ? AND key = ?", (scope, namespace, key)
                )
            return int(cur.rowcount)

    # -- inspection -------------------------------------------------------------------

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
            obs = conn.execute(f"{_SELECT_OBS} WHERE user_id = ? ORDER BY seq", (user_id,)).fetchall()
            nodes = conn.execute(_SELECT_NODES, (user_id,)).fetchall()
            edges = conn.execute(_SELECT_EDGES, (user_id,)).fetchall()
            events = conn.execute(_SELECT_EVENTS, (user_id,)).fetchall()
            archive = conn.execute(_SELECT_ARCHIVE, (user_id,)).fetchall()
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


    # -- per-user write turns ------------------------------------------------------------

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
        from .userlock import lock_path, user_file_turn

        codec.check_text(user_id, "user_id")
        if self._closed:
            raise StoreError(f"the store {self._path} is closed")
        with user_file_turn(lock_path(self._path), user_id, self._busy if timeout_s is None else timeout_s):
            yield
