"""Turning a model's text answer into a validated response object.

Local and cheap models break structured output in predictable ways: they wrap JSON in
```json fences, add prose before or after it, leave trailing commas, think aloud in
``<think>`` blocks, or echo the format description instead of answering. This module
repairs what can be repaired, detects the echo, and validates the result with strict
pydantic models (unknown keys are refused, so an answer can never widen the schema).

Everything here is pure: text in, value or :class:`AnswerError` out.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Annotated, Any, Callable, Generic, Literal, NoReturn, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = [
    "AnswerError",
    "Parsed",
    "one_line",
    "extract_json",
    "is_schema_echo",
    "parse_answer",
    "LeafOut",
    "ExtractAnswer",
    "VerdictOut",
    "ValidateAnswer",
    "RouteAnswer",
    "SummaryAnswer",
    "LinkOut",
    "UpdateAnswer",
]

T = TypeVar("T", bound=BaseModel)


class AnswerError(ValueError):
    """A model answer that cannot be used (never leaves the judge: it becomes a retry,
    a fallback or a :class:`~personatree.judge.llm.JudgeOutputError`).

    Parameters
    ----------
    kind : str
        ``"empty"``, ``"invalid_json"``, ``"schema_echo"``, ``"invalid_schema"`` or
        ``"ungrounded"``.
    detail : str
        What was wrong, short enough to show the model on a retry.
    """

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


def one_line(text: str, limit: int = 200) -> str:
    """``text`` on one line (runs of whitespace become one space), cut to ``limit``
    characters with an ellipsis: how a model's words go into reasons, logs and errors."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


# -- response models ----------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LeafOut(_Strict):
    """One extracted statement."""

    interaction: int = Field(ge=0)
    message: int = Field(ge=0)
    text: str = Field(min_length=1, max_length=4000)
    type: str = Field(min_length=1, max_length=64)
    polarity: Literal[-1, 0, 1] = 0
    stance: Literal["positive", "negative", "neutral", "stopped", "started"] | None = None
    negated: bool = False
    topic: str = Field(default="", max_length=80)
    time: str | None = Field(default=None, max_length=80)
    entities: list[str] = Field(default_factory=list, max_length=20)


class ExtractAnswer(_Strict):
    """The extraction answer: ``{"leaves": [...]}``."""

    leaves: list[LeafOut] = Field(max_length=500)


class VerdictOut(_Strict):
    """One validator verdict."""

    pair: int = Field(ge=0)
    label: Literal["support", "conflict", "unrelated"]
    psi: float = Field(ge=-1.0, le=1.0)
    reason: str = Field(default="", max_length=400)


class ValidateAnswer(_Strict):
    """The validation answer: ``{"verdicts": [...]}``."""

    verdicts: list[VerdictOut] = Field(max_length=500)


class RouteAnswer(_Strict):
    """The router answer: level probabilities and schema constraints."""

    probabilities: dict[Literal["leaf", "mid", "root"], Annotated[float, Field(allow_inf_nan=False)]]
    schema_types: list[str] = Field(default_factory=list, max_length=20)


class SummaryAnswer(_Strict):
    """The summary answer: a claim grounded in cited evidence ids."""

    claim: str = Field(min_length=1, max_length=300)
    polarity: Literal[-1, 0, 1] = 0
    topic: str = Field(default="", max_length=80)
    evidence: list[int] = Field(min_length=1, max_length=500)


class LinkOut(_Strict):
    """The earlier statements one later statement changes."""

    group: int = Field(ge=0)
    changes: list[int] = Field(default_factory=list, max_length=100)


class UpdateAnswer(_Strict):
    """The update answer: ``{"links": [...]}``, one entry per group."""

    links: list[LinkOut] = Field(max_length=500)


@dataclass(frozen=True, slots=True)
class Parsed(Generic[T]):
    """A validated answer and whether JSON repair was needed to read it."""

    value: T
    repaired: bool


# -- JSON repair ----------------------------------------------------------------------------

_THINK_RE = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL | re.IGNORECASE)
_FENCE_RE = re.compile(r"```[a-zA-Z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_SMART_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})


def _string_step(ch: str, escaped: bool) -> tuple[bool, bool]:
    """One character of a JSON string literal: (still inside the string, next is escaped).

    Every scanner below walks the answer once, character by character, and must skip
    string contents (a ``{`` or ``//`` inside a string is text, not structure); this is
    the step they share while inside a string.
    """
    if escaped:
        return True, False
    if ch == "\\":
        return True, True
    return ch != '"', False


def _balanced_spans(text: str) -> list[str]:
    """Every top-level ``{...}`` or ``[...]`` span, honouring strings and escapes."""
    spans: list[str] = []
    depth = 0
    start = -1
    in_str = False
    esc = False
    for i, ch in enumerate(text):
        if in_str:
            in_str, esc = _string_step(ch, esc)
            continue
        if ch == '"' and depth > 0:
            in_str = True
        elif ch in "{[":
            if depth == 0:
                start = i
            depth += 1
        elif ch in "}]" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start : i + 1])
    if depth > 0 and start >= 0:
        spans.append(text[start:])  # truncated answer: let the fixer try to close it
    return spans


def _outside_strings(text: str, fix: "re.Pattern[str]", repl: str | Callable[["re.Match[str]"], str]) -> str:
    """Apply a regex substitution only to the parts of ``text`` outside JSON strings."""
    out: list[str] = []
    buf: list[str] = []
    in_str = False
    esc = False
    for ch in text:
        if in_str:
            out.append(ch)
            in_str, esc = _string_step(ch, esc)
            continue
        if ch == '"':
            out.append(fix.sub(repl, "".join(buf)))
            buf = []
            out.append(ch)
            in_str = True
        else:
            buf.append(ch)
    out.append(fix.sub(repl, "".join(buf)))
    return "".join(out)


_TRAILING_COMMA_RE = re.compile(r",(\s*[}\]])")
_LINE_COMMENT_RE = re.compile(r"//[^\n]*")
_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}
_PY_LITERAL_RE = re.compile(r"\b(True|False|None)\b")


def _fix(candidate: str) -> str:
    s = candidate.translate(_SMART_QUOTES)
    s = _outside_strings(s, _LINE_COMMENT_RE, "")
    s = _outside_strings(s, _TRAILING_COMMA_RE, r"\1")
    return _outside_strings(s, _PY_LITERAL_RE, lambda m: _PY_LITERALS[m.group(1)])


def _close_truncated(s: str) -> str:
    """Close the brackets of an answer cut off by a token limit (best effort)."""
    stack: list[str] = []
    in_str = False
    esc = False
    for ch in s:
        if in_str:
            in_str, esc = _string_step(ch, esc)
            continue
        if ch == '"':
            in_str = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and stack:
            stack.pop()
    tail = '"' if in_str else ""
    return s.rstrip().rstrip(",") + tail + "".join(reversed(stack))


# Deeper than any answer of the response models (the extraction answer nests four levels):
# refusing it before json.loads keeps a hostile answer from exhausting the recursion limit.
MAX_ANSWER_DEPTH = 64


def _refuse_constant(name: str) -> NoReturn:
    # JSON has no NaN or Infinity; Python's json module accepts them, and a non-finite
    # probability or score would poison every computation downstream.
    raise ValueError(f"non-finite number {name}")


def _too_deep(text: str, limit: int = MAX_ANSWER_DEPTH) -> bool:
    """Whether brackets outside strings nest deeper than ``limit`` (an iterative scan)."""
    depth = 0
    in_str = False
    esc = False
    for ch in text:
        if in_str:
            in_str, esc = _string_step(ch, esc)
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            depth += 1
            if depth > limit:
                return True
        elif ch in "}]":
            depth = max(0, depth - 1)
    return False


def _loads(text: str) -> Any:
    """``json.loads`` that refuses NaN/Infinity and never raises anything but ValueError."""
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:  # nesting the depth check did not see (it is a heuristic over raw text)
        raise ValueError("nested too deeply") from None


def extract_json(text: str) -> tuple[Any, bool]:
    """Read the JSON value in a model answer, repairing common damage.

    Tried in order: the stripped text as is; the contents of each fenced code block;
    each top-level balanced ``{...}``/``[...]`` span (prose around JSON). Each candidate
    is parsed as is, then after repair (trailing commas, ``//`` comments, smart quotes,
    Python literals ``True``/``False``/``None``), then with unclosed brackets closed.
    ``<think>...</think>`` blocks of reasoning models are dropped first. An answer whose
    brackets nest deeper than ``MAX_ANSWER_DEPTH`` is refused before parsing, and
    ``NaN``/``Infinity`` (not JSON, though Python's parser reads them) make a candidate
    unparseable, so no hostile answer can raise anything but :class:`AnswerError`.

    Parameters
    ----------
    text : str
        The raw answer.

    Returns
    -------
    value : object
        The first candidate that parses to a JSON object or array.
    repaired : bool
        False only when the stripped answer was valid JSON as is.

    Raises
    ------
    AnswerError
        ``kind="empty"`` or ``kind="invalid_json"``.
    """
    if not text or not text.strip():
        raise AnswerError("empty", "the answer was empty")
    stripped = text.strip().lstrip("\ufeff")
    if _too_deep(stripped):
        raise AnswerError("invalid_json", f"the answer nests brackets deeper than {MAX_ANSWER_DEPTH} levels")
    try:
        value = _loads(stripped)
        if isinstance(value, (dict, list)):
            return value, False
    except ValueError:
        pass
    body = _THINK_RE.sub("", stripped).strip()
    candidates: list[str] = [body]
    candidates.extend(m.group(1).strip() for m in _FENCE_RE.finditer(body))
    candidates.extend(_balanced_spans(body))
    seen: set[str] = set()
    for cand in candidates:
        if not cand or cand in seen:
            continue
        seen.add(cand)
        for attempt in (cand, _fix(cand), _close_truncated(_fix(cand))):
            try:
                value = _loads(attempt)
            except ValueError:
                continue
            if isinstance(value, (dict, list)):
                return value, True
    raise AnswerError("invalid_json", "the answer contained no parseable JSON object")


# -- schema echo ------------------------------------------------------------------------------

_SCHEMA_KEYS = frozenset({"$schema", "$defs", "definitions", "properties", "required", "additionalProperties"})
_PLACEHOLDER_RE = re.compile(r"^(?:\.\.\.|…|<[^<>]{1,40}>|string|str|text here|your answer)$", re.IGNORECASE)


def is_schema_echo(value: Any) -> bool:
    """Whether an answer echoes the format description (or a JSON schema) instead of answering.

    Detected: JSON-schema keywords at the top level or one level down (``properties``,
    ``$defs``, ``required``...), or a format placeholder used as a value (``"..."``,
    ``"<one short line>"``, ``"string"``).

    Parameters
    ----------
    value : object
        A parsed JSON value.

    Returns
    -------
    bool
    """
    def schema_like(obj: Any) -> bool:
        return isinstance(obj, dict) and (
            bool(_SCHEMA_KEYS & obj.keys()) or (obj.get("type") in ("object", "array") and "items" in obj)
        )

    if schema_like(value):
        return True
    if isinstance(value, dict) and any(schema_like(v) for v in value.values()):
        return True
    stack = [value]
    while stack:
        obj = stack.pop()
        if isinstance(obj, dict):
            stack.extend(obj.values())
        elif isinstance(obj, list):
            stack.extend(obj)
        elif isinstance(obj, str) and _PLACEHOLDER_RE.match(obj.strip()):
            return True
    return False


def parse_answer(text: str, model: type[T]) -> Parsed[T]:
    """Repair, echo-check and validate a model answer.

    Parameters
    ----------
    text : str
        The raw answer.
    model : type of pydantic BaseModel
        The expected response model (e.g. :class:`ValidateAnswer`).

    Returns
    -------
    Parsed

    Raises
    ------
    AnswerError
        With ``kind`` ``"empty"``, ``"invalid_json"``, ``"schema_echo"`` or
        ``"invalid_schema"``.
    """
    value, repaired = extract_json(text)
    if is_schema_echo(value):
        raise AnswerError("schema_echo", "the answer repeated the format description instead of answering")
    try:
        return Parsed(model.model_validate(value), repaired)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "<root>"
        raise AnswerError("invalid_schema", f"{where}: {err['msg']}") from None
    except (RecursionError, TypeError, ValueError, OverflowError) as exc:
        # Whatever else validation trips on is still an unusable answer, never a crash.
        raise AnswerError("invalid_schema", f"{type(exc).__name__}: {exc}"[:200]) from None
