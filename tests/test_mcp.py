"""The MCP server, exercised with the official SDK's own client, in-process.

The round trip the issue asks for: a client lists the tools, calls ``remember`` and
then ``recall``, and gets the stored evidence back. The store is real SQLite in
``tmp_path`` and the embedder the real packaged model.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from personatree import PersonaTree
from personatree.errors import ConfigError
from personatree.mcp_server import build_server

TOOLS = {"remember", "recall", "explain", "profile", "forget"}


@contextlib.asynccontextmanager
async def connect(server: Any) -> AsyncIterator[Any]:
    """The SDK's in-process client: ``mcp.Client`` (2.x) or the memory-stream session (1.x)."""
    try:
        from mcp import Client
    except ImportError:  # mcp 1.x
        from mcp.shared.memory import create_connected_server_and_client_session

        async with create_connected_server_and_client_session(server._mcp_server) as session:
            yield session
        return
    async with Client(server) as client:
        yield client


def payload(result: Any) -> dict[str, Any]:
    """The JSON a tool returned (structured content, or the text block as JSON)."""
    assert not is_error(result), text(result)
    data = getattr(result, "structured_content", None)
    if data is None:
        data = getattr(result, "structuredContent", None)
    if data is None:
        data = json.loads(text(result))
    return dict(data)


def is_error(result: Any) -> bool:
    return bool(getattr(result, "is_error", getattr(result, "isError", False)))


def text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


@pytest.fixture()
def tree(tmp_path: Path, embedder: Any) -> Any:
    t = PersonaTree.open(tmp_path / "mcp.db", embedder=embedder)
    yield t
    t.close()


def test_list_remember_recall_round_trip(tree: Any) -> None:
    server = build_server(tree, default_user="maya", default_budget=300)

    async def main() -> None:
        async with connect(server) as client:
            listed = await client.list_tools()
            assert {t.name for t in listed.tools} == TOOLS
            remember_tool = next(t for t in listed.tools if t.name == "remember")
            schema = getattr(remember_tool, "input_schema", None) or remember_tool.inputSchema
            assert {"text", "messages", "user_id", "at", "session_id"} <= set(schema["properties"])

            stored = payload(await client.call_tool("remember", {
                "text": "I am severely allergic to peanuts, even a trace is dangerous.",
                "at": "2024-03-02T10:00:00+00:00",
            }))
            assert stored["user_id"] == "maya" and not stored["duplicate"]
            leaf = stored["leaves"][0]
            assert "peanuts" in leaf["content"]
            payload(await client.call_tool("remember", {
                "messages": [{"role": "user", "content": "I go for a run every morning before work."},
                             {"role": "assistant", "content": "That is a great habit."}],
                "session_id": "s2",
            }))

            recall_tool = next(t for t in listed.tools if t.name == "recall")
            schema = getattr(recall_tool, "input_schema", None) or recall_tool.inputSchema
            assert schema["properties"]["from_user"]["type"] == "boolean"
            own = payload(await client.call_tool("recall", {"query": "Street food market tonight.",
                                                             "from_user": True}))
            assert 0 < own["tokens"] <= 300

            got = payload(await client.call_tool("recall", {"query": "Which foods must I avoid?"}))
            assert "peanuts" in got["text"]
            assert leaf["node_id"] in [i["node_id"] for i in got["items"]]
            assert 0 < got["tokens"] <= 300 and "trace" not in got

            why = payload(await client.call_tool("explain", {"node_id": leaf["node_id"]}))
            assert why["path"][0]["node_id"] == leaf["node_id"]
            assert "peanuts" in why["observations"][0]["messages"][0]["content"]

            prof = payload(await client.call_tool("profile", {}))
            assert prof["user_id"] == "maya" and prof["source"] in ("claims", "tree.profile")

            gone = payload(await client.call_tool("forget", {"node_id": leaf["node_id"]}))
            assert gone["removed"] == [leaf["node_id"]]
            after = payload(await client.call_tool("recall", {"query": "Which foods must I avoid?"}))
            assert leaf["node_id"] not in [i["node_id"] for i in after["items"]]

    anyio.run(main)


def test_user_scoping_and_clean_errors(tree: Any) -> None:
    open_server = build_server(tree)
    locked = build_server(tree, default_user="maya", lock_user=True)

    async def main() -> None:
        async with connect(open_server) as client:
            # No default user: the call must name one.
            res = await client.call_tool("remember", {"text": "I like tea."})
            assert is_error(res) and "user_id is required" in text(res)
            ok = payload(await client.call_tool("remember", {"text": "I like tea.", "user_id": "ana"}))
            assert ok["user_id"] == "ana"
            res = await client.call_tool("explain", {"node_id": "nope", "user_id": "ana"})
            assert is_error(res) and "UnknownNodeError" in text(res) and "Traceback" not in text(res)
            res = await client.call_tool("recall", {"query": "tea", "user_id": "nobody"})
            assert is_error(res) and "UnknownUserError" in text(res)
            res = await client.call_tool("remember", {"user_id": "ana"})
            assert is_error(res) and "exactly one of text or messages" in text(res)
        async with connect(locked) as client:
            res = await client.call_tool("recall", {"query": "tea", "user_id": "ana"})
            assert is_error(res) and "only serves user 'maya'" in text(res)

    anyio.run(main)
    with pytest.raises(ConfigError):
        build_server(tree, lock_user=True)


@pytest.mark.slow
def test_stdio_transport_subprocess(tmp_path: Path) -> None:
    """``personatree mcp`` over stdio, driven by the SDK's stdio client in a subprocess."""
    from mcp import StdioServerParameters

    store = str(tmp_path / "stdio.db")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "personatree", "mcp", "--user", "maya", "--store", store],
        env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
    )

    async def main() -> None:
        try:
            from mcp import Client

            ctx: Any = Client(params, read_timeout_seconds=120)
        except ImportError:  # mcp 1.x
            from mcp import ClientSession
            from mcp.client.stdio import stdio_client

            @contextlib.asynccontextmanager
            async def v1() -> AsyncIterator[Any]:
                async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
                    await s.initialize()
                    yield s

            ctx = v1()
        async with ctx as client:
            assert {t.name for t in (await client.list_tools()).tools} == TOOLS
            payload(await client.call_tool("remember", {"text": "My sister Lena lives in Berlin."}))
            got = payload(await client.call_tool("recall", {"query": "Where does my sister live?"}))
            assert "Berlin" in got["text"]

    anyio.run(main)


@pytest.mark.slow
def test_streamable_http_transport(tmp_path: Path) -> None:
    """``personatree mcp --transport http`` served by a subprocess, reached over streamable HTTP."""
    import socket
    import subprocess
    import time

    try:
        from mcp import Client
    except ImportError:
        pytest.skip("this check drives the mcp 2.x Client; 1.x is covered by the stdio test")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "personatree", "mcp", "--transport", "http", "--port", str(port),
         "--user", "maya", "--store", str(tmp_path / "http.db")],
        env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 180
        while True:  # the server starts listening once the model has loaded
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, "the server exited early"
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.5)

        async def main() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                assert {t.name for t in (await client.list_tools()).tools} == TOOLS
                payload(await client.call_tool("remember", {"text": "I play the cello in an orchestra."}))
                got = payload(await client.call_tool("recall", {"query": "What instrument do I play?"}))
                assert "cello" in got["text"]

        anyio.run(main)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
