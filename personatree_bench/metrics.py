"""Benchmark metrics as pure functions over per-query records.

Definitions
-----------
evidence recall
    For one question with gold evidence turns G and the set S of turns whose content
    reached the rendered context: |G ∩ S| / |G|. Questions without gold evidence are
    not scored (counted as ``unscored``). A system's recall is the mean over questions.
hit
    1 if any gold turn reached the context (PrefEval's "is the preference there",
    LoCoMo-Plus's "did the cue come back").
top-k
    The same, with S the first ``k`` distinct turns the system ranks.
context tokens
    Tokens of the rendered context per query (P50, P95), by the shared counter.
context growth per 100 turns
    The least-squares slope, times 100, of a system's *standing context* (tokens it
    puts in every prompt whatever the query) against turns ingested, measured after
    every session. For personatree the standing context is its profile block (the top
    claims and patterns, ``personatree.view.profile``); the growth of all its roots
    and mids is reported beside it. Flat baselines keep no standing context, so for
    them the figure is the raw history they would have to carry to keep everything in
    view (the reference a memory should beat); recency carries nothing beyond the
    budget, so 0.
latency
    Wall seconds of one retrieval call (P50, P95).

Adversarial / abstention questions are aggregated separately and never enter the
headline recall.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

__all__ = [
    "QueryRecord",
    "evidence_recall",
    "hit",
    "percentile",
    "growth_per_100_turns",
    "aggregate",
    "summarize",
]


@dataclass(frozen=True, slots=True)
class QueryRecord:
    """One (system, question, budget-or-k) measurement.

    Attributes
    ----------
    system : str
    conv_id : str
    question_id : str
    category : str
    adversarial : bool
    mode : str
        ``"budget"`` or ``"topk"``.
    value : int
        The budget in tokens or ``k``.
    gold : tuple of str
        Gold evidence turn ids.
    shown : tuple of str
        Turn ids that reached the context (or the top-k list).
    tokens : int
        Context tokens (0 for top-k records).
    seconds : float
        Retrieval wall time.
    """

    system: str
    conv_id: str
    question_id: str
    category: str
    adversarial: bool
    mode: str
    value: int
    gold: tuple[str, ...]
    shown: tuple[str, ...]
    tokens: int
    seconds: float


def evidence_recall(gold: Iterable[str], shown: Iterable[str]) -> float | None:
    """Fraction of gold turns present in ``shown``; ``None`` when there is no gold.

    Parameters
    ----------
    gold, shown : iterables of str

    Returns
    -------
    float or None

    Examples
    --------
    >>> evidence_recall(["D1:3", "D2:1"], ["D2:1", "D9:9"])
    0.5
    >>> evidence_recall([], ["D1:1"]) is None
    True
    """
    g = set(gold)
    if not g:
        return None
    return len(g & set(shown)) / len(g)


def hit(gold: Iterable[str], shown: Iterable[str]) -> float | None:
    """1.0 if any gold turn is in ``shown``, 0.0 if none, ``None`` without gold.

    Examples
    --------
    >>> hit(["a", "b"], ["b"])
    1.0
    """
    g = set(gold)
    if not g:
        return None
    return 1.0 if g & set(shown) else 0.0


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (linear interpolation), ``None`` for no values.

    Examples
    --------
    >>> percentile([1, 2, 3, 4], 50)
    2.5
    """
    if len(values) == 0:
        return None
    return float(np.percentile(np.asarray(values, dtype=float), q))


def growth_per_100_turns(points: Sequence[tuple[int, int]]) -> float | None:
    """Least-squares slope of tokens against turns, times 100.

    Parameters
    ----------
    points : sequence of (turns ingested, tokens)

    Returns
    -------
    float or None
        ``None`` with fewer than two distinct turn counts.

    Examples
    --------
    >>> growth_per_100_turns([(100, 50), (200, 150), (300, 250)])
    100.0
    """
    if len({x for x, _ in points}) < 2:
        return None
    x = np.asarray([p[0] for p in points], dtype=float)
    y = np.asarray([p[1] for p in points], dtype=float)
    slope = np.polyfit(x, y, 1)[0]
    return float(slope * 100.0)


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


def aggregate(records: Sequence[QueryRecord]) -> dict[str, Any]:
    """Recall, hit, tokens and latency over a homogeneous group of records.

    Parameters
    ----------
    records : sequence of QueryRecord
        Usually one system at one budget (or k) and one category.

    Returns
    -------
    dict
        ``n`` (questions), ``scored`` (with gold), ``recall``, ``hit``,
        ``tokens_p50``, ``tokens_p95``, ``latency_p50_ms``, ``latency_p95_ms``.
    """
    recalls = [r for r in (evidence_recall(x.gold, x.shown) for x in records) if r is not None]
    hits = [h for h in (hit(x.gold, x.shown) for x in records) if h is not None]
    tokens = [x.tokens for x in records]
    ms = [x.seconds * 1000.0 for x in records]
    return {
        "n": len(records),
        "scored": len(recalls),
        "recall": _mean(recalls),
        "hit": _mean(hits),
        "tokens_p50": percentile(tokens, 50),
        "tokens_p95": percentile(tokens, 95),
        "latency_p50_ms": percentile(ms, 50),
        "latency_p95_ms": percentile(ms, 95),
    }


def _category_key(value: str) -> tuple[int, Any]:
    return (0, int(value)) if value.isdigit() else (1, value)


def summarize(records: Sequence[QueryRecord]) -> dict[str, Any]:
    """Group records by system and setting and aggregate them.

    Parameters
    ----------
    records : sequence of QueryRecord

    Returns
    -------
    dict
        ``{system: {"budget": {B: {"overall", "adversarial", "categories", "adversarial_categories"}},
        "topk": {k: {...}}}}`` where ``overall`` excludes adversarial questions,
        ``adversarial`` holds only them, ``categories`` maps every category found
        (adversarial ones included, so each is reported) to its aggregate, and
        ``adversarial_categories`` names the categories of adversarial questions.
    """
    groups: dict[tuple[str, str, int], list[QueryRecord]] = defaultdict(list)
    for r in records:
        groups[(r.system, r.mode, r.value)].append(r)
    out: dict[str, Any] = {}
    for (system, mode, value), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        by_cat: dict[str, list[QueryRecord]] = defaultdict(list)
        for r in rs:
            by_cat[r.category].append(r)
        entry = {
            "overall": aggregate([r for r in rs if not r.adversarial]),
            "adversarial": aggregate([r for r in rs if r.adversarial]),
            "categories": {c: aggregate(by_cat[c]) for c in sorted(by_cat, key=_category_key)},
            # Which of those are the adversarial ones (reported apart from the others).
            "adversarial_categories": sorted({r.category for r in rs if r.adversarial}, key=_category_key),
        }
        out.setdefault(system, {}).setdefault(mode, {})[value] = entry
    return out


def category_labels(dataset: str) -> Mapping[str, str]:
    """Readable names of a dataset's category ids (LoCoMo's numbers), for reports."""
    if dataset == "locomo":
        return {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop", "5": "adversarial"}
    return {}
