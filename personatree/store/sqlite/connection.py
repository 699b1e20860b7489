"""The SQLite store's base: settings, per-thread connections, transactions, errors.

The store's methods live in mixins of :class:`SQLiteConnection` (:mod:`.reads`,
:mod:`.writes`, :mod:`.vacuum`, :mod:`.keyvalue`, :mod:`.maintenance`); they reach the
file only through :meth:`SQLiteConnection._conn` and :meth:`SQLiteConnection._tx`, so
fork safety and error translation are decided here once.
"""

from __future__ import annotations

import math
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from ...errors import ConfigError, StoreBusyError, StoreError
from .. import codec
from ..closing import Closing
from ..migrate import is_busy, migrate

__all__ = ["SQLiteConnection", "now_text"]


def now_text() -> str:
    """The current time as the codec's fixed-width UTC text."""
    return codec.encode_time(datetime.now(timezone.utc))


#: How much of a store file SQLite may map into memory (address space, not RAM).
_MMAP_BYTES = 1 << 30


class SQLiteConnection(Closing):
    """Settings, connections and transactions of :class:`~personatree.store.sqlite.SQLiteStore`.

    Opens (creating when missing) and migrates the file; the constructor's parameters
    are documented on ``SQLiteStore``.
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
            # Reads straight from the file's pages mapped into memory instead of a
            # read call per page into SQLite's own cache: a user's retrieval snapshot
            # is tens of megabytes, read whole by a new process's first recall.
            conn.execute(f"PRAGMA mmap_size = {_MMAP_BYTES}")
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
