"""``personatree import``: OpenAI-style chat exports as a user's interactions."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

import orjson
import typer
from rich.markup import escape

from ..errors import InputError
from .common import CreateOpt, JsonOpt, StoreOpt, console, errors, print_json
from .memory import count_table, ingest
from .reading import json_lines, read_source

__all__ = ["chat_export_interactions", "register"]

_TIME_FIELDS = ("timestamp", "created_at", "create_time", "time", "at")
_ID_FIELDS = ("conversation_id", "id", "session_id")


def register(app: typer.Typer) -> None:
    """Add the ``import`` command to ``app``."""
    app.command("import")(import_)


def _message_text(content: Any) -> str:
    """Text of an OpenAI message ``content``: a string, or a list of parts with ``text``."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        if isinstance(content.get("parts"), list):  # ChatGPT's {"content_type", "parts"}
            return "\\n".join(p for p in content["parts"] if isinstance(p, str))
        return str(content.get("text") or "")
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                out.append(part["text"])
        return "\\n".join(out)
    return ""


def _timestamp(obj: Any) -> datetime | str | None:
    """A message or conversation time: ISO text, or epoch seconds (or milliseconds)."""
    if not isinstance(obj, dict):
        return None
    for name in _TIME_FIELDS:
        v = obj.get(name)
        if isinstance(v, bool) or v is None or v == "":
            continue
        if isinstance(v, (int, float)):
            secs = v / 1000.0 if v > 1e11 else float(v)  # JavaScript exports use milliseconds
            return datetime.fromtimestamp(secs, tz=UTC)
        if isinstance(v, str):
            return v
    return None


def chat_export_interactions(text: str, *, source: str = "input") -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Interactions for ``observe_many`` from an OpenAI-style chat export.

    The export is JSONL with one conversation per line, ``{"messages": [{"role",
    "content", "timestamp"?}...], "id"?, "title"?, "create_time"?}`` (a JSON list of such
    conversations works too). Each user message opens an interaction; the assistant and
    tool messages that follow it join it; system messages are skipped (they describe
    the assistant, not the user). Observation ids derive from the conversation and the
    turn, so importing the same file twice stores nothing new.

    Parameters
    ----------
    text : str
        The file contents.
    source : str
        Name used in error messages.

    Returns
    -------
    (list of dict, dict)
        The interactions and counts (``conversations``, ``interactions``, ``skipped``).

    Raises
    ------
    InputError
        For a line that is not JSON or a conversation without a ``messages`` list.
    """
    conversations = _conversations(text, source)
    items: list[dict[str, Any]] = []
    skipped = 0
    for line_no, conv in conversations:
        if not isinstance(conv, dict) or not isinstance(conv.get("messages"), list):
            raise InputError(f"{source} line {line_no}: expected an object with a 'messages' list")
        found, dropped = _conversation_items(conv, _turn_groups(conv["messages"], f"{source} line {line_no}"))
        items += found
        skipped += dropped
    return items, {"conversations": len(conversations), "interactions": len(items), "skipped": skipped}


def _conversations(text: str, source: str) -> list[tuple[int, Any]]:
    """The conversations of an export (a JSON list or JSONL), each with its line number."""
    stripped = text.strip()
    if not stripped:
        raise InputError(f"{source} is empty")
    try:
        if stripped.startswith("["):
            return list(enumerate(orjson.loads(stripped), start=1))
        return json_lines(text, source)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"{source} is not JSONL of conversations: {exc}") from None


def _turn_groups(messages: list[Any], where: str) -> list[list[dict[str, Any]]]:
    """The messages of one conversation grouped into turns, each opened by a user message."""
    groups: list[list[dict[str, Any]]] = []
    for m in messages:
        if not isinstance(m, dict):
            raise InputError(f"{where}: a message is not an object")
        role = str(m.get("role") or (m.get("author") or {}).get("role") or "")
        body = _message_text(m.get("content")).strip()
        if role not in ("user", "assistant", "tool") or not body:
            continue
        msg = {"role": role, "content": body, "_at": _timestamp(m)}
        if role == "user" and (not groups or any(x["role"] == "user" for x in groups[-1])):
            groups.append([msg])
        elif groups:
            groups[-1].append(msg)
        else:
            groups.append([msg])  # a greeting before the first user turn joins that turn
    return groups


def _conversation_items(
    conv: dict[str, Any], groups: list[list[dict[str, Any]]]
) -> tuple[list[dict[str, Any]], int]:
    """One interaction per turn of a conversation, and how many turns had no user message."""
    conv_id = next((str(conv[k]) for k in _ID_FIELDS if conv.get(k) not in (None, "")), None)
    conv_key = conv_id or hashlib.sha256(orjson.dumps(conv, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
    session = (conv_id or f"import-{conv_key}")[:120]
    conv_at = _timestamp(conv)
    items: list[dict[str, Any]] = []
    skipped = 0
    for turn, group in enumerate(groups):
        if not any(x["role"] == "user" for x in group):
            skipped += 1
            continue
        at = next((x["_at"] for x in group if x["role"] == "user" and x["_at"] is not None), None)
        at = at or next((x["_at"] for x in group if x["_at"] is not None), None) or conv_at
        messages = [{"role": x["role"], "content": x["content"]} for x in group]
        digest = hashlib.sha256(orjson.dumps([conv_key, turn, messages])).hexdigest()[:24]
        item: dict[str, Any] = {
            "messages": messages,
            "session_id": session,
            "observation_id": f"imp_{digest}",
            "metadata": {"source": "import", "conversation": conv_key, "turn": turn,
                         **({"title": str(conv["title"])[:200]} if conv.get("title") else {})},
        }
        if at is not None:
            item["at"] = at
        items.append(item)
    return items, skipped


def import_(
    user: str,
    source: str = typer.Argument(..., help="Chat export: JSONL, one conversation per line; '-' for stdin."),
    store: str = StoreOpt,
    as_json: bool = JsonOpt,
    create: bool = CreateOpt,
) -> None:
    """Import an OpenAI-style chat export (JSONL of {"messages": [...]}) as USER's interactions."""
    with errors():
        items, counts = chat_export_interactions(read_source(source), source=source)
        if not items:
            raise InputError(f"{source} has no user messages to import")
        reports = ingest(store, create, user, items, f"importing {counts['conversations']} conversations")
        data = {
            **counts,
            "new": sum(not r.duplicate for r in reports),
            "duplicates": sum(r.duplicate for r in reports),
            "leaves": sum(len(r.decisions) for r in reports),
            "attached": sum(r.attached for r in reports),
            "conflicts": sum(r.conflicts for r in reports),
            "orphans": sum(r.orphans for r in reports),
        }
        if as_json:
            print_json(data)
            return
        console.print(count_table(data, title=f"imported into {escape(user)}"))
