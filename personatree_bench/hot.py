"""A throwaway redis-server for the ``personatree-redis`` system of a benchmark run.

Debian's ``redis-server`` on 127.0.0.1 on a free port, without persistence, stopped
when the run closes. Set ``--hot``-less runs aside: only that system needs it.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time

__all__ = ["LocalRedis"]


class LocalRedis:
    """Start ``redis-server`` now; :meth:`close` stops it and removes its folder.

    Raises
    ------
    RuntimeError
        If ``redis-server`` is missing or does not answer within 10 s.
    """

    def __init__(self) -> None:
        exe = shutil.which("redis-server")
        if exe is None:
            raise RuntimeError("the personatree-redis system needs redis-server (apt-get install redis-server)")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        self.folder = tempfile.mkdtemp(prefix="personatree-bench-redis-")
        self.proc = subprocess.Popen([exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--dir", self.folder],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import redis

        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis(port=self.port, socket_connect_timeout=0.2).ping()
                break
            except redis.RedisError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.close()
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)

    @property
    def url(self) -> str:
        """The server's ``redis://`` URL."""
        return f"redis://127.0.0.1:{self.port}/0"

    def close(self) -> None:
        """Stop the server (idempotent)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        shutil.rmtree(self.folder, ignore_errors=True)
