"""Chat exports as a user's interactions: the input of ``PersonaTree.import_chat`` and
``personatree import``.

An export is read conversation by conversation into the normal form of
:mod:`.chat_formats` (ChatGPT and Claude data exports, OpenAI-style message lists,
LangChain roles), then cut into turns: each user message opens an interaction, and the
assistant and tool messages that follow it join it; a greeting before the first user
message joins the first turn. Observation ids derive from the conversation and the
turn, so importing the same export twice stores nothing new.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

import orjson

from ..errors import ChatFormatError
from ..types import InsertReport
from .chat_formats import ChatConversation, ChatMessage, read_conversation

__all__ = ["ChatExport", "ChatImportReport", "read_chat_export", "parse_chat_text", "chat_interactions"]


@dataclass
class ChatExport:
    """The interactions of an export and what was counted on the way.

    Attributes
    ----------
    interactions : list of dict
        Items for ``observe_many`` (``messages``, ``at``, ``session_id``,
        ``observation_id``, ``metadata``).
    conversations : int
    formats : Counter
        Conversations per format (``"chatgpt"``, ``"claude"``, ``"messages"``).
    skipped : int
        Turns without a user message (an assistant's messages alone).
    left_out : Counter
        Messages and parts not imported, per reason (``"system"``, ``"empty"``,
        ``"media_parts"``, ``"other_branches"``...).
    """

    interactions: list[dict[str, Any]] = field(default_factory=list)
    conversations: int = 0
    formats: Counter[str] = field(default_factory=Counter)
    skipped: int = 0
    left_out: Counter[str] = field(default_factory=Counter)

    def counts(self) -> dict[str, Any]:
        """JSON-ready counts."""
        return {
            "conversations": self.conversations,
            "interactions": len(self.interactions),
            "skipped": self.skipped,
            "formats": dict(sorted(self.formats.items())),
            "left_out": dict(sorted(self.left_out.items())),
        }


def parse_chat_text(text: str | bytes, source: str = "input") -> list[tuple[str, Any]]:
    """The conversations of an export's text, each with where it is (for errors).

    A JSON list of conversations (ChatGPT's and Claude's ``conversations.json``), one
    conversation object, a JSON list of messages, or JSONL with one conversation per
    line.

    Raises
    ------
    ChatFormatError
        For empty input or text that is neither JSON nor JSONL.
    """
    raw = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    stripped = raw.strip().lstrip("\ufeff")
    if not stripped:
        raise ChatFormatError(f"{source} is empty")
    try:
        return _units(orjson.loads(stripped), source)
    except orjson.JSONDecodeError:
        pass
    out: list[tuple[str, Any]] = []
    for n, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append((f"{source} line {n}", orjson.loads(line)))
        except orjson.JSONDecodeError as exc:
            # The decoder counts lines within the one line it read: name the file's line
            # and the column in it, never the decoder's own "line 1".
            raise ChatFormatError(
                f"{source} is not JSONL or JSON of conversations (line {n}, column {exc.colno}: {exc.msg})"
            ) from None
    return out


def _units(value: Any, source: str) -> list[tuple[str, Any]]:
    """Conversations of a parsed JSON value (a list of messages is one conversation)."""
    if isinstance(value, dict):
        return [(source, value)]
    if isinstance(value, list):
        if value and all(isinstance(v, dict) and ("role" in v or "content" in v) and "messages" not in v
                         and "mapping" not in v and "chat_messages" not in v for v in value):
            return [(source, value)]
        return [(f"{source} item {i}", v) for i, v in enumerate(value, start=1)]
    raise ChatFormatError(f"{source}: expected a list of conversations, got {type(value).__name__}")


def read_chat_export(data: Any, source: str = "input") -> ChatExport:
    """Read an export (text, bytes, or the parsed JSON) into interactions.

    Parameters
    ----------
    data : str, bytes, list or dict
        The export's text, or its parsed JSON.
    source : str
        Named in errors.

    Returns
    -------
    ChatExport

    Raises
    ------
    ChatFormatError
        Naming the conversation, message or part that is not of a known format.
    """
    units = parse_chat_text(data, source) if isinstance(data, (str, bytes)) else _units(data, source)
    out = ChatExport()
    for where, conv in units:
        c = read_conversation(conv, where)
        out.conversations += 1
        out.formats[c.format] += 1
        out.left_out.update(c.left_out)
        found, skipped = chat_interactions(c)
        out.interactions += found
        out.skipped += skipped
    return out


def _turns(messages: Sequence[ChatMessage]) -> list[list[ChatMessage]]:
    groups: list[list[ChatMessage]] = []
    for m in messages:
        if m.role == "user" and (not groups or any(x.role == "user" for x in groups[-1])):
            groups.append([m])
        elif groups:
            groups[-1].append(m)
        else:
            groups.append([m])  # a greeting before the first user turn joins that turn
    return groups


def chat_interactions(conv: ChatConversation) -> tuple[list[dict[str, Any]], int]:
    """One interaction per turn of a conversation, and how many turns had no user message."""
    key = conv.id or hashlib.sha256(orjson.dumps(
        [conv.title, str(conv.at), [[m.role, m.content] for m in conv.messages]])).hexdigest()[:16]
    session = (conv.id or f"import-{key}")[:120]
    items: list[dict[str, Any]] = []
    skipped = 0
    for turn, group in enumerate(_turns(conv.messages)):
        if not any(x.role == "user" for x in group):
            skipped += 1
            continue
        at = next((x.at for x in group if x.role == "user" and x.at is not None), None)
        at = at or next((x.at for x in group if x.at is not None), None) or conv.at
        messages = [{"role": x.role, "content": x.content} for x in group]
        digest = hashlib.sha256(orjson.dumps([key, turn, messages])).hexdigest()[:24]
        item: dict[str, Any] = {
            "messages": messages,
            "session_id": session,
            "observation_id": f"imp_{digest}",
            "metadata": {"source": "import", "format": conv.format, "conversation": key, "turn": turn,
                         **({"title": conv.title[:200]} if conv.title else {})},
        }
        if at is not None:
            item["at"] = at
        items.append(item)
    return items, skipped


@dataclass(frozen=True)
class ChatImportReport:
    """What ``PersonaTree.import_chat`` stored.

    Attributes
    ----------
    user_id : str
    counts : dict
        The export's counts (:meth:`ChatExport.counts`).
    reports : tuple of InsertReport
        One per interaction, in order.
    """

    user_id: str
    counts: dict[str, Any]
    reports: tuple[InsertReport, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: the export's counts and what insertion did."""
        r = self.reports
        return {
            **self.counts,
            "new": sum(not x.duplicate for x in r),
            "duplicates": sum(x.duplicate for x in r),
            "leaves": sum(len(x.decisions) for x in r),
            "attached": sum(x.attached for x in r),
            "conflicts": sum(x.conflicts for x in r),
            "orphans": sum(x.orphans for x in r),
        }
