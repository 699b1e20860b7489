"""``personatree serve`` as a command: several uvicorn workers on one PostgreSQL, four
concurrent HTTP clients, every acknowledged write stored exactly once, and no key in
the server's log. Slow: each worker process loads the embedder.

The command's refusals (no keys, a malformed key file) are fast and run by default.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from personatree.cli import app

from .pg_fixtures import pg_server_url, pg_url  # noqa: F401  (fixtures)
from .rest_server import serve_command

ADMIN = "workers-admin-key-0123456789"
CLIENT_KEYS = [f"client-{i}-key-0123456789abcdef" for i in range(4)]


def test_serve_refuses_to_start_without_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PERSONATREE_API_KEYS", raising=False)
    runner = CliRunner()
    r = runner.invoke(app, ["serve", "--store", str(tmp_path / "m.db")])
    assert r.exit_code == 1 and "error: ConfigError: no API keys" in r.output
    bad = tmp_path / "keys.txt"
    bad.write_text("short ana\n", encoding="utf-8")
    r = runner.invoke(app, ["serve", "--store", str(tmp_path / "m.db"), "--keys-file", str(bad)])
    assert r.exit_code == 1 and "at least 16 characters" in r.output and "short ana" not in r.output
    assert not (tmp_path / "m.db").exists()


def _client(url: str, i: int, n: int, acked: list[str], errors: list[str]) -> None:
    token, user = CLIENT_KEYS[i], f"user{i}"
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=180) as c:
        for j in range(n):
            # Each client writes its own user and a shared one, so commits race.
            for who in (user, "shared"):
                r = c.post(f"/v1/users/{who}/observations",
                           json={"text": f"Note {j} from client {i}: I keep a diary about {who} topics number {j}.",
                                 "session_id": f"c{i}"})
                if r.status_code != 200:
                    errors.append(f"{r.status_code} {r.text[:200]}")
                    continue
                acked.append(r.json()["observation_id"])
            r = c.post(f"/v1/users/{user}/recall", json={"query": "what does the diary say?", "budget": 100})
            if r.status_code != 200:
                errors.append(f"recall {r.status_code} {r.text[:200]}")
        if c.get("/v1/users/user0/stats").status_code != (200 if i == 0 else 403):
            errors.append(f"client {i} crossed into user0")


@pytest.mark.slow
def test_four_clients_on_postgres_with_two_workers(tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    keys = tmp_path / "keys.txt"
    keys.write_text("\n".join([f"{ADMIN} * admin"] + [f"{k} user{i},shared client{i}"
                                                     for i, k in enumerate(CLIENT_KEYS)]) + "\n", encoding="utf-8")
    log = tmp_path / "server.log"
    n = 6
    server = serve_command(pg_url, keys, log, workers=2)
    url = next(server)
    try:
        acked: list[str] = []
        errors: list[str] = []
        threads = [threading.Thread(target=_client, args=(url, i, n, acked, errors)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors[:5]
        assert len(acked) == 4 * n * 2 and len(set(acked)) == len(acked)
        admin = {"Authorization": f"Bearer {ADMIN}"}
        stored: list[Any] = []
        for user in [f"user{i}" for i in range(4)] + ["shared"]:
            doc = httpx.get(f"{url}/v1/users/{user}/export", headers=admin, timeout=120).json()
            stored.extend(o["id"] for o in doc["observations"])
        assert sorted(stored) == sorted(acked)  # every acknowledged write, exactly once
        shared = httpx.get(f"{url}/v1/users/shared/stats", headers=admin, timeout=60).json()
        assert shared["observations"] == 4 * n
    finally:
        server.close()
    text = log.read_text(encoding="utf-8", errors="replace")
    assert "POST /v1/users/shared/observations" in text  # requests are logged ...
    assert ADMIN not in text and not any(k in text for k in CLIENT_KEYS)  # ... keys never
