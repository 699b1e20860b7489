"""Store-wide metadata and caches of the PostgreSQL store (single statements, autocommit)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ...errors import StoreError
from .. import codec
from ..rows import cache_scope
from ..snapshots import Snapshot, check_snapshot
from ..turn_docs import TurnDoc, check_turn_docs
from .connection import PgConnection
from .locks import LOCK_WRITE, USER_KEY
from .text import esc, unesc

__all__ = ["PgKeyValue"]


def _scope(user_id: str | None) -> str:
    return esc(cache_scope(user_id))


class PgKeyValue(PgConnection):
    """The metadata and cache methods of :class:`~personatree.store.postgres.PostgresStore`."""

    def get_meta(self, key: str) -> str | None:
        """Read a store-wide metadata value (``None`` when unset)."""
        codec.check_text(key, "key")
        with self._conn() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = %s", (esc(key),)).fetchone()
        return None if row is None else unesc(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Write a store-wide metadata value."""
        codec.check_text(key, "key", nonempty=True)
        codec.check_text(value, "value")
        with self._conn() as conn:
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (esc(key), esc(value)),
            )

    def cache_get(self, namespace: str, key: str, *, user_id: str | None = None) -> str | None:
        """Read a cached value (``None`` when absent); ``user_id`` scopes it to a user."""
        scope = _scope(user_id)
        codec.check_text(namespace, "namespace")
        codec.check_text(key, "key")
        with self._conn() as conn:
            row = conn.execute(
                "SELECT value FROM cache WHERE user_id = %s AND namespace = %s AND key = %s",
                (scope, esc(namespace), esc(key)),
            ).fetchone()
        return None if row is None else unesc(row[0])

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
                (scope, esc(namespace), esc(key), esc(value)),
            )

    def cache_delete(self, namespace: str, key: str | None = None, *, user_id: str | None = None) -> int:
        """Delete one cached entry, or a whole namespace when ``key`` is None; returns the count."""
        scope = _scope(user_id)
        codec.check_text(namespace, "namespace")
        with self._conn() as conn:
            if key is None:
                cur = conn.execute(
                    "DELETE FROM cache WHERE user_id = %s AND namespace = %s", (scope, esc(namespace))
                )
            else:
                codec.check_text(key, "key")
                cur = conn.execute(
                    "DELETE FROM cache WHERE user_id = %s AND namespace = %s AND key = %s",
                    (scope, esc(namespace), esc(key)),
                )
            return int(cur.rowcount)

    def turn_docs(self, user_id: str) -> dict[str, TurnDoc]:
        """Every derived turn document of a user: turn key → ``(digest, doc)``."""
        codec.check_text(user_id, "user_id")
        with self._conn() as conn:
            rows = conn.execute("SELECT turn, digest, doc FROM turn_docs WHERE user_id = %s", (esc(user_id),))
            return {unesc(t): (d, unesc(doc)) for t, d, doc in rows}

    def put_turn_docs(self, user_id: str, docs: Mapping[str, TurnDoc], drop: Sequence[str] = ()) -> bool:
        """Write (or replace) derived turn documents and remove others (a cache: a
        write that waits over a quarter of a second for a lock, or fails, is dropped).

        Returns
        -------
        bool
            Whether the rows were written.
        """
        codec.check_text(user_id, "user_id")
        rows = check_turn_docs(docs, drop)
        if not rows and not drop:
            return True
        uid = esc(user_id)
        try:
            with self._tx() as conn:
                conn.execute("SET LOCAL lock_timeout = '250ms'")
                if drop:
                    conn.execute("DELETE FROM turn_docs WHERE user_id = %s AND turn = ANY(%s::text[])",
                                 (uid, [esc(t) for t in drop]))
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO turn_docs (user_id, turn, digest, doc) VALUES (%s, %s, %s, %s) "
                        "ON CONFLICT (user_id, turn) DO UPDATE SET digest = excluded.digest, doc = excluded.doc",
                        [(uid, esc(t), d, esc(doc)) for t, d, doc in rows],
                    )
            return True
        except StoreError:
            return False

    def retrieval_snapshot(self, user_id: str) -> Snapshot | None:
        """The user's stored retrieval snapshot ``(version, fingerprint, data)``, if any.

        See :mod:`personatree.store.snapshots`: derived data, deleted by every commit
        of the user.
        """
        codec.check_text(user_id, "user_id")
        with self._conn() as conn:
            row = conn.execute("SELECT version, fingerprint, data FROM retrieval_snapshots WHERE user_id = %s",
                               (esc(user_id),)).fetchone()
        return None if row is None else (int(row[0]), str(row[1]), bytes(row[2]))

    def put_retrieval_snapshot(self, user_id: str, version: int, fingerprint: str, data: bytes) -> bool:
        """Write (or replace) the user's retrieval snapshot, if the user is still at
        ``version`` (a cache: a write that waits over a quarter of a second for a lock,
        or fails, is dropped).

        Returns
        -------
        bool
            Whether the row was written (``False`` also when the user has moved on
            from ``version`` or does not exist).
        """
        codec.check_text(user_id, "user_id")
        version, fingerprint, data = check_snapshot(version, fingerprint, data)
        try:
            with self._tx() as conn:
                conn.execute("SET LOCAL lock_timeout = '250ms'")
                # The user's write lock: a commit in progress (which deletes the row)
                # cannot finish between this version check and the insert.
                conn.execute(f"SELECT pg_advisory_xact_lock({LOCK_WRITE}, {USER_KEY})", (esc(user_id),))
                cur = conn.execute(
                    "INSERT INTO retrieval_snapshots (user_id, version, fingerprint, data) "
                    "SELECT user_id, version, %s, %s FROM users WHERE user_id = %s AND version = %s "
                    "ON CONFLICT (user_id) DO UPDATE SET version = excluded.version, "
                    "fingerprint = excluded.fingerprint, data = excluded.data",
                    (esc(fingerprint), data, esc(user_id), version),
                )
                return cur.rowcount > 0
        except StoreError:
            return False

    def _extras(self) -> tuple[list[tuple[str, str]], list[tuple[str, str, str, str]]]:
        """Every metadata and cache row, from one snapshot (for :mod:`personatree.store.copy`)."""
        with self._tx(snapshot=True) as conn:
            meta = [(unesc(k), unesc(v)) for k, v in conn.execute("SELECT key, value FROM meta")]
            cache = [
                (unesc(u), unesc(n), unesc(k), unesc(v))
                for u, n, k, v in conn.execute("SELECT user_id, namespace, key, value FROM cache")
            ]
        return sorted(meta), sorted(cache)
