"""Recall through the shared hot tier, in a process that may never have loaded the user.

The user's current Redis entry (:mod:`~personatree.tiering.shared`) is read in two
steps. First its small fields and embeddings: whether it may be served (its
content version is the store's and it was ranked under this configuration) and
whether any hot tier could answer the query (:mod:`~personatree.tiering.entry_bound`,
the bound in-process tiering applies before searching a tier). A query no hot tier
can answer goes to the store for tier 3 without decoding the entry's nodes or
indexing them; otherwise the rest of the entry is read, its hot sub-trees rebuilt
exactly as :class:`~personatree.tiering.hot.HotIndex` builds them from the whole
tree, and tier 1, then tiers 1+2, searched with the same sufficiency rules
(:func:`~personatree.tiering.search.search_hot`). Only when neither suffices is the
tree loaded for tier 3 (:func:`~personatree.tiering.search.search_deep`).

What the store path owes Redis (the promotions of a tier-3 answer, the entry of a
user found missing or stale) is written after the answer is returned
(:mod:`~personatree.tiering.write_behind`). Redis unreachable: in-process tiering
over the store's tree, with a :class:`~personatree.tiering.shared.HotTierWarning`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from ..config import TieringConfig
from ..engine.core import Engine, EngineLike, TreeState, engine_of
from ..errors import StoreError, UnknownUserError
from ..collector import paused_gc
from ..graph import MemoryGraph
from ..retrieval.access import access_log
from ..retrieval.prelude import RecallQuery, held_state, prepare_recall
from ..retrieval.state import RetrievalState
from ..types import Level, Node
from .entries import entry_graph, entry_index, entry_tiers, fingerprint, tier1_ids
from .entry_bound import bound_could
from .entry_memo import Decoded
from .hot import HotIndex
from .search import TieredResult, could_fill, search_deep, search_hot, search_request, tiered_recall
from .shared import SharedTier, _publish, _rank, _warn, attached_tier, versions
from .tiers import TierState

if TYPE_CHECKING:  # pragma: no cover
    from ..hot_redis import EntryRows, HotEntry

__all__ = ["shared_recall"]

@dataclass(slots=True)
class _Found:
    # What Redis held for the user: ``decoded`` when it may be served and is worth
    # searching; ``current`` when it may be served (without its nodes when no hot
    # tier could answer: tier 3 straight away); ``held`` whatever was there.
    decoded: Decoded | None = None
    current: "HotEntry | None" = None
    held: "HotEntry | None" = None
    could: tuple[bool, bool] | None = None


def shared_recall(
    tree: EngineLike,
    user_id: str,
    query: str,
    *,
    budget: int | None = None,
    model: str | None = None,
    levels: Sequence[Level] | None = None,
    from_user: bool = False,
) -> TieredResult:
    """Tiered recall through the shared hot tier: same arguments and answer rules as
    :func:`~personatree.tiering.search.tiered_recall`.

    Tiers 1 and 2 are searched from the user's current Redis entry without reading
    the tree; the tree is loaded from the store only for tier 3, or to rebuild a
    missing or stale entry. Redis unreachable: in-process tiered recall, with a
    :class:`HotTierWarning`.

    Raises
    ------
    UnknownUserError, QueryError, InputError, ConfigError
        ConfigError if no hot tier is attached.
    """
    from ..hot_redis import HotTierUnavailable  # noqa: PLC0415

    engine = engine_of(tree)
    tier = attached_tier(engine)
    tcfg = tier.tiering(engine)
    req = prepare_recall(engine, query, budget=budget, model=model, levels=levels, from_user=from_user)
    tier.writer.wait(user_id, engine.lock)  # this process's last answer for the user is in Redis first
    version, content = versions(engine, user_id)
    if version == 0:
        raise UnknownUserError(f"no data stored for user {user_id!r}")
    try:
        found = _current(engine, tier, user_id, content, tcfg, req)
    except HotTierUnavailable as exc:
        _warn(user_id, exc)
        tier.fallbacks += 1
        return tiered_recall(engine, user_id, query, budget=budget, model=model, levels=levels, config=tcfg)
    d = found.decoded
    out, indexes = _from_entry(engine, d, req, tcfg, found.could) if d is not None else (None, None)
    if out is None:
        if d is None and found.current is not None:
            tier.direct += 1
        out = _from_store(engine, tier, user_id, req, tcfg, found.held, found.current, indexes,
                          d.rows if d is not None else None)
    tier.answered[out.tier] += 1
    access_log(engine, req.cfg.access_flush_every).record(user_id, out.recall.node_ids, req.now)
    return out


def _claim_rule(req: RecallQuery, tcfg: TieringConfig) -> bool:
    # An abstract query may be answered by a claim of its level: no bound applies.
    return tcfg.claims_suffice and req.route.level is not Level.LEAF


def _current(engine: Engine, tier: SharedTier, user_id: str, content: int, tcfg: TieringConfig,
             req: RecallQuery) -> _Found:
    # Raises HotTierUnavailable. When this process decoded the user's entry before,
    # only its id is read first: the same id is the same entry, decoded and indexed here.
    from ..hot_redis import (DEEP_FIELDS, HOT_FIELDS, PROBE_FIELDS, REST_FIELDS, EntryRows, HotEntry,  # noqa: PLC0415
                             decode_entry, decode_gate, decode_heads)

    fp = fingerprint(engine, tcfg)
    if tier.memo.eid_of(user_id) is not None:
        probe = tier.client.get(user_id, ("eid",))
        if not probe:
            return _Found()
        d = tier.memo.get(user_id, probe.get("eid"))
        if d is not None:
            ok = d.entry.content_version == content and d.entry.gate.get("fingerprint") == fp
            if not ok:
                return _Found(held=d.entry)
            could = None
            if not _claim_rule(req, tcfg) and d.rows is not None:
                could = bound_could(d.entry.bound, d.rows.emb, req.qvec, tcfg.sufficient_cosine,
                                    tcfg.sufficient_fill * req.budget, req.levels, req.counter)
            return _Found(d, d.entry, d.entry, could)
    fields = tier.client.get(user_id, PROBE_FIELDS)
    if not fields:
        return _Found()
    try:
        version = int(fields["v"])
        cv = int(fields.get("cv", version))
        gate, anchor = decode_gate(fields.get("gate"), fields.get("anchor"))
    except (KeyError, ValueError, TypeError):
        return _Found()
    light = HotEntry(user_id, version, gate=gate, anchor=anchor, content_version=cv, eid=fields.get("eid"))
    if cv != content or gate.get("fingerprint") != fp:
        return _Found(held=light)
    could = None
    if not _claim_rule(req, tcfg):
        could = bound_could(decode_heads(fields.get("bound")), fields.get("emb", b""), req.qvec,
                            tcfg.sufficient_cosine, tcfg.sufficient_fill * req.budget, req.levels, req.counter)
    if could is not None and not could[0]:
        deep = tier.client.get(user_id, DEEP_FIELDS)
        if deep and deep.get("eid") == light.eid and int(deep["v"]) == version:
            try:
                light.tiers = dict(decode_heads(deep.get("tiers")))
                light.heads = decode_heads(deep.get("heads"))
                entry_tiers(light)  # readable, or treated as missing
            except (KeyError, ValueError, TypeError, IndexError):
                return _Found()
            return _Found(None, light, light, could)
        fields = tier.client.get(user_id, HOT_FIELDS)  # replaced in between: read it whole
    else:
        rest = tier.client.get(user_id, REST_FIELDS)
        if rest and rest.get("eid") == light.eid:
            fields = fields | rest
        else:
            fields = tier.client.get(user_id, HOT_FIELDS)
        could = could if rest and rest.get("eid") == light.eid else None
    if not fields:
        return _Found()
    try:
        entry = decode_entry(user_id, fields, nodes=False)
        rows = EntryRows(user_id, fields["rows"], fields["emb"], fields["edges"])
    except (StoreError, KeyError):
        return _Found()
    d = Decoded(entry.eid or b"", entry, rows)
    if entry.content_version != content or entry.gate.get("fingerprint") != fp:
        return _Found(held=entry)
    if entry.eid is not None:
        tier.memo.put(user_id, d)
    return _Found(d, entry, entry, could)


def _could_suffice(g: MemoryGraph, ids: set[str] | None, req: RecallQuery, tcfg: TieringConfig) -> bool:
    # could_suffice's bound over the entry's graph (restricted to ``ids``), for an
    # entry without a usable ``bound``.
    if req.qvec is None:
        return False
    close: list[Node] = []
    for lv in Level:
        if req.levels and lv not in req.levels:
            continue
        ix = g.index(lv)
        if ix.ids:
            rows = np.flatnonzero(ix.matrix @ req.qvec >= tcfg.sufficient_cosine)
            close.extend(g.node(ix.ids[int(r)]) for r in rows if ids is None or ix.ids[int(r)] in ids)
    return could_fill(close, tcfg.sufficient_fill * req.budget, req.counter)


def _full(engine: Engine, user_id: str) -> Callable[[], RetrievalState]:
    def full() -> RetrievalState:
        with engine.lock:
            return held_state(engine, user_id)

    return full


def _whole(d: Decoded) -> MemoryGraph:
    # The entry's whole graph (its nodes decoded now, if they were not yet).
    if d.graph is None:
        if d.rows is not None:
            d.entry.nodes, d.entry.edges = d.rows.nodes(), d.rows.edges()
        d.graph = entry_graph(d.entry)
    return d.graph


def _from_entry(engine: Engine, d: Decoded, req: RecallQuery, tcfg: TieringConfig,
                could: tuple[bool, bool] | None
                ) -> tuple[TieredResult | None, tuple[HotIndex | None, HotIndex] | None]:
    # Tiers 1 and 2 from the entry (None when the tree must be read: tier 3), and the
    # hot indexes if tiers 1+2's was built (kept with the decoded entry for the next
    # request). Each index is built when its tier is searched: a tier-1 answer
    # decodes and indexes tier 1's sub-tree only.
    entry = d.entry
    if not _claim_rule(req, tcfg) and could is None:  # search_hot's bounds, from the nodes
        g = _whole(d)
        c12 = _could_suffice(g, None, req, tcfg)
        held1 = {y for x in tier1_ids(entry) for y in entry.tiers["closures"][x]}
        could = (c12, c12 and _could_suffice(g, held1, req, tcfg))
    if could is not None and not could[0]:
        return None, None

    def t1() -> RetrievalState:
        if d.t1 is None:
            d.t1 = entry_index(entry, tcfg, "t1", graph=d.graph, rows=d.rows)
        assert d.t1.state is not None
        return d.t1.state

    def t12() -> RetrievalState:
        if d.t12 is None:
            d.t12 = entry_index(entry, tcfg, "t12", graph=_whole(d))
        assert d.t12.state is not None
        return d.t12.state

    got = search_hot(t1, t12, _full(engine, entry.user_id), req, tcfg, could)
    return (got if isinstance(got, TieredResult) else None), ((d.t1, d.t12) if d.t12 is not None else None)


def _from_store(engine: Engine, tier: SharedTier, user_id: str, req: RecallQuery, tcfg: TieringConfig,
                held: "HotEntry | None", entry: "HotEntry | None",
                indexes: tuple[HotIndex | None, HotIndex] | None = None,
                rows: "EntryRows | None" = None) -> TieredResult:
    # Tier 3 over the store's tree, or a whole tiered search when the entry was not
    # current (then the entry is rebuilt); what Redis is owed is written afterwards.
    with engine.lock:
        st = engine.existing_state(user_id)
        full = _full(engine, user_id)
        now_v, content = versions(engine, user_id)
        # The content version of the tree just loaded (None: a commit came in since).
        loaded = content if now_v == st.version else None
        if entry is not None and entry.content_version == loaded:
            if not entry.heads:
                entry.heads = _cold_heads(tier, user_id, entry.version)
            tstate = entry_tiers(entry)
            out = search_deep(tstate, st.graph, full, req, tcfg)
            if out.promoted:
                tier.memo.drop(user_id)  # the write updates its hot indexes in place
                _write_later(engine, tier, st, tstate, loaded, prior=entry, indexes=indexes, rows=rows)
            return out
        tier.rebuilt += 1
        tier.memo.drop(user_id)
        gate = held.gate if held is not None else {}
        anchor = held.anchor if held is not None else None
        tstate = _rank(engine, st.graph, st.version, req.now, tcfg, gate, anchor)
        out = search_request(tstate, st.graph, full, req, tcfg)
        if loaded is not None:  # else the newer commit's writer, or the next reader, writes it
            _write_later(engine, tier, st, tstate, loaded,
                         replace_newer=held is not None and held.version > st.version)
        return out


def _cold_heads(tier: SharedTier, user_id: str, version: int) -> dict[str, object]:
    # The tier-3 headers of the entry at ``version`` (empty if it changed meanwhile or
    # Redis went away: promotions then score their hits afresh).
    from ..hot_redis import HotTierUnavailable, decode_heads  # noqa: PLC0415

    try:
        got = tier.client.get(user_id, ("heads",))
    except HotTierUnavailable:
        return {}
    if not got or int(got["v"]) != version:
        return {}
    return decode_heads(got.get("heads"))


def _write_later(engine: Engine, tier: SharedTier, st: TreeState, tstate: TierState, content: int, *,
                 replace_newer: bool = False, prior: "HotEntry | None" = None,
                 indexes: tuple[HotIndex | None, HotIndex] | None = None,
                 rows: "EntryRows | None" = None) -> None:
    # Publish ``tstate`` over the tree ``st`` held at this answer, after the answer.
    # Of an entry read without its rows (tier 3 decided from its bound), the rows and
    # the text analysis are read, if Redis still holds that entry: the new entry
    # takes what the promotion leaves as it was from them (see _publish).
    user_id = st.graph.user_id
    prior_eid = None if prior is None else prior.eid

    def job() -> None:
        # Thousands of small objects that all survive (the entry's). The pause is
        # process-wide, and back-to-back writes under load would keep the collector off
        # for good, so each write ends with a collection of the young generation.
        with paused_gc(collect_after=True):
            write()

    def write() -> None:
        from ..hot_redis import EntryRows, HotTierUnavailable, decode_heads  # noqa: PLC0415

        base, held = prior, rows
        if base is not None and held is None and indexes is None:
            try:
                fields = tier.client.get(user_id, ("eid", "rows", "emb", "edges", "lex"))
                if fields and fields.get("eid") == prior_eid:
                    held = EntryRows(user_id, fields["rows"], fields["emb"], fields["edges"])
                    base = replace(base, lex=decode_heads(fields.get("lex")))
                else:
                    base = None
            except (HotTierUnavailable, StoreError, KeyError):
                base, held = None, None
        with engine.lock:
            if versions(engine, user_id) != (st.version, content):
                return  # moved on: that commit's writer, or the next reader, writes it
            _publish(engine, tier, st.graph, tstate, st.version, content, replace_newer=replace_newer,
                     prior=base, indexes=indexes, rows=held)

    tier.writer.submit(user_id, job)
