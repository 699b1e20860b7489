"""Reading the chat exports people have: one normal form for every format.

Recognised, per conversation (the format is read from its keys):

* **ChatGPT** data export (``conversations.json``): ``{"title", "create_time",
  "mapping": {node id: {"id", "message", "parent", "children"}}, "current_node"}``.
  The conversation is the branch that ends at ``current_node`` (the one the user saw
  last), read from the root down; the other branches (regenerated answers, edited
  prompts) are counted as left out. A message is ``{"author": {"role"}, "content":
  {"content_type", "parts"}, "create_time"}``.
* **Claude** data export (``conversations.json``): ``{"uuid", "name", "created_at",
  "chat_messages": [{"sender": "human" | "assistant", "text", "content": [{"type":
  "text", "text"}...], "created_at"}]}``.
* **Messages**: ``{"messages": [...]}`` (OpenAI-style JSONL, one conversation per
  line), or a bare list of messages. A message is ``{"role", "content"}`` where content
  is a string or a list of OpenAI content parts (``{"type": "text", "text"}``;
  ``image_url``, ``input_audio`` and ``file`` parts are counted as left out). Roles
  may be OpenAI's (``user``, ``assistant``, ``system``, ``developer``, ``tool``,
  ``function``) or LangChain's (``human``, ``ai``, ``system``, ``tool``, as ``role``
  or ``type``, or a serialized ``HumanMessage`` / ``AIMessage`` ...).

Nothing is dropped without being counted: system messages, hidden context, empty
messages, non-text parts, attachments and other branches are counted per reason in
:attr:`ChatConversation.left_out`; anything else unexpected (an unknown role, a
conversation of no known format, a ``mapping`` whose parents do not chain) raises a
:class:`~personatree.errors.ChatFormatError` that names where.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Mapping

from ..errors import ChatFormatError

__all__ = ["ChatMessage", "ChatConversation", "read_conversation", "ROLE_OF"]

#: Role names of the formats → the role stored (``None``: not imported, counted).
ROLE_OF: Mapping[str, str | None] = {
    "user": "user", "human": "user", "humanmessage": "user",
    "assistant": "assistant", "ai": "assistant", "aimessage": "assistant", "model": "assistant",
    "tool": "tool", "function": "tool", "toolmessage": "tool", "functionmessage": "tool",
    "system": None, "developer": None, "systemmessage": None,
}
#: OpenAI content-part types that hold no text.
_MEDIA_PARTS = frozenset({"image_url", "input_image", "image", "input_audio", "audio", "file", "input_file"})
#: ChatGPT content types that are not what anyone said (browsing, code runs, reasoning
#: traces, the user's custom instructions): left out, counted by type.
_CHATGPT_TEXT_TYPES = frozenset({"text", "multimodal_text"})
_TIME_FIELDS = ("timestamp", "created_at", "create_time", "time", "at")


@dataclass
class ChatMessage:
    """One message in the normal form: a stored role, its text and when it was written."""

    role: str
    content: str
    at: datetime | str | None


@dataclass
class ChatConversation:
    """One conversation in the normal form.

    Attributes
    ----------
    id : str or None
        The export's conversation id (``None`` when it has none).
    title : str or None
    at : datetime, str or None
        When the conversation started.
    messages : list of ChatMessage
        The imported messages, in order.
    left_out : Counter
        What was not imported, per reason.
    format : str
        ``"chatgpt"``, ``"claude"`` or ``"messages"``.
    """

    id: str | None
    title: str | None
    at: datetime | str | None
    format: str
    messages: list[ChatMessage] = field(default_factory=list)
    left_out: Counter[str] = field(default_factory=Counter)


def timestamp(obj: Any) -> datetime | str | None:
    """A message or conversation time: ISO text, or epoch seconds (or milliseconds)."""
    if not isinstance(obj, Mapping):
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


def read_conversation(conv: object, where: str) -> ChatConversation:
    """The normal form of one conversation of any recognised format.

    Parameters
    ----------
    conv : object
        One parsed conversation (or a bare list of messages).
    where : str
        Named in errors (``"export.json item 3"``).

    Returns
    -------
    ChatConversation

    Raises
    ------
    ChatFormatError
        For a conversation of no known format, an unknown role or a broken structure.
    """
    if isinstance(conv, list):
        return _messages_conversation({"messages": conv}, where)
    if not isinstance(conv, Mapping):
        raise ChatFormatError(f"{where}: a conversation must be an object, got {type(conv).__name__}")
    if isinstance(conv.get("mapping"), Mapping):
        return _chatgpt_conversation(conv, where)
    if isinstance(conv.get("chat_messages"), list):
        return _claude_conversation(conv, where)
    if isinstance(conv.get("messages"), list):
        return _messages_conversation(conv, where)
    keys = ", ".join(sorted(map(str, conv))[:8]) or "none"
    raise ChatFormatError(
        f"{where}: not a known chat export: expected a 'messages' list, a ChatGPT 'mapping' "
        f"or Claude 'chat_messages' (keys found: {keys})"
    )


def _conversation(conv: Mapping[str, Any], fmt: str, *id_keys: str) -> ChatConversation:
    cid = next((str(conv[k]) for k in id_keys if conv.get(k) not in (None, "")), None)
    title = next((str(conv[k]) for k in ("title", "name") if conv.get(k)), None)
    return ChatConversation(cid, title, timestamp(conv), fmt)


def _role(raw: object, where: str) -> str | None:
    """The stored role of a format's role name (``None``: a system message)."""
    if not isinstance(raw, str) or raw.strip().lower() not in ROLE_OF:
        known = ", ".join(sorted(k for k in ROLE_OF if not k.endswith("message")))
        raise ChatFormatError(f"{where}: unknown role {raw!r}; known roles: {known}")
    return ROLE_OF[raw.strip().lower()]


def _add(out: ChatConversation, role: str | None, text: str, at: datetime | str | None) -> None:
    if role is None:
        out.left_out["system"] += 1
    elif not text.strip():
        out.left_out["empty"] += 1
    else:
        out.messages.append(ChatMessage(role, text.strip(), at))


def part_texts(parts: list[Any], where: str, left_out: Counter[str]) -> list[str]:
    """The texts of a list of content parts; media parts are counted as left out."""
    texts: list[str] = []
    for i, part in enumerate(parts):
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(part, Mapping) and (
            part.get("type") in _MEDIA_PARTS or part.get("content_type") in ("image_asset_pointer", "audio_asset_pointer")
            or "asset_pointer" in part
        ):
            left_out["media_parts"] += 1
        elif isinstance(part, Mapping) and part.get("type") in ("tool_use", "tool_result", "thinking"):
            left_out[f"{part['type']}_parts"] += 1
        else:
            kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
            raise ChatFormatError(f"{where} part {i}: unknown content part {kind!r}")
    return texts


# -- messages (OpenAI, LangChain) ---------------------------------------------------------------


def _messages_conversation(conv: Mapping[str, Any], where: str) -> ChatConversation:
    out = _conversation(conv, "messages", "conversation_id", "id", "session_id")
    for i, m in enumerate(conv["messages"]):
        at = f"{where} message {i}"
        if not isinstance(m, Mapping):
            raise ChatFormatError(f"{at}: a message must be an object, got {type(m).__name__}")
        raw_role, content = _langchain_fields(m)
        role = _role(raw_role, at)
        if isinstance(content, str):
            text = content
        elif isinstance(content, list):
            text = "\n".join(part_texts(content, at, out.left_out))
        elif content is None:
            text = ""
        else:
            raise ChatFormatError(f"{at}: content must be text or a list of content parts, "
                                  f"got {type(content).__name__}")
        _add(out, role, text, timestamp(m))
    return out


def _langchain_fields(m: Mapping[str, Any]) -> tuple[object, object]:
    """(role, content) of an OpenAI message, a LangChain message dict or a serialized
    LangChain message (``{"lc": 1, "type": "constructor", "id": [..., "HumanMessage"],
    "kwargs": {"content"}}``)."""
    if m.get("type") == "constructor" and isinstance(m.get("kwargs"), Mapping) and isinstance(m.get("id"), list):
        return (m["id"][-1] if m["id"] else None), m["kwargs"].get("content")
    role = m.get("role")
    if role is None:
        role = m.get("type")  # LangChain's message dicts name the role "type"
    if role is None and isinstance(m.get("author"), Mapping):
        role = m["author"].get("role")
    return role, m.get("content")


# -- Claude ---------------------------------------------------------------------------------------


def _claude_conversation(conv: Mapping[str, Any], where: str) -> ChatConversation:
    out = _conversation(conv, "claude", "uuid", "id")
    for i, m in enumerate(conv["chat_messages"]):
        at = f"{where} chat_messages[{i}]"
        if not isinstance(m, Mapping):
            raise ChatFormatError(f"{at}: a message must be an object, got {type(m).__name__}")
        role = _role(m.get("sender"), at)
        content = m.get("content")
        if isinstance(content, list) and content:
            text = "\n".join(part_texts(content, at, out.left_out))
        elif isinstance(m.get("text"), str):
            text = m["text"]
        else:
            text = ""
        out.left_out["attachments"] += sum(len(m.get(k) or []) for k in ("attachments", "files")
                                           if isinstance(m.get(k), list))
        _add(out, role, text, timestamp(m))
    if not out.left_out["attachments"]:
        del out.left_out["attachments"]
    return out


# -- ChatGPT ------------------------------------------------------------------------------------


def _chatgpt_conversation(conv: Mapping[str, Any], where: str) -> ChatConversation:
    out = _conversation(conv, "chatgpt", "conversation_id", "id")
    mapping: Mapping[str, Any] = conv["mapping"]
    branch = _current_branch(mapping, conv.get("current_node"), where)
    on_branch = set(branch)
    out.left_out["other_branches"] = sum(1 for nid, node in mapping.items()
                                         if nid not in on_branch and isinstance(node, Mapping) and node.get("message"))
    for nid in branch:
        msg = mapping[nid].get("message")
        if msg is None:
            continue  # the root node of every export carries no message
        at = f"{where} node {nid!r}"
        if not isinstance(msg, Mapping):
            raise ChatFormatError(f"{at}: message must be an object")
        role = _role(_field(msg, "author").get("role"), at)
        meta, content = _field(msg, "metadata"), _field(msg, "content")
        ctype = content.get("content_type", "text")
        if meta.get("is_visually_hidden_from_conversation"):
            out.left_out["hidden"] += 1
        elif ctype not in _CHATGPT_TEXT_TYPES:
            out.left_out[f"chatgpt_{ctype}"] += 1
        else:
            parts = content.get("parts")
            texts = part_texts(parts, at, out.left_out) if isinstance(parts, list) else []
            _add(out, role, "\n".join(t for t in texts if t.strip()), timestamp(msg))
    if not out.left_out["other_branches"]:
        del out.left_out["other_branches"]
    return out


def _field(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``obj[key]`` when it is an object, else an empty one (exports leave fields null)."""
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def _current_branch(mapping: Mapping[str, Any], current: object, where: str) -> list[str]:
    """Node ids from the root to ``current`` (default: the last-written leaf node)."""
    if current is None:
        leaves = [nid for nid, n in mapping.items() if isinstance(n, Mapping) and not n.get("children")]
        if not leaves:
            raise ChatFormatError(f"{where}: the mapping has no leaf node and no current_node")
        current = max(leaves, key=lambda nid: _node_time(mapping[nid]))
    path: list[str] = []
    seen: set[str] = set()
    nid: object = current
    while nid is not None:
        if not isinstance(nid, str) or nid not in mapping or not isinstance(mapping[nid], Mapping):
            raise ChatFormatError(f"{where}: node {nid!r} is not in the mapping (current_node {current!r})")
        if nid in seen:
            raise ChatFormatError(f"{where}: the parents of node {nid!r} form a cycle")
        seen.add(nid)
        path.append(nid)
        nid = mapping[nid].get("parent")
    return path[::-1]


def _node_time(node: Mapping[str, Any]) -> float:
    msg = node.get("message")
    t = msg.get("create_time") if isinstance(msg, Mapping) else None
    return float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else 0.0
