"""Rebasing a consolidation plan onto a tree that changed while it was being planned.

Planning a big tree takes seconds; a user who is chatting writes several times in that
while, so a plan that must find the very tree it was made on is never applied. Most of
a plan does not care about those writes, though: a writer adds new leaves, their
support and conflict edges, and evidence on the few mids they touched, while a plan
clusters old orphans, writes new mids and roots, and prunes, merges and trims. A
plan is therefore cut into independent **parts** (nodes joined by the plan's edges or
by one of its decisions); a part that a concurrent write invalidated is left for the
next pass, and the rest is applied on the current tree in one transaction.

A part is invalidated when one of its nodes appeared or disappeared, when one of its
nodes' outgoing edges changed (its parent, a leaf's conflict edges), or when a node the
plan writes or deletes changed its state or gained or lost edges into it. A node the
plan only links to — a mid promoted into a root — may keep gaining evidence from new
leaves meanwhile: the promotion read slightly older counts, just as the writer decided
on a slightly older tree. This is exactly as safe as refusing the whole plan:

* nothing the writer stored is overwritten or deleted: a node whose state the writer
  moved is written or deleted only by a part that is dropped;
* a node never gets two parents: the writer adds outgoing edges only from its new
  leaves, the plan only from nodes whose outgoing edges are as it saw them;
* no cycle forms: the writer's new leaves have no edges into them, so no cycle runs
  through the writer's edges, and the plan's part alone was acyclic;
* a leaf is never both attached by the writer and re-clustered by the plan: the writer
  attaches only leaves the plan never saw, and the plan clusters only leaves whose
  outgoing edges are unchanged.

The functions here are pure: they read graphs and plans and return new values.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import Iterable

from ..config import ConfidenceConfig
from ..graph import MemoryGraph
from ..insertion import add_evidence
from ..schema import SchemaRegistry
from ..types import Edge, Level, Node
from .plan import ConsolidationPlan, PlanDiff
from .state import NodeState

__all__ = ["footprint", "node_fingerprint", "base_states", "base_written", "plan_parts", "rebase_plan"]

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


def _h(items: Iterable[object]) -> str:
    h = hashlib.sha256()
    for x in items:
        h.update(json.dumps(x, default=str).encode())
    return h.hexdigest()[:16]


def _edge_row(e: Edge) -> list[object]:
    return [e.src, e.dst, e.kind.value, repr(float(e.weight)), e.at.isoformat()]


def _state_hash(n: Node) -> str:
    return _h([[
        n.level.value, n.schema_type, n.content, n.t_first.isoformat(), n.t_last.isoformat(),
        repr(float(n.logit)), n.n_support, n.n_conflict, n.embedding is not None,
        json.dumps(n.attributes, sort_keys=True, ensure_ascii=False, default=str),
    ]])


def node_fingerprint(graph: MemoryGraph, node_id: str) -> str:
    """Short hashes of one node's state, of the edges into it and of the edges out of it,
    as ``"state.in.out"``; ``"-"`` for a node that is not in the graph.

    The state fields are those :func:`~personatree.consolidate.state.graph_digest` reads
    (recall counters are left out: consolidation neither reads nor writes them). The
    three are kept apart because a plan depends on them differently (see
    :func:`rebase_plan`).
    """
    if node_id not in graph:
        return _ABSENT
    state = _state_hash(graph.node(node_id))
    g = graph.nx
    into = _h(sorted(_edge_row(e) for _, _, e in g.in_edges(node_id, data="edge")))
    out = _h(sorted(_edge_row(e) for _, _, e in g.out_edges(node_id, data="edge")))
    return f"{state}.{into}.{out}"


def _conflicts(before: str, now: str, written: bool) -> bool:
    """Whether a node's change since planning invalidates the plan's part holding it.

    Any change to whether the node exists, or to its outgoing edges (its parent; a
    leaf's conflict edges), invalidates the part: the plan links, unlinks or clusters the
    node as the child it was. Changes to its own state or to the edges into it (new
    evidence from new leaves, the usual write of a chatting user) matter only when the
    plan writes or deletes the node: the plan would overwrite that evidence, or delete
    a node that gained children. A node the plan only links to (a mid promoted into a
    root) may keep gaining evidence meanwhile.
    """
    if before == now:
        return False
    if _ABSENT in (before, now):
        return True
    b, n = before.split("."), now.split(".")
    return b[2] != n[2] or (written and (b[0] != n[0] or b[1] != n[1]))


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


def base_written(graph: MemoryGraph, plan: ConsolidationPlan) -> tuple[tuple[NodeState, tuple[str, ...]], ...]:
    """For each existing mid the plan writes: its state and the sources of its incoming
    edges on the graph the plan was made on, so that new evidence a writer adds to it
    meanwhile can be replayed on top of the plan's write (see :func:`rebase_plan`)."""
    out = []
    for s in plan.diff.upsert_nodes:
        if s.id in graph and s.level == Level.MID.value:
            sources = tuple(src for src, _ in graph.nx.in_edges(s.id))
            out.append((NodeState.of(graph.node(s.id)), sources))
    return tuple(out)


def _replayed(
    plan_state: NodeState, old: tuple[NodeState, tuple[str, ...]], graph: MemoryGraph, fp_before: str,
    registry: SchemaRegistry, confidence: ConfidenceConfig,
) -> NodeState | None:
    """The plan's write of a mid with the evidence a concurrent writer added to it since
    replayed on top, or None when the mid's change is not exactly that.

    The writer's change is verified, not assumed: replaying the new edges' evidence on
    the mid as it was must give the mid as it is now, and its old incoming edges must be
    untouched. Then the result is the tree the writer would have made had it committed
    its same decisions just after the plan: no evidence of either side is lost.
    """
    before_state, sources = old
    nid = plan_state.id
    known = set(sources)
    inbound = [e for _, _, e in graph.nx.in_edges(nid, data="edge")]  # store order = the writer's order
    if not known <= {e.src for e in inbound}:
        return None
    if _h(sorted(_edge_row(e) for e in inbound if e.src in known)) != fp_before.split(".")[1]:
        return None
    fresh = [e for e in inbound if e.src not in known]
    check = before_state.to_node(graph.user_id)
    for e in fresh:
        add_evidence(check, e.psi, e.at, registry, confidence)
    if _state_hash(check) != _state_hash(graph.node(nid)):
        return None
    node = plan_state.to_node(graph.user_id)
    for e in fresh:
        add_evidence(node, e.psi, e.at, registry, confidence)
    return NodeState.of(node)


def rebase_plan(
    plan: ConsolidationPlan, graph: MemoryGraph, version: int,
    registry: SchemaRegistry | None = None, confidence: ConfidenceConfig | None = None,
) -> ConsolidationPlan:
    """The part of ``plan`` that still holds on ``graph`` (the user's tree at ``version``).

    Parameters
    ----------
    plan : ConsolidationPlan
        Made on an earlier state, with its :attr:`~ConsolidationPlan.base_states`.
    graph : MemoryGraph
        The current tree (only read).
    version : int
        The store version of ``graph``; becomes the rebased plan's ``base_version``.
    registry, confidence : optional
        Needed to replay a writer's new evidence on a mid the plan writes (see
        :func:`_replayed`); without them such a mid's part is dropped.

    Returns
    -------
    ConsolidationPlan
        The plan restricted to the parts still valid, with its report sections filtered
        alike, ``rebased_from`` set to the original base version and ``dropped_parts``
        counting the parts left out. Its diff may be empty.
    """
    before = dict(plan.base_states)
    d = plan.diff
    written = set(d.delete_nodes) | {s.id for s in d.upsert_nodes}
    olds = {st.id: (st, src) for st, src in plan.base_written}
    planned = {s.id: s for s in d.upsert_nodes}
    rewrites: dict[str, NodeState] = {}
    changed: set[str] = set()
    for nid, fp in before.items():
        now = node_fingerprint(graph, nid)
        if not _conflicts(fp, now, nid in written):
            continue
        if (nid in planned and nid in olds and registry is not None and confidence is not None
                and nid not in d.delete_nodes and not _conflicts(fp, now, False)):
            again = _replayed(planned[nid], olds[nid], graph, fp, registry, confidence)
            if again is not None:
                rewrites[nid] = again
                continue
        changed.add(nid)
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
    diff = PlanDiff(
        delete_edges=tuple(k for k in d.delete_edges if k[0] in kept),
        delete_nodes=tuple(n for n in d.delete_nodes if n in kept),
        upsert_nodes=tuple(rewrites.get(s.id, s) for s in d.upsert_nodes if s.id in kept),
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
        base_written=tuple(x for x in plan.base_written if x[0].id in kept),
        rebased_from=plan.base_version if plan.rebased_from is None else plan.rebased_from,
        dropped_parts=plan.dropped_parts + dropped,
        diff=diff,
    )
