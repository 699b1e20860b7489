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

The implementation is split by concern under :mod:`personatree.store.pg`; this module
assembles the class and keeps the public names where they have always been.
"""

from __future__ import annotations

from .pg.keyvalue import PgKeyValue
from .pg.maintenance import PgMaintenance
from .pg.reads import PgReads
from .pg.schema import available_pg_migrations, latest_pg_version
from .pg.url import split_url
from .pg.writes import PgWrites

__all__ = ["PostgresStore", "available_pg_migrations", "latest_pg_version", "split_url"]


class PostgresStore(PgReads, PgWrites, PgKeyValue, PgMaintenance):
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
