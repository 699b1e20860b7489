"""The offline judge: extraction, validation, routing and summarization without an LLM.

Everything is built from the injected :class:`~personatree.ports.Embedder`, the schema
registry's examples and cues, and the pure text functions of :mod:`personatree.text`.
It is deterministic for a given embedder and registry.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

import numpy as np

from ..errors import InputError
from ..ports import Embedder
from ..schema import SchemaRegistry
from ..text import (
    Stance,
    analyze_stance,
    chunk_text,
    content_lemmas,
    find_entities,
    find_time,
    format_month_span,
    informative_part,
    key_topic,
    lemma,
    normalize,
    pattern_phrase,
    split_sentences,
    stance_label,
    strip_summary_suffix,
    tokenize,
)
from ..types import LeafDraft, Level, Node, Observation, Provenance, Route, Summary, Verdict
from .claims import claim_phrase, majority_stance, member_stance

__all__ = ["OfflineJudge", "QueryRouter"]


class QueryRouter(Protocol):
    """Anything with ``route(query) -> Route`` (e.g. the trained router of
    ``personatree.retrieval.router``)."""

    def route(self, query: str) -> Route:
        """Predict the level and schema constraints of a query."""
        ...


# -- typing ------------------------------------------------------------------------------
# A multinomial logistic regression over the embeddings of the schema examples, fitted
# once per process per (embedder, examples); then
#   score_t(x) = log p_t(x) + CUE_WEIGHT · min(cue hits of t in x, CUE_CAP)
# and the type is the argmax.
LOGREG_C = 16.0
CUE_WEIGHT = 0.1
CUE_CAP = 2
# A sentence whose two best scores are closer than this is typed again from its own
# embedding alone: batch padding moves an embedding by ~1e-6, so only a near-tie can
# flip with the batch, and re-typing those from one fixed path makes the type the same
# whichever observations share the call.
TIE_MARGIN = 0.01

# -- validation ---------------------------------------------------------------------------
# Cosine similarity is mapped linearly from [SIM_LO, SIM_HI] onto [0, 1].
SIM_LO = 0.2
SIM_HI = 0.65
# psi at or above LABEL_SUPPORT reads "support", at or below -LABEL_CONFLICT "conflict".
LABEL_SUPPORT = 0.25
LABEL_CONFLICT = 0.25

# -- routing fallback ---------------------------------------------------------------------
_ROOT_RE = re.compile(
    r"\b(?:why|what kind of (?:person|people)|kind of person|would (?:i|they|he|she|\w+) "
    r"(?:enjoy|like|want|appreciate|prefer)|values?|believes?|beliefs?|personality|"
    r"who (?:am i|is)|what matters|care about|principles?|identity)\b"
)
_MID_RE = re.compile(
    r"\b(?:lately|how often|usually|tend to|tends to|prefers?|likes?|enjoys?|habits?|often|"
    r"these days|regularly|always|every (?:day|week|morning|night)|routine|favou?rite)\b"
)

_MAX_CHARS = 600
# How many of a cluster's most typical members the claim's wording is read from.
_PHRASE_SAMPLE = 64


@dataclass(frozen=True, slots=True)
class _Features:
    """What validation needs to know about one statement."""

    stance: Stance
    polarity: int
    lemmas: frozenset[str]
    topic: frozenset[str]


@dataclass(frozen=True, slots=True)
class _Unit:
    """One kept sentence of one user message, before embedding."""

    obs: int
    turn: int
    sentence: int
    text: str
    tokens: list[str]
    speaker: str | None


class OfflineJudge:
    """The :class:`~personatree.ports.Judge` that needs no LLM.

    Parameters
    ----------
    embedder : Embedder
        Embeds the extracted sentences (one batch per ``extract`` call) and, once at
        construction, the schema examples.
    registry : SchemaRegistry
        Leaf-level types (with examples and cues) to type statements, and κ.
    router : object with ``route(query) -> Route``, optional
        Used by :meth:`route` when given; otherwise a lexical fallback.
    max_chars : int
        Sentences longer than this are chunked into several leaves.

    Notes
    -----
    The judge holds only read-only state after construction, so one instance can be
    shared by threads.
    """

    def __init__(
        self,
        embedder: Embedder,
        registry: SchemaRegistry,
        *,
        router: QueryRouter | None = None,
        max_chars: int = _MAX_CHARS,
    ) -> None:
        self._embedder = embedder
        self._registry = registry
        self._router = router
        self._max_chars = max_chars
        leaf_types = registry.types_at(Level.LEAF)
        self._type_names: tuple[str, ...] = tuple(t.name for t in leaf_types)
        texts: list[str] = []
        bounds: list[tuple[int, int]] = []
        for t in leaf_types:
            # A type without examples is represented by its description.
            ex = list(t.examples) or [t.description]
            bounds.append((len(texts), len(texts) + len(ex)))
            texts.extend(ex)
        self._bounds = tuple(bounds)
        self._examples = _embedded_examples(embedder, tuple(texts))
        labels = np.concatenate([np.full(b - a, j) for j, (a, b) in enumerate(bounds)]) if bounds else np.zeros(0)
        self._model = _fitted_model(embedder, tuple(texts), self._examples, labels)
        # One alternation over every cue of every leaf type; a hit votes for each type
        # that lists the cue. Longest cues first so "i have two" beats "i have a".
        cue_types: dict[str, list[int]] = {}
        for i, t in enumerate(leaf_types):
            for cue in t.cues:
                key = normalize(cue).strip()
                if key:
                    cue_types.setdefault(key, []).append(i)
        self._cue_types = {k: tuple(v) for k, v in cue_types.items()}
        if cue_types:
            alternation = "|".join(re.escape(c) for c in sorted(cue_types, key=lambda c: (-len(c), c)))
            self._cue_re: re.Pattern[str] | None = re.compile(rf"(?<![\w'])(?:{alternation})(?![\w'])")
        else:
            self._cue_re = None

    @property
    def name(self) -> str:
        """``"offline"``."""
        return "offline"

    # ---------------------------------------------------------------------------------
    # extraction
    # ---------------------------------------------------------------------------------

    def extract(self, observations: Sequence[Observation]) -> list[list[LeafDraft]]:
        """Typed leaf drafts for each observation (one list per observation, same order).

        Only ``role == "user"`` messages are read (assistant, system and tool messages
        are not about the user). Each is split into sentences
        (:func:`~personatree.text.split_sentences`; sentences over ``max_chars`` are
        chunked) and a sentence is kept when :func:`~personatree.text.is_informative`
        says it is about the speaker or their life: greetings, reactions, questions and
        requests to the other party make no leaf, while a statement the speaker opens a
        question with keeps its own leaf ("I'm vegan, any dessert ideas?" keeps "I'm
        vegan"; :func:`~personatree.text.informative_part`). All kept sentences of all observations are
        embedded in ONE ``embedder.embed`` call.

        Schema type: for each leaf-level type t with examples e_t1..e_tk (embedded once
        at construction) and cues,

            score_t(x) = mean(top-2 of cos(x, e_tj)) + 0.06 · min(#cue hits of t, 2)

        and the type is the argmax (registry order breaks ties); ``type_score`` is the
        winning score.

        Attributes: ``polarity`` (-1/0/+1), ``negated``, ``cessation`` (see
        :func:`~personatree.text.analyze_stance`), ``stance`` (one of ``positive``,
        ``negative``, ``neutral``, ``stopped``, ``started``:
        :func:`~personatree.text.stance_label`), ``topic``
        (:func:`~personatree.text.key_topic`), ``time``
        (:func:`~personatree.text.find_time`), ``entities``
        (:func:`~personatree.text.find_entities`), ``speaker`` (the message name),
        ``type_score`` and ``role`` ("user").

        Provenance: ``turn`` is the message index in the observation; ``sentence`` is
        the index of the sentence (or chunk) within that message, counting the dropped
        ones too, so it points at the same place whatever is kept.

        Parameters
        ----------
        observations : sequence of Observation

        Returns
        -------
        list of list of LeafDraft
        """
        units: list[_Unit] = []
        limit = self._max_chars
        for oi, obs in enumerate(observations):
            for ti, msg in enumerate(obs.messages):
                if msg.role != "user" or not msg.content:
                    continue
                k = 0
                for sent in split_sentences(msg.content):
                    pieces = chunk_text(sent, limit) if len(sent) > limit else (sent,)
                    for piece in pieces:
                        idx = k
                        k += 1
                        kept = informative_part(piece, tokenize(piece))
                        if kept is not None:
                            units.append(_Unit(oi, ti, idx, kept, tokenize(kept), msg.name))
        out: list[list[LeafDraft]] = [[] for _ in observations]
        if not units:
            return out
        emb = np.ascontiguousarray(self._embedder.embed([u.text for u in units]), dtype=np.float32)
        types, scores, margins = self._classify(emb, units)
        if len(units) > 1:
            for i in np.flatnonzero(margins < TIE_MARGIN):
                alone = np.ascontiguousarray(self._embedder.embed([units[i].text]), dtype=np.float32)
                t1, s1, _ = self._classify(alone, units[i : i + 1])
                types[i], scores[i] = t1[0], s1[0]
        names = self._type_names
        for i, u in enumerate(units):
            obs = observations[u.obs]
            st = analyze_stance(u.text, u.tokens)
            attrs: dict[str, Any] = {
                "polarity": st.polarity,
                "negated": st.negated,
                "cessation": st.cessation,
                "stance": stance_label(u.text, u.tokens),
                "topic": key_topic(u.tokens),
                "time": find_time(u.text),
                "entities": find_entities(u.text),
                "speaker": u.speaker,
                "type_score": float(scores[i]),
                "role": "user",
            }
            out[u.obs].append(
                LeafDraft(
                    content=u.text,
                    schema_type=names[int(types[i])],
                    attributes=attrs,
                    provenance=Provenance(obs.id, u.turn, u.sentence, obs.at, obs.session_id),
                    embedding=emb[i],
                )
            )
        return out

    def _classify(self, emb: np.ndarray, units: Sequence[_Unit]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Argmax type index, its probability and the margin to the runner-up score, for
        each embedded unit (see :meth:`extract`)."""
        n_types = len(self._bounds)
        if self._model is None:
            # One leaf type (or none with examples): nothing to decide.
            n = len(units)
            return np.zeros(n, dtype=np.int64), np.ones(n), np.full(n, np.inf)
        proba = self._model.predict_proba(emb.astype(np.float64))
        scores = np.log(np.clip(proba, 1e-12, 1.0))
        if self._cue_re is not None:
            cue_re, cue_types = self._cue_re, self._cue_types
            for i, u in enumerate(units):
                hits = cue_re.findall(normalize(u.text))
                if not hits:
                    continue
                votes = [0] * n_types
                for h in hits:
                    for j in cue_types[h]:
                        votes[j] += 1
                for j, v in enumerate(votes):
                    if v:
                        scores[i, j] += CUE_WEIGHT * min(v, CUE_CAP)
        order = np.argsort(-scores, axis=1, kind="stable")
        rows = np.arange(len(units))
        best = order[:, 0]
        margin = scores[rows, best] - scores[rows, order[:, 1]]
        return best, np.round(proba[rows, best], 3), margin

    # ---------------------------------------------------------------------------------
    # validation
    # ---------------------------------------------------------------------------------

    def validate(self, pairs: Sequence[tuple[Node, Node, float]]) -> list[Verdict]:
        """Label each (child, candidate parent, cosine similarity) pair.

        The heuristics, in order:

        1. **Schema compatibility.** If κ(child type, child level, parent type) is false
           the pair is ``unrelated`` with ψ = 0, however similar.
        2. **Topical relatedness** r ∈ [0, 1]. The similarity is mapped linearly from
           [0.2, 0.65] onto s ∈ [0, 1]. The lexical overlap o ∈ [0, 1] is
           |A ∩ B| / min(|A|, |B|) over the crude lemmas of the content words (stance,
           affect, time and light words excluded), set to 1 when either side's key topic
           occurs in the other. Then r = s · (0.35 + 0.65·o) + 0.2·o·[s > 0], clipped to
           1: similarity gates relatedness, shared topic words strengthen it, and two
           statements about different things ("painting" vs "hiking") stay weakly related
           however similar their wording.
        3. **Agreement** a ∈ [-1, 1] from polarity, negation and cessation
           (:func:`~personatree.text.analyze_stance`; the parent's polarity is its
           ``attributes["polarity"]`` when present; mid summaries are analysed without
           their "(N mentions, span)" suffix):

           - exactly one side has a cessation phrase ("stopped", "quit", "no longer",
             "anymore", "used to") → a = -1 (cessation flips the stance: "I stopped
             hiking" contradicts "Loves hiking");
           - both have one → a = +0.9;
           - both have a polarity: same sign → +1; opposite → -1 when the child has an
             explicit stance word ("love", "hate", "don't like"), else -0.4 (the child
             only reports general affect: "hiking in the rain was awful" is weak
             evidence against "Loves hiking");
           - exactly one side negates the statement itself ("I don't have kids" vs "Has
             two kids") → -0.7 when neither side has a polarity, else -0.5;
           - only the parent has a polarity → +0.6 (a neutral mention is evidence of
             engagement), or +0.35 when the parent is an explicit dislike;
           - only the child has a polarity → +0.7; neither → +0.8.
        4. ψ = a · r, so ψ's magnitude grows with relatedness and unrelated topics give
           ψ ≈ 0. Label: ψ ≥ 0.25 support, ψ ≤ -0.25 conflict, else unrelated.

        Parameters
        ----------
        pairs : sequence of (Node, Node, float)
            (child, candidate parent, cosine similarity of their embeddings).

        Returns
        -------
        list of Verdict
            One per pair, same order.
        """
        cache: dict[tuple[str, int | None], _Features] = {}
        out: list[Verdict] = []
        for child, parent, sim in pairs:
            if not self._registry.kappa(child.schema_type, child.level, parent.schema_type):
                out.append(Verdict(
                    "unrelated", 0.0,
                    f"schema: {child.level.value} {child.schema_type!r} cannot support {parent.schema_type!r}",
                ))
                continue
            fc = self._features(child, cache)
            fp = self._features(parent, cache)
            out.append(_judge_pair(fc, fp, float(sim)))
        return out

    @staticmethod
    def _features(node: Node, cache: dict[tuple[str, int | None], _Features]) -> _Features:
        pol_attr = node.attributes.get("polarity") if node.attributes else None
        override = int(np.sign(pol_attr)) if isinstance(pol_attr, (int, float)) and not isinstance(pol_attr, bool) else None
        key = (node.content, override)
        hit = cache.get(key)
        if hit is not None:
            return hit
        text = strip_summary_suffix(node.content)
        toks = tokenize(text)
        st = analyze_stance(text, toks)
        topic = key_topic(toks)
        f = _Features(
            stance=st,
            polarity=st.polarity if override is None else override,
            lemmas=content_lemmas(toks),
            topic=frozenset(lemma(w) for w in topic.split()),
        )
        cache[key] = f
        return f

    # ---------------------------------------------------------------------------------
    # routing
    # ---------------------------------------------------------------------------------

    def route(self, query: str) -> Route:
        """Predict the abstraction level a query needs.

        Delegates to the router given at construction. Without one, a lexical fallback:
        "why / what kind of person / would … enjoy / value / believe" → ROOT;
        "lately / how often / usually / tend to / prefer / like" → MID; else LEAF. The
        chosen level gets probability 0.6 + 0.1 per extra cue hit (at most 0.8), the
        other two share the rest equally. No schema constraint is inferred.

        Parameters
        ----------
        query : str

        Returns
        -------
        Route
        """
        if self._router is not None:
            return self._router.route(query)
        low = normalize(query)
        n_root = len(_ROOT_RE.findall(low))
        n_mid = len(_MID_RE.findall(low))
        if n_root:
            level, hits = Level.ROOT, n_root
        elif n_mid:
            level, hits = Level.MID, n_mid
        else:
            level, hits = Level.LEAF, 1
        p = min(0.8, 0.6 + 0.1 * (hits - 1))
        rest = (1.0 - p) / 2.0
        probs = {lv: (p if lv is level else rest) for lv in Level}
        return Route(level=level, probabilities=probs)

    # ---------------------------------------------------------------------------------
    # summarization
    # ---------------------------------------------------------------------------------

    def summarize(self, members: Sequence[Node], level: Level, schema_type: str) -> Summary:
        """A claim of ``schema_type`` at ``level`` written from what ``members`` share.

        The text is built, not copied (:func:`~personatree.judge.claims.claim_phrase`):
        the members' shared topic phrase behind a verb chosen by the claim's type and
        the stance most members take (read from the 64 most typical members, so a huge
        cluster costs no more text analysis than a big one) ("Enjoys hiking", "Dislikes sushi", "Stopped
        running after a knee injury"), in the third person and without one episode's
        dates, places or counters. Facts and relationships, whose claims are statements
        rather than sides, read from the most typical member with its episodic details
        removed ("Lives in Porto"). A member's stance is its ``stance`` attribute, else
        read from its text.

        The most typical member (``medoid``) is the one nearest the members' centroid
        (for unit vectors the same member as the highest mean similarity to the others,
        in O(n·d)), nudged toward the claim's own type and toward short statements;
        members are ordered by id first so nothing depends on input order; without
        embeddings the earliest member.

        - MID: the claim plus count and span, "Enjoys hiking (5 mentions, Mar–Jun 2024)".
        - ROOT (members are mids): the theme the patterns share, without the suffix;
          patterns with no word in common give their two main topics joined.

        ``mentions`` is Σ max(1, n_support) over the members (a leaf counts once).
        Attributes: ``medoid``, ``mentions``, ``members``, ``span``, ``polarity``,
        ``stance`` and ``topic`` of the claim.

        Parameters
        ----------
        members : sequence of Node
            At least one node.
        level : Level
            MID or ROOT.
        schema_type : str

        Returns
        -------
        Summary

        Raises
        ------
        InputError
            If ``members`` is empty (also a ``ValueError``).
        """
        if not members:
            raise InputError("summarize needs at least one member")
        ordered = sorted(members, key=lambda n: n.id)
        score = _typicality(ordered, schema_type)
        medoid = ordered[int(np.argmax(score))]
        # The wording comes from the most typical members: a bounded sample, so a huge
        # cluster costs no more text analysis than a big one.
        sample = [ordered[i] for i in sorted(np.argsort(-score, kind="stable")[:_PHRASE_SAMPLE].tolist())]
        texts = [_main_clause(strip_summary_suffix(n.content)) for n in sample]
        stances = [member_stance(n.content, n.attributes) for n in sample]
        rep = _main_clause(medoid.content)
        phrase = claim_phrase(texts, stances, schema_type, rep, root=level is Level.ROOT)
        if not phrase:
            phrase = pattern_phrase(rep) or strip_summary_suffix(medoid.content).strip()
        t_first = min(n.t_first for n in ordered)
        t_last = max(n.t_last for n in ordered)
        span = format_month_span(t_first, t_last)
        mentions = sum(max(1, n.n_support) for n in ordered)
        if level is Level.ROOT:
            content = phrase
        else:
            content = f"{phrase} ({mentions} mention{'s' if mentions != 1 else ''}, {span})"
        toks = tokenize(phrase)
        attrs: dict[str, Any] = {
            "medoid": medoid.id,
            "mentions": mentions,
            "members": len(ordered),
            "span": span,
            "polarity": analyze_stance(phrase, toks).polarity,
            "stance": majority_stance(stances),
            "topic": key_topic(toks),
        }
        return Summary(content=content, schema_type=schema_type, attributes=attrs)


_EXAMPLE_CACHE: dict[tuple[str, tuple[str, ...]], np.ndarray] = {}
_EXAMPLE_CACHE_LOCK = threading.Lock()


def _embedded_examples(embedder: Embedder, texts: tuple[str, ...]) -> np.ndarray:
    """Embeddings of the schema examples, computed once per process per embedder.

    Every ``PersonaTree.open`` builds a judge; re-embedding ~100 examples costs about two
    seconds on a laptop CPU, which a CLI call or a test would pay each time. The cached
    array is read-only.
    """
    key = (embedder.name, texts)
    with _EXAMPLE_CACHE_LOCK:
        hit = _EXAMPLE_CACHE.get(key)
    if hit is None:
        hit = np.ascontiguousarray(embedder.embed(list(texts)), dtype=np.float32)
        hit.flags.writeable = False
        with _EXAMPLE_CACHE_LOCK:
            _EXAMPLE_CACHE[key] = hit
    return hit


_MODEL_CACHE: dict[tuple[str, tuple[str, ...]], Any] = {}


def _fitted_model(embedder: Embedder, texts: tuple[str, ...], examples: np.ndarray, labels: np.ndarray) -> Any:
    """The logistic regression from example embeddings to leaf types, fitted once per
    process per embedder and example list (``None`` with fewer than two types).

    A linear model over all examples separates the types better than nearest examples
    do: it learns which directions of the embedding space tell a routine from a
    preference, where similarity to a few examples is swayed by the topic ("I stopped
    running" is near "I ran a 10k", an event).
    """
    if len(set(labels.tolist())) < 2:
        return None
    key = (embedder.name, texts)
    with _EXAMPLE_CACHE_LOCK:
        hit = _MODEL_CACHE.get(key)
    if hit is None:
        from sklearn.linear_model import LogisticRegression

        hit = LogisticRegression(C=LOGREG_C, max_iter=5000).fit(examples.astype(np.float64), labels)
        with _EXAMPLE_CACHE_LOCK:
            _MODEL_CACHE[key] = hit
    return hit


_CLAUSE_BREAK = re.compile(r",\s+(?:so|because|but|and then|which|since|though|although)\s", re.IGNORECASE)


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


def _relatedness(fc: _Features, fp: _Features, sim: float) -> tuple[float, float]:
    """(r, o): topical relatedness and lexical overlap (see :meth:`OfflineJudge.validate`)."""
    s = min(1.0, max(0.0, (sim - SIM_LO) / (SIM_HI - SIM_LO)))
    a, b = fc.lemmas, fp.lemmas
    o = len(a & b) / min(len(a), len(b)) if a and b else 0.0
    if (fc.topic and not fc.topic.isdisjoint(b)) or (fp.topic and not fp.topic.isdisjoint(a)):
        o = 1.0
    r = s * (0.35 + 0.65 * o) + (0.2 * o if s > 0.0 else 0.0)
    return min(1.0, r), o


def _agreement(fc: _Features, fp: _Features) -> tuple[float, str]:
    """(a, why): the stance agreement of child and parent (see :meth:`OfflineJudge.validate`)."""
    c, p = fc.stance, fp.stance
    if c.cessation != p.cessation:
        return -1.0, "cessation vs ongoing pattern"
    if c.cessation:
        return 0.9, "both describe a cessation"
    if fc.polarity and fp.polarity:
        if fc.polarity == fp.polarity:
            return 1.0, "same stance"
        if c.stance:
            return -1.0, "opposite stance"
        # Only general affect on the child ("hiking in the rain was awful"): one bad
        # experience is weak evidence against a pattern.
        return -0.4, "opposite affect"
    if c.free_negation != p.free_negation:
        return (-0.7 if not (fc.polarity or fp.polarity) else -0.5), "negated vs affirmed"
    if fp.polarity:
        return (0.35 if fp.polarity < 0 and p.stance < 0 else 0.6), "neutral mention of the topic"
    if fc.polarity:
        return 0.7, "stance on a neutral pattern"
    return 0.8, "neutral, same topic"


def _judge_pair(fc: _Features, fp: _Features, sim: float) -> Verdict:
    r, o = _relatedness(fc, fp, sim)
    a, why = _agreement(fc, fp)
    psi = max(-1.0, min(1.0, round(a * r, 4)))
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
