"""Rebasing a consolidation plan onto a tree that changed while it was being planned.

Planning a big tree takes seconds; a user who is chatting writes several times in that
while, so a plan that must find the very tree it was made on is never applied. Most of
a plan does not care about those writes, though: a writer adds new leaves, their
support and conflict edges, and evidence on the few mids they touched, while a plan
clusters old orphans, writes new mids and roots, and prunes, merges and trims. A
plan is therefore cut into independent **parts** (nodes joined by the plan's edges or
by one of its decisions); a part whose every node is exactly as it was when the plan
was made (same state, same incident edges) is applied on the current tree, and a part
that a concurrent write touched is left for the next pass.

Exactly as safe as refusing the whole plan:

* every node a kept part writes, deletes or links is in the state the plan saw, so the
  part does on the current tree precisely what it would have done on the old one;
* writes of the other side touch only nodes outside the kept parts, so the two sets of
  edges share no node and cannot combine into a node with two parents or a cycle;
* a leaf the writer attached (or any node it changed) makes its part dropped, so a leaf
  is never both attached by the writer and re-clustered by the plan.

The functions here are pure: they read graphs and plans and return new values.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import Iterable

from ..graph import MemoryGraph
from .plan import ConsolidationPlan, PlanDiff

__all__ = ["footprint", "node_fingerprint", "base_states", "plan_parts", "rebase_plan"]

_ABSENT = "-"


def footprint(plan: ConsolidationPlan) -> set[str]:
    """Every node id the plan writes, deletes, links or unlinks."""
    d = plan.diff
    ids = set(d.delete_nodes) | {s.id for s in d.upsert_nodes}
    for src, dst in d.delete_edges:
        ids.update((src, dst))
    for e in d.upsert_edges:
        ids.update((e.src, e.dst))
    return ids


def node_fingerprint(graph: MemoryGraph, node_id: str) -> str:
    """A short hash of one node's state and of every edge that touches it.

    The fields are those :func:`~personatree.consolidate.state.graph_digest` reads
    (recall counters are left out: consolidation neither reads nor writes them).
    ``"-"`` for a node that is not in the graph.
    """
    if node_id not in graph:
        return _ABSENT
    n = graph.node(node_id)
    h = hashlib.sha256(json.dumps([
        n.level.value, n.schema_type, n.content, n.t_first.isoformat(), n.t_last.isoformat(),
        repr(float(n.logit)), n.n_support, n.n_conflict, n.embedding is not None,
        json.dumps(n.attributes, sort_keys=True, ensure_ascii=False, default=str),
    ]).encode())
    g = graph.nx
    edges = [e for _, _, e in g.out_edges(node_id, data="edge")] + [e for _, _, e in g.in_edges(node_id, data="edge")]
    for e in sorted(edges, key=lambda e: (e.src, e.dst)):
        h.update(json.dumps([e.src, e.dst, e.kind.value, repr(float(e.weight)), e.at.isoformat()]).encode())
    return h.hexdigest()[:24]


def base_states(graph: MemoryGraph, plan: ConsolidationPlan) -> tuple[tuple[str, str], ...]:
    """Fingerprints, on the graph the plan was made on, of every node of its parts (the
    footprint and the nodes its decisions name; see :func:`plan_parts`), sorted by id."""
    ids = sorted(nid for part in plan_parts(plan) for nid in part)
    return tuple((nid, node_fingerprint(graph, nid)) for nid in ids)


class _Parts:
    """Union-find over node ids."""

    def __init__(self) -> None:
        self.up: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.up.setdefault(x, x)
        root = x
        while self.up[root] != root:
            root = self.up[root]
        while self.up[x] != root:  # path compression
            self.up[x], x = root, self.up[x]
        return root

    def join(self, ids: Iterable[str]) -> None:
        it = iter(ids)
        first = next(it, None)
        if first is None:
            return
        a = self.find(first)
        for y in it:
            b = self.find(y)
            if b != a:
                self.up[b] = a


def plan_parts(plan: ConsolidationPlan) -> list[frozenset[str]]:
    """The plan's footprint cut into parts that can be applied or left independently.

    Two nodes are in one part when an edge of the diff joins them or one decision of the
    plan names both (a cluster and its mid, a mid and the leaves trimmed from it, a merge's
    keeper and absorbed mid, a root and the mids promoted into it or freed by its prune).
    Sorted by their smallest id, for determinism.
    """
    uf = _Parts()
    for nid in footprint(plan):
        uf.find(nid)
    d = plan.diff
    for src, dst in d.delete_edges:
        uf.join((src, dst))
    for e in d.upsert_edges:
        uf.join((e.src, e.dst))
    for k in plan.clusters:
        if k.mid_id is not None:
            uf.join((k.mid_id, *k.leaf_ids))
    for m in plan.new_mids:
        uf.join((m.id, *m.member_ids))
    for p in plan.promotions:
        uf.join((p.root_id, *p.mid_ids))
    for mg in plan.merges:
        uf.join((mg.keeper_id, mg.absorbed_id))
    for t in plan.trims:
        uf.join((t.mid_id, *t.removed_ids))
    for pr in plan.prunes:
        uf.join((pr.root_id, *pr.freed_mid_ids))
    groups: dict[str, set[str]] = {}
    for nid in list(uf.up):
        groups.setdefault(uf.find(nid), set()).add(nid)
    return sorted((frozenset(g) for g in groups.values()), key=min)


def rebase_plan(plan: ConsolidationPlan, graph: MemoryGraph, version: int) -> ConsolidationPlan:
    """The part of ``plan`` that still holds on ``graph`` (the user's tree at ``version``).

    Parameters
    ----------
    plan : ConsolidationPlan
        Made on an earlier state, with its :attr:`~ConsolidationPlan.base_states`.
    graph : MemoryGraph
        The current tree (only read).
    version : int
        The store version of ``graph``; becomes the rebased plan's ``base_version``.

    Returns
    -------
    ConsolidationPlan
        The plan restricted to the parts whose nodes are unchanged, with its report
        sections filtered alike, ``rebased_from`` set to the original base version and
        ``dropped_parts`` counting the parts left out. Its diff may be empty.
    """
    before = dict(plan.base_states)
    changed = {nid for nid, fp in before.items() if node_fingerprint(graph, nid) != fp}
    parts = plan_parts(plan)
    # A footprint node without a recorded state cannot be vouched for: treat it as changed.
    changed |= {nid for part in parts for nid in part if nid not in before}
    kept: set[str] = set()
    dropped = 0
    for part in parts:
        if part & changed:
            dropped += 1
        else:
            kept |= part
    d = plan.diff
    diff = PlanDiff(
        delete_edges=tuple(k for k in d.delete_edges if k[0] in kept),
        delete_nodes=tuple(n for n in d.delete_nodes if n in kept),
        upsert_nodes=tuple(s for s in d.upsert_nodes if s.id in kept),
        upsert_edges=tuple(e for e in d.upsert_edges if e.src in kept),
    )
    return replace(
        plan,
        base_version=version,
        clusters=tuple(k for k in plan.clusters if k.mid_id is None or k.mid_id in kept),
        new_mids=tuple(m for m in plan.new_mids if m.id in kept),
        promotions=tuple(p for p in plan.promotions if p.root_id in kept),
        merges=tuple(m for m in plan.merges if m.keeper_id in kept),
        deletions=tuple(x for x in plan.deletions if x.node_id in kept),
        trims=tuple(t for t in plan.trims if t.mid_id in kept),
        prunes=tuple(p for p in plan.prunes if p.root_id in kept),
        base_states=tuple((nid, fp) for nid, fp in plan.base_states if nid in kept),
        rebased_from=plan.base_version if plan.rebased_from is None else plan.rebased_from,
        dropped_parts=plan.dropped_parts + dropped,
        diff=diff,
    )
