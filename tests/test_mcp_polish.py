"""The MCP server's contract with agents: typed output schemas, described and bounded
arguments, unknown arguments refused, the package version, duplicates reported, and
the profile as a resource. Driven by the SDK's own in-process client on a real SQLite
store (hashing embedder: no model load).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

import personatree
from personatree import PersonaTree, PersonaTreeConfig
from personatree.aio import AsyncPersonaTree
from personatree.mcp_server import build_server

from .test_mcp import connect, is_error, payload, text

CFG = PersonaTreeConfig(embedder="hashing:256")


@pytest.fixture()
def tree(tmp_path: Path) -> Any:
    t = PersonaTree.open(tmp_path / "mcp.db", CFG)
    yield t
    t.close()


def drive(server: Any, body: Callable[[Any], Awaitable[None]]) -> None:
    async def main() -> None:
        async with connect(server) as client:
            await body(client)

    anyio.run(main)


def schema_of(tool: Any, kind: str) -> dict[str, Any]:
    value = getattr(tool, f"{kind}_schema", None)
    return dict(value) if value is not None else dict(getattr(tool, kind.replace("_s", "S") + "Schema"))


def test_every_tool_has_a_typed_output_schema_and_described_arguments(tree: Any) -> None:
    async def body(client: Any) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for name, tool in tools.items():
            out = schema_of(tool, "output")
            assert out.get("additionalProperties") is False and out.get("properties"), (name, out)
            assert "user_id" in out["properties"], name
            args = schema_of(tool, "input")
            assert args["additionalProperties"] is False
            for arg, spec in args["properties"].items():
                assert spec.get("description"), (name, arg)
        recall_args = schema_of(tools["recall"], "input")["properties"]
        budget = next(s for s in recall_args["budget"]["anyOf"] if s.get("type") == "integer")
        assert budget["minimum"] == 1 and recall_args["query"]["minLength"] == 1
        leaf = schema_of(tools["remember"], "output")["$defs"]["RememberedLeaf"]["properties"]
        assert leaf["action"]["enum"] == ["attach", "conflict", "orphan"]

    drive(build_server(tree, default_user="maya"), body)


def test_server_info_carries_the_package_version(tree: Any) -> None:
    async def body(client: Any) -> None:
        info = getattr(client, "server_info", None)
        if info is None:  # mcp 1.x session
            info = (await client.initialize()).serverInfo
        assert info.name == "personatree" and info.version == personatree.__version__

    drive(build_server(tree, default_user="maya"), body)


@pytest.mark.parametrize("args,needle", [
    ({"query": "tea", "budget": 0}, "greater than or equal to 1"),
    ({"query": "tea", "budget": -5}, "greater than or equal to 1"),
    ({"query": ""}, "at least 1"),
    ({"query": "tea", "bugdet": 50}, "unknown argument 'bugdet'"),
])
def test_bad_arguments_are_refused_before_the_call(tree: Any, args: dict[str, Any], needle: str) -> None:
    async def body(client: Any) -> None:
        res = await client.call_tool("recall", args)
        assert is_error(res) and needle in text(res), text(res)

    drive(build_server(tree, default_user="maya", default_budget=100), body)


def test_a_bad_default_budget_is_refused_at_build_time(tree: Any) -> None:
    with pytest.raises(personatree.ConfigError, match="positive integer"):
        build_server(tree, default_user="maya", default_budget=0)


def test_remembering_the_same_text_twice_reports_the_duplicate(tree: Any) -> None:
    async def body(client: Any) -> None:
        first = payload(await client.call_tool("remember", {"text": "I grow tomatoes on my balcony."}))
        assert not first["duplicate"] and len(first["leaves"]) == 1
        again = payload(await client.call_tool("remember", {"text": "I grow tomatoes on my balcony."}))
        assert again["duplicate"] and again["leaves"] == []
        assert again["existing"] == [first["leaves"][0]["node_id"]]
        # A message with nothing to remember makes no leaf, and is no duplicate either.
        thanks = payload(await client.call_tool("remember", {"text": "Thanks!"}))
        assert thanks["leaves"] == [] and not thanks["duplicate"]
        explained = payload(await client.call_tool("explain", {"node_id": first["leaves"][0]["node_id"]}))
        assert explained["node_id"] == first["leaves"][0]["node_id"] and explained["text"]

    drive(build_server(tree, default_user="maya"), body)


def test_the_profile_is_a_resource(tree: Any) -> None:
    tree.observe("maya", "I am a night-shift nurse in Lisbon.")
    tree.observe("ana", "I teach chemistry.")

    async def body(client: Any) -> None:
        templates = await client.list_resource_templates()
        assert [t.uri_template for t in templates.resource_templates] == ["personatree://profile/{user_id}"]
        listed = await client.list_resources()
        assert [str(r.uri) for r in listed.resources] == ["personatree://profile"]
        read = await client.read_resource("personatree://profile/maya")
        tool = payload(await client.call_tool("profile", {}))
        assert read.contents[0].text == tool["text"] and "nurse" in tool["text"]
        mine = await client.read_resource("personatree://profile")
        assert mine.contents[0].text == tool["text"]
        # A server locked to maya does not hand out ana's profile.
        with pytest.raises(Exception, match="only serves user 'maya'"):
            await client.read_resource("personatree://profile/ana")

    drive(build_server(tree, default_user="maya", lock_user=True), body)


def test_an_async_tree_is_served_as_is(tree: Any) -> None:
    atree = AsyncPersonaTree(tree)

    async def body(client: Any) -> None:
        got = payload(await client.call_tool("remember", {"text": "I cycle to work.", "user_id": "bo"}))
        assert got["user_id"] == "bo" and json.dumps(got)
        assert tree.stats("bo")["observations"] == 1

    drive(build_server(atree), body)
