"""Storage backends implementing :class:`~personatree.ports.Store`.

* :class:`SQLiteStore` — the default: one SQLite file (WAL, fsync on commit) for many users.
* :class:`MemoryStore` — an in-process fake with identical semantics, for tests.
* :class:`PostgresStore` — PostgreSQL shared by many app instances (optional extra
  ``personatree[postgres]``; imported on first use so that psycopg stays optional).
* :func:`open_store` — pick one from a URL.

Both stores also offer, beyond the protocol: ``load_graph_with_version``,
``cache_get/cache_put/cache_delete``, ``counts``, ``checksum``, ``integrity_check`` and
``vacuum``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..textcheck import find_text_fault
from .memory import MemoryStore
from .migrate import latest_version
from .sqlite import SQLiteStore

if TYPE_CHECKING:
    from .postgres import PostgresStore

__all__ = ["SQLiteStore", "MemoryStore", "PostgresStore", "open_store", "latest_version"]


def __getattr__(name: str) -> Any:
    # Lazy: importing the package must not require psycopg (an optional dependency).
    if name == "PostgresStore":
        return _postgres().PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _postgres() -> Any:
    try:
        from . import postgres
    except ImportError as exc:
        raise ConfigError(
            f"the PostgreSQL store needs psycopg 3 and psycopg_pool ({exc}); "
            "install them with: pip install 'personatree[postgres]'"
        ) from None
    return postgres


def open_store(
    url: str | Path, *, busy_timeout_s: float = 10.0, pool_size: int = 4
) -> "SQLiteStore | MemoryStore | PostgresStore":
    """Open a store from a URL or a filesystem path.

    Parameters
    ----------
    url : str or Path
        ``memory://`` for an in-memory store; ``sqlite:///relative.db`` or
        ``sqlite:////abs/path.db`` (SQLAlchemy style: three slashes then the path);
        a plain filesystem path to a SQLite file; or ``postgresql://user:pw@host/db``
        (also ``postgres://``, ``postgresql+psycopg://``; ``?schema=name`` selects the
        schema) for :class:`PostgresStore`.
    busy_timeout_s : float
        Lock wait for writers (see :class:`SQLiteStore`, :class:`PostgresStore`).
    pool_size : int
        Most PostgreSQL connections this process opens (ignored by other stores).

    Returns
    -------
    SQLiteStore, MemoryStore or PostgresStore

    Raises
    ------
    ConfigError
        For an empty URL, an unknown scheme, an in-memory SQLite URL, or PostgreSQL
        without the ``postgres`` extra installed.
    MigrationError, StoreError
        If the store cannot be used.
    """
    if isinstance(url, Path):
        url = str(url)
    if not isinstance(url, str) or not url.strip():
        raise ConfigError(f"store URL must be a non-empty string, got {url!r}")
    fault = find_text_fault(url)
    if fault is not None:
        if fault.kind == "nul":
            raise ConfigError("store URL contains a NUL character")
        raise ConfigError(f"store URL is not valid text: {url!r}")
    if "://" not in url:
        return SQLiteStore(url, busy_timeout_s=busy_timeout_s)
    scheme, _, rest = url.partition("://")
    scheme = scheme.lower()
    if scheme == "memory":
        if rest.strip("/"):
            raise ConfigError(f"memory:// takes no path, got {url!r}")
        return MemoryStore()
    if scheme == "sqlite":
        if not rest.startswith("/") or rest == "/":
            raise ConfigError(f"expected sqlite:///relative.db or sqlite:////abs/path.db, got {url!r}")
        path = rest[1:]  # sqlite:///x.db -> x.db ; sqlite:////abs/x.db -> /abs/x.db
        if path in ("", ":memory:") or path.startswith("file:"):
            raise ConfigError(f"{url!r} does not name a database file (use memory:// for an in-memory store)")
        return SQLiteStore(path, busy_timeout_s=busy_timeout_s)
    if scheme in ("postgresql", "postgres") or scheme.startswith("postgresql+"):
        try:
            return _postgres().PostgresStore(url, busy_timeout_s=busy_timeout_s, pool_size=pool_size)
        except UnicodeDecodeError:
            # psycopg's conninfo parser decodes percent-escapes strictly.
            raise ConfigError("PostgreSQL URL has a percent-encoded byte that is not UTF-8") from None
    raise ConfigError(
        f"unknown store URL scheme {scheme!r} in {url!r}; use a file path, sqlite:///file.db, "
        "postgresql://... or memory://"
    )
