"""The offline validator's ψ for a (child, candidate parent) pair: topical relatedness
times stance agreement (the heuristics are documented on
:meth:`personatree.judge.offline.OfflineJudge.validate`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..text import (
    Stance, analyze_stance, content_lemmas, is_topic_claim, key_topic, lemma, strip_summary_suffix, tokenize,
)
from ..text.scope import takes_side_on
from ..types import Level, Node, Verdict

__all__ = [
    "Features",
    "FeatureCache",
    "features",
    "judge_pair",
    "SIM_LO",
    "SIM_HI",
    "LABEL_SUPPORT",
    "LABEL_CONFLICT",
]

# Cosine similarity is mapped linearly from [SIM_LO, SIM_HI] onto [0, 1].
SIM_LO = 0.2
SIM_HI = 0.65
# psi at or above LABEL_SUPPORT reads "support", at or below -LABEL_CONFLICT "conflict".
LABEL_SUPPORT = 0.25
LABEL_CONFLICT = 0.25


@dataclass(frozen=True, slots=True)
class Features:
    """What validation needs to know about one statement."""

    text: str
    claim: bool
    # A claim that a topic keeps coming up ("Often talks about Grandpa"), which no
    # denial contradicts.
    topic_only: bool
    stance: Stance
    polarity: int
    lemmas: frozenset[str]
    topic: frozenset[str]


#: Features by (content, polarity override, is a claim), shared by the pairs of one call.
FeatureCache = dict[tuple[str, int | None, bool], Features]


def features(node: Node, cache: FeatureCache) -> Features:
    """The features of a node's text; its ``polarity`` attribute, when numeric,
    overrides the polarity read from the text (mid summaries are read without their
    "(N mentions, span)" suffix)."""
    pol_attr = node.attributes.get("polarity") if node.attributes else None
    override = int(np.sign(pol_attr)) if isinstance(pol_attr, (int, float)) and not isinstance(pol_attr, bool) else None
    claim = node.level is not Level.LEAF
    key = (node.content, override, claim)
    hit = cache.get(key)
    if hit is not None:
        return hit
    text = strip_summary_suffix(node.content)
    toks = tokenize(text)
    st = analyze_stance(text, toks)
    topic = key_topic(toks)
    f = Features(
        text=text,
        claim=claim,
        topic_only=claim and is_topic_claim(text),
        stance=st,
        polarity=st.polarity if override is None else override,
        lemmas=content_lemmas(toks),
        topic=frozenset(lemma(w) for w in topic.split()),
    )
    cache[key] = f
    return f


def _relatedness(fc: Features, fp: Features, sim: float) -> tuple[float, float]:
    """(r, o): topical relatedness and lexical overlap."""
    s = min(1.0, max(0.0, (sim - SIM_LO) / (SIM_HI - SIM_LO)))
    a, b = fc.lemmas, fp.lemmas
    o = len(a & b) / min(len(a), len(b)) if a and b else 0.0
    if (fc.topic and not fc.topic.isdisjoint(b)) or (fp.topic and not fp.topic.isdisjoint(a)):
        o = 1.0
    r = s * (0.35 + 0.65 * o) + (0.2 * o if s > 0.0 else 0.0)
    return min(1.0, r), o


# A side taken in a clause that names none of the other statement's topic ("The
# lifeguard yelled 'No diving!'" under a pattern about the lifeguard): no more than an
# opposite feeling, short of a conflict.
_ELSEWHERE = (-0.2, "a side taken on something else")


def _on_topic(child: Features, parent: Features, sign: int) -> bool:
    """Whether ``child`` takes side ``sign`` in a clause naming ``parent``'s topic, with
    more than a feeling (a claim, a pattern's or a trait's, is all about its one topic)."""
    return child.claim or takes_side_on(child.text, parent.lemmas | parent.topic, sign)


def _agreement(fc: Features, fp: Features) -> tuple[float, str]:
    """(a, why): the stance agreement of child and parent.

    A contradiction the child carries (a cessation against an ongoing pattern, an
    opposite stance, a denial against an affirmation) stands only when the child takes
    its side in a clause that names the parent's topic (:func:`~personatree.text.scope.
    takes_side_on`); else it weighs as an opposite feeling does. A denial never
    contradicts a claim that only says a topic keeps coming up
    (:func:`~personatree.text.is_topic_claim`).
    """
    c, p = fc.stance, fp.stance
    if c.cessation != p.cessation:
        if c.cessation and not _on_topic(fc, fp, -1):
            return _ELSEWHERE
        return -1.0, "cessation vs ongoing pattern"
    if c.cessation:
        return 0.9, "both describe a cessation"
    if fc.polarity and fp.polarity:
        if fc.polarity == fp.polarity:
            return 1.0, "same stance"
        if c.stance:
            return (-1.0, "opposite stance") if _on_topic(fc, fp, fc.polarity) else _ELSEWHERE
        # Only general affect on the child ("hiking in the rain was awful"): how one
        # episode felt takes no side on the pattern, so it stays short of a conflict
        # however related (|ψ| ≤ 0.2 < θ_conflict), as the stance rule has it.
        return -0.2, "opposite affect"
    if c.free_negation != p.free_negation:
        if (c if c.free_negation else p).episodic_negation:
            # "Rough regatta, we didn't place": how one time went, no side
            # taken on the pattern; weak, as an opposite feeling is.
            return -0.2, "a denial of one episode"
        if c.free_negation and fp.topic_only:
            # "I shouldn't have phoned Grandpa" under "Often talks about Grandpa": the
            # pattern says only that he comes up, and he does again.
            return -0.2, "a denial beside a topic that takes no side"
        if c.free_negation and not _on_topic(fc, fp, -1):
            return _ELSEWHERE
        return (-0.7 if not (fc.polarity or fp.polarity) else -0.5), "negated vs affirmed"
    if fp.polarity:
        return (0.35 if fp.polarity < 0 and p.stance < 0 else 0.6), "neutral mention of the topic"
    if fc.polarity:
        return 0.7, "stance on a neutral pattern"
    return 0.8, "neutral, same topic"


def judge_pair(fc: Features, fp: Features, sim: float) -> Verdict:
    """The verdict on a child with features ``fc`` under a parent with features ``fp``
    whose embeddings have cosine similarity ``sim``: ψ = agreement · relatedness."""
    r, o = _relatedness(fc, fp, sim)
    a, why = _agreement(fc, fp)
    psi = max(-1.0, min(1.0, round(a * r, 4)))
    label: Literal["support", "conflict", "unrelated"]
    if psi >= LABEL_SUPPORT:
        label = "support"
    elif psi <= -LABEL_CONFLICT:
        label = "conflict"
    else:
        label = "unrelated"
        if r < 0.3:
            why = "low topical relatedness"
    topic = " ".join(sorted(fc.topic)) or "-"
    reason = f"{label}: {why} (topic {topic}, sim {sim:.2f}, overlap {o:.2f}, relatedness {r:.2f})"
    return Verdict(label, psi, reason)
