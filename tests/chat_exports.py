"""Small chat exports in the real structures of ChatGPT's and Claude's data exports.

Written for these tests (the texts are ours); the structure follows the files the two
services put in their export archives: ChatGPT's ``conversations.json`` is a list of
conversations whose messages form a ``mapping`` tree (a root node without a message, a
regenerated answer on a second branch, ``current_node`` at the end of the branch shown
last, hidden context and a multimodal user message with an image); Claude's is a list
of conversations with ``chat_messages`` whose ``sender`` is ``human`` or ``assistant``.
"""

from __future__ import annotations

from typing import Any


def _node(nid: str, parent: str | None, children: list[str], role: str | None = None, parts: list[Any] | None = None,
          t: float | None = None, ctype: str = "text", hidden: bool = False) -> dict[str, Any]:
    message = None
    if role is not None:
        message = {
            "id": nid,
            "author": {"role": role, "name": None, "metadata": {}},
            "create_time": t,
            "update_time": None,
            "content": {"content_type": ctype, "parts": parts or []},
            "status": "finished_successfully",
            "end_turn": role == "assistant",
            "weight": 1.0,
            "metadata": {"is_visually_hidden_from_conversation": True} if hidden else {},
            "recipient": "all",
            "channel": None,
        }
    return {"id": nid, "message": message, "parent": parent, "children": children}


def chatgpt_export() -> list[dict[str, Any]]:
    """Two ChatGPT conversations: one with a regenerated answer (two branches), one with
    hidden system context and a user message holding an image and text."""
    t0 = 1709370000.0  # 2024-03-02
    first = {
        "title": "Weekend plans",
        "create_time": t0,
        "update_time": t0 + 900,
        "mapping": {
            "root": _node("root", None, ["sys"]),
            "sys": _node("sys", "root", ["u1"], "system", [""], t0, hidden=True),
            "u1": _node("u1", "sys", ["a1", "a1b"], "user", ["I moved to Porto last month and I work as a baker."], t0 + 10),
            "a1": _node("a1", "u1", [], "assistant", ["Welcome to Porto! An early start, then."], t0 + 20),
            "a1b": _node("a1b", "u1", ["u2"], "assistant", ["Porto is lovely. Bakers start early!"], t0 + 30),
            "u2": _node("u2", "a1b", ["a2"], "user", ["I love cycling along the river on Sundays."], t0 + 60),
            "a2": _node("a2", "u2", [], "assistant", ["The riverside path to Foz is a classic ride."], t0 + 70),
        },
        "moderation_results": [],
        "current_node": "a2",
        "plugin_ids": None,
        "conversation_id": "6602a1f0-0000-4000-8000-000000000001",
        "conversation_template_id": None,
        "gizmo_id": None,
        "is_archived": False,
        "safe_urls": [],
        "default_model_slug": "gpt-4o",
        "id": "6602a1f0-0000-4000-8000-000000000001",
    }
    image = {"content_type": "image_asset_pointer", "asset_pointer": "file-service://file-abc", "size_bytes": 1024,
             "width": 512, "height": 512}
    second = {
        "title": "Allergy",
        "create_time": t0 + 86400,
        "update_time": t0 + 86500,
        "mapping": {
            "r": _node("r", None, ["ctx"]),
            "ctx": _node("ctx", "r", ["q"], "user", ["The user prefers short answers."], t0 + 86400,
                         ctype="user_editable_context"),
            "q": _node("q", "ctx", ["a"], "user", [image, "I am allergic to peanuts, is this snack safe?"],
                       t0 + 86410, ctype="multimodal_text"),
            "a": _node("a", "q", [], "assistant", ["The label lists peanut oil, so no."], t0 + 86420),
        },
        "current_node": "a",
        "conversation_id": "6602a1f0-0000-4000-8000-000000000002",
        "id": "6602a1f0-0000-4000-8000-000000000002",
    }
    return [first, second]


def claude_export() -> list[dict[str, Any]]:
    """One Claude conversation: text both as ``text`` and as ``content`` parts, and an
    attachment."""
    return [{
        "uuid": "2b9c7f4e-0000-4000-8000-00000000000a",
        "name": "Garden",
        "created_at": "2024-04-05T09:00:00.000000Z",
        "updated_at": "2024-04-05T09:10:00.000000Z",
        "account": {"uuid": "acc-1"},
        "chat_messages": [
            {"uuid": "m1", "text": "I grow tomatoes on my balcony.",
             "content": [{"start_timestamp": "2024-04-05T09:00:00Z", "stop_timestamp": "2024-04-05T09:00:01Z",
                          "type": "text", "text": "I grow tomatoes on my balcony.", "citations": []}],
             "sender": "human", "created_at": "2024-04-05T09:00:01.000000Z",
             "updated_at": "2024-04-05T09:00:01.000000Z", "attachments": [], "files": []},
            {"uuid": "m2", "text": "Balcony tomatoes like a sunny corner.",
             "content": [{"type": "text", "text": "Balcony tomatoes like a sunny corner."}],
             "sender": "assistant", "created_at": "2024-04-05T09:00:05.000000Z",
             "updated_at": "2024-04-05T09:00:05.000000Z", "attachments": [], "files": []},
            {"uuid": "m3", "text": "I stopped using chemical fertiliser last year.", "content": [],
             "sender": "human", "created_at": "2024-04-05T09:05:00.000000Z",
             "updated_at": "2024-04-05T09:05:00.000000Z",
             "attachments": [{"file_name": "plan.txt", "file_type": "txt", "file_size": 20,
                              "extracted_content": "rows of basil"}], "files": []},
        ],
    }]
