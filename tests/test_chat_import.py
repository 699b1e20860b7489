"""Real chat exports imported through the API and the CLI.

The exports (:mod:`tests.chat_exports`) have the structure of ChatGPT's and Claude's
data exports; they are imported into real SQLite files with the real packaged embedder
and the offline judge. What each format holds besides the conversation (other
branches, hidden context, images, attachments) is counted, never silently dropped, and
anything of no known format is a :class:`ChatFormatError` that names where.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from personatree.cli import app
from personatree.errors import ChatFormatError, InputError, MessageError
from personatree.portability.chats import read_chat_export

from .chat_exports import chatgpt_export, claude_export
from .helpers import T0, Parts, open_tree

runner = CliRunner()


def _texts(tree: Any, user: str) -> list[list[tuple[str, str]]]:
    return [[(m.role, m.content) for m in o.messages] for o in tree.store.observations(user)]


# -- reading ------------------------------------------------------------------------------------


def test_chatgpt_export_follows_the_current_branch_and_counts_the_rest() -> None:
    read = read_chat_export(json.dumps(chatgpt_export()), "conversations.json")
    turns = [[(m["role"], m["content"]) for m in i["messages"]] for i in read.interactions]
    assert turns == [
        [("user", "I moved to Porto last month and I work as a baker."),
         ("assistant", "Porto is lovely. Bakers start early!")],
        [("user", "I love cycling along the river on Sundays."),
         ("assistant", "The riverside path to Foz is a classic ride.")],
        # The image part is left out and counted; the text of the same message is kept.
        [("user", "I am allergic to peanuts, is this snack safe?"),
         ("assistant", "The label lists peanut oil, so no.")],
    ]
    counts = read.counts()
    assert counts["conversations"] == 2 and counts["formats"] == {"chatgpt": 2}
    # The regenerated answer (another branch), the hidden system message, the custom
    # instructions and the image: each counted under its reason.
    assert counts["left_out"] == {"other_branches": 1, "hidden": 1, "chatgpt_user_editable_context": 1,
                                  "media_parts": 1}
    first = read.interactions[0]
    assert first["at"] == datetime.fromtimestamp(1709370010, tz=UTC)
    assert first["session_id"] == "6602a1f0-0000-4000-8000-000000000001"
    assert first["metadata"]["title"] == "Weekend plans" and first["metadata"]["format"] == "chatgpt"


def test_claude_export_reads_senders_parts_and_counts_attachments() -> None:
    read = read_chat_export(claude_export(), "claude.json")
    turns = [[(m["role"], m["content"]) for m in i["messages"]] for i in read.interactions]
    assert turns == [
        [("user", "I grow tomatoes on my balcony."), ("assistant", "Balcony tomatoes like a sunny corner.")],
        [("user", "I stopped using chemical fertiliser last year.")],  # from "text": its content is []
    ]
    assert read.counts()["left_out"] == {"attachments": 1}
    assert read.interactions[1]["at"] == "2024-04-05T09:05:00.000000Z"
    assert read.interactions[0]["session_id"] == "2b9c7f4e-0000-4000-8000-00000000000a"


def test_openai_parts_and_langchain_roles() -> None:
    conv = {"id": "lc", "messages": [
        {"type": "system", "content": "Be brief."},
        {"type": "human", "content": "I play the cello in an orchestra."},
        {"type": "ai", "content": "How lovely."},
        {"role": "user", "content": [{"type": "text", "text": "I practise every evening."},
                                     {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
        {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "AIMessage"],
         "kwargs": {"content": "Dedication!"}},
    ]}
    read = read_chat_export([conv])
    assert [[(m["role"], m["content"]) for m in i["messages"]] for i in read.interactions] == [
        [("user", "I play the cello in an orchestra."), ("assistant", "How lovely.")],
        [("user", "I practise every evening."), ("assistant", "Dedication!")],
    ]
    assert read.counts()["left_out"] == {"system": 1, "media_parts": 1}
    # A bare list of messages is one conversation.
    assert len(read_chat_export([{"role": "human", "content": "I keep bees."}]).interactions) == 1


@pytest.mark.parametrize(("data", "needle"), [
    ([{"title": "x", "pages": []}], "item 1: not a known chat export"),
    ([{"messages": [{"role": "narrator", "content": "Once upon a time"}]}], "unknown role 'narrator'"),
    ([{"chat_messages": [{"sender": "bot", "text": "hi"}]}], "chat_messages[0]: unknown role 'bot'"),
    ([{"messages": [{"role": "user", "content": [{"type": "hologram"}]}]}], "unknown content part 'hologram'"),
    ([{"mapping": {"a": {"id": "a", "message": None, "parent": "zz", "children": []}}, "current_node": "a"}],
     "node 'zz' is not in the mapping"),
    ([{"mapping": {"a": {"id": "a", "message": None, "parent": "b", "children": ["b"]},
                   "b": {"id": "b", "message": None, "parent": "a", "children": ["a"]}}, "current_node": "a"}],
     "form a cycle"),
    ("[1, 2", "not JSONL"),
    ("", "is empty"),
    ([{"messages": [{"role": "user", "content": 7}]}], "content must be text"),
])
def test_anything_else_is_a_typed_error_naming_where(data: Any, needle: str) -> None:
    with pytest.raises(ChatFormatError) as info:
        read_chat_export(data, "export.json")
    assert needle in str(info.value)
    assert isinstance(info.value, InputError)


# -- through the API ----------------------------------------------------------------------------


def test_import_chat_through_the_api_stores_every_turn_once(tmp_path: Path, parts: Parts) -> None:
    tree = open_tree(tmp_path / "chat.db", parts, T0 + timedelta(days=400))
    try:
        first = tree.import_chat("ana", json.dumps(chatgpt_export()), source="conversations.json")
        data = first.to_dict()
        assert data["interactions"] == 3 and data["new"] == 3 and data["duplicates"] == 0
        assert data["leaves"] >= 3
        stored = _texts(tree, "ana")
        assert ("user", "I love cycling along the river on Sundays.") in [t for o in stored for t in o]
        leaves = [n.content for n in tree.nodes("ana", "leaf")]
        assert any("baker" in c for c in leaves) and any("peanuts" in c for c in leaves)
        # The same export again stores nothing new.
        again = tree.import_chat("ana", chatgpt_export())
        assert again.to_dict()["duplicates"] == 3 and tree.stats("ana")["observations"] == 3
        tree.import_chat("ana", claude_export())
        assert tree.stats("ana")["observations"] == 5
        assert any("tomatoes" in n.content for n in tree.nodes("ana", "leaf"))
        # Nothing of a bad export is stored.
        before = tree.store.checksum("ana")
        with pytest.raises(ChatFormatError):
            tree.import_chat("ana", [{"messages": [{"role": "user", "content": "fine"}]}, {"oops": 1}])
        with pytest.raises(ChatFormatError, match="no user messages"):
            tree.import_chat("ana", [{"messages": [{"role": "assistant", "content": "Hello!"}]}])
        assert tree.store.checksum("ana") == before
    finally:
        tree.close()


def test_observe_takes_content_parts_and_langchain_roles(tmp_path: Path, parts: Parts) -> None:
    tree = open_tree(tmp_path / "obs.db", parts, T0)
    try:
        rep = tree.observe("bo", [{"role": "human", "content": [{"type": "text", "text": "I am a carpenter."}]},
                                  {"role": "ai", "content": "Nice craft."}], at=T0)
        assert not rep.duplicate
        [obs] = tree.store.observations("bo")
        assert [(m.role, m.content) for m in obs.messages] == [("user", "I am a carpenter."),
                                                               ("assistant", "Nice craft.")]
        with pytest.raises(MessageError, match="content part 1 is 'image_url'"):
            tree.observe("bo", [{"role": "user", "content": [{"type": "text", "text": "Look"},
                                                             {"type": "image_url", "image_url": {"url": "x"}}]}])
    finally:
        tree.close()


# -- through the CLI ----------------------------------------------------------------------------


def test_import_chatgpt_and_claude_exports_through_the_cli(tmp_path: Path, embedder: Any) -> None:
    store = str(tmp_path / "cli.db")
    gpt = tmp_path / "conversations.json"
    gpt.write_text(json.dumps(chatgpt_export(), indent=2))
    res = runner.invoke(app, ["import", "ana", str(gpt), "--store", store, "--json"], catch_exceptions=False)
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["formats"] == {"chatgpt": 2} and data["new"] == 3
    assert data["left_out"]["other_branches"] == 1 and "judge" not in data  # the offline judge: no LLM usage
    claude = tmp_path / "claude.json"
    claude.write_text(json.dumps(claude_export()))
    res = runner.invoke(app, ["import", "ana", str(claude), "--store", store], catch_exceptions=False)
    assert res.exit_code == 0 and "left_out.attachments" in res.stdout and "imported into ana" in res.stdout
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"messages": [{"role": "narrator", "content": "Once"}]}]))
    res = runner.invoke(app, ["import", "ana", str(bad), "--store", store], catch_exceptions=False)
    assert res.exit_code == 1 and "error: ChatFormatError" in res.stderr and "narrator" in res.stderr
    assert "Traceback" not in res.stdout + res.stderr
