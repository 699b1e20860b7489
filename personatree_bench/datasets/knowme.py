"""Loader for the KnowMe-Bench format (QuantaAlpha/KnowMeBench, one dataset folder).

A dataset folder holds ``input/*.json`` (a first-person narrative stream: entries
with ``id``, ``timestamp``, ``location``, ``action``, ``dialogue``, ``environment``,
``background``, ``inner_thought``), ``question/<Task>_questions.json`` and
``answer/<Task>_answers.json`` joined on ``id``. Answers cite stream entries in
``evidence`` as an int, a list, or a string; two upstream tasks (Logical Event
Ordering, Expert-Annotated Psychoanalysis) cite none, so their questions carry no
gold evidence and cannot be scored on evidence recall.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

import orjson

from ..types import Conversation, Dataset, Question, Turn

__all__ = ["load_knowme", "parse_knowme_evidence", "entry_text"]

_INT = re.compile(r"-?\d+")
# The order in which the fields read naturally as one paragraph.
_FIELDS = ("action", "dialogue", "inner_thought", "background", "environment")


def parse_knowme_evidence(value: object) -> list[str]:
    """Evidence entry ids as strings, from an int, a list (nested or of strings) or a string.

    Parameters
    ----------
    value : object

    Returns
    -------
    list of str
        Unique ids in order (``"12"``); empty for ``None``.

    Examples
    --------
    >>> parse_knowme_evidence([3, "30", [31]])
    ['3', '30', '31']
    >>> parse_knowme_evidence("12, 15")
    ['12', '15']
    """
    out: list[str] = []

    def add(v: object) -> None:
        if isinstance(v, bool) or v is None:
            return
        if isinstance(v, int):
            items = [str(v)]
        elif isinstance(v, float) and v.is_integer():
            items = [str(int(v))]
        elif isinstance(v, str):
            items = [str(int(x)) for x in _INT.findall(v)]
        elif isinstance(v, (list, tuple)):
            for x in v:
                add(x)
            return
        else:
            return
        for x in items:
            if x not in out:
                out.append(x)

    add(value)
    return out


def entry_text(entry: Mapping[str, Any]) -> str:
    """One stream entry as the text the memory sees.

    The location leads in brackets, then action, dialogue, inner thought, background
    and environment, skipping empty fields.

    Parameters
    ----------
    entry : Mapping

    Returns
    -------
    str
        Possibly empty when every field is empty.
    """
    parts = [str(entry[k]).strip() for k in _FIELDS if isinstance(entry.get(k), str) and entry[k].strip()]
    body = " ".join(parts)
    loc = entry.get("location")
    if isinstance(loc, str) and loc.strip() and body:
        return f"[{loc.strip()}] {body}"
    return body


def _parse_ts(value: object) -> datetime | None:
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        dt = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def _read(path: Path) -> Any:
    return orjson.loads(path.read_bytes())


def knowme_turns(entries: Sequence[Any]) -> list[Turn]:
    """Stream entries as turns, in stream order (the narrative order, flashbacks included).

    An entry without a usable timestamp inherits the previous one; the session is the
    calendar day of the timestamp.

    Parameters
    ----------
    entries : sequence of mappings

    Returns
    -------
    list of Turn
    """
    turns: list[Turn] = []
    previous = datetime(2000, 1, 1, tzinfo=timezone.utc)
    seen: set[str] = set()
    for i, e in enumerate(entries):
        if not isinstance(e, Mapping):
            continue
        tid = str(e.get("id", i))
        text = entry_text(e)
        if not text or tid in seen:
            continue
        seen.add(tid)
        at = _parse_ts(e.get("timestamp")) or previous
        previous = at
        turns.append(Turn(tid, "I", text, at, f"day-{at:%Y-%m-%d}", "user"))
    return turns


def _task_files(folder: Path) -> list[tuple[str, Path, Path | None]]:
    tasks = []
    for q in sorted((folder / "question").glob("*.json")):
        task = q.stem.removesuffix("_questions")
        a = folder / "answer" / f"{task}_answers.json"
        tasks.append((task, q, a if a.exists() else None))
    return tasks


def load_knowme(
    path: str | Path, *, limit: int | None = None, tasks: Sequence[str] | None = None
) -> Dataset:
    """Load a KnowMe-Bench dataset folder.

    Parameters
    ----------
    path : str or Path
        The dataset folder (with ``input/``, ``question/``, ``answer/``).
    limit : int, optional
        Keep only the first ``limit`` stream entries, and only questions whose
        evidence lies entirely inside them (questions without evidence are kept).
    tasks : sequence of str, optional
        Keep only these task names.

    Returns
    -------
    Dataset
        One conversation (the narrator); question categories are the task names.
    """
    folder = Path(path)
    entries: list[Any] = []
    for f in sorted((folder / "input").glob("*.json")):
        data = _read(f)
        entries.extend(data if isinstance(data, list) else data.get("entries", []))
    turns = knowme_turns(entries)
    if limit is not None:
        turns = turns[:limit]
    ids = {t.id for t in turns}
    end = (max(t.at for t in turns) + timedelta(minutes=1)) if turns else None
    questions: list[Question] = []
    dropped_total: list[str] = []
    for task, qf, af in _task_files(folder):
        if tasks is not None and task not in tasks:
            continue
        answers = {str(a.get("id")): a for a in (_read(af) if af else []) if isinstance(a, Mapping)}
        for q in _read(qf):
            if not isinstance(q, Mapping) or not isinstance(q.get("question"), str):
                continue
            qid = str(q.get("id"))
            ans = answers.get(qid, {})
            cited = parse_knowme_evidence(ans.get("evidence"))
            gold = tuple(x for x in cited if x in ids)
            dropped = tuple(x for x in cited if x not in ids)
            if limit is not None and dropped:
                continue  # evidence outside the slice: not answerable from it
            dropped_total.extend(dropped)
            lowered = task.lower()
            questions.append(Question(
                id=f"{task}:{qid}", text=q["question"], category=task, evidence=gold,
                adversarial="adversarial" in lowered or "abstention" in lowered,
                at=end, answer=orjson.dumps(ans.get("answer", "")).decode()[:500],
                dropped_evidence=dropped,
            ))
    conv = Conversation(folder.name or "knowme", tuple(turns), tuple(questions), {"entries": len(entries)})
    return Dataset("knowme", (conv,), {"path": str(folder), "dropped_evidence": dropped_total})
