"""The packer's options for one recall: what each node is worth, costs and carries.

A :class:`RecallContext` holds what one recall reads (the state, the route's level
fit, the scores) and the tables it fills as the packer asks for nodes (confidences,
lines, options, timelines). The functions here read and fill it; they are called
in the order the packer asks, so that every table fills in the same order on every
run.

A claim with contradicting evidence carries its latest contradiction (and, when
that changed the claim, what was said around the change); the newest stance of a
changed pattern is worth at least the older statements it supersedes
(:mod:`personatree.retrieval.changes`). An earlier statement carries the later one
that changes it (:mod:`personatree.retrieval.updates`) when both are the person's
news of themself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from ..change_links import links_of
from ..confidence import sigmoid
from ..config import RecallConfig
from ..ports import TokenCounter
from ..schema import SchemaRegistry
from ..stance import node_stance, opposed
from ..text import share_a_topic, tells_the_past, to_listener
from ..timeline import Timeline, shown_logit
from ..types import Level, Node
from .changes import Carry, carry_of
from .packing import Companion, Option
from .render import CONFLICT_MARKS, leaf_date, node_line
from .scoring import Scored, calibrated
from .state import RetrievalState

__all__ = ["RecallContext", "changes_what_it_updates", "companion", "cosine", "expand", "option", "relevance"]

_MAX_CHILDREN = 4  # supporting nodes a claim can show (best by cosine)


@dataclass
class RecallContext:
    """What one recall reads, and the tables it fills while the packer asks for nodes.

    Attributes
    ----------
    state : RetrievalState
    registry : SchemaRegistry or None
        For confidence decay (unknown types, or no registry, read σ(logit)).
    counter : TokenCounter
    now : datetime
        When confidences are read.
    cfg : RecallConfig
    allowed : tuple of Level
        The levels that may be shown.
    fit : dict of Level to float
        How well each level fits the route.
    wanted_types : set of str
        The schema types the route asks for.
    personal : bool
        The question is about the person rather than an event.
    named : set of str
        Words of the query, for the speaker boost (empty when there is no boost).
    scored : dict of str to Scored
        The candidates and their relevance.
    cosines : dict of Level to ndarray
        Query cosines of every node, per level.
    supersedes : dict of str to list of str
        The older statements each newest stance supersedes.
    updates : dict of str to list of str
        The earlier statements each later statement changes (:mod:`.updates`).
    updated_by : dict of str to str
        The inverse: the later statement that changes each earlier one. An earlier
        statement carries it, so an old habit never reaches the context without the
        statement that ended it.
    evidence_need : float
        The router's probability of the evidence level relative to its most
        probable level (1 under an evidence route): how much of the evidence a
        claim line would displace the question needs (:mod:`.margin`).
    """

    state: RetrievalState
    registry: SchemaRegistry | None
    counter: TokenCounter
    now: datetime
    cfg: RecallConfig
    allowed: tuple[Level, ...]
    fit: dict[Level, float]
    wanted_types: set[str]
    personal: bool
    named: set[str]
    scored: dict[str, Scored]
    cosines: dict[Level, np.ndarray]
    supersedes: dict[str, list[str]] = field(default_factory=dict)
    updates: dict[str, list[str]] = field(default_factory=dict)
    updated_by: dict[str, str] = field(default_factory=dict)
    timelines: dict[str, Timeline] = field(default_factory=dict)
    carries: dict[str, Carry] = field(default_factory=dict)
    conf: dict[str, float] = field(default_factory=dict)
    lines: dict[str, str] = field(default_factory=dict)
    options: dict[str, Option] = field(default_factory=dict)
    # How much the route wants each node shown (relevance x level fit), passed down a
    # support path: evidence under a wanted claim is worth showing as support for the
    # claim, even when its own wording does not match the query.
    wanted_of: dict[str, float] = field(default_factory=dict)
    rel_cache: dict[str, float] = field(default_factory=dict)
    carried_tokens: dict[tuple[str, str, str], int] = field(default_factory=dict)
    evidence_need: float = 1.0

    @property
    def show_leaves(self) -> bool:
        """Carried contradictions and newest stances need leaves to be shown."""
        return Level.LEAF in self.allowed


def _type_params(
    state: RetrievalState, registry: SchemaRegistry | None, schema_type: str
) -> tuple[float, float | None]:
    key = (id(registry), schema_type)
    hit = state.type_cache.get(key)
    if hit is None:
        hit = (float("nan"), None)  # unknown type (or no registry): read σ(logit) without decay
        if registry is not None:
            try:
                st = registry[schema_type]
                hit = (st.prior_logit, st.half_life_days)
            except (KeyError, TypeError):
                pass
        state.type_cache[key] = hit
    return hit


def _confidence(
    state: RetrievalState, registry: SchemaRegistry | None, node: Node, now: datetime, tl: Timeline | None = None
) -> float:
    """σ of the lazily decayed logit (the formula of :func:`personatree.confidence.confidence_at`,
    inlined); for a changed claim, the belief it still holds (:func:`personatree.timeline.shown_logit`)."""
    prior, half = _type_params(state, registry, node.schema_type)
    logit = node.logit
    if not math.isnan(prior):
        dt = (now - node.t_last).total_seconds() / 86400.0
        if half is not None and dt > 0.0:
            logit = prior + (node.logit - prior) * 2.0 ** (-dt / half)
    if tl is not None and tl.changed:
        logit = shown_logit(logit, prior, tl)
    return sigmoid(logit)


def _line(
    state: RetrievalState, node: Node, conf: float, counter: TokenCounter, tl: Timeline | None = None
) -> tuple[str, int, int, str]:
    """(line, tokens on its own, tokens nested, date) for a node, cached per line inputs."""
    change = (tl.since, tl.support_first, tl.support_last) if tl is not None and tl.changed else None
    key = (
        _counted_by(counter),
        node.id,
        round(conf, 2),
        node.content,
        node.t_first,
        node.t_last,
        node.n_support,
        node.n_conflict,
        node.schema_type,
        change,
    )
    hit = state.line_cache.get(key)
    if hit is None:
        line = node_line(node, conf, tl if change is not None else None)
        # Counted with the newline that follows it in the text, because tokenizers
        # often merge a final "." with "\n"; nested, a leaf carries its date inline.
        date = leaf_date(node)
        own = counter.count(f"- {line}\n")
        inline = f"{date} {line}" if node.level is Level.LEAF else line
        nested = counter.count(f"  - {inline}\n")
        hit = state.line_cache[key] = (line, own, nested, date)
    return hit


def _counted_by(counter: TokenCounter) -> object:
    # Counts depend on the tokenizer: recalls for another model (``model=``) must not
    # reuse them. Counters of one model count alike; any other is itself.
    model = getattr(counter, "model", None)
    return (type(counter), model) if isinstance(model, str) else (type(counter), id(counter))


def _carry(ctx: RecallContext, n: Node) -> Carry:
    hit = ctx.carries.get(n.id)
    if hit is None:
        hit = ctx.carries[n.id] = carry_of(ctx.state, n.id, ctx.timelines)
    return hit


def cosine(ctx: RecallContext, n: Node) -> float:
    """The query cosine of ``n`` (0 when its level was not scored)."""
    arr, s = ctx.state.arrays.get(n.level), ctx.cosines.get(n.level)
    row = arr.row.get(n.id) if arr is not None else None
    return float(s[row]) if s is not None and row is not None else 0.0


def _own_relevance(ctx: RecallContext, n: Node) -> float:
    cfg = ctx.cfg
    sc = ctx.scored.get(n.id)
    rel = sc.relevance if sc else 0.5 * calibrated(cosine(ctx, n))
    if n.schema_type in ctx.wanted_types:
        rel *= cfg.schema_boost
    if ctx.personal and n.id in ctx.state.dispositions:
        rel *= cfg.disposition_boost
    if ctx.named and n.level is Level.LEAF:
        who = n.attributes.get("speaker")
        if isinstance(who, str) and who.lower() in ctx.named:
            rel *= cfg.speaker_boost
    return min(1.0, rel)


def _base_relevance(ctx: RecallContext, n: Node) -> float:
    hit = ctx.rel_cache.get(n.id)
    if hit is None:
        hit = ctx.rel_cache[n.id] = _own_relevance(ctx, n)
    return hit


def relevance(ctx: RecallContext, n: Node) -> float:
    """Relevance of ``n`` to the query, lifted by what it supersedes or updates.

    A newest stance of a changed pattern is worth at least the statements it
    supersedes; a later statement that changes a candidate is worth
    ``recall.update_share`` of it.
    """
    rel = _base_relevance(ctx, n)
    older = ctx.supersedes.get(n.id)
    if older:
        rel = max(rel, max(_base_relevance(ctx, ctx.state.nodes[x]) for x in older))
    changed = ctx.updates.get(n.id)
    if changed:
        lent = max(_base_relevance(ctx, ctx.state.nodes[x]) for x in changed)
        rel = max(rel, ctx.cfg.update_share * lent)
    return rel


def option(ctx: RecallContext, n: Node, parent_wanted: float) -> Option:
    """The packer's option for ``n``, shown under a parent wanted ``parent_wanted``.

    Records the node's confidence and line in ``ctx`` (and, for a claim that carries
    evidence, the options of what it carries).
    """
    cfg = ctx.cfg
    cr = _carry(ctx, n) if n.level is not Level.LEAF else None
    tl = cr.timeline if cr is not None else None
    c = ctx.conf.get(n.id)
    if c is None:
        c = ctx.conf[n.id] = _confidence(ctx.state, ctx.registry, n, ctx.now, tl)
    line, own, nested, date = _line(ctx.state, n, c, ctx.counter, tl)
    ctx.lines[n.id] = line
    wanted = relevance(ctx, n) * ctx.fit[n.level]
    rely = 0.5 + 0.5 * c  # a verbatim leaf at prior confidence still counts as evidence
    as_support = max(wanted, cfg.child_floor * parent_wanted)
    ctx.wanted_of[n.id] = max(ctx.wanted_of.get(n.id, 0.0), as_support)
    groups = ("claims",) if n.level is not Level.LEAF else ("evidence", date)
    companions: tuple[Companion, ...] = ()
    if cr is not None and cr.latest is not None and ctx.show_leaves:
        pairs = ((cr.latest, cr.mark), (cr.context, "context"))
        companions = tuple(
            companion(ctx, x, mark, as_support if cr.timeline.changed else 0.0)
            for x, mark in pairs
            if x is not None
        )
    elif n.level is Level.LEAF and n.id in ctx.updated_by and _tells_change_of_mind(ctx, n):
        companions = (_update_companion(ctx, ctx.updated_by[n.id]),)
    return Option(
        n.id, n.level.rank, wanted * rely, as_support * rely, own, nested, groups, companions
    )


def companion(ctx: RecallContext, leaf_id: str, mark: str, claim_wanted: float) -> Companion:
    """A leaf a claim carries, with its ``mark``, worth a share of ``claim_wanted``.

    What a claim carries adds only what it is worth *as support of the claim* (a
    share of the claim's worth), never its own relevance: a relevant leaf competes on
    its own, and must not drag a weak claim into the context. An older contradiction
    of a claim supported again since (``claim_wanted`` 0) adds nothing: it is the
    price of showing that claim honestly. Its line is nested under the claim with its
    mark.
    """
    n = ctx.state.nodes[leaf_id]
    if leaf_id not in ctx.options:
        ctx.options[leaf_id] = option(ctx, n, 0.0)
    value = ctx.cfg.child_floor * claim_wanted * (0.5 + 0.5 * ctx.conf[leaf_id])
    key = ("carried", leaf_id, mark)
    tokens = ctx.carried_tokens.get(key)
    if tokens is None:
        text = f"  - {leaf_date(n)} {CONFLICT_MARKS[mark]}{ctx.lines[leaf_id]}\n"
        tokens = ctx.carried_tokens[key] = ctx.counter.count(text)
    return Companion(leaf_id, value, tokens)


def _tells_change_of_mind(ctx: RecallContext, n: Node) -> bool:
    """Whether ``n`` and its update are the speaker's news of themself, now.

    Only then must the update come with it. A line said to the listener ("that must
    have been hard for you") takes a stance on the listener's news, not on the
    speaker's own habits, and in chat it pairs with many unrelated earlier lines. A
    memory ("I started painting three years ago", "when I was ten") is true of the
    past whatever is said later, and no news of a change either. An opposite stance
    must be a lasting one on the same topic ("I can't stand sushi now" after "I love
    sushi"), not the mood of a moment in a story ("it wasn't easy"); a later
    statement on the same thing that takes no opposite stance is carried when the
    two name a topic in common ("the lido and I have parted ways" after "I swim at
    the lido every morning"), at no worth of its own (:func:`_update_companion`).
    And a start that reverses nothing ("I joined a choir", after "I love singing")
    adds to what came before rather than ending it: shown, it is worth what it is
    worth on its own. None of these rules applies to an update a judge read as
    changing ``n`` (:mod:`personatree.change_links`): it always comes with it.
    """
    state = ctx.state
    later = state.nodes[ctx.updated_by[n.id]]
    if _judged_change(later, n.id):
        return True  # a judge read the two and the change in them
    if later.id not in state.changes:
        # A lasting opposite stance, or a later word on the same thing that takes none
        # (most ways of telling a change are in no word list), when the two name a
        # topic in common; an opposite mood of the moment is not carried.
        flipped = opposed(node_stance(n), node_stance(later))
        if flipped and later.id not in state.dispositions:
            return False
        if not share_a_topic(n.content, later.content):
            return False
    if any(to_listener(x.content) or tells_the_past(x.content) for x in (n, later)):
        return False
    return node_stance(later) != "started" or opposed(node_stance(n), "started")


def _judged_change(later: Node, earlier_id: str) -> bool:
    """Whether a judge read ``later`` as changing the statement ``earlier_id``."""
    return earlier_id in links_of(later)


def changes_what_it_updates(ctx: RecallContext, update_id: str) -> bool:
    """Whether a later statement reads as a change of what it updates.

    It tells a change, a judge read it as changing one of the statements it updates
    (:mod:`personatree.change_links`), or it takes the opposite stance to one of
    them; else it is only the person's later word on the same thing, linked by
    meaning (``recall.update_restate_floor``), which may merely restate it.
    """
    state = ctx.state
    if update_id in state.changes:
        return True
    node = state.nodes[update_id]
    if any(_judged_change(node, x) for x in ctx.updates.get(update_id, ())):
        return True
    stance = node_stance(node)
    return any(opposed(stance, node_stance(state.nodes[x])) for x in ctx.updates.get(update_id, ()))


def _update_companion(ctx: RecallContext, update_id: str) -> Companion:
    """The later statement an earlier one carries, at its line cost and worth.

    Unlike a claim's contradiction it is shown as evidence of its own (dated, in
    its session's group), so it costs its own line. A change adds its own value: it
    is worth showing for the question, not only as the price of the old statement.
    A later word that reads as no change adds none: it is the price of showing the
    old statement honestly (it may end it in words no rule reads), and valued for
    itself it would also buy what only restates the old one ("I still run every
    morning"), crowding out of a small budget what matters more.
    """
    o = ctx.options.get(update_id)
    if o is None:
        o = ctx.options[update_id] = option(ctx, ctx.state.nodes[update_id], 0.0)
    return Companion(update_id, o.value if changes_what_it_updates(ctx, update_id) else 0.0, o.tokens)


def expand(ctx: RecallContext, parent: str) -> list[Option]:
    """Options of the best supporting children of ``parent``, best as evidence first."""
    state = ctx.state
    p = state.nodes[parent]
    kids = [
        state.nodes[k]
        for k in state.children.get(parent, ())
        if state.nodes[k].level in ctx.allowed
    ]
    # Ties by id, so the order a tier's state happened to link children in never
    # changes the answer.
    kids.sort(key=lambda k: (-cosine(ctx, k), k.id))
    # Under a factual route a claim is little wanted, so its leaves compete on their
    # own relevance; under an insight route they inherit the claim's weight.
    opts = [option(ctx, k, ctx.wanted_of.get(p.id, 0.0)) for k in kids[:_MAX_CHILDREN]]
    return sorted(opts, key=lambda o: -o.child_value)
