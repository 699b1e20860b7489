"""Validation and normalisation of caller input, before anything is stored.

Every check raises a typed :class:`~personatree.errors.InputError` with a message
that names the offending field; a call that fails here has written nothing.
"""

from __future__ import annotations

import hashlib
import math
import re
from datetime import date, datetime
from typing import Any, Callable, Iterable, Mapping, Sequence

import orjson

from .config import InputLimits
from .errors import InputError, MessageError, QueryError
from .textcheck import find_text_fault
from .types import Message, Observation, utc

__all__ = [
    "ROLES",
    "check_id",
    "check_text",
    "parse_messages",
    "parse_time",
    "parse_metadata",
    "MAX_METADATA_DEPTH",
    "MAX_METADATA_BYTES",
    "observation_id_for",
    "build_observation",
    "check_query",
]

ROLES = frozenset({"user", "assistant", "system", "tool"})
#: Other frameworks' names of the roles (LangChain's ``human`` and ``ai``), stored as ours.
ROLE_ALIASES = {"human": "user", "ai": "assistant"}


def check_text(value: object, what: str, max_chars: int, error: type[InputError] = MessageError) -> str:
    """Return ``value`` if it is non-blank, encodable text within ``max_chars``.

    Lone surrogates (which cannot be stored as UTF-8) and NUL bytes are rejected.
    """
    if not isinstance(value, str):
        raise error(f"{what} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise error(f"{what} is empty or whitespace")
    if len(value) > max_chars:
        raise error(f"{what} is {len(value):,} characters; the limit is {max_chars:,}")
    fault = find_text_fault(value)
    if fault is not None:
        if fault.kind == "nul":
            raise error(f"{what} contains a NUL character")
        raise error(f"{what} is not valid text (lone surrogate at position {fault.position})")
    return value


# Control characters: C0 and DEL.
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


def check_id(value: object, what: str, limits: InputLimits) -> str:
    """Validate a user, session, observation or node id: printable text within limits."""
    text = check_text(value, what, limits.max_id_chars, InputError)
    if _CONTROL_RE.search(text) is not None:
        raise InputError(f"{what} contains control characters")
    if text != text.strip():
        raise InputError(f"{what} has leading or trailing whitespace")
    return text


def parse_messages(messages: object, limits: InputLimits) -> tuple[Message, ...]:
    """Normalise messages given as :class:`Message` objects or ``{"role", "content"}`` mappings.

    A bare string is accepted as one user message.

    Raises
    ------
    MessageError
        For a wrong type, an unknown role, empty or oversized content.
    """
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    if isinstance(messages, (Message, Mapping)):
        messages = [messages]
    if not isinstance(messages, (list, tuple)):
        raise MessageError(f"messages must be a list of messages, got {type(messages).__name__}")
    if not messages:
        raise MessageError("messages is empty")
    if len(messages) > limits.max_messages:
        raise MessageError(f"{len(messages)} messages in one observation; the limit is {limits.max_messages}")
    out: list[Message] = []
    for i, m in enumerate(messages):
        if isinstance(m, Message):
            role, content, name = m.role, m.content, m.name
        elif isinstance(m, Mapping):
            extra = set(m) - {"role", "content", "name"}
            if extra:
                raise MessageError(f"message {i} has unknown fields {sorted(map(str, extra))}")
            if "role" not in m or "content" not in m:
                raise MessageError(f"message {i} needs 'role' and 'content'")
            role, content, name = m["role"], m["content"], m.get("name")
        else:
            raise MessageError(f"message {i} must be a mapping with role and content, got {type(m).__name__}")
        if isinstance(role, str):
            role = ROLE_ALIASES.get(role, role)
        if not isinstance(role, str) or role not in ROLES:
            raise MessageError(f"message {i} has unknown role {role!r}; use one of {sorted(ROLES)}")
        if isinstance(content, list):
            content = _content_parts_text(content, i)
        check_text(content, f"message {i} content", limits.max_message_chars)
        if name is not None:
            check_id(name, f"message {i} name", limits)
        out.append(Message(role=role, content=content, name=name))
    return tuple(out)


def _content_parts_text(parts: list[Any], i: int) -> str:
    """The text of an OpenAI content-part list (``[{"type": "text", "text"}...]``).

    Only text is stored: a part of another type (an image, audio, a file) is refused
    rather than dropped, so nothing the caller sent disappears unseen.
    """
    texts: list[str] = []
    for j, part in enumerate(parts):
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping) and part.get("type", "text") == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        else:
            kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
            raise MessageError(f"message {i} content part {j} is {kind!r}; only text parts can be stored")
    return "\n".join(texts)


def parse_time(value: object, what: str = "at") -> datetime:
    """Accept a datetime, a date, an ISO-8601 string or POSIX seconds; return aware UTC."""
    try:
        return _parse_time(value, what)
    except (OverflowError, OSError):
        # An instant that cannot be expressed in UTC (year 1 with a positive offset).
        raise InputError(f"{what} {value!r} is out of the representable range") from None


def _parse_time(value: object, what: str) -> datetime:
    if isinstance(value, datetime):
        return utc(value)
    if isinstance(value, date):
        return utc(datetime(value.year, value.month, value.day))
    if isinstance(value, bool):
        raise InputError(f"{what} must be a datetime, got bool")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise InputError(f"{what} must be a finite timestamp")
        try:
            return utc(datetime.fromtimestamp(float(value), tz=None).astimezone())
        except (OverflowError, OSError, ValueError):
            raise InputError(f"{what} timestamp {value!r} is out of range") from None
    if isinstance(value, str):
        try:
            return utc(datetime.fromisoformat(value.strip().replace("Z", "+00:00")))
        except ValueError:
            raise InputError(f"{what} {value!r} is not an ISO-8601 date or datetime") from None
    raise InputError(f"{what} must be a datetime or ISO-8601 string, got {type(value).__name__}")


# Metadata is stored as JSON next to the observation and read back by every export,
# checksum and migration, which nest it a few levels deeper: a depth far below the JSON
# encoder's own limit (254) keeps all of those working. The size limit is twice the
# longest message: metadata annotates an interaction, it is not a second content field.
MAX_METADATA_DEPTH = 32
MAX_METADATA_BYTES = 64_000


def _metadata_problem(value: object, max_depth: int) -> str | None:
    """What makes ``value`` unfit to be stored as JSON and read back unchanged, if anything.

    Iterative, so a hostile value cannot exhaust the recursion limit while being checked.
    """
    stack: list[tuple[object, int, str]] = [(value, 1, "metadata")]
    seen: set[int] = set()
    while stack:
        obj, depth, where = stack.pop()
        if isinstance(obj, (Mapping, list, tuple)):
            if depth > max_depth:
                return f"{where} nests deeper than {max_depth} levels"
            if id(obj) in seen:
                return f"{where} refers to itself"
            seen.add(id(obj))
            if isinstance(obj, Mapping):
                for k, v in obj.items():
                    if not isinstance(k, str):
                        return f"{where} has a key of type {type(k).__name__}; keys must be strings"
                    stack.append((v, depth + 1, f"{where}.{k[:40]}"))
            else:
                stack.extend((v, depth + 1, f"{where}[{i}]") for i, v in enumerate(obj))
        elif isinstance(obj, float) and not math.isfinite(obj):
            return f"{where} is {obj!r}; JSON holds finite numbers only"
        elif isinstance(obj, bool) or obj is None or isinstance(obj, (str, int, float)):
            continue
        else:
            return f"{where} is a {type(obj).__name__}, which JSON cannot hold"
    return None


def parse_metadata(
    value: object, *, max_depth: int = MAX_METADATA_DEPTH, max_bytes: int = MAX_METADATA_BYTES
) -> dict[str, Any]:
    """Check caller metadata and return the JSON form it will be stored and read back as.

    Metadata must be a mapping with string keys whose values JSON can hold exactly:
    strings, integers within 64 bits, finite floats, booleans, ``None``, lists and
    mappings, nested at most ``max_depth`` levels and at most ``max_bytes`` bytes as
    JSON. Anything else is refused here, before anything is stored, because it could
    not be read back (NaN would turn into ``null``, a deep value breaks export and
    checksums later).

    Raises
    ------
    InputError
        Naming what is wrong and where.
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"metadata must be a mapping, got {type(value).__name__}")
    problem = _metadata_problem(value, max_depth)
    if problem is not None:
        raise InputError(problem)
    try:
        encoded = orjson.dumps(dict(value))
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise InputError(f"metadata is not JSON-serializable: {exc}") from None
    if len(encoded) > max_bytes:
        raise InputError(f"metadata is {len(encoded):,} bytes as JSON; the limit is {max_bytes:,}")
    return orjson.loads(encoded)


def observation_id_for(user_id: str, session_id: str, at: datetime, messages: Sequence[Message]) -> str:
    """A content-derived observation id, so re-sending the same interaction is a no-op."""
    payload = orjson.dumps(
        [user_id, session_id, at.isoformat(), [[m.role, m.name, m.content] for m in messages]]
    )
    return "obs_" + hashlib.sha256(payload).hexdigest()[:24]


def build_observation(
    user_id: str,
    messages: object,
    *,
    at: object,
    session_id: object | None,
    observation_id: object | None,
    metadata: object | None,
    limits: InputLimits,
    redactor: Callable[[str], str] | None = None,
) -> Observation:
    """Validate every part of one interaction and build its :class:`Observation`.

    The default session id is the UTC date of ``at``: interactions of one day form
    a session unless the caller says otherwise.
    """
    uid = check_id(user_id, "user_id", limits)
    msgs = parse_messages(messages, limits)
    if redactor is not None:
        # Before the id is derived, so no id ever depends on the raw text; re-validated
        # because a redactor may empty a message.
        from .redact import redact_messages

        msgs = parse_messages(list(redact_messages(msgs, redactor)), limits)
    when = parse_time(at)
    sid = f"{when:%Y-%m-%d}" if session_id is None else check_id(session_id, "session_id", limits)
    meta = parse_metadata(metadata)
    oid = (
        observation_id_for(uid, sid, when, msgs)
        if observation_id is None
        else check_id(observation_id, "observation_id", limits)
    )
    return Observation(id=oid, user_id=uid, session_id=sid, at=when, messages=msgs, metadata=meta)


def check_query(query: object, limits: InputLimits) -> str:
    """A search or recall query: non-blank text within the message limit."""
    return check_text(query, "query", limits.max_message_chars, QueryError)


def ensure_iterable(value: object, what: str) -> Iterable[Any]:
    """Reject non-iterables (and bare strings) where a collection is expected."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise InputError(f"{what} must be a list, got {type(value).__name__}")
    return value  # type: ignore[return-value]
