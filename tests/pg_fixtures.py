"""A real PostgreSQL (with pgvector) for the test session, from the PyPI package ``pgserver``.

The server listens on a unix socket in its data folder only (``listen_addresses=''``),
never on a network interface. When the tests run as root, pgserver runs the server
as the system user ``pgserver`` (created with ``useradd`` on first use), since
PostgreSQL refuses to run as root.

Set ``PERSONATREE_TEST_PG_URL`` to use an existing server instead (a database the
tests may create schemas in). Without pgserver and without that variable the
PostgreSQL tests are skipped, unless ``PERSONATREE_REQUIRE_PG=1`` (CI), where they fail.

Use by importing the fixtures into a test module (``from tests.pg_fixtures import
pg_server_url, pg_url  # noqa: F401``) or by listing this module in ``pytest_plugins``.
The server is a process-wide singleton, so several importing modules share one.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
import uuid
import warnings
from typing import Any, Iterator

import pytest

__all__ = ["pg_server_url", "pg_url", "fresh_schema_url", "drop_schema", "server_url"]

_lock = threading.Lock()
_state: dict[str, Any] = {}


def server_url() -> str:
    """The URL of the session's PostgreSQL (started on first call), or skip/fail."""
    with _lock:
        if "url" in _state:
            return str(_state["url"])
        if "error" in _state:
            _unavailable(str(_state["error"]))
        external = os.environ.get("PERSONATREE_TEST_PG_URL")
        if external:
            _state["url"] = external
            return external
        try:
            with warnings.catch_warnings():
                # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI).
                warnings.simplefilter("ignore")
                import pgserver
        except ImportError as exc:
            _state["error"] = f"pgserver is not installed ({exc}); pip install 'personatree[postgres]' pgserver"
            _unavailable(_state["error"])
        datadir = tempfile.mkdtemp(prefix="personatree-pg-")
        try:
            server = pgserver.get_server(os.path.join(datadir, "data"), cleanup_mode="delete")
            url = server.get_uri()
            import psycopg

            with psycopg.connect(url, autocommit=True) as conn:
                # Once, in public: per-test schemas are dropped with CASCADE, which
                # would drop an extension installed inside one of them.
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
        except Exception as exc:  # noqa: BLE001 - any failure makes PostgreSQL unavailable
            _state["error"] = f"could not start PostgreSQL with pgserver: {type(exc).__name__}: {exc}"
            shutil.rmtree(datadir, ignore_errors=True)
            _unavailable(_state["error"])
        _state["url"] = url
        _state["server"] = server
        # pgserver stops the server and deletes its data at exit; the folder is ours.
        atexit.register(shutil.rmtree, datadir, True)
        return url


def _unavailable(reason: str) -> None:
    if os.environ.get("PERSONATREE_REQUIRE_PG") == "1":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


def fresh_schema_url(base: str, prefix: str = "t") -> str:
    """``base`` with ``?schema=`` (or ``&schema=``) naming a new, unused schema."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    return f"{base}{'&' if '?' in base else '?'}schema={name}"


def drop_schema(url: str) -> None:
    """Drop the schema named in ``url`` with everything in it."""
    import psycopg
    from psycopg import sql

    from personatree.store.postgres import split_url

    conninfo, schema = split_url(url)
    if schema is None:
        return
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture(scope="session")
def pg_server_url() -> str:
    """The session's PostgreSQL URL (no schema)."""
    return server_url()


@pytest.fixture()
def pg_url(pg_server_url: str) -> Iterator[str]:
    """A PostgreSQL URL with a fresh schema of its own, dropped after the test."""
    url = fresh_schema_url(pg_server_url)
    yield url
    drop_schema(url)
