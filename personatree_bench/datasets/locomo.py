"""Loader for the LoCoMo format (snap-research/LoCoMo ``locomo10.json`` and its subsets).

A file is a list of samples, each with ``conversation`` (``speaker_a``, ``speaker_b``,
``session_N`` turn lists and ``session_N_date_time`` strings) and ``qa`` (questions
with ``evidence`` turn ids and a ``category``). Upstream has a few malformed evidence
strings (``"D8:6; D9:17"``, ``"D:11:26"``, ``"D30:05"``, a bare ``"D"``), so evidence
is parsed leniently; ids that name no turn are dropped and counted.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import orjson

from ..types import Conversation, Dataset, Question, Turn

__all__ = ["load_locomo", "parse_evidence", "parse_locomo_date", "locomo_conversation"]

_EVIDENCE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)", re.IGNORECASE)
_SESSION = re.compile(r"session_(\d+)")
_DATE = re.compile(
    r"(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<ap>[ap])\.?\s*m\.?\s*(?:on\s+)?"
    r"(?P<d>\d{1,2})\s+(?P<mon>[A-Za-z]+)\.?,?\s*(?P<y>\d{4})",
    re.IGNORECASE,
)
_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    )
}


def parse_evidence(value: object) -> tuple[list[str], list[str]]:
    """Parse LoCoMo evidence leniently into canonical turn ids.

    Parameters
    ----------
    value : object
        A list of strings (upstream), a single string, or anything else.

    Returns
    -------
    ids : list of str
        Canonical ``"D<session>:<turn>"`` ids without leading zeros, in order, unique.
    rejected : list of str
        Pieces that held no recognisable id (e.g. a bare ``"D"``).

    Examples
    --------
    >>> parse_evidence(["D8:6; D9:17", "D:11:26", "D30:05", "D"])
    (['D8:6', 'D9:17', 'D11:26', 'D30:5'], ['D'])
    """
    pieces: Iterable[object]
    if isinstance(value, (list, tuple)):
        pieces = value
    elif value is None:
        pieces = []
    else:
        pieces = [value]
    ids: list[str] = []
    rejected: list[str] = []
    for piece in pieces:
        if not isinstance(piece, str):
            rejected.append(repr(piece))
            continue
        found = _EVIDENCE.findall(piece)
        if not found:
            if piece.strip():
                rejected.append(piece)
            continue
        for s, t in found:
            canon = f"D{int(s)}:{int(t)}"
            if canon not in ids:
                ids.append(canon)
    return ids, rejected


def canonical_dia_id(value: object) -> str:
    """A turn's ``dia_id`` in the canonical form used for evidence (``"D1:03"`` -> ``"D1:3"``)."""
    text = str(value)
    found = _EVIDENCE.findall(text)
    if len(found) == 1:
        return f"D{int(found[0][0])}:{int(found[0][1])}"
    return text


def parse_locomo_date(text: object) -> datetime | None:
    """Parse a LoCoMo session date such as ``"4:12 pm on 2 May, 2023"``.

    Parameters
    ----------
    text : object
        The ``session_N_date_time`` value.

    Returns
    -------
    datetime or None
        Aware UTC datetime, or ``None`` when the text is not a recognisable date
        (ISO-8601 strings are accepted too).
    """
    if not isinstance(text, str):
        return None
    m = _DATE.search(text)
    if m:
        month = _MONTHS.get(m["mon"][:3].lower())
        if month is not None:
            hour = int(m["h"]) % 12 + (12 if m["ap"].lower() == "p" else 0)
            try:
                return datetime(int(m["y"]), month, int(m["d"]), hour, int(m["m"] or 0), tzinfo=timezone.utc)
            except ValueError:
                return None
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def _turn_text(raw: Mapping[str, Any]) -> str:
    text = str(raw.get("text") or "").strip()
    caption = raw.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        # The memory should know a photo was shared and what it showed, as a reader would.
        photo = f"[shares a photo: {caption.strip()}]"
        text = f"{text} {photo}" if text else photo
    return text


def locomo_turns(conversation: Mapping[str, Any], conv_id: str) -> list[Turn]:
    """The turns of one LoCoMo ``conversation`` mapping in session order.

    Sessions are ordered by their number; a session without a parseable date is
    placed one day after the previous one. Turn ``i`` of a session is stamped
    ``i`` minutes after the session start so that replay order is strict.

    Parameters
    ----------
    conversation : Mapping
        The sample's ``conversation`` value.
    conv_id : str
        Used in session ids (``"<conv_id>/session_3"``).

    Returns
    -------
    list of Turn
    """
    numbers = sorted(
        int(m.group(1))
        for k, v in conversation.items()
        if (m := _SESSION.fullmatch(k)) and isinstance(v, list)
    )
    turns: list[Turn] = []
    previous: datetime | None = None
    for n in numbers:
        start = parse_locomo_date(conversation.get(f"session_{n}_date_time"))
        if start is None:
            start = (previous + timedelta(days=1)) if previous else datetime(2000, 1, 1, tzinfo=timezone.utc)
        previous = start
        for i, raw in enumerate(conversation[f"session_{n}"]):
            if not isinstance(raw, Mapping):
                continue
            text = _turn_text(raw)
            if not text:
                continue
            turns.append(Turn(
                id=canonical_dia_id(raw.get("dia_id", f"D{n}:{i + 1}")),
                speaker=str(raw.get("speaker") or "unknown"),
                text=text,
                at=start + timedelta(minutes=i),
                session=f"{conv_id}/session_{n}",
                role="user",
            ))
    return turns


def _questions(qa: Sequence[Any], turn_ids: set[str], end: datetime | None) -> list[Question]:
    out: list[Question] = []
    for i, q in enumerate(qa):
        if not isinstance(q, Mapping) or not isinstance(q.get("question"), str):
            continue
        ids, rejected = parse_evidence(q.get("evidence"))
        gold = tuple(x for x in ids if x in turn_ids)
        dropped = tuple(rejected) + tuple(x for x in ids if x not in turn_ids)
        category = str(q.get("category", "unknown"))
        # Category 5 is LoCoMo's adversarial set; other files mark it by an adversarial answer.
        adversarial = category == "5" or ("adversarial_answer" in q and "answer" not in q)
        answer = q.get("answer", q.get("adversarial_answer", ""))
        out.append(Question(
            id=f"q{i}", text=q["question"], category=category, evidence=gold,
            adversarial=adversarial, at=end, answer=str(answer), dropped_evidence=dropped,
        ))
    return out


def locomo_conversation(sample: Mapping[str, Any], index: int) -> Conversation:
    """One LoCoMo sample as a :class:`Conversation`.

    Parameters
    ----------
    sample : Mapping
        One element of the upstream list.
    index : int
        Its position (used when ``sample_id`` is missing).

    Returns
    -------
    Conversation
    """
    conv_id = str(sample.get("sample_id") or f"conv-{index}")
    conversation = sample.get("conversation") or {}
    turns = locomo_turns(conversation, conv_id)
    end = turns[-1].at + timedelta(minutes=1) if turns else None
    questions = _questions(sample.get("qa") or [], {t.id for t in turns}, end)
    meta = {
        "speaker_a": conversation.get("speaker_a"),
        "speaker_b": conversation.get("speaker_b"),
        "sessions": len({t.session for t in turns}),
    }
    return Conversation(conv_id, tuple(turns), tuple(questions), meta)


def load_locomo(path: str | Path, *, limit: int | None = None) -> Dataset:
    """Load a LoCoMo-format file.

    Parameters
    ----------
    path : str or Path
        A JSON file holding a list of samples (or one sample).
    limit : int, optional
        Keep only the first ``limit`` conversations.

    Returns
    -------
    Dataset
        ``meta`` counts the evidence strings that were dropped.
    """
    data = orjson.loads(Path(path).read_bytes())
    samples = data if isinstance(data, list) else [data]
    if limit is not None:
        samples = samples[:limit]
    convs = tuple(locomo_conversation(s, i) for i, s in enumerate(samples) if isinstance(s, Mapping))
    dropped = [d for c in convs for q in c.questions for d in q.dropped_evidence]
    return Dataset("locomo", convs, {"path": str(path), "dropped_evidence": dropped})
