"""Loader for the LoCoMo-Plus format (xjtuleeyf/Locomo-Plus cue/trigger pairs).

Each item has a ``cue_dialogue`` (lines ``"A: ..."``/``"B: ..."``), a later
``trigger_query`` whose meaning depends on the cue although the two share few words,
and a ``time_gap`` (``"three weeks later"``). One benchmark case per item: the cue is
inserted as a new session into a host LoCoMo conversation at a seeded position (A and
B become the host's two speakers), and the trigger is asked ``time_gap`` after the cue.
The memory holds only what happened before the trigger (host sessions after it are
left out). Gold evidence is the cue's turns, or with ``gold="speaker"`` only the cue
turns of the person who later says the trigger: the statement of the cause, goal,
value or state itself, not the listener's reply (which is no evidence about the
speaker). Items may carry a ``split`` (``"tune"`` / ``"heldout"``) to select on.
"""

from __future__ import annotations

import random
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Mapping, Sequence

import orjson

from ..types import Conversation, Dataset, Question, Turn
from .locomo import load_locomo

__all__ = ["load_locomo_plus", "parse_time_gap", "parse_cue", "plus_case", "default_cues_path", "GOLD"]

GOLD = ("cue", "speaker")

_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "few": 3, "several": 4,
    "couple": 2, "next": 1, "half": 0.5,
}
_UNITS = {"minute": 1 / 1440, "hour": 1 / 24, "day": 1, "week": 7, "month": 30, "year": 365}
_GAP = re.compile(r"(\d+(?:\.\d+)?|[a-z]+)?\s*(?:of\s+)?(?:a\s+)?(minute|hour|day|week|month|year)s?", re.I)
_LINE = re.compile(r"^\s*([A-Za-z])\s*:\s*(.*)$")


def parse_time_gap(text: object, default_days: float = 7.0) -> timedelta:
    """Parse a LoCoMo-Plus ``time_gap`` such as ``"three weeks later"`` or ``"2 days later"``.

    Parameters
    ----------
    text : object
        The gap description.
    default_days : float
        Used when nothing recognisable is found.

    Returns
    -------
    timedelta

    Examples
    --------
    >>> parse_time_gap("three weeks later").days
    21
    >>> parse_time_gap("a month later").days
    30
    """
    if not isinstance(text, str):
        return timedelta(days=default_days)
    m = _GAP.search(text)
    if not m:
        return timedelta(days=default_days)
    qty_text = (m.group(1) or "1").lower()
    try:
        qty = float(qty_text)
    except ValueError:
        qty = float(_NUMBERS.get(qty_text, 1))
    return timedelta(days=qty * _UNITS[m.group(2).lower()])


def parse_cue(dialogue: str) -> list[tuple[str, str]]:
    """Split a cue dialogue into (speaker letter, text) lines.

    Lines without a ``"X:"`` prefix continue the previous line (or belong to ``"A"``).

    Parameters
    ----------
    dialogue : str

    Returns
    -------
    list of (str, str)
    """
    out: list[tuple[str, str]] = []
    for line in dialogue.splitlines():
        if not line.strip():
            continue
        m = _LINE.match(line)
        if m and m.group(2).strip():
            out.append((m.group(1).upper(), m.group(2).strip()))
        elif out:
            out[-1] = (out[-1][0], f"{out[-1][1]} {line.strip()}")
        else:
            out.append(("A", line.strip()))
    return out


def _items(data: Any) -> list[Mapping[str, Any]]:
    if isinstance(data, Mapping):
        data = data.get("data") or data.get("items") or list(data.values())
    return [x for x in data if isinstance(x, Mapping) and x.get("cue_dialogue") and x.get("trigger_query")]


def plus_case(index: int, item: Mapping[str, Any], host: Conversation, rng: random.Random,
              gold: str = "cue") -> Conversation:
    """Build one case: the host's history with the cue inserted, and the trigger question.

    Parameters
    ----------
    index : int
        Item position (used in ids).
    item : Mapping
        One cue/trigger item.
    host : Conversation
        A LoCoMo conversation.
    rng : random.Random
        Seeded; chooses the insertion point.
    gold : {"cue", "speaker"}
        Every cue turn, or only those of the trigger's speaker.

    Returns
    -------
    Conversation
        ``meta`` names the cue's turns (``cue_turns``) and the trigger speaker's
        among them (``speaker_turns``) whichever ``gold`` is.
    """
    sessions = host.sessions()
    after = rng.randint(1, len(sessions)) if sessions else 0  # insert after this many sessions
    prev_end = sessions[after - 1][1][-1].at if after else datetime(2023, 1, 1).astimezone()
    if after < len(sessions):
        cue_at = prev_end + (sessions[after][1][0].at - prev_end) / 2
    else:
        cue_at = prev_end + timedelta(days=1)
    names = {"A": str(host.meta.get("speaker_a") or "A"), "B": str(host.meta.get("speaker_b") or "B")}
    cid = f"plus-{index}"
    lines = parse_cue(str(item["cue_dialogue"]))
    cue = [
        Turn(f"C{index}:{j + 1}", names.get(who, who), text, cue_at + timedelta(minutes=j), f"{cid}/cue", "user")
        for j, (who, text) in enumerate(lines)
    ]
    asked = cue_at + parse_time_gap(item.get("time_gap"))
    history = [t for t in host.turns if t.at < asked]
    turns = sorted(history + cue, key=lambda t: t.at)
    trigger = parse_cue(str(item["trigger_query"]))
    text = " ".join(t for _, t in trigger) or str(item["trigger_query"])
    # The cue speaker is whoever says the trigger ("A" in the upstream format).
    who = trigger[0][0] if trigger else "A"
    own = tuple(t.id for t, (letter, _) in zip(cue, lines) if letter == who)
    if gold not in GOLD:
        raise ValueError(f"gold must be one of {', '.join(GOLD)}, got {gold!r}")
    q = Question(
        id="trigger", text=text, category=str(item.get("relation_type", "unknown")),
        evidence=own if gold == "speaker" else tuple(t.id for t in cue), at=asked, from_user=True,
    )
    meta = {"host": host.id, "inserted_after_session": after, "time_gap": item.get("time_gap"),
            "item": str(item.get("id", index)), "split": item.get("split"),
            "cue_turns": [t.id for t in cue], "speaker_turns": list(own)}
    return Conversation(cid, tuple(turns), (q,), meta)


def load_locomo_plus(
    path: str | Path,
    *,
    host: str | Path | None = None,
    seed: int = 0,
    limit: int | None = None,
    split: str | None = None,
    gold: str = "cue",
) -> Dataset:
    """Load LoCoMo-Plus cue/trigger items and build one case per item.

    Parameters
    ----------
    path : str or Path
        A JSON list of cue/trigger items.
    host : str or Path, optional
        A LoCoMo-format file giving the host conversations (item ``i`` goes into host
        ``i mod n``). Default: ``../locomo/locomo_dev.json`` next to ``path``.
    seed : int
        Seeds the insertion points.
    limit : int, optional
        Keep the first ``limit`` items (of the split, when one is chosen).
    split : str, optional
        Keep only items whose ``split`` field equals it (``"tune"``, ``"heldout"``).
        Host and insertion point of an item do not depend on this choice.
    gold : {"cue", "speaker"}
        Gold evidence: every cue turn, or only the trigger speaker's own cue turns.

    Returns
    -------
    Dataset

    Raises
    ------
    FileNotFoundError
        When no host file is given and none is found next to ``path``.
    ValueError
        For an unknown ``gold``, or a ``split`` that no item carries.
    """
    p = Path(path)
    host_path = Path(host) if host else p.parent.parent / "locomo" / "locomo_dev.json"
    if not host_path.exists():
        raise FileNotFoundError(f"LoCoMo-Plus needs a host LoCoMo file (--host); {host_path} does not exist")
    hosts: Sequence[Conversation] = load_locomo(host_path).conversations
    if gold not in GOLD:
        raise ValueError(f"gold must be one of {', '.join(GOLD)}, got {gold!r}")
    items = _items(orjson.loads(p.read_bytes()))
    rng = random.Random(seed)
    convs: list[Conversation] = []
    for i, it in enumerate(items):
        if limit is not None and len(convs) >= limit:
            break
        # Every item draws its insertion point, kept or not, so an item lands at the
        # same place whichever split is selected.
        case = plus_case(i, it, hosts[i % len(hosts)], rng, gold)
        if split is None or it.get("split") == split:
            convs.append(case)
    if split is not None and not convs and not any(it.get("split") == split for it in items):
        raise ValueError(f"no item of {p} has split {split!r}")
    meta = {"path": str(p), "host": str(host_path), "seed": seed, "split": split, "gold": gold}
    return Dataset("locomo_plus", tuple(convs), meta)


def default_cues_path() -> Path:
    """The packaged cue/trigger dev set (``personatree_bench/data/cue_trigger.json``)."""
    return Path(__file__).resolve().parent.parent / "data" / "cue_trigger.json"
