"""Whether a string can be stored as text: no NUL character, no lone surrogate.

SQLite and PostgreSQL hold UTF-8 text, and JSON exports must decode back to the same
string, so a lone surrogate (which has no UTF-8 form) cannot be stored, and a NUL
character is refused wherever it would cut a C string short. Every layer that takes
text from outside asks :func:`find_text_fault` and raises its own error with its own
message: input validation (:mod:`personatree.inputs`), the store codec, the store URL
and the import of an export. This module imports nothing of personatree, so the
lowest layer can use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["TextFault", "find_text_fault"]


@dataclass(frozen=True, slots=True)
class TextFault:
    """What makes a string unfit to be stored, and where.

    Attributes
    ----------
    kind : {"nul", "surrogate"}
        A NUL character, or a lone surrogate (a string with no UTF-8 encoding).
    position : int
        Index in the string of the first offending character.
    """

    kind: Literal["nul", "surrogate"]
    position: int


def find_text_fault(value: str, *, nul: bool = True) -> TextFault | None:
    """The first reason ``value`` cannot be stored as text, or ``None``.

    Parameters
    ----------
    value : str
        The string to check.
    nul : bool
        Also refuse NUL characters (checked first). ``False`` where NUL is stored
        escaped, as the store codec does.

    Returns
    -------
    TextFault or None
        ``None`` when the string is fine.
    """
    if nul:
        at = value.find("\x00")
        if at >= 0:
            return TextFault("nul", at)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return TextFault("surrogate", exc.start)
    return None
