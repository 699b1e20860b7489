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

import math
from datetime import datetime
from typing import Any, Sequence

import numpy as np

from ..confidence import sigmoid
from ..config import RecallConfig
from ..types import Level, Node, Route
from ..timeline import Timeline, shown_logit
from .changes import Carry, carry_of, newest_stance
from .packing import Companion, Option, pack
from .render import (
    CONFLICT_MARKS,
    CLAIMS_HEADER,
    EVIDENCE_HEADER,
    date_header,
    layout,
    leaf_date,
    node_line,
    render_text,
)
from .result import Recall, RecallItem, TraceEntry
from .scoring import calibrated, level_fit, score_nodes
from .state import RetrievalState

__all__ = ["recall_state"]

_MAX_CHILDREN = 4  # supporting nodes a claim can show (best by cosine)


def _type_params(
    state: RetrievalState, registry: Any, schema_type: str
) -> tuple[float, float | None]:
    key = (id(registry), schema_type)
    hit = state.type_cache.get(key)
    if hit is None:
        try:
            st = registry[schema_type]
            hit = (st.prior_logit, st.half_life_days)
        except (KeyError, TypeError):
            hit = (float("nan"), None)  # unknown type: read σ(logit) without decay
        state.type_cache[key] = hit
    return hit


def _confidence(
    state: RetrievalState, registry: Any, node: Node, now: datetime, tl: Timeline | None = None
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
    state: RetrievalState, node: Node, conf: float, counter: Any, tl: Timeline | None = None
) -> tuple[str, int, int, str]:
    """(line, tokens on its own, tokens nested, date) for a node, cached per line inputs."""
    change = (tl.since, tl.support_first, tl.support_last) if tl is not None and tl.changed else None
    key = (
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


def recall_state(
    state: RetrievalState,
    query: str,
    qvec: np.ndarray | None,
    route: Route,
    *,
    registry: Any,
    counter: Any,
    budget: int,
    now: datetime,
    cfg: RecallConfig,
    levels: Sequence[Level] | None = None,
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
    registry : SchemaRegistry
        For confidence decay (unknown types read σ(logit)).
    counter : TokenCounter
    budget : int
        Token budget; the returned text never exceeds it.
    now : datetime
        When confidences are read.
    cfg : RecallConfig
    levels : sequence of Level, optional
        Only these levels may be shown.

    Returns
    -------
    Recall
    """
    allowed = tuple(levels) if levels else tuple(Level)
    # Verbatim evidence is worth something under any route; a claim under a factual
    # route mostly costs budget that evidence would use better.
    floors = {lv: cfg.leaf_fit_floor if lv is Level.LEAF else cfg.fit_floor for lv in Level}
    fit = {lv: level_fit(route, lv, floors[lv]) for lv in Level}
    # Candidates beyond what a budget can show only cost time: lines are 10-30 tokens,
    # so budget/10 per retriever and level is already generous.
    pool = max(16, min(cfg.pool, budget // 10))
    # A level the router disfavours contributes proportionally fewer candidates.
    pools = {lv: max(8, int(pool * fit[lv])) for lv in Level}
    wanted = set(route.schema_types)
    # A question about the person (advice, habits, character) rather than an event.
    personal = route.level is not Level.LEAF or "preference" in wanted
    scored, cosines = score_nodes(state, query, qvec, allowed, cfg, pools, personal)
    # Contradicted claims carry their latest contradiction (and, when it changed the
    # claim, what was said around it); the newest stance of a changed pattern is worth
    # at least the older statements it supersedes. Both need leaves to be shown.
    show_leaves = Level.LEAF in allowed
    timelines: dict[str, Timeline] = {}
    carries: dict[str, Carry] = {}

    def carry(n: Node) -> Carry:
        hit = carries.get(n.id)
        if hit is None:
            hit = carries[n.id] = carry_of(state, n.id, timelines)
        return hit

    supersedes: dict[str, list[str]] = {}
    if show_leaves:
        leaf_ids = [x for x in scored if state.nodes[x].level is Level.LEAF]
        supersedes = newest_stance(state, leaf_ids, timelines)
    conf: dict[str, float] = {}
    lines: dict[str, str] = {}
    options: dict[str, Option] = {}

    def cos_of(n: Node) -> float:
        arr, s = state.arrays.get(n.level), cosines.get(n.level)
        row = arr.row.get(n.id) if arr is not None else None
        return float(s[row]) if s is not None and row is not None else 0.0

    named = (
        {w for w in query.lower().replace("'s", " ").split()} if cfg.speaker_boost > 1.0 else set()
    )

    rel_cache: dict[str, float] = {}

    def base_relevance(n: Node) -> float:
        hit = rel_cache.get(n.id)
        if hit is None:
            hit = rel_cache[n.id] = _relevance(n)
        return hit

    def relevance(n: Node) -> float:
        older = supersedes.get(n.id)
        if not older:
            return base_relevance(n)
        return max(base_relevance(n), max(base_relevance(state.nodes[x]) for x in older))

    def _relevance(n: Node) -> float:
        sc = scored.get(n.id)
        rel = sc.relevance if sc else 0.5 * calibrated(cos_of(n))
        if n.schema_type in wanted:
            rel *= cfg.schema_boost
        if personal and n.id in state.dispositions:
            rel *= cfg.disposition_boost
        if named and n.level is Level.LEAF:
            who = n.attributes.get("speaker")
            if isinstance(who, str) and who.lower() in named:
                rel *= cfg.speaker_boost
        return min(1.0, rel)

    # How much the route wants each node shown (relevance x level fit), passed down a
    # support path: evidence under a wanted claim is worth showing as support for the
    # claim, even when its own wording does not match the query.
    wanted_of: dict[str, float] = {}

    def option(n: Node, parent_wanted: float) -> Option:
        cr = carry(n) if n.level is not Level.LEAF else None
        tl = cr.timeline if cr is not None else None
        c = conf.get(n.id)
        if c is None:
            c = conf[n.id] = _confidence(state, registry, n, now, tl)
        line, own, nested, date = _line(state, n, c, counter, tl)
        lines[n.id] = line
        wanted = relevance(n) * fit[n.level]
        rely = 0.5 + 0.5 * c  # a verbatim leaf at prior confidence still counts as evidence
        as_support = max(wanted, cfg.child_floor * parent_wanted)
        wanted_of[n.id] = max(wanted_of.get(n.id, 0.0), as_support)
        groups = ("claims",) if n.level is not Level.LEAF else ("evidence", date)
        companions: tuple[Companion, ...] = ()
        if cr is not None and cr.latest is not None and show_leaves:
            pairs = ((cr.latest, cr.mark), (cr.context, "context"))
            companions = tuple(
                companion(x, mark, as_support if cr.timeline.changed else 0.0)
                for x, mark in pairs
                if x is not None
            )
        return Option(
            n.id, n.level.rank, wanted * rely, as_support * rely, own, nested, groups, companions
        )

    def companion(leaf_id: str, mark: str, claim_wanted: float) -> Companion:
        # What a claim carries adds only what it is worth *as support of the claim*
        # (a share of the claim's worth), never its own relevance: a relevant leaf
        # competes on its own, and must not drag a weak claim into the context. An
        # older contradiction of a claim supported again since (``claim_wanted`` 0)
        # adds nothing: it is the price of showing that claim honestly. Its line is
        # nested under the claim with its mark.
        n = state.nodes[leaf_id]
        if leaf_id not in options:
            options[leaf_id] = option(n, 0.0)
        value = cfg.child_floor * claim_wanted * (0.5 + 0.5 * conf[leaf_id])
        key = ("carried", leaf_id, mark)
        tokens = carried_tokens.get(key)
        if tokens is None:
            text = f"  - {leaf_date(n)} {CONFLICT_MARKS[mark]}{lines[leaf_id]}\n"
            tokens = carried_tokens[key] = counter.count(text)
        return Companion(leaf_id, value, tokens)

    carried_tokens: dict[tuple[str, str, str], int] = {}

    def expand(parent: str) -> list[Option]:
        p = state.nodes[parent]
        kids = [
            state.nodes[k]
            for k in state.children.get(parent, ())
            if state.nodes[k].level in allowed
        ]
        # Ties by id, so the order a tier's state happened to link children in never
        # changes the answer.
        kids.sort(key=lambda k: (-cos_of(k), k.id))
        # Under a factual route a claim is little wanted, so its leaves compete on their
        # own relevance; under an insight route they inherit the claim's weight.
        opts = [option(k, wanted_of.get(p.id, 0.0)) for k in kids[:_MAX_CHILDREN]]
        return sorted(opts, key=lambda o: -o.child_value)

    seeds = list(scored)
    # The newest stance of a changed pattern may be shown on its own even when its
    # own words did not make it a candidate.
    seeds += [x for x in supersedes if x not in scored]
    for nid in seeds:
        options[nid] = option(state.nodes[nid], 0.0)
    headers = {
        "claims": counter.count(CLAIMS_HEADER) + 1,
        "evidence": counter.count(EVIDENCE_HEADER) + 1,
    }
    for o in options.values():
        for g in o.groups[1:]:
            if g not in headers:
                headers[g] = counter.count(date_header(g)) + 1

    def against_of(chosen: list[str]) -> dict[str, tuple[str, str]]:
        # Each shown contradiction goes under the highest shown claim it qualifies.
        shown = set(chosen)
        out: dict[str, tuple[str, str]] = {}
        claims = sorted(
            (x for x in chosen if state.nodes[x].level is not Level.LEAF),
            key=lambda x: (-state.nodes[x].level.rank, x),
        )
        for x in claims:
            cr = carries.get(x)
            if cr is None or cr.latest is None:
                continue
            for leaf, mark in ((cr.latest, cr.mark), (cr.context, "context")):
                if leaf is not None and leaf in shown and leaf not in out:
                    out[leaf] = (x, mark)
        return out

    def run(room: int) -> tuple[Any, list[Any], Any, str, int]:
        result = pack(
            options,
            expand,
            room,
            lam=cfg.lam,
            expand_k=cfg.expand_k,
            seeds=seeds,
            group_tokens=headers,
        )
        taken = list(result.taken)
        value = {k: o.value for k, o in options.items()}
        while True:
            chosen = [n for s in taken for n in s.node_ids]
            lay = layout(chosen, state.nodes, state.parent, value, against_of(chosen))
            text = render_text(lay, lines, state.nodes)
            tokens = counter.count(text)
            if tokens <= budget or not taken:
                return result, taken, lay, text, tokens
            taken.pop()  # the sum of parts under-counted: drop the last step and recount

    result, taken, lay, text, tokens = run(budget)
    estimated = sum(s.tokens for s in taken)
    scaled = int(budget * estimated / max(tokens, 1))
    if taken and any(s.tokens <= scaled - estimated for s in result.left_out):
        # Line costs are estimated one line at a time and run a little high in the
        # joined text (headers and merges at line joins). When the measured slack
        # would fit a step that was left out, repack once with the budget scaled by
        # the measured ratio (the drop-last loop above still guarantees the budget).
        again = run(scaled)
        if again[4] > tokens:
            result, taken, lay, text, tokens = again
    why = {n: s for s in taken for n in s.node_ids}
    items = []
    for nid in lay.order:
        n, sc, o = state.nodes[nid], scored.get(nid), options[nid]
        step = why[nid]
        if nid in step.carried or lay.marks.get(nid):
            claim = lay.parent[nid]
            reason = (
                f"carried: {'what was said around the change of' if lay.marks.get(nid) == 'context' else 'latest contradiction of'} "
                f"{claim}"
            )
        elif step.kind == "alone" and nid in supersedes and sc is None:
            reason = f"alone: newest stance of a changed pattern (supersedes {', '.join(supersedes[nid])})"
        elif step.kind == "alone" and sc is not None and sc.neighbour_of is not None:
            reason = (
                f"alone: same scene as {sc.neighbour_of}, relevance {relevance(n):.2f} "
                f"x reliability {0.5 + 0.5 * conf[nid]:.2f} x fit {fit[n.level]:.2f}"
            )
        elif step.kind == "alone":
            reason = (
                f"alone: relevance {relevance(n):.2f} (dense #{sc.dense_rank if sc else '-'}, "
                f"lexical #{sc.lexical_rank if sc else '-'}) x reliability {0.5 + 0.5 * conf[nid]:.2f} "
                f"x fit {fit[n.level]:.2f}"
            )
        else:
            reason = (
                f"expand: supports {state.parent.get(nid)} (value as evidence {o.child_value:.3f})"
            )
        items.append(
            RecallItem(
                node_id=nid,
                level=n.level,
                schema_type=n.schema_type,
                depth=lay.depth[nid],
                parent=lay.parent[nid],
                tokens=counter.count(lines[nid]),
                relevance=relevance(n),
                confidence=conf[nid],
                fit=fit[n.level],
                utility=(o.child_value if step.kind == "expand" else o.value) - cfg.lam * o.tokens,
                dense_rank=sc.dense_rank if sc else None,
                lexical_rank=sc.lexical_rank if sc else None,
                sources=tuple((p.observation_id, p.turn) for p in n.provenance),
                reason=reason,
                neighbour_of=sc.neighbour_of if sc and step.kind == "alone" else None,
            )
        )
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
    return Recall(text, tuple(items), route, tokens, budget, tuple(trace))
