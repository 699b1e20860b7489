"""One recall over one user's retrieval state: score, pack, render, count.

A claim with contradicting evidence is shown with its latest contradiction (and,
when that changed the claim, what was said around the change) nested under it, and
the newest stance of a changed pattern is preferred over the statements it
supersedes (:mod:`personatree.retrieval.changes`).

Pure apart from the token counter's cache: the state, query vector, route, clock
reading and budget are all passed in, so the benchmark and the property tests can
drive it on graphs they build directly.
"""

from __future__ import annotations

from datetime import datetime
from functools import partial
from typing import Sequence

import numpy as np

from ..config import RecallConfig
from ..ports import TokenCounter
from ..schema import SchemaRegistry
from ..types import Level, Route
from .changes import newest_stance
from .margin import evidence_rate
from .options import RecallContext, changes_what_it_updates, expand, option, relevance
from .packing import PackResult, Step, pack
from .render import CLAIMS_HEADER, EVIDENCE_HEADER, Layout, date_header, layout, render_text
from .result import Recall, RecallItem, TraceEntry
from .scoring import level_fit, score_nodes
from .state import RetrievalState
from .updates import later_statements

__all__ = ["recall_state"]


def recall_state(
    state: RetrievalState,
    query: str,
    qvec: np.ndarray | None,
    route: Route,
    *,
    registry: SchemaRegistry | None,
    counter: TokenCounter,
    budget: int,
    now: datetime,
    cfg: RecallConfig,
    levels: Sequence[Level] | None = None,
    from_user: bool = False,
) -> Recall:
    """Select, render and count the context for one query.

    Parameters
    ----------
    state : RetrievalState
        The user's refreshed retrieval state.
    query : str
    qvec : ndarray or None
        Query embedding (``None``: lexical only).
    route : Route
        The router's prediction.
    registry : SchemaRegistry or None
        For confidence decay (unknown types read σ(logit)).
    counter : TokenCounter
    budget : int
        Token budget; the returned text never exceeds it.
    now : datetime
        When confidences are read.
    cfg : RecallConfig
    levels : sequence of Level, optional
        Only these levels may be shown.
    from_user : bool
        The query is the person's own message (see :func:`.scoring.score_nodes`).

    Returns
    -------
    Recall
    """
    allowed = tuple(levels) if levels else tuple(Level)
    fit = _level_fits(route, cfg)
    wanted = set(route.schema_types)
    # A question about the person (advice, habits, character) rather than an event.
    personal = route.level is not Level.LEAF or "preference" in wanted
    # Candidates beyond what a budget can show only cost time: lines are 10-30 tokens,
    # so budget/10 per retriever and level is already generous.
    pool = max(16, min(cfg.pool, budget // 10))
    # A level the router disfavours contributes proportionally fewer candidates.
    pools = {lv: max(8, int(pool * fit[lv])) for lv in Level}
    scored, cosines = score_nodes(state, query, qvec, allowed, cfg, pools, personal, from_user)
    state.prefetch(scored)  # archived candidates not read yet: one store read for all
    named = (
        {w for w in query.lower().replace("'s", " ").split()} if cfg.speaker_boost > 1.0 else set()
    )
    ctx = RecallContext(
        state, registry, counter, now, cfg, allowed, fit, wanted, personal, named, scored, cosines
    )
    # How much the router believes the question asks for evidence, relative to the
    # level it asks for most (1 for an evidence route).
    ctx.evidence_need = level_fit(route, Level.LEAF, 0.0)
    # Contradicted claims carry their latest contradiction (and, when it changed the
    # claim, what was said around it); the newest stance of a changed pattern is worth
    # at least the older statements it supersedes. Both need leaves to be shown.
    if ctx.show_leaves:
        leaf_ids = [x for x in scored if state.nodes[x].level is Level.LEAF]
        ctx.supersedes = newest_stance(state, leaf_ids, ctx.timelines)
        # A later statement that changes a candidate (a stop, a move, an opposite
        # stance on the same thing) is worth a share of what it updates.
        best_first = sorted(leaf_ids, key=lambda x: (-ctx.scored[x].relevance, x))
        # A larger budget shows more lines, and any of them may be an old statement:
        # the candidates followed grow with it (a line is 10-30 tokens).
        top = max(cfg.update_top, budget // 20) if cfg.update_top else 0
        ctx.updates = later_statements(state, best_first, cfg, top)
        ctx.updated_by = {x: u for u, xs in ctx.updates.items() for x in xs}
    seeds = list(ctx.scored)
    # The newest stance of a changed pattern, and a later statement that changes a
    # candidate, may be shown on their own even when their own words did not make
    # them candidates.
    seeds += [x for x in ctx.supersedes if x not in ctx.scored]
    seeds += [x for x in ctx.updates if x not in ctx.scored and x not in ctx.supersedes]
    for nid in seeds:
        ctx.options[nid] = option(ctx, state.nodes[nid], 0.0)
    result, taken, lay, text, tokens = _pack_to_budget(ctx, seeds, _header_tokens(ctx), budget)
    why = {n: s for s in taken for n in s.node_ids}
    items = tuple(_item(ctx, nid, why[nid], lay) for nid in lay.order)
    return Recall(text, items, route, tokens, budget, _trace(result, taken))


def _level_fits(route: Route, cfg: RecallConfig) -> dict[Level, float]:
    """How well each level fits the route, never below its floor."""
    # Verbatim evidence is worth something under any route; a claim under a factual
    # route mostly costs budget that evidence would use better.
    floors = {lv: cfg.leaf_fit_floor if lv is Level.LEAF else cfg.fit_floor for lv in Level}
    return {lv: level_fit(route, lv, floors[lv]) for lv in Level}


def _header_tokens(ctx: RecallContext) -> dict[str, int]:
    """Tokens of every header the options may need (with its newline)."""
    counter = ctx.counter
    headers = {
        "claims": counter.count(CLAIMS_HEADER) + 1,
        "evidence": counter.count(EVIDENCE_HEADER) + 1,
    }
    for o in ctx.options.values():
        for g in o.groups[1:]:
            if g not in headers:
                headers[g] = counter.count(date_header(g)) + 1
    return headers


def _against_of(ctx: RecallContext, chosen: list[str]) -> dict[str, tuple[str, str]]:
    """Each shown contradiction goes under the highest shown claim it qualifies."""
    nodes = ctx.state.nodes
    shown = set(chosen)
    out: dict[str, tuple[str, str]] = {}
    claims = sorted(
        (x for x in chosen if nodes[x].level is not Level.LEAF),
        key=lambda x: (-nodes[x].level.rank, x),
    )
    for x in claims:
        cr = ctx.carries.get(x)
        if cr is None or cr.latest is None:
            continue
        for leaf, mark in ((cr.latest, cr.mark), (cr.context, "context")):
            if leaf is not None and leaf in shown and leaf not in out:
                out[leaf] = (x, mark)
    return out


_Packed = tuple[PackResult, list[Step], Layout, str, int]


def _pack_and_render(
    ctx: RecallContext, seeds: list[str], headers: dict[str, int], room: int, budget: int
) -> _Packed:
    """Pack within ``room`` tokens, then render; drop steps until the text fits ``budget``."""
    cfg, state = ctx.cfg, ctx.state
    # A claim line shows no evidence: it takes room only when worth more per token
    # than the evidence it would push out of this budget, as far as the question
    # asks for evidence (an event, a time, a fact of one episode) rather than for
    # what the person is like.
    evidence = [(o.value, o.tokens, o.groups) for x in seeds if (o := ctx.options[x]).rank == 0]
    claim_rate = ctx.evidence_need * evidence_rate(evidence, room, headers)
    result = pack(
        ctx.options,
        partial(expand, ctx),
        room,
        lam=cfg.lam,
        expand_k=cfg.expand_k,
        seeds=seeds,
        group_tokens=headers,
        claim_rate=claim_rate,
    )
    taken = list(result.taken)
    value = {k: o.value for k, o in ctx.options.items()}
    while True:
        chosen = [n for s in taken for n in s.node_ids]
        lay = layout(chosen, state.nodes, state.parent, value, _against_of(ctx, chosen))
        text = render_text(lay, ctx.lines, state.nodes)
        tokens = ctx.counter.count(text)
        if tokens <= budget or not taken:
            return result, taken, lay, text, tokens
        taken.pop()  # the sum of parts under-counted: drop the last step and recount


def _pack_to_budget(ctx: RecallContext, seeds: list[str], headers: dict[str, int], budget: int) -> _Packed:
    """The packed, rendered context within ``budget``, repacked once when slack is left."""
    packed = _pack_and_render(ctx, seeds, headers, budget, budget)
    result, taken, _, _, tokens = packed
    estimated = sum(s.tokens for s in taken)
    scaled = int(budget * estimated / max(tokens, 1))
    if taken and any(s.tokens <= scaled - estimated for s in result.left_out):
        # Line costs are estimated one line at a time and run a little high in the
        # joined text (headers and merges at line joins). When the measured slack
        # would fit a step that was left out, repack once with the budget scaled by
        # the measured ratio (the drop-last loop above still guarantees the budget).
        again = _pack_and_render(ctx, seeds, headers, scaled, budget)
        if again[4] > tokens:
            packed = again
    return packed


def _update_words(ctx: RecallContext, nid: str) -> str:
    """How a later statement relates to what it updates, for its reason."""
    if changes_what_it_updates(ctx, nid):
        return "a later statement that changes"
    return "a later statement about the same thing as"


def _reason(ctx: RecallContext, nid: str, step: Step, lay: Layout) -> str:
    """Why node ``nid`` was shown."""
    n, sc = ctx.state.nodes[nid], ctx.scored.get(nid)
    if nid in step.carried and nid in ctx.updates and not lay.marks.get(nid):
        return f"carried: {_update_words(ctx, nid)} {', '.join(ctx.updates[nid])}"
    if nid in step.carried or lay.marks.get(nid):
        claim = lay.parent[nid]
        return (
            f"carried: {'what was said around the change of' if lay.marks.get(nid) == 'context' else 'latest contradiction of'} "
            f"{claim}"
        )
    if step.kind == "alone" and nid in ctx.supersedes and sc is None:
        return f"alone: newest stance of a changed pattern (supersedes {', '.join(ctx.supersedes[nid])})"
    if step.kind == "alone" and nid in ctx.updates:
        return (
            f"alone: {_update_words(ctx, nid)} {', '.join(ctx.updates[nid])}, "
            f"relevance {relevance(ctx, n):.2f}"
        )
    if step.kind == "alone" and sc is not None and sc.neighbour_of is not None:
        return (
            f"alone: same scene as {sc.neighbour_of}, relevance {relevance(ctx, n):.2f} "
            f"x reliability {0.5 + 0.5 * ctx.conf[nid]:.2f} x fit {ctx.fit[n.level]:.2f}"
        )
    if step.kind == "alone":
        return (
            f"alone: relevance {relevance(ctx, n):.2f} (dense #{sc.dense_rank if sc else '-'}, "
            f"lexical #{sc.lexical_rank if sc else '-'}) x reliability {0.5 + 0.5 * ctx.conf[nid]:.2f} "
            f"x fit {ctx.fit[n.level]:.2f}"
        )
    return (
        f"expand: supports {ctx.state.parent.get(nid)} (value as evidence {ctx.options[nid].child_value:.3f})"
    )


def _item(ctx: RecallContext, nid: str, step: Step, lay: Layout) -> RecallItem:
    """The shown node ``nid`` as a result item."""
    n, sc, o = ctx.state.nodes[nid], ctx.scored.get(nid), ctx.options[nid]
    return RecallItem(
        node_id=nid,
        level=n.level,
        schema_type=n.schema_type,
        depth=lay.depth[nid],
        parent=lay.parent[nid],
        tokens=ctx.counter.count(ctx.lines[nid]),
        relevance=relevance(ctx, n),
        confidence=ctx.conf[nid],
        fit=ctx.fit[n.level],
        utility=(o.child_value if step.kind == "expand" else o.value) - ctx.cfg.lam * o.tokens,
        dense_rank=sc.dense_rank if sc else None,
        lexical_rank=sc.lexical_rank if sc else None,
        sources=tuple((p.observation_id, p.turn) for p in n.provenance),
        reason=_reason(ctx, nid, step, lay),
        neighbour_of=sc.neighbour_of if sc and step.kind == "alone" else None,
    )


def _trace(result: PackResult, taken: list[Step]) -> tuple[TraceEntry, ...]:
    """Chosen, dropped and left-out steps with their reasons."""
    trace = [
        TraceEntry(s.node_ids, f"chose ({s.kind})", s.utility, s.tokens, "best utility left")
        for s in taken
    ]
    trace += [
        TraceEntry(
            s.node_ids,
            f"chose ({s.kind}), then dropped",
            s.utility,
            s.tokens,
            "the rendered text exceeded the budget",
        )
        for s in result.taken[len(taken) :]
    ]
    trace += [
        TraceEntry(
            s.node_ids, f"left out ({s.kind})", s.utility, s.tokens, "did not fit the budget"
        )
        for s in result.left_out
    ]
    return tuple(trace)
