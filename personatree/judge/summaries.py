"""The offline judge's summary of a cluster: the most typical member, the claim's
wording, and the "(N mentions, span)" suffix of a mid-level claim.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np

from ..text import (
    analyze_stance,
    format_month_span,
    key_topic,
    pattern_phrase,
    strip_summary_suffix,
    tokenize,
    with_mentions,
)
from ..types import Level, Node, Summary
from .claims import claim_phrase, majority_stance, member_stance

__all__ = ["offline_summary", "mentions_and_span", "with_mentions"]

# How many of a cluster's most typical members the claim's wording is read from.
_PHRASE_SAMPLE = 64

_CLAUSE_BREAK = re.compile(r",\s+(?:so|because|but|and then|which|since|though|although)\s", re.IGNORECASE)


def mentions_and_span(members: Sequence[Node]) -> tuple[int, str]:
    """Σ max(1, n_support) over ``members`` (a leaf counts once) and their time span."""
    mentions = sum(max(1, n.n_support) for n in members)
    span = format_month_span(min(n.t_first for n in members), max(n.t_last for n in members))
    return mentions, span


def offline_summary(members: Sequence[Node], level: Level, schema_type: str) -> Summary:
    """The claim of ``schema_type`` at ``level`` that ``members`` share (see
    :meth:`personatree.judge.offline.OfflineJudge.summarize`); ``members`` is not empty."""
    ordered = sorted(members, key=lambda n: n.id)
    score = _typicality(ordered, schema_type)
    medoid = ordered[int(np.argmax(score))]
    # The wording comes from the most typical members: a bounded sample, so a huge
    # cluster costs no more text analysis than a big one.
    sample = [ordered[i] for i in sorted(np.argsort(-score, kind="stable")[:_PHRASE_SAMPLE].tolist())]
    root = level is Level.ROOT
    # A root reads the topics its patterns were named by: their claims' frame words
    # ("Working toward", "Makes a habit of") are not what they share.
    texts = [_topic_of(n) if root else _main_clause(strip_summary_suffix(n.content)) for n in sample]
    stances = [member_stance(n.content, n.attributes) for n in sample]
    rep = _main_clause(medoid.content)
    phrase, topic = claim_phrase(texts, stances, schema_type, rep, root=root,
                                 said=[n.content for n in sample] if root else ())
    named = bool(phrase)
    if not named:
        phrase = pattern_phrase(rep) or strip_summary_suffix(medoid.content).strip()
    mentions, span = mentions_and_span(ordered)
    content = phrase if level is Level.ROOT else with_mentions(phrase, mentions, span)
    toks = tokenize(phrase)
    attrs: dict[str, Any] = {
        "medoid": medoid.id,
        "mentions": mentions,
        "members": len(ordered),
        "span": span,
        "polarity": analyze_stance(phrase, toks).polarity,
        "stance": majority_stance(stances),
        "topic": topic or key_topic(toks),
        "named": named,
    }
    return Summary(content=content, schema_type=schema_type, attributes=attrs)


def _topic_of(node: Node) -> str:
    """The topic a pattern was named by, else its claim without the mention suffix."""
    topic = (node.attributes or {}).get("topic")
    return topic if isinstance(topic, str) and topic else strip_summary_suffix(node.content)


def _main_clause(text: str) -> str:
    """The text up to a subordinate clause ("I love hiking, so the trails..." → "I love hiking")."""
    m = _CLAUSE_BREAK.search(text)
    return text[: m.start()] if m and m.start() >= 12 else text


def _typicality(nodes: Sequence[Node], schema_type: str) -> np.ndarray:
    """How typical each member is of the claim; the argmax is the medoid.

    For unit vectors Σ_j cos(x_i, x_j) = x_i · Σ_j x_j, so ranking by similarity to
    the summed vector ranks by mean similarity to the others (the medoid) in O(n·d)
    time and memory: a cluster of tens of thousands of members costs one matrix-vector
    product, not an n×n matrix. A pattern reads best from a member that states it
    ("Hiking in the mountains is my favourite") rather than from a long anecdote that
    happens to be central, so the mean similarity gets a small bonus for the matching
    schema type and a penalty per character beyond 60. Without embeddings the earliest
    member is the most typical.
    """
    n = len(nodes)
    embs = [nd.embedding for nd in nodes]
    if n == 1 or any(e is None for e in embs):
        order = sorted(range(n), key=lambda i: (nodes[i].t_first, nodes[i].id))
        score = np.empty(n)
        score[order] = -np.arange(n, dtype=np.float64)
        return score
    m = np.stack([np.asarray(e, dtype=np.float32) for e in embs])  # type: ignore[arg-type]
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    m /= np.where(norms > 0, norms, 1.0)
    total = m.sum(axis=0, dtype=np.float64).astype(np.float32)
    score = ((m @ total).astype(np.float64) - 1.0) / (n - 1)
    score += np.array([0.05 if nd.schema_type == schema_type else 0.0 for nd in nodes])
    score -= np.array([0.004 * max(0, len(_main_clause(nd.content)) - 60) for nd in nodes])
    # Rounded so that float noise in the sum cannot reorder near-equal members.
    return np.round(score, 6)
