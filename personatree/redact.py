"""Optional redaction at ingestion: keep emails, phone numbers and card numbers out of memory.

A deployment that must not store such data turns redaction on; message contents are
then rewritten *before* the observation is built, so the raw text reaches neither the
verbatim log, nor the content-derived observation id, nor any node, embedding or cache.

* :func:`redact` is a pure function: ``redact(text, patterns) -> str``.
* :class:`Redactor` bundles the built-in patterns with an optional user-supplied
  ``Callable[[str], str]`` (names, addresses, anything domain-specific) and checks that
  the result is still storable text.

The patterns favour precision on the kinds named below and recall on the obvious
formats; they are a safety net, not a guarantee (see ``SECURITY.md``):

``email``
    ``local@domain.tld`` (RFC 5322 "dot-atom" subset).
``card``
    13 to 19 digits, optionally grouped by single spaces or dashes, that pass the Luhn
    check (so order numbers and most other long numbers are left alone).
``phone``
    7 to 15 digits in the usual written forms: an optional ``+country`` code, an
    optional ``(area)`` group, and groups separated by spaces, dots or dashes, or one
    run of 10 to 15 digits. Dates (``2024-03-01``, ``01.03.2024``), dotted IPv4
    addresses, times and card-shaped numbers are not phone numbers.

Numbers written next to each other form one run of digit groups; a run is cut into
windows of whole groups (the longest acceptable window first), so a card followed by
a phone number is redacted as both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Callable, Iterable, Literal, Sequence

from .errors import ConfigError
from .types import Message

__all__ = ["PATTERNS", "PatternName", "REPLACEMENTS", "luhn_ok", "redact", "Redactor", "redact_messages"]

PatternName = Literal["email", "phone", "card"]

PATTERNS: tuple[PatternName, ...] = ("email", "phone", "card")

#: What each kind is replaced with; the tokens match no pattern, so redaction is idempotent.
REPLACEMENTS: dict[str, str] = {"email": "[EMAIL]", "phone": "[PHONE]", "card": "[CARD]"}

# Lenient on the local part (over-redacting a malformed address is the safe direction).
_EMAIL = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}(?![\w-])",
    re.ASCII,
)
# Runs of digit groups joined by single separators. Numbers written next to each other
# ("call 555-123-4567 4111 1111 1111 1111") form one run, so each run is cut into
# windows of whole groups, longest acceptable window first (see _windows).
_CARD_RUN = re.compile(r"(?<!\w)\d+(?:[ -]\d+)*(?!\w)", re.ASCII)
_CARD_GROUP = re.compile(r"\d+", re.ASCII)
_PHONE_GROUP_SRC = r"\+?\(?\d+\)?"
_PHONE_RUN = re.compile(
    rf"(?<![\w+]){_PHONE_GROUP_SRC}(?:(?:[ .-]|(?<=\))){_PHONE_GROUP_SRC})*(?!\w)", re.ASCII
)
_PHONE_GROUP = re.compile(_PHONE_GROUP_SRC, re.ASCII)
_DATE = re.compile(
    r"\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{2,4}", re.ASCII
)
_IPV4 = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}", re.ASCII)
_CARD_SHAPED = re.compile(r"\d{4}(?:[ -]\d{4}){2,3}(?:[ -]\d{1,4})?", re.ASCII)


def luhn_ok(digits: str) -> bool:
    """Whether a string of digits passes the Luhn checksum (payment card numbers do).

    Parameters
    ----------
    digits : str
        Only ASCII digits.

    Returns
    -------
    bool
    """
    if not digits or not digits.isascii() or not digits.isdigit():
        return False
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _windows(run: str, group: re.Pattern[str], lo: int, hi: int, accept: Callable[[str], bool], token: str) -> str:
    """Replace, left to right, the longest window of whole groups with ``lo..hi`` digits
    that ``accept`` approves; groups are never split."""
    spans = [(m.start(), m.end(), sum(ch.isdigit() for ch in m.group())) for m in group.finditer(run)]
    out: list[str] = []
    pos = i = 0
    while i < len(spans):
        best = None
        total = 0
        for j in range(i, len(spans)):
            total += spans[j][2]
            if total > hi:
                break
            if total >= lo and accept(run[spans[i][0]:spans[j][1]]):
                best = j
        if best is None:
            i += 1
            continue
        out.append(run[pos:spans[i][0]])
        out.append(token)
        pos = spans[best][1]
        i = best + 1
    out.append(run[pos:])
    return "".join(out)


def _is_card(text: str) -> bool:
    return luhn_ok(re.sub(r"[ -]", "", text))


def _is_phone(text: str) -> bool:
    if _DATE.fullmatch(text) or _IPV4.fullmatch(text):
        return False
    # One unseparated group is a phone number only in E.164 form or with 10+ digits
    # (shorter bare numbers are amounts, codes, order numbers).
    if re.fullmatch(r"\d+", text):
        return len(text) >= 10
    return True


def _card(match: re.Match[str]) -> str:
    return _windows(match.group(0), _CARD_GROUP, 13, 19, _is_card, REPLACEMENTS["card"])


def _phone(match: re.Match[str]) -> str:
    run = match.group(0)
    if _DATE.fullmatch(run) or _IPV4.fullmatch(run) or _CARD_SHAPED.fullmatch(run):
        # A card-shaped number that failed the Luhn check is not a phone number either.
        return run
    # 7 digits at least (fewer is a quantity or a code), 15 at most (E.164).
    return _windows(run, _PHONE_GROUP, 7, 15, _is_phone, REPLACEMENTS["phone"])


def redact(text: str, patterns: Iterable[str] = PATTERNS) -> str:
    """Replace emails, card numbers and phone numbers in ``text`` by placeholders.

    Pure and idempotent: ``redact(redact(t, p), p) == redact(t, p)``.

    Parameters
    ----------
    text : str
        Any text.
    patterns : iterable of {"email", "phone", "card"}
        Which kinds to redact (default: all).

    Returns
    -------
    str
        The text with each match replaced by ``[EMAIL]``, ``[CARD]`` or ``[PHONE]``.

    Raises
    ------
    ConfigError
        For an unknown pattern name.
    """
    wanted = _check_patterns(patterns)
    # Emails first (they may contain digit runs), then cards before phones, because a
    # grouped card number also looks like a long phone number.
    if "email" in wanted:
        text = _EMAIL.sub(REPLACEMENTS["email"], text)
    if "card" in wanted:
        text = _CARD_RUN.sub(_card, text)
    if "phone" in wanted:
        text = _PHONE_RUN.sub(_phone, text)
    return text


def _check_patterns(patterns: Iterable[str]) -> frozenset[str]:
    if isinstance(patterns, str):
        patterns = (patterns,)
    wanted = frozenset(patterns)
    unknown = wanted - set(PATTERNS)
    if unknown:
        raise ConfigError(f"unknown redaction patterns {sorted(unknown)}; use some of {list(PATTERNS)}")
    return wanted


@dataclass(frozen=True, slots=True)
class Redactor:
    """Redaction applied to every message content before it is stored.

    Parameters
    ----------
    patterns : tuple of {"email", "phone", "card"}
        Built-in patterns to apply (default: all three).
    custom : callable, optional
        A user-supplied ``str -> str`` applied after the built-in patterns (e.g. a
        named-entity scrubber).

    Examples
    --------
    >>> Redactor()("mail me at ana@example.org or call +47 912 34 567")
    'mail me at [EMAIL] or call [PHONE]'
    >>> Redactor(patterns=(), custom=lambda t: t.replace("Ana", "[NAME]"))("Ana here")
    '[NAME] here'
    """

    patterns: tuple[str, ...] = PATTERNS
    custom: Callable[[str], str] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "patterns", tuple(sorted(_check_patterns(self.patterns))))
        if self.custom is not None and not callable(self.custom):
            raise ConfigError(f"custom redactor must be callable, got {type(self.custom).__name__}")

    def __call__(self, text: str) -> str:
        """Redact one text.

        Raises
        ------
        ConfigError
            If the custom redactor fails or returns something other than text (a
            deployment bug; the message is not stored).
        """
        out = redact(text, self.patterns) if self.patterns else text
        if self.custom is not None:
            try:
                out = self.custom(out)
            except Exception as exc:  # noqa: BLE001 - any failure of user code is a config problem
                raise ConfigError(f"the custom redactor failed: {type(exc).__name__}: {exc}") from None
            if not isinstance(out, str):
                raise ConfigError(f"the custom redactor must return str, got {type(out).__name__}")
        return out


def redact_messages(messages: Sequence[Message], redactor: Callable[[str], str]) -> tuple[Message, ...]:
    """Apply ``redactor`` to every message content (roles and names are kept).

    The caller re-validates the result (a redactor may empty a message); see the hook
    described in ``SECURITY.md``.
    """
    return tuple(replace(m, content=redactor(m.content)) for m in messages)
