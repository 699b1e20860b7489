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

The implementation is split by concern under this package (:mod:`.statements`,
:mod:`.connection`, :mod:`.reads`, :mod:`.writes`, :mod:`.vacuum`, :mod:`.keyvalue`,
:mod:`.maintenance`), as the PostgreSQL store's is; this module assembles the class.
"""

from __future__ import annotations

import os

from .keyvalue import SQLiteKeyValue
from .maintenance import SQLiteMaintenance
from .reads import SQLiteReads
from .writes import SQLiteWrites

__all__ = ["SQLiteStore"]


class SQLiteStore(SQLiteReads, SQLiteWrites, SQLiteKeyValue, SQLiteMaintenance):
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
        super().__init__(path, busy_timeout_s=busy_timeout_s)
        # A vacuum left pending by an earlier run finishes now if the store is free.
        self._finish_pending_vacuum()
