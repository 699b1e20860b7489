"""The REST server against a real uvicorn on 127.0.0.1 with a real HTTP client (httpx):
every endpoint, API keys (401, 403, no cross-user access), problem details, the body
limits (413, declared and streamed) and bad input (422).

The server runs in a thread of the test process over the real packaged embedder and
offline judge and a SQLite file; the ``personatree serve`` command itself, with several
workers on PostgreSQL, is in ``test_rest_workers.py``.
"""

from __future__ import annotations

import asyncio
import hashlib
from datetime import timedelta
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

from personatree import AsyncPersonaTree
from personatree.errors import ConfigError
from personatree.rest import ApiKeys, Limits, create_app, load_keys
from personatree.rest.routes import ROUTES

from .helpers import T0, Parts, open_tree
from .rest_server import ThreadServer

ADMIN = "admin-key-0123456789abcdef"
ANA = "ana-key-0123456789abcdef"
BO = "bo-and-cy-key-0123456789"
KEYS = f"{ADMIN} * admin\n{ANA} ana ana-only\n# a comment line\n{BO} bo,cy\n"
MAX_BODY = 16_000
MAX_IMPORT = 2_000_000


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, parts: Parts) -> Iterator[str]:
    tree = open_tree(tmp_path_factory.mktemp("rest") / "rest.db", parts, T0 + timedelta(days=30))
    atree = AsyncPersonaTree(tree, max_threads=4)
    app = create_app(atree, ApiKeys.parse(KEYS), limits=Limits(max_body_bytes=MAX_BODY, max_import_bytes=MAX_IMPORT))
    with ThreadServer(app) as running:
        yield running.url
    asyncio.run(atree.aclose())


@pytest.fixture()
def client(server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server, timeout=120) as c:
        yield c


def is_problem(r: httpx.Response, status: int) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = r.json()
    assert body["status"] == status and body["type"].startswith("urn:personatree:problem:") and body["title"]
    return body


FACTS = ("I moved to Lisbon in 2021 for a job at a bakery.",
         "I have two cats called Miso and Tofu.",
         "I go swimming at the public pool every Tuesday morning.")


def test_every_endpoint(client: httpx.Client) -> None:
    h = auth(ANA)
    one = client.post("/v1/users/ana/observations", headers=h,
                      json={"text": FACTS[0], "at": T0.isoformat(), "session_id": "s1", "metadata": {"via": "test"}})
    assert one.status_code == 200 and one.json()["user_id"] == "ana" and one.json()["decisions"]
    again = client.post("/v1/users/ana/observations", headers=h, json={"text": FACTS[0], "at": T0.isoformat(),
                                                                        "session_id": "s1", "metadata": {"via": "test"}})
    assert again.json()["duplicate"] is True and again.json()["observation_id"] == one.json()["observation_id"]
    batch = client.post("/v1/users/ana/observations/batch", headers=h, json={"interactions": [
        {"messages": [{"role": "user", "content": f}, {"role": "assistant", "content": "Noted."}],
         "at": (T0 + timedelta(days=i + 1)).isoformat()} for i, f in enumerate(FACTS[1:])]})
    assert batch.status_code == 200 and len(batch.json()["reports"]) == 2

    stats = client.get("/v1/users/ana/stats", headers=h).json()
    assert stats["observations"] == 3 and stats["leaves"] >= 3
    rec = client.post("/v1/users/ana/recall", headers=h, json={"query": "what pets does she have?", "budget": 120})
    assert rec.status_code == 200 and "Miso" in rec.json()["text"] and rec.json()["tokens"] <= 120
    item = rec.json()["items"][0]
    assert item["level"] in ("leaf", "mid", "root") and item["sources"] and rec.json()["route"]["probabilities"]
    assert "trace" not in rec.json() or rec.json()["trace"] is None
    own = client.post("/v1/users/ana/recall", headers=h,
                      json={"query": "A kitten needs a home.", "from_user": True})
    assert own.status_code == 200 and own.json()["tokens"] > 0
    traced = client.post("/v1/users/ana/recall", headers=h, json={"query": "pets", "trace": True}).json()
    assert traced["trace"]
    hits = client.post("/v1/users/ana/search", headers=h, json={"query": "swimming pool", "k": 2}).json()["hits"]
    assert len(hits) == 2 and "swimming" in hits[0]["content"]
    leaf = hits[0]["node_id"]
    got = client.get(f"/v1/users/ana/nodes/{leaf}/explanation", headers=h, params={"max_observations": 5}).json()
    ex = got["explanation"]
    assert ex["node_id"] == leaf and ex["observations"][0]["messages"][0]["content"] in FACTS and got["text"]
    first = one.json()["decisions"][0]["leaf_id"]
    ex = client.get(f"/v1/users/ana/nodes/{first}/explanation", headers=h).json()["explanation"]
    assert ex["path"][0]["level"] == "leaf" and ex["observations"][0]["metadata"] == {"via": "test"}
    prof = client.get("/v1/users/ana/profile", headers=h, params={"budget": 200}).json()
    assert prof["user_id"] == "ana" and prof["tokens"] <= 200 and prof["items"]

    dry = client.post("/v1/users/ana/consolidate", headers=h, json={"dry_run": True}, params={"full": "true"}).json()
    assert dry["applied"] is False and dry["plan"]["user_id"] == "ana" and dry["counts"]
    applied = client.post("/v1/users/ana/consolidate", headers=h).json()
    assert applied["applied"] == (not applied["empty"])

    doc = client.get("/v1/users/ana/export", headers=h).json()
    assert doc["user_id"] == "ana" and len(doc["observations"]) == 3
    gone = client.delete(f"/v1/users/ana/nodes/{leaf}", headers=h).json()
    assert leaf in gone["removed"]
    is_problem(client.get(f"/v1/users/ana/nodes/{leaf}/explanation", headers=h), 404)

    assert client.delete("/v1/users/ana", headers=h).status_code == 204
    is_problem(client.get("/v1/users/ana/stats", headers=h), 404)
    imported = client.post("/v1/users/ana/import", headers=h, json=doc)
    assert imported.status_code == 201 and imported.json()["observations"] == 3
    assert client.get("/v1/users/ana/stats", headers=h).json()["observations"] == 3
    conflict = is_problem(client.post("/v1/users/ana/import", headers=h, json=doc), 409)
    assert "already has data" in conflict["detail"]
    is_problem(client.post("/v1/users/bo/import", headers=auth(ADMIN), json=doc), 422)  # the export is ana's


def test_health_and_openapi(client: httpx.Client) -> None:
    assert client.get("/healthz").json()["status"] == "ok"
    doc = client.get("/openapi.json").json()
    assert doc["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    paths = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
    assert {(m, p) for m, p, *_ in ROUTES} <= paths
    recall = doc["paths"]["/v1/users/{user_id}/recall"]["post"]
    assert recall["responses"]["403"]["content"]["application/json"]["schema"]["$ref"].endswith("/Problem")
    assert "RecallIn" in doc["components"]["schemas"] and "RecallOut" in doc["components"]["schemas"]


def test_missing_and_invalid_keys_get_401(client: httpx.Client) -> None:
    for headers in ({}, auth("not-a-key-of-this-server"), {"Authorization": f"Basic {ADMIN}"},
                    {"Authorization": "Bearer"}):
        r = client.post("/v1/users/ana/recall", headers=headers, json={"query": "x"})
        body = is_problem(r, 401)
        assert r.headers["www-authenticate"] == "Bearer"
        assert ADMIN not in r.text and body["type"].endswith(("missing-api-key", "invalid-api-key"))
    is_problem(client.get("/v1/users"), 401)


def _call(client: httpx.Client, method: str, path: str, token: str, user: str) -> httpx.Response:
    url = path.replace("{user_id}", user).replace("{node_id}", "lf_0000")
    body = {"query": "x"} if url.endswith(("/recall", "/search")) else {"text": "hello there"}
    if url.endswith("/batch"):
        body = {"interactions": [{"text": "hello"}]}
    if url.endswith(("/import", "/consolidate")):
        body = {"user_id": user} if url.endswith("/import") else {"dry_run": True}
    return client.request(method, url, headers=auth(token), json=body if method == "POST" else None)


@pytest.mark.parametrize("method,path", [(m, p) for m, p, *_ in ROUTES if "{user_id}" in p])
def test_restricted_key_gets_403_on_every_user_endpoint(client: httpx.Client, method: str, path: str) -> None:
    client.post("/v1/users/dora/observations", headers=auth(ADMIN), json={"text": "I grow tomatoes on my balcony."})
    body = is_problem(_call(client, method, path, ANA, "dora"), 403)
    assert "ana-only" in body["detail"] and ANA not in body["detail"]
    # The same for a user that does not exist: a 403 does not tell whether it does.
    is_problem(_call(client, method, path, BO, "nobody-here"), 403)
    assert client.get("/v1/users/dora/stats", headers=auth(ADMIN)).json()["observations"] == 1  # nothing changed


def test_no_cross_user_access_with_a_restricted_key(client: httpx.Client) -> None:
    admin, bo = auth(ADMIN), auth(BO)
    client.post("/v1/users/eve/observations", headers=admin, json={"text": "My bank PIN hint is my first dog."})
    client.post("/v1/users/bo/observations", headers=bo, json={"text": "I collect vintage postcards."})
    client.post("/v1/users/cy/observations", headers=bo, json={"text": "I play the oboe in an orchestra."})
    listed = client.get("/v1/users", headers=bo).json()["users"]
    assert set(listed) <= {"bo", "cy"} and {"bo", "cy"} <= set(listed)
    assert "eve" in client.get("/v1/users", headers=admin).json()["users"]
    for path in ("/v1/users/eve/export", "/v1/users/eve/stats", "/v1/users/eve/profile"):
        r = client.get(path, headers=bo)
        is_problem(r, 403)
        assert "PIN" not in r.text
    r = client.post("/v1/users/eve/recall", headers=bo, json={"query": "bank PIN"})
    is_problem(r, 403)
    bo_export = client.get("/v1/users/bo/export", headers=bo).json()
    assert all("PIN" not in o["messages"][0]["content"] for o in bo_export["observations"])
    # Path tricks name another route or user, never eve's data under bo's key.
    for path in ("/v1/users/bo/../eve/stats", "/v1/users/bo%2F..%2Feve/stats", "/v1/users/eve%00/stats"):
        assert "PIN" not in client.get(path, headers=bo).text


def test_oversized_bodies_get_413_while_read(client: httpx.Client) -> None:
    h = {**auth(ANA), "content-type": "application/json"}
    big = b'{"text": "' + b"a" * (MAX_BODY + 10) + b'"}'
    body = is_problem(client.post("/v1/users/ana/observations", headers=h, content=big), 413)
    assert f"{MAX_BODY:,}" in body["detail"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        yield b'{"text": "'
        for _ in range(40):
            yield b"b" * 1000
        yield b'"}'

    is_problem(client.post("/v1/users/ana/observations", headers=h, content=chunks()), 413)
    # The import endpoint has its own, larger limit: a body over the general one is read.
    doc = {"format": "personatree.export/1", "user_id": "ana", "padding": "c" * (MAX_BODY * 2)}
    r = client.post("/v1/users/ana/import", headers=auth(ANA), json=doc)
    assert r.status_code in (409, 422)
    is_problem(client.post("/v1/users/ana/import", headers=h, content=b"{" + b" " * MAX_IMPORT + b"}"), 413)


@pytest.mark.parametrize("path,body", [
    ("/recall", {"query": ""}),
    ("/recall", {"query": "x", "budget": 0}),
    ("/recall", {"query": "x", "bugdet": 10}),
    ("/recall", {"query": "x", "from_user": "maybe"}),
    ("/recall", {"query": "x", "levels": ["twig"]}),
    ("/search", {"query": "x", "k": 0}),
    ("/search", {}),
    ("/observations", {"text": "a", "messages": [{"role": "user", "content": "b"}]}),
    ("/observations", {"messages": [{"role": "robot", "content": "b"}]}),
    ("/observations", {"text": "hi", "at": "not a time"}),
    ("/observations/batch", {"interactions": []}),
    ("/consolidate", {"dry_run": "maybe"}),
])
def test_bad_input_gets_422(client: httpx.Client, path: str, body: dict[str, Any]) -> None:
    problem = is_problem(client.post(f"/v1/users/ana{path}", headers=auth(ANA), json=body), 422)
    assert problem["errors"] and all("input" not in e for e in problem["errors"])


def test_library_errors_are_problems(client: httpx.Client) -> None:
    h = auth(ADMIN)
    bad_id = is_problem(client.post("/v1/users/fay/observations", headers=h,
                                    json={"text": "hello", "observation_id": "bad id\n"}), 422)
    assert bad_id["error"] == "InputError" and bad_id["type"] == "urn:personatree:problem:input"
    blank = is_problem(client.post("/v1/users/fay/observations", headers=h, json={"text": "   "}), 422)
    assert blank["error"] in ("MessageError", "InputError")
    unknown = is_problem(client.post("/v1/users/nobody-at-all/recall", headers=h, json={"query": "hi"}), 404)
    assert unknown["error"] == "UnknownUserError" and unknown["instance"] == "/v1/users/nobody-at-all/recall"
    is_problem(client.get("/v1/no/such/route", headers=h), 404)
    is_problem(client.put("/v1/users/fay/stats", headers=h), 405)
    is_problem(client.post("/v1/users/fay/recall", headers={**h, "content-type": "application/json"},
                           content=b"{not json"), 422)


def test_keys_parsing(tmp_path: Path) -> None:
    token = "a-secret-token-of-enough-length"
    digest = hashlib.sha256(token.encode()).hexdigest()
    keys = ApiKeys.parse(f"sha256:{digest} ana,bo reader  # trailing comment\nanother-long-token-here * ops")
    found = keys.find(token)
    assert found is not None and found.name == "reader" and found.allows("bo") and not found.allows("cy")
    assert keys.find("another-long-token-here").allows("anyone")  # type: ignore[union-attr]
    assert keys.find("wrong-token-of-enough-length") is None and keys.find("") is None
    assert digest not in repr(found) and token not in repr(found)
    for bad in ("short ana", f"{token}", f"{token} ana name extra", f"sha256:abc ana", f"{token} *,ana", "",
                f"{token} ana\n{token} bo", f"{token} ana x\nanother-long-token-here bo x"):
        with pytest.raises(ConfigError):
            ApiKeys.parse(bad)
    with pytest.raises(ConfigError) as err:
        ApiKeys.parse(f"{token} ana\nshort-one ana")
    assert "entry 2" in str(err.value) and "short-one" not in str(err.value)
    path = tmp_path / "keys.txt"
    path.write_text(f"{token} ana\n", encoding="utf-8")
    both = load_keys(path, environ={"PERSONATREE_API_KEYS": "yet-another-long-token * ; "})
    assert len(both) == 2 and {k.name for k in both.keys} == {"key-1", "env-key-1"}
    with pytest.raises(ConfigError):
        load_keys(None, environ={})
    with pytest.raises(ConfigError):
        load_keys(tmp_path / "missing.txt", environ={})


def test_status_of_library_errors() -> None:
    from personatree import errors as e
    from personatree.rest.problems import status_of

    expected = {e.InputError: 422, e.MessageError: 422, e.QueryError: 422, e.UnknownUserError: 404,
                e.UnknownNodeError: 404, e.NotFoundError: 404, e.InvariantError: 409, e.StaleStateError: 409,
                e.VacuumPendingError: 409, e.StoreBusyError: 503, e.RateLimitError: 503,
                e.JudgeTimeoutError: 504, e.ProviderError: 502, e.JudgeOutputError: 502, e.StoreError: 500,
                e.ConfigError: 500, e.EmbedderError: 500, e.MigrationError: 500}
    assert {cls: status_of(cls("x")) for cls in expected} == expected


def test_chat_exports_are_imported(client: httpx.Client) -> None:
    from .chat_exports import chatgpt_export, claude_export

    h = auth(BO)
    first = client.post("/v1/users/cy/import/chat", headers=h, json=chatgpt_export())
    assert first.status_code == 200, first.text
    summary = first.json()["summary"]
    assert summary["new"] >= 1 and summary["duplicates"] == 0 and first.json()["user_id"] == "cy"
    again = client.post("/v1/users/cy/import/chat", headers=h, json=chatgpt_export()).json()["summary"]
    assert again["new"] == 0 and again["duplicates"] == summary["new"]  # nothing stored twice
    claude = client.post("/v1/users/cy/import/chat", headers=h, json=claude_export()).json()["summary"]
    assert claude["new"] >= 1
    stats = client.get("/v1/users/cy/stats", headers=h).json()
    assert stats["observations"] >= summary["new"] + claude["new"]
    bad = is_problem(client.post("/v1/users/cy/import/chat", headers=h, json={"nothing": "here"}), 422)
    assert bad["error"] == "ChatFormatError"
    is_problem(client.post("/v1/users/eve/import/chat", headers=h, json=chatgpt_export()), 403)
