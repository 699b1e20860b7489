"""NUL-safe text for PostgreSQL, applied to the codec's row tuples.

PostgreSQL text cannot hold NUL, which the other stores accept; id and content
columns escape it reversibly (``\\x00`` → ``U+FFFE 0``, ``U+FFFE`` → ``U+FFFE U+FFFE``).
U+FFFE is a noncharacter, so the escape is a no-op for real text. JSON and time
columns are left alone: the codec's JSON already writes NUL as ``\\u0000``.

The ``*_in`` functions shape a codec row for writing, the ``*_out`` functions shape a
row as read back into the codec's row (positions as in
:mod:`personatree.store.codec`'s column tuples), ready for its ``decode_*``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .adapt import Embedding

__all__ = [
    "edge_in",
    "edge_out",
    "esc",
    "event_in",
    "event_out",
    "node_in",
    "node_out",
    "observation_in",
    "observation_out",
    "unesc",
]

Row = tuple[Any, ...]

_ESC = "\ufffe"


def esc(text: str) -> str:
    """Make ``text`` storable in a PostgreSQL text column (reversibly; see the module doc)."""
    if "\x00" not in text and _ESC not in text:
        return text
    return text.replace(_ESC, _ESC + _ESC).replace("\x00", _ESC + "0")


def unesc(text: str) -> str:
    """Inverse of :func:`esc`."""
    if _ESC not in text:
        return text
    out: list[str] = []
    i = 0
    while True:
        j = text.find(_ESC, i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        nxt = text[j + 1 : j + 2]
        out.append("\x00" if nxt == "0" else _ESC)
        i = j + 2


# Spelled out per table rather than driven by column names: load_graph runs these
# once per row, and tuple displays are several times faster than a generic loop.


def observation_in(r: Sequence[Any]) -> Row:
    """An observation row for writing: user_id, id and session_id escaped."""
    return (esc(r[0]), esc(r[1]), r[2], esc(r[3]), *r[4:])


def observation_out(r: Sequence[Any]) -> Row:
    """Inverse of :func:`observation_in`."""
    return (unesc(r[0]), unesc(r[1]), r[2], unesc(r[3]), *r[4:])


def node_in(r: Sequence[Any]) -> Row:
    """A node row for writing: text columns escaped, the embedding marked for binary."""
    blob = r[14]
    return (esc(r[0]), esc(r[1]), r[2], esc(r[3]), esc(r[4]), *r[5:14],
            None if blob is None else Embedding(blob), r[15])


def node_out(r: Sequence[Any]) -> Row:
    """Inverse of :func:`node_in` (the loader already returns the embedding's bytes)."""
    return (unesc(r[0]), unesc(r[1]), r[2], unesc(r[3]), unesc(r[4]), *r[5:])


def edge_in(r: Sequence[Any]) -> Row:
    """An edge row for writing: user_id, src, dst and reason escaped."""
    return (esc(r[0]), esc(r[1]), esc(r[2]), r[3], r[4], r[5], esc(r[6]), r[7])


def edge_out(r: Sequence[Any]) -> Row:
    """Inverse of :func:`edge_in`."""
    return (unesc(r[0]), unesc(r[1]), unesc(r[2]), r[3], r[4], r[5], unesc(r[6]), r[7])


def event_in(r: Sequence[Any]) -> Row:
    """A journal row for writing: user_id and kind escaped."""
    return (esc(r[0]), r[1], esc(r[2]), *r[3:])


def event_out(r: Sequence[Any]) -> Row:
    """Inverse of :func:`event_in` for what is read back: the kind (the user id is
    the caller's, and :func:`personatree.store.codec.decode_event` ignores it)."""
    return (r[0], r[1], unesc(r[2]), *r[3:])
