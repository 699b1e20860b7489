"""Store-wide metadata and caches of the SQLite store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ...errors import StoreError
from .. import codec
from ..rows import cache_scope
from ..snapshots import Snapshot, check_snapshot
from ..turn_docs import TurnDoc, check_turn_docs
from .connection import SQLiteConnection, now_text
from .statements import UPSERT_META

__all__ = ["SQLiteKeyValue"]


class SQLiteKeyValue(SQLiteConnection):
    """The metadata and cache methods of :class:`~personatree.store.sqlite.SQLiteStore`."""

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
            conn.execute(UPSERT_META, (key, value))

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
                (scope, namespace, key, value, now_text()),
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

    def turn_docs(self, user_id: str) -> dict[str, TurnDoc]:
        """Every derived turn document of a user: turn key → ``(digest, doc)``."""
        codec.check_text(user_id, "user_id")
        with self._tx(write=False) as conn:
            rows = conn.execute("SELECT turn, digest, doc FROM turn_docs WHERE user_id = ?", (user_id,))
            return {str(t): (str(d), str(doc)) for t, d, doc in rows}

    def put_turn_docs(self, user_id: str, docs: Mapping[str, TurnDoc], drop: Sequence[str] = ()) -> bool:
        """Write (or replace) derived turn documents and remove others; see :meth:`turn_docs`.

        A cache write from a read path: it waits at most a quarter of a second for
        another writer's lock, and a write that fails is dropped (the documents are
        computed again next time).

        Returns
        -------
        bool
            Whether the rows were written.
        """
        codec.check_text(user_id, "user_id")
        rows = check_turn_docs(docs, drop)
        if not rows and not drop:
            return True
        conn = self._conn()
        conn.execute("PRAGMA busy_timeout = 250")
        try:
            with self._tx(write=True) as tx:
                if drop:
                    tx.executemany("DELETE FROM turn_docs WHERE user_id = ? AND turn = ?", [(user_id, t) for t in drop])
                tx.executemany(
                    "INSERT INTO turn_docs (user_id, turn, digest, doc) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (user_id, turn) DO UPDATE SET digest = excluded.digest, doc = excluded.doc",
                    [(user_id, *r) for r in rows],
                )
            return True
        except StoreError:
            return False
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy * 1000)}")

    def retrieval_snapshot(self, user_id: str) -> Snapshot | None:
        """The user's stored retrieval snapshot ``(version, fingerprint, data)``, if any.

        See :mod:`personatree.store.snapshots`: derived data, deleted by every commit
        of the user.
        """
        codec.check_text(user_id, "user_id")
        with self._tx(write=False) as conn:
            row = conn.execute(
                "SELECT rowid, version, fingerprint FROM retrieval_snapshots WHERE user_id = ?", (user_id,)
            ).fetchone()
            if row is None:
                return None
            # Read through the blob interface, in the same read transaction: a selected
            # blob is assembled once by SQLite and copied again into Python's bytes,
            # and a snapshot is tens of megabytes.
            with conn.blobopen("retrieval_snapshots", "data", int(row[0]), readonly=True) as blob:
                data = blob.read()
        return int(row[1]), str(row[2]), data

    def put_retrieval_snapshot(self, user_id: str, version: int, fingerprint: str, data: bytes) -> bool:
        """Write (or replace) the user's retrieval snapshot, if the user is still at ``version``.

        A cache write from a read path, like :meth:`put_turn_docs`: it waits at most a
        quarter of a second for another writer's lock, and a write that fails is dropped.

        Returns
        -------
        bool
            Whether the row was written (``False`` also when the user has moved on
            from ``version`` or does not exist).
        """
        codec.check_text(user_id, "user_id")
        version, fingerprint, data = check_snapshot(version, fingerprint, data)
        conn = self._conn()
        conn.execute("PRAGMA busy_timeout = 250")
        try:
            with self._tx(write=True) as tx:
                cur = tx.execute(
                    "INSERT INTO retrieval_snapshots (user_id, version, fingerprint, data) "
                    "SELECT user_id, version, ?, ? FROM users WHERE user_id = ? AND version = ? "
                    "ON CONFLICT (user_id) DO UPDATE SET version = excluded.version, "
                    "fingerprint = excluded.fingerprint, data = excluded.data",
                    (fingerprint, data, user_id, version),
                )
                return cur.rowcount > 0
        except StoreError:
            return False
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy * 1000)}")
