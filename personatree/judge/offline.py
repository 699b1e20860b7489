"""The offline judge: extraction, validation, routing and summarization without an LLM.

Everything is built from the injected :class:`~personatree.ports.Embedder`, the schema
registry's examples and cues, and the pure text functions of :mod:`personatree.text`.
It is deterministic for a given embedder and registry. The parts live in their own
modules: :mod:`~personatree.judge.statements` (what is kept of a message),
:mod:`~personatree.judge.leaf_typing` (schema types), :mod:`~personatree.judge.verdicts`
(ψ) and :mod:`~personatree.judge.summaries` (claims).
"""

from __future__ import annotations

import re
from typing import Protocol, Sequence

import numpy as np

from ..errors import InputError
from ..ports import Embedder
from ..schema import SchemaRegistry
from ..text import normalize
from ..types import LeafDraft, Level, Node, Observation, Route, Summary, Verdict
from .leaf_typing import LeafTyper
from .statements import Statement, draft_of, statements_of
from .summaries import offline_summary
from .verdicts import FeatureCache, features, judge_pair

__all__ = ["OfflineJudge", "QueryRouter"]


class QueryRouter(Protocol):
    """Anything with ``route(query) -> Route`` (e.g. the trained router of
    ``personatree.retrieval.router``)."""

    def route(self, query: str) -> Route:
        """Predict the level and schema constraints of a query."""
        ...


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
        self._typer = LeafTyper(embedder, registry)

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

        Schema type: a logistic regression over the embeddings of each leaf-level type's
        examples (fitted once per process), plus a bonus per cue hit of the type,

            score_t(x) = log p_t(x) + 0.1 · min(#cue hits of t, 2)

        and the type is the argmax (registry order breaks ties); ``type_score`` is the
        winning type's probability (:mod:`~personatree.judge.leaf_typing`).

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
        out: list[list[LeafDraft]] = [[] for _ in observations]
        units = statements_of(observations, self._max_chars)
        if not units:
            return out
        emb = self._embed(units)
        types, scores = self._typer.assign(emb, [u.text for u in units])
        for i, u in enumerate(units):
            schema_type = self._typer.names[int(types[i])]
            out[u.obs].append(draft_of(u, observations[u.obs], schema_type, float(scores[i]), emb[i]))
        return out

    def _embed(self, units: Sequence[Statement]) -> np.ndarray:
        """All statements of one call, embedded in ONE ``embedder.embed`` call."""
        return np.ascontiguousarray(self._embedder.embed([u.text for u in units]), dtype=np.float32)

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
             explicit stance word ("love", "hate", "don't like"), else -0.2 (the child
             only reports general affect: "hiking in the rain was awful" tells how one
             outing felt and is never a conflict with "Loves hiking" on its own);
           - exactly one side negates the statement itself ("I don't have kids" vs "Has
             two kids") → -0.7 when neither side has a polarity, else -0.5; -0.2 when
             that negation denies one past episode only ("we didn't reach the summit");
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
        cache: FeatureCache = {}
        out: list[Verdict] = []
        for child, parent, sim in pairs:
            if not self._registry.kappa(child.schema_type, child.level, parent.schema_type):
                out.append(Verdict(
                    "unrelated", 0.0,
                    f"schema: {child.level.value} {child.schema_type!r} cannot support {parent.schema_type!r}",
                ))
                continue
            out.append(judge_pair(features(child, cache), features(parent, cache), float(sim)))
        return out

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
          Of more than five members, a fact or a relationship reads from one member
          only when 30 % of the members say at least half of its words beyond the
          topic, else "Often talks about …".
        - ROOT (members are mids): the theme at least 30 % of the patterns share,
          without the suffix; patterns with none in common are ``named`` False (their
          topics joined would state no trait).

        ``mentions`` is Σ max(1, n_support) over the members (a leaf counts once).
        Attributes: ``medoid``, ``mentions``, ``members``, ``span``, ``polarity``,
        ``stance`` and ``topic`` of the claim, and ``named``: False when the members
        share no topic that can name a claim (held by 30 % of them, or for up to five
        members said by the most typical one, and not a word of chat such as "shares"
        or "difference"); consolidation forms no pattern then.

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
        return offline_summary(members, level, schema_type)
