"""Loader for the PrefEval format (amazon-science/PrefEval ``benchmark_dataset/``).

Topic files live in ``explicit_preference/`` and ``implicit_preference/{choice-based,
persona-driven}/``; ``filtered_inter_turns.json`` holds unrelated conversations.
Each item becomes its own memory stream: the preference conversation first, then
``distractors`` unrelated conversations (one session each), then the question.

Gold evidence, per form (PrefEval itself scores answers with an LLM; we score
whether the preference reached the context):

- explicit: the single user turn stating the preference;
- choice-based: the user's selection turn (``user_selection``), which is where the
  user reveals the preference by choosing among the options;
- persona-driven: the user turn(s) of the persona conversation that state the
  preference. Upstream does not mark them, so they are labelled here by content-word
  overlap with the preference statement (no embedding model, so the label cannot
  favour a dense retriever); ties are all gold.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

import orjson

from ..types import Conversation, Dataset, Question, Turn

__all__ = ["load_prefeval", "load_distractors", "preference_turn_ids", "FORMS"]

FORMS = ("explicit", "choice-based", "persona-driven")
_FORM_DIRS = {
    "explicit": Path("explicit_preference"),
    "choice-based": Path("implicit_preference") / "choice-based",
    "persona-driven": Path("implicit_preference") / "persona-driven",
}
_BASE = datetime(2024, 1, 1, 9, 0, tzinfo=timezone.utc)
_WORD = re.compile(r"[a-z][a-z'-]+")
_STOP = frozenset(
    "the a an and or but if of to in on at for with from by as is are was were be been am i "
    "me my mine you your we our they their it its this that these those do does did not no "
    "so very really just can could would should will about any some all more most than too "
    "have has had get got like prefer usually tend typically always also into over out up "
    "what which who when where how there here then them him her his she he".split()
)


def _stem(word: str) -> str:
    # A crude suffix strip: enough for "games"/"game", "dislike"/"disliked".
    for suf in ("ing", "ies", "es", "ed", "s"):
        if word.endswith(suf) and len(word) - len(suf) >= 3:
            return word[: -len(suf)]
    return word


def _content_words(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 2}


def preference_turn_ids(preference: str, user_turns: Sequence[tuple[str, str]]) -> list[str]:
    """Label the user turn(s) that state a preference, by content-word overlap.

    Parameters
    ----------
    preference : str
        The item's preference statement.
    user_turns : sequence of (turn id, text)
        The user's turns of the preference conversation.

    Returns
    -------
    list of str
        The ids with the highest overlap (all ties); empty only when there are no turns.
    """
    target = _content_words(preference)
    scored = [(len(target & _content_words(text)), tid) for tid, text in user_turns]
    if not scored:
        return []
    best = max(s for s, _ in scored)
    return [tid for s, tid in scored if s == best]


def load_distractors(path: str | Path, n: int | None = None) -> list[list[tuple[str, str]]]:
    """The distractor conversations as lists of (role, content), in file order.

    Parameters
    ----------
    path : str or Path
        ``filtered_inter_turns.json``.
    n : int, optional
        Keep the first ``n`` (default all).

    Returns
    -------
    list of list of (role, content)
    """
    data = orjson.loads(Path(path).read_bytes())
    out: list[list[tuple[str, str]]] = []
    for conv in data[: n if n is not None else len(data)]:
        msgs = conv.get("conversation", []) if isinstance(conv, Mapping) else conv
        turns = [
            (str(m.get("role", "user")), m["content"])
            for m in msgs
            if isinstance(m, Mapping) and isinstance(m.get("content"), str) and m["content"].strip()
        ]
        out.append(turns)
    return out


def _preference_turns(form: str, item: Mapping[str, Any]) -> tuple[list[tuple[str, str, str]], list[str]]:
    """(turn id, role, text) of the preference conversation and the gold ids."""
    if form == "explicit":
        return [("pref:0", "user", str(item["preference"]))], ["pref:0"]
    conv = item.get("conversation") or {}
    if form == "choice-based":
        keys = ("query", "assistant_options", "user_selection", "assistant_acknowledgment")
        roles = ("user", "assistant", "user", "assistant")
        turns = [(f"pref:{i}", r, str(conv[k])) for i, (k, r) in enumerate(zip(keys, roles)) if conv.get(k)]
        gold = [t for t, _, _ in turns if t == "pref:2"] or [t for t, r, _ in turns if r == "user"]
        return turns, gold
    turns = []
    for i, key in enumerate(sorted(conv, key=lambda k: int(k) if str(k).isdigit() else 0)):
        ex = conv[key]
        if isinstance(ex, Mapping):
            if ex.get("user"):
                turns.append((f"pref:{2 * i}", "user", str(ex["user"])))
            if ex.get("assistant"):
                turns.append((f"pref:{2 * i + 1}", "assistant", str(ex["assistant"])))
    gold = preference_turn_ids(str(item["preference"]), [(t, x) for t, r, x in turns if r == "user"])
    return turns, gold


def prefeval_conversation(
    form: str, topic: str, index: int, item: Mapping[str, Any], distractors: Sequence[Sequence[tuple[str, str]]]
) -> Conversation:
    """One PrefEval item as a stream: preference, distractors, then the question.

    The preference conversation is day 0, distractor ``k`` is day ``k + 1`` and the
    question is asked the day after the last distractor; turns are a minute apart.

    Parameters
    ----------
    form : str
        One of :data:`FORMS`.
    topic : str
        Topic file stem.
    index : int
        Item position in the topic file.
    item : Mapping
        The upstream item.
    distractors : sequence
        From :func:`load_distractors`.

    Returns
    -------
    Conversation
    """
    cid = f"{form}/{topic}/{index}"
    pref, gold = _preference_turns(form, item)
    turns = [
        Turn(tid, role, text, _BASE + timedelta(minutes=i), f"{cid}/pref", role)
        for i, (tid, role, text) in enumerate(pref)
    ]
    for k, conv in enumerate(distractors):
        day = _BASE + timedelta(days=k + 1)
        for j, (role, text) in enumerate(conv):
            turns.append(Turn(f"d{k}:{j}", role, text, day + timedelta(minutes=j), f"{cid}/distractor-{k}", role))
    asked = _BASE + timedelta(days=len(distractors) + 1)
    q = Question(
        id="q0", text=str(item["question"]), category=form, evidence=tuple(gold), at=asked,
        answer=str(item["preference"]), from_user=True,  # the user's own request to the assistant
    )
    return Conversation(cid, tuple(turns), (q,), {"form": form, "topic": topic, "preference": item["preference"]})


def load_prefeval(
    path: str | Path,
    *,
    distractors: int | None = 24,
    forms: Sequence[str] = FORMS,
    topics: Sequence[str] | None = None,
    limit: int | None = None,
    skip: int = 0,
) -> Dataset:
    """Load a PrefEval ``benchmark_dataset`` folder.

    Parameters
    ----------
    path : str or Path
        Folder with ``explicit_preference/``, ``implicit_preference/`` and
        ``filtered_inter_turns.json``.
    distractors : int or None
        How many distractor conversations go between preference and question
        (``None`` or more than available: all).
    forms : sequence of str
        Which of :data:`FORMS` to load.
    topics : sequence of str, optional
        Topic file stems to keep (default all).
    limit : int, optional
        Items per (form, topic) file.
    skip : int
        Leave out the first ``skip`` items of each file (before ``limit``), e.g. to
        measure on items a tuning run did not use.

    Returns
    -------
    Dataset
    """
    if skip < 0:
        raise ValueError("skip must be 0 or more")
    root = Path(path)
    inter = root / "filtered_inter_turns.json"
    dis = load_distractors(inter, distractors) if inter.exists() and distractors != 0 else []
    convs: list[Conversation] = []
    for form in forms:
        if form not in _FORM_DIRS:
            raise ValueError(f"unknown PrefEval form {form!r}; use one of {FORMS}")
        for f in sorted((root / _FORM_DIRS[form]).glob("*.json")):
            if topics is not None and f.stem not in topics:
                continue
            items = orjson.loads(f.read_bytes())
            chosen = items[skip : skip + limit] if limit is not None else items[skip:]
            for i, item in enumerate(chosen, start=skip):
                if isinstance(item, Mapping) and "preference" in item and "question" in item:
                    convs.append(prefeval_conversation(form, f.stem, i, item, dis))
    return Dataset("prefeval", tuple(convs), {"path": str(root), "distractors": len(dis)})
