"""Sentence splitting: a regex splitter for chat text, and a chunker for run-ons.

No model and no data download: abbreviations ("Dr.", "e.g.") come from
:data:`personatree.lexicons.NO_SPLIT_ABBR`; decimals, initials, ellipses, "!?" runs,
emoji and newlines are handled by the patterns below. :data:`EMOJI_CLASS` and
:data:`CLOSERS` are shared with the cue and phrasing modules, which strip the same
trailing emoji and quotes.
"""

from __future__ import annotations

import re

from ..lexicons import NO_SPLIT_ABBR

__all__ = ["EMOJI_CLASS", "CLOSERS", "split_sentences", "chunk_text"]

# Emoji and pictographs, plus the variation selector and zero-width joiner that glue
# emoji sequences together. Built from real characters so the class is portable.
EMOJI_CLASS = (
    "\U0001F000-\U0001FAFF"  # pictographs, emoticons, transport, symbols & pictographs ext.
    "\u2600-\u27BF"  # misc symbols, dingbats
    "\u2B00-\u2BFF"  # arrows, stars
    "\uFE0F\u200D"
)
CLOSERS = "\"'\u201d\u2019)\\]"

# A boundary candidate: a run of terminators (. ! ? …), optional closing quotes or
# brackets and trailing emoji (they belong to the sentence they end), followed by
# whitespace or the end; or an emoji run on its own followed by whitespace.
_END_RE = re.compile(
    rf"(?P<term>[.!?\u2026]+)[{CLOSERS}]*(?:\s*[{EMOJI_CLASS}]+)*(?=\s|$)"
    rf"|(?P<emo>[{EMOJI_CLASS}]+)(?=\s)"
)
_BULLET_RE = re.compile(r"^\s*(?:[-*\u2022>]+|\d{1,3}[.)])\s+")


def _is_abbreviation(line: str, dot: int) -> bool:
    """Whether the period at ``line[dot]`` closes an abbreviation or an initial."""
    start = line.rfind(" ", 0, dot) + 1
    word = line[start:dot].lstrip("(\"'\u201c\u2018")
    if not word:
        return False
    low = word.lower()
    if low in NO_SPLIT_ABBR:
        return True
    # Dotted acronyms ("U.S.", "a.m.") rarely end a chat sentence; keep them whole.
    if "." in low and all(len(part) == 1 for part in low.split(".")):
        return True
    # A single capital letter is an initial ("J. K. Rowling"), not a sentence end.
    return len(word) == 1 and word.isupper()


def _split_line(line: str) -> list[str]:
    """The sentences of one line (no newline inside), in order."""
    out: list[str] = []
    start = 0
    n = len(line)
    for m in _END_RE.finditer(line):
        end = m.end()
        nxt = end
        while nxt < n and line[nxt].isspace():
            nxt += 1
        if nxt >= n:
            break  # the rest is the final sentence
        following = line[nxt]
        term = m.group("term")
        if term is None:
            # A bare emoji ends a sentence only when a capitalised word follows.
            if not following.isupper():
                continue
        elif following.islower():
            # "e.g. the", "I was thinking... maybe": a lower-case continuation.
            # After ! or ? informal chat often goes on in lower case; split anyway.
            if "!" not in term and "?" not in term:
                continue
        elif term == "." and _is_abbreviation(line, m.start("term")):
            continue
        piece = line[start:end].strip()
        if piece:
            out.append(piece)
        start = end
    piece = line[start:].strip()
    if piece:
        out.append(piece)
    return out


def split_sentences(text: str) -> list[str]:
    """Split text into sentences with a regex splitter (no model, no data downloads).

    Lines are split first (chat messages use newlines as separators), list bullets are
    removed, then each line is cut after sentence terminators (``.``, ``!``, ``?``,
    ``…`` and runs of them) that are followed by whitespace. A period does not end a
    sentence after a known abbreviation ("Dr.", "e.g.", "vs.") or an initial ("J."), nor
    when a lower-case word follows; decimals ("3.5") never match because no whitespace
    follows the period. Emoji after a terminator stay with the sentence they close; a
    bare emoji ends a sentence when a capitalised word follows.

    Parameters
    ----------
    text : str
        Any text: one message, possibly several lines.

    Returns
    -------
    list of str
        The sentences, stripped, in order; empty pieces are dropped.

    Examples
    --------
    >>> split_sentences("I met Dr. Smith today! He's nice... We talked e.g. about 3.5 km runs.")
    ['I met Dr. Smith today!', "He's nice...", 'We talked e.g. about 3.5 km runs.']
    """
    out: list[str] = []
    for raw in text.splitlines():
        line = _BULLET_RE.sub("", raw, count=1).strip()
        if line:
            out.extend(_split_line(line))
    return out


def chunk_text(sentence: str, max_chars: int = 600) -> list[str]:
    """Cut an overlong sentence into pieces of at most ``max_chars`` characters.

    Cuts prefer the last clause separator (``;``, ``,``, `` - ``) before the limit,
    then the last space, and only then a hard cut, so pieces stay readable.

    Parameters
    ----------
    sentence : str
        A sentence, possibly very long (run-on text without punctuation).
    max_chars : int
        The longest piece.

    Returns
    -------
    list of str
        One or more non-empty pieces (the sentence itself when short enough).
    """
    s = sentence.strip()
    if len(s) <= max_chars:
        return [s] if s else []
    pieces: list[str] = []
    pos, n = 0, len(s)
    # Walk an index instead of re-slicing the tail, so a huge message stays linear.
    while n - pos > max_chars:
        lo, hi = pos + max_chars // 3, pos + max_chars + 1
        cut = max(s.rfind("; ", lo, hi), s.rfind(", ", lo, hi), s.rfind(" - ", lo, hi))
        if cut < 0:
            cut = s.rfind(" ", lo, hi)
        cut = pos + max_chars if cut < 0 else cut + 1
        head = s[pos:cut].strip()
        if head:
            pieces.append(head)
        pos = cut
        while pos < n and s[pos].isspace():
            pos += 1
    tail = s[pos:].strip()
    if tail:
        pieces.append(tail)
    return pieces
