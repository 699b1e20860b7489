"""Running the REST server for tests and benchmarks: a real uvicorn on 127.0.0.1 on a
free port, in a thread of this process (:class:`ThreadServer`) or as the
``personatree serve`` command in a subprocess (:func:`serve_command`)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import httpx

__all__ = ["ThreadServer", "free_port", "serve_command", "wait_healthy"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ThreadServer:
    """uvicorn serving ``app`` in a daemon thread; use as a context manager."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> "ThreadServer":
        self.thread.start()
        deadline = time.monotonic() + 120
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(60)


def wait_healthy(url: str, proc: subprocess.Popen[bytes] | None = None, timeout_s: float = 240) -> None:
    """Wait until ``url``/healthz answers (failing early if ``proc`` exits)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}")
        try:
            if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    raise RuntimeError(f"{url} did not become healthy in {timeout_s:g} s")


def serve_command(store: str, keys_file: Path, log: Path, *, workers: int = 1,
                  extra: tuple[str, ...] = ()) -> Iterator[str]:
    """Run ``python -m personatree serve`` until the generator is closed; yields its URL.

    Its stdout and stderr go to ``log`` (read them after to check what it logged).
    """
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "personatree", "serve", "--store", store, "--keys-file", str(keys_file),
             "--port", str(port), "--workers", str(workers), "--create", *extra],
            stdout=out, stderr=subprocess.STDOUT, env=env)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(url, proc)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
