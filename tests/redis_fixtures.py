"""A real Redis for the tests: Debian's ``redis-server`` on 127.0.0.1, on a free port.

No persistence (``--save '' --appendonly no``), its own temporary folder, stopped
at the end of the test. ``--rdbcompression no`` keeps ``DUMP`` payloads
uncompressed, so a test that looks for a user's text in them can find it. The tests that use it are skipped when ``redis-server``
is not installed, unless ``PERSONATREE_REQUIRE_REDIS=1`` (CI), where they fail.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from typing import Iterator

import pytest

__all__ = ["RedisServer", "redis_server"]

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """One redis-server process that a test can stop and start again on the same port."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.dir = tempfile.mkdtemp(prefix="personatree-redis-")
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:<port>/0``."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server and wait until it answers PING."""
        self.proc = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--rdbcompression", "no",
             "--dir", self.dir, "--daemonize", "no", "--protected-mode", "yes"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import redis

        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=0.2).ping()
                return
            except redis.RedisError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)

    def stop(self) -> None:
        """Stop the server (its data goes with it: no persistence)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.proc = None

    def close(self) -> None:
        """Stop it and remove its folder."""
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A running Redis for one test (skipped without redis-server)."""
    if not os.path.exists(REDIS_SERVER):
        reason = "redis-server is not installed (apt-get install redis-server)"
        if os.environ.get("PERSONATREE_REQUIRE_REDIS") == "1":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.close()
