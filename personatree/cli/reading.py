"""Reading the JSON and JSONL inputs of ``observe`` and ``import``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson

from ..errors import InputError

__all__ = ["json_lines", "read_interactions", "read_source"]


def read_source(source: str) -> str:
    """The text of the file ``source`` names, or of stdin for ``-``."""
    return sys.stdin.read() if source == "-" else _read_file(source)


def read_interactions(source: str) -> list[dict[str, Any]]:
    """The interactions of a JSON list, JSONL or bare-message input (``-``: stdin).

    Raises
    ------
    InputError
        For empty input, input that is not JSON, or an item that is neither an
        interaction with ``messages`` nor a message.
    """
    text = read_source(source).strip()
    if not text:
        raise InputError("no input")
    try:
        if text.startswith("["):
            data = orjson.loads(text)
        elif text.startswith("{") and "\n" not in text:
            data = [orjson.loads(text)]
        else:
            data = [obj for _, obj in json_lines(text, "stdin" if source == "-" else source)]
    except orjson.JSONDecodeError as exc:
        raise InputError(f"input is not JSON or JSONL: {exc}") from None
    items: list[dict[str, Any]] = []
    for i, obj in enumerate(data if isinstance(data, list) else [data]):
        if isinstance(obj, dict) and "messages" in obj:
            items.append(obj)
        elif isinstance(obj, dict) and "role" in obj:
            # A bare message per line: one interaction each.
            items.append({"messages": [obj]})
        else:
            raise InputError(f"item {i} is neither an interaction with 'messages' nor a message")
    return items


def json_lines(text: str, source: str) -> list[tuple[int, Any]]:
    """The JSON value of every non-blank line of a JSONL text, with its line number.

    Raises
    ------
    InputError
        Naming the file's real line (counted from 1) and the column within it.
    """
    out: list[tuple[int, Any]] = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append((line_no, orjson.loads(line)))
        except orjson.JSONDecodeError as exc:
            raise InputError(f"{source} line {line_no}, column {exc.colno}: not JSON ({exc.msg})") from None
    return out


def _read_file(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from None
