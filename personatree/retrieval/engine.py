"""One recall over one user's retrieval state: score, pack, render, count.

Pure apart from the token counter's cache: the state, query vector, route, clock
reading and budget are all passed in, so the benchmark and the property tests can
drive it on graphs they build directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..confidence import sigmoid
from ..config import RecallConfig
from ..index import top_k
from ..types import Level, Node, Route
from .fusion import rrf_normalised
from .lexical import tokenize
from .packing import Option, pack
from .render import CLAIMS_HEADER, EVIDENCE_HEADER, date_header, layout, leaf_date, node_line, render_text
from .result import Recall, RecallItem, TraceEntry
from .state import RetrievalState

__all__ = ["Scored", "score_nodes", "level_fit", "recall_state"]

_MAX_CHILDREN = 8


@dataclass(frozen=True, slots=True)
class Scored:
    """Relevance of one candidate node and where it came from."""

    relevance: float
    cosine: float
    dense_rank: int | None
    lexical_rank: int | None


def _calibrated(cos: float) -> float:
    # MiniLM cosines of unrelated sentences sit around 0.0-0.2 and of paraphrases at
    # 0.6+; map that range to [0, 1] so it can be averaged with a normalised RRF score.
    return min(1.0, max(0.0, (cos - 0.15) / 0.5))


def level_fit(route: Route, level: Level, floor: float) -> float:
    """floor + (1 − floor)·p(level)/max p: 1 for the routed level, never below ``floor``."""
    top = max(route.probabilities.values()) or 1.0
    return floor + (1.0 - floor) * float(route.probabilities.get(level, 0.0)) / top


def score_nodes(
    state: RetrievalState,
    query: str,
    qvec: np.ndarray | None,
    levels: Iterable[Level],
    cfg: RecallConfig,
    pools: Mapping[Level, int] | None = None,
) -> tuple[dict[str, Scored], dict[Level, np.ndarray]]:
    """Hybrid relevance of candidate nodes: dense and BM25 rankings fused by RRF, per level.

    Leaves are matched lexically through their source turn (all sentences of the turn
    and its speaker), then represented by the turn's sentence closest to the query.

    Parameters
    ----------
    state : RetrievalState
    query : str
    qvec : ndarray or None
    levels : iterable of Level
    cfg : RecallConfig
    pools : mapping of Level to int, optional
        Candidates per retriever and level (default ``cfg.pool``).

    Returns
    -------
    scored : dict
        Node id → :class:`Scored`.
    cosines : dict
        Level → cosine of every row of that level's matrix (empty without ``qvec``).
    """
    qtok = tokenize(query)
    out: dict[str, Scored] = {}
    cosines: dict[Level, np.ndarray] = {}
    for lv in levels:
        pool = pools[lv] if pools else cfg.pool
        arr = state.arrays.get(lv)
        dense: list[str] = []
        if qvec is not None and arr is not None and arr.ids:
            s = arr.matrix @ qvec
            cosines[lv] = s
            dense = [arr.ids[i] for i in top_k(s, pool)]
        s_lv = cosines.get(lv)
        if lv is Level.LEAF:
            lexical = []
            for tk, _ in state.turns.search(qtok, pool):
                members = state.turn_leaves.get(tk) or []
                if not members:
                    continue
                if s_lv is not None and arr is not None:
                    members = sorted(members, key=lambda m: -float(s_lv[arr.row[m]]) if m in arr.row else 1.0)
                lexical.append(members[0])
        else:
            lexical = [x for x, _ in state.bm25[lv].search(qtok, pool)]
        fused = rrf_normalised([dense, lexical], k=cfg.rrf_k, weights=[cfg.dense_weight, cfg.lexical_weight])
        d_rank = {x: i + 1 for i, x in enumerate(dense)}
        l_rank = {x: i + 1 for i, x in enumerate(lexical)}
        for x, r in fused.items():
            cos = float(s_lv[arr.row[x]]) if s_lv is not None and arr is not None and x in arr.row else 0.0
            # Leaves compete among themselves: their fused rank is their relevance (a turn
            # first in one ranking must not be demoted for a low cosine). Claims also
            # compete across levels, so their cosine keeps them on an absolute scale.
            w = 1.0 if lv is Level.LEAF else cfg.rrf_weight
            rel = r if s_lv is None else w * r + (1.0 - w) * _calibrated(cos)
            out[x] = Scored(rel, cos, d_rank.get(x), l_rank.get(x))
    return out, cosines


def _type_params(state: RetrievalState, registry: Any, schema_type: str) -> tuple[float, float | None]:
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


def _confidence(state: RetrievalState, registry: Any, node: Node, now: datetime) -> float:
    """σ of the lazily decayed logit (the formula of :func:`personatree.confidence.confidence_at`, inlined)."""
    prior, half = _type_params(state, registry, node.schema_type)
    if prior != prior:  # nan
        return sigmoid(node.logit)
    dt = (now - node.t_last).total_seconds() / 86400.0
    if half is None or dt <= 0.0:
        return sigmoid(node.logit)
    return sigmoid(prior + (node.logit - prior) * 2.0 ** (-dt / half))


def _line(state: RetrievalState, node: Node, conf: float, counter: Any) -> tuple[str, int, int]:
    """(line, tokens on its own, tokens nested) for a node, cached per line inputs."""
    key = (node.id, round(conf, 2), node.content, node.t_first, node.t_last, node.n_support,
           node.n_conflict, node.schema_type)
    hit = state.line_cache.get(key)
    if hit is None:
        line = node_line(node, conf)
        own = counter.count(line) + 2  # "- " and the newline
        # nested: indentation, and a leaf's date moves inline
        nested = (counter.count(f"{leaf_date(node)} {line}") if node.level is Level.LEAF else own - 2) + 3
        hit = state.line_cache[key] = (line, own, nested)
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
    # Candidates beyond what a budget can show only cost time: ~10 tokens is the
    # shortest line, so budget/8 per retriever and level is already generous.
    fit = {lv: level_fit(route, lv, cfg.fit_floor) for lv in Level}
    pool = max(16, min(cfg.pool, budget // 10))
    # A level the router disfavours contributes proportionally fewer candidates.
    pools = {lv: max(8, int(pool * fit[lv])) for lv in Level}
    scored, cosines = score_nodes(state, query, qvec, allowed, cfg, pools)
    wanted = set(route.schema_types)
    conf: dict[str, float] = {}
    lines: dict[str, str] = {}
    options: dict[str, Option] = {}

    def cos_of(n: Node) -> float:
        arr, s = state.arrays.get(n.level), cosines.get(n.level)
        row = arr.row.get(n.id) if arr is not None else None
        return float(s[row]) if s is not None and row is not None else 0.0

    named = {w for w in query.lower().replace("'s", " ").split()} if cfg.speaker_boost > 1.0 else set()

    def relevance(n: Node) -> float:
        sc = scored.get(n.id)
        rel = sc.relevance if sc else 0.5 * _calibrated(cos_of(n))
        if n.schema_type in wanted:
            rel *= cfg.schema_boost
        if named and n.level is Level.LEAF:
            who = n.attributes.get("speaker")
            if isinstance(who, str) and who.lower() in named:
                rel *= cfg.speaker_boost
        return min(1.0, rel)

    def option(n: Node, parent_rel: float) -> Option:
        c = conf.get(n.id)
        if c is None:
            c = conf[n.id] = _confidence(state, registry, n, now)
        line, own, nested = _line(state, n, c, counter)
        lines[n.id] = line
        rel = relevance(n)
        rely = 0.5 + 0.5 * c  # a verbatim leaf at prior confidence still counts as evidence
        value = rel * rely * fit[n.level]
        child_value = max(rel, cfg.child_floor * parent_rel) * rely * fit[n.level]
        groups = ("claims",) if n.level is not Level.LEAF else ("evidence", leaf_date(n))
        return Option(n.id, n.level.rank, value, child_value, own, nested, groups)

    def expand(parent: str) -> list[Option]:
        p = state.nodes[parent]
        kids = [state.nodes[k] for k in state.children.get(parent, ()) if state.nodes[k].level in allowed]
        kids.sort(key=lambda k: -cos_of(k))
        opts = [option(k, relevance(p)) for k in kids[:_MAX_CHILDREN]]
        return sorted(opts, key=lambda o: -o.child_value)

    for nid in scored:
        options[nid] = option(state.nodes[nid], 0.0)
    headers = {"claims": counter.count(CLAIMS_HEADER) + 1, "evidence": counter.count(EVIDENCE_HEADER) + 1}
    for o in options.values():
        for g in o.groups[1:]:
            if g not in headers:
                headers[g] = counter.count(date_header(g)) + 1
    result = pack(options, expand, budget, lam=cfg.lam, expand_k=cfg.expand_k,
                  seeds=list(scored), group_tokens=headers)
    taken = list(result.taken)
    value = {k: o.value for k, o in options.items()}
    while True:
        chosen = [n for s in taken for n in s.node_ids]
        lay = layout(chosen, state.nodes, state.parent, value)
        text = render_text(lay, lines, state.nodes)
        tokens = counter.count(text)
        if tokens <= budget or not taken:
            break
        taken.pop()  # the sum of parts under-counted: drop the last step and recount
    why = {n: s for s in taken for n in s.node_ids}
    items = []
    for nid in lay.order:
        n, sc, o = state.nodes[nid], scored.get(nid), options[nid]
        step = why[nid]
        if step.kind == "alone":
            reason = (f"alone: relevance {relevance(n):.2f} (dense #{sc.dense_rank if sc else '-'}, "
                      f"lexical #{sc.lexical_rank if sc else '-'}) x reliability {0.5 + 0.5 * conf[nid]:.2f} "
                      f"x fit {fit[n.level]:.2f}")
        else:
            reason = f"expand: supports {state.parent.get(nid)} (value as evidence {o.child_value:.3f})"
        items.append(RecallItem(
            node_id=nid, level=n.level, schema_type=n.schema_type, depth=lay.depth[nid],
            parent=lay.parent[nid], tokens=counter.count(lines[nid]), relevance=relevance(n), confidence=conf[nid],
            fit=fit[n.level], utility=(o.child_value if step.kind == "expand" else o.value) - cfg.lam * o.tokens,
            dense_rank=sc.dense_rank if sc else None, lexical_rank=sc.lexical_rank if sc else None,
            sources=tuple((p.observation_id, p.turn) for p in n.provenance), reason=reason,
        ))
    trace = [TraceEntry(s.node_ids, f"chose ({s.kind})", s.utility, s.tokens, "best utility left") for s in taken]
    trace += [TraceEntry(s.node_ids, f"chose ({s.kind}), then dropped", s.utility, s.tokens,
                         "the rendered text exceeded the budget") for s in result.taken[len(taken):]]
    trace += [TraceEntry(s.node_ids, f"left out ({s.kind})", s.utility, s.tokens, "did not fit the budget")
              for s in result.left_out]
    return Recall(text, tuple(items), route, tokens, budget, tuple(trace))
