"""Store-wide metadata and caches of the SQLite store."""

from __future__ import annotations

from .. import codec
from ..rows import cache_scope
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
