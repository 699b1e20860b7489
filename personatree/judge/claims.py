"""Offline claim phrasing: a pattern or a root written from what its members share.

A claim names what holds across its members, not what one of them said: the topic
they share, the side they take on it and the kind of claim it is, in the third person
and without one episode's dates, places or counters ("Enjoys hiking", "Dislikes sushi",
"Stopped running after a knee injury"). :func:`claim_phrase` is a small phrase
generator: a verb chosen by (claim type, stance) in front of the shared topic phrase
(:func:`shared_topic`). Types whose claims are statements rather than sides ("Lives in
Porto", "Has a sister in Leeds") read from their most typical member, stripped of its
episodic details (:func:`general_phrase`).

Everything here is a pure function of its input.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Sequence

from ..text import (
    STANCE_LABELS,
    content_lemmas,
    find_entities,
    find_time,
    key_topic,
    lemma,
    pattern_phrase,
    stance_label,
    strip_summary_suffix,
    tokenize,
)

__all__ = ["claim_phrase", "general_phrase", "majority_stance", "member_stance", "shared_topic"]

# Verb frames by claim type and stance; "{t}" is the shared topic phrase. A type not
# listed reads from its most typical member (general_phrase). The words are chosen so
# the offline validator reads the same stance back from the claim ("Dislikes",
# "No longer", "Stopped" are in its lexicon).
_FRAMES: dict[str, dict[str, str]] = {
    "preference": {"positive": "Enjoys {t}", "negative": "Dislikes {t}", "stopped": "No longer enjoys {t}",
                   "started": "Has taken up {t}", "neutral": "Interested in {t}"},
    "routine": {"positive": "Enjoys {t} regularly", "negative": "Avoids {t}", "stopped": "Stopped {t}",
                "started": "Has taken up {t}", "neutral": "Makes a habit of {t}"},
    "trigger": {"positive": "Finds {t} calming", "negative": "Finds {t} stressful",
                "stopped": "No longer bothered by {t}", "started": "Has become sensitive to {t}",
                "neutral": "Reacts strongly to {t}"},
    "state": {"positive": "Doing well with {t}", "negative": "Struggling with {t}", "stopped": "No longer troubled by {t}",
              "started": "Recently started {t}", "neutral": "Going through {t}"},
    "goal": {"positive": "Wants {t}", "negative": "Dislikes {t}", "stopped": "Gave up on {t}",
             "started": "Has started working on {t}", "neutral": "Working toward {t}"},
    "trend": {"positive": "Increasingly into {t}", "negative": "Increasingly dislikes {t}",
              "stopped": "Stopped {t}", "started": "Has taken up {t}", "neutral": "Changing habits around {t}"},
    # Roots: a durable reading of two or more patterns.
    "personality": {"positive": "Drawn to {t}", "negative": "Dislikes {t}", "stopped": "No longer into {t}",
                    "started": "Increasingly drawn to {t}", "neutral": "Engaged with {t}"},
    "value": {"positive": "Values {t}", "negative": "Dislikes {t}", "stopped": "No longer values {t}",
              "started": "Has come to value {t}", "neutral": "Cares about {t}"},
    "identity": {"positive": "Identifies with {t}", "negative": "Dislikes {t}", "stopped": "No longer identifies with {t}",
                 "started": "Has come to identify with {t}", "neutral": "Defined in part by {t}"},
    "principle": {"positive": "Holds to {t}", "negative": "Avoids {t}", "stopped": "Stopped {t}",
                  "started": "Has committed to {t}", "neutral": "Keeps a rule about {t}"},
    "boundary": {"positive": "Keeps a limit around {t}", "negative": "Avoids {t}", "stopped": "No longer avoids {t}",
                 "started": "Has started avoiding {t}", "neutral": "Keeps a limit around {t}"},
}

# The cause of a stop or a start, when the members share one ("after a knee injury").
_CAUSE_RE = re.compile(r"\b(after|because of|due to|since)\s+(?:my|the|a|an|our|his|her)\s+((?:[a-z'-]+\s+){0,2}[a-z'-]+)", re.I)
_PAREN_RE = re.compile(r"\s*\([^)]*\)")
_NOTE_RE = re.compile(r"\b(?:note|entry|day|item|#)\s*\d+\b|#\d+", re.I)
_WE_RE = re.compile(r"^\W*(we're|we are|we)\b", re.I)
_SPACES_RE = re.compile(r"\s{2,}")
_DANGLING_RE = re.compile(r"(?:[,;:]\s*|\s+(?:and|but|so|with|in|at|on|to|for|of|from|the|a|an|especially|this|last))+$", re.I)
# "in Porto", "at Lakeside Park": a one-off place, dropped from claims of types whose
# content is not the place itself.
_PLACE_RE = re.compile(r"\s*,?\s*\b(?:especially |mostly |usually )?(?:in|at|near|around|to)\s+(?:the\s+)?"
                       r"(?:[A-Z][\w'\u00C0-\u024F-]*)(?:\s+[A-Z][\w'\u00C0-\u024F-]*)*")


def majority_stance(stances: Sequence[str]) -> str:
    """The stance most members take; a side (not ``neutral``) wins a tie with neutral.

    Parameters
    ----------
    stances : sequence of str
        One of :data:`~personatree.text.STANCE_LABELS` per member.

    Returns
    -------
    str
    """
    counts = Counter(s for s in stances if s in STANCE_LABELS)
    if not counts:
        return "neutral"
    # Sides before neutral on ties, then the fixed label order, so the choice is stable.
    return max(counts, key=lambda s: (counts[s], s != "neutral", -STANCE_LABELS.index(s)))


def shared_topic(texts: Sequence[str], max_words: int = 3) -> str:
    """The topic phrase the texts share, lower-case ("hiking", "mountain hiking"), or "".

    The content lemmas (:func:`~personatree.text.content_lemmas`) are counted by how
    many texts hold them; names and numbers are left out (a one-off place or counter
    is not the topic). The most widely held lemma picks the phrase: the most common
    key topic (:func:`~personatree.text.key_topic`) among the texts that contains it,
    cut to the words that at least two texts share (all words for one text).

    Parameters
    ----------
    texts : sequence of str
    max_words : int

    Returns
    -------
    str
    """
    cleaned = [_PAREN_RE.sub("", strip_summary_suffix(t)) for t in texts]
    toks = [tokenize(t) for t in cleaned]
    names = {w.lower() for t in cleaned for e in find_entities(t) for w in e.split()}
    df: Counter[str] = Counter()
    first: dict[str, int] = {}
    for k, ts in enumerate(toks):
        for lm in content_lemmas([w for w in ts if w not in names]):
            df[lm] += 1
            first.setdefault(lm, k * 1000 + next(i for i, w in enumerate(ts) if lemma(w) == lm))
    if not df:
        return ""
    top = max(df, key=lambda lm: (df[lm], -first[lm]))
    need = 2 if len(texts) > 1 else 1
    phrases: Counter[str] = Counter()
    for ts in toks:
        kt = key_topic([w for w in ts if w not in names], max_words=max_words)
        words = kt.split()
        if top not in {lemma(w) for w in words}:
            continue
        kept = [w for w in words if lemma(w) == top or df[lemma(w)] >= need]
        if kept:
            phrases[" ".join(kept)] += 1
    if phrases:
        return max(phrases, key=lambda p: (phrases[p], -len(p), p))
    forms = Counter(w for ts in toks for w in ts if lemma(w) == top)
    return max(forms, key=lambda w: (forms[w], w.endswith("ing"), w))


def general_phrase(sentence: str, *, keep_places: bool = True) -> str:
    """A first-person statement as a third-person pattern without one episode's details.

    :func:`~personatree.text.pattern_phrase` ("I love hiking" → "Loves hiking"), then
    time expressions ("last weekend", "in March"), parenthesised notes ("(note 167)"),
    counters ("#3") and, unless ``keep_places``, one-off places ("in Porto") are removed.

    Parameters
    ----------
    sentence : str
    keep_places : bool
        Keep "in Porto" (a fact's place is the fact: "Lives in Porto").

    Returns
    -------
    str
    """
    s = _PAREN_RE.sub("", strip_summary_suffix(sentence))
    # "We live in Porto": the speaker is one of "we"; the claim is about them.
    s = _WE_RE.sub(lambda m: "I'm" if m.group(1).lower() in ("we're", "we are") else "I", s)
    s = _NOTE_RE.sub("", s)
    for _ in range(4):
        t = find_time(s)
        if t is None:
            break
        s = s.replace(t, " ", 1)
    if not keep_places:
        s = _PLACE_RE.sub("", s)
    s = _SPACES_RE.sub(" ", s).strip(" ,;")
    out = pattern_phrase(s)
    out = _DANGLING_RE.sub("", out).strip()
    return out or pattern_phrase(sentence)


def _cause(texts: Sequence[str]) -> str:
    """A cause phrase two or more members share ("after a knee injury"), or ""."""
    found: Counter[str] = Counter()
    for t in texts:
        for m in _CAUSE_RE.finditer(t):
            # "after my knee injury" and "since my knee injury" name the same cause.
            phrase = f"after a {m.group(2).lower()}"
            if find_time(m.group(0)) is None:
                found[phrase] += 1
    if not found:
        return ""
    best, n = max(found.items(), key=lambda kv: (kv[1], kv[0]))
    return best if n >= 2 or len(texts) == 1 else ""


def _theme(texts: Sequence[str]) -> str:
    """What two or more patterns share; without a shared word, their two main topics
    joined ("hiking and cooking"), so a root never repeats one pattern alone."""
    topic = shared_topic(texts)
    if len(texts) < 2 or not topic:
        return topic
    lemmas = [content_lemmas(tokenize(_PAREN_RE.sub("", strip_summary_suffix(t)))) for t in texts]
    if any(sum(1 for ls in lemmas if lemma(w) in ls) >= 2 for w in topic.split()):
        return topic
    own: list[str] = []
    for t in texts:
        kt = shared_topic([t])
        if kt and kt not in own:
            own.append(kt)
        if len(own) == 2:
            break
    return " and ".join(own) if len(own) == 2 else topic


def claim_phrase(
    texts: Sequence[str], stances: Sequence[str], schema_type: str, representative: str, *, root: bool = False
) -> str:
    """The claim text for members with these texts and stances.

    Parameters
    ----------
    texts : sequence of str
        The members' contents (leaf sentences, or mid summaries for a root).
    stances : sequence of str
        The members' stances (:data:`~personatree.text.STANCE_LABELS`).
    schema_type : str
        The claim's type; picks the verb frame.
    representative : str
        The most typical member's content, for types without a frame and as a fallback.
    root : bool
        The members are patterns: the claim names their common theme
        (:func:`_theme`).

    Returns
    -------
    str
        Third-person, capitalised, without a trailing period or mention suffix.
    """
    frames = _FRAMES.get(schema_type)
    if frames is not None:
        topic = _theme(texts) if root else shared_topic(texts)
        if topic:
            stance = majority_stance(stances)
            phrase = frames[stance].format(t=topic)
            if stance in ("stopped", "started"):
                cause = _cause(texts)
                if cause and topic not in cause:
                    phrase = f"{phrase} {cause}"
            return phrase[:1].upper() + phrase[1:]
    keep_places = schema_type in ("fact", "relationship", "identity")
    return general_phrase(representative, keep_places=keep_places)


def member_stance(content: str, attributes: dict | None) -> str:
    """A member's stance: its ``stance`` attribute, else read from its text."""
    st = (attributes or {}).get("stance")
    if isinstance(st, str) and st in STANCE_LABELS:
        return st
    return stance_label(strip_summary_suffix(content))
