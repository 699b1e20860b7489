"""``ConsolidationPlan``: what one consolidation pass will do, as a frozen value.

A plan has two layers:

* the **report** for people — clusters with their member leaves, new mids with their
  summaries, promotions, merges, decays, deletions, leaf-cap trims and prunes;
* the **diff** that :func:`~personatree.consolidate.apply.apply_plan` carries out —
  node states to write, node ids to delete, edges to write and delete — so applying
  a plan needs neither the judge nor the embedder, and does exactly what was shown.

Plans are JSON-serializable (:meth:`ConsolidationPlan.to_json` /
:meth:`ConsolidationPlan.from_json`) and readable (:meth:`ConsolidationPlan.describe`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from typing import Any, Mapping

from ..types import Edge, EdgeKind, utc
from .state import NodeState

__all__ = [
    "ClusterReport", "NewMid", "Promotion", "Merge", "Decay", "Deletion", "Trim", "Prune",
    "PlanDiff", "ConsolidationPlan", "diff_to_dict", "diff_from_dict",
]


@dataclass(frozen=True, slots=True)
class ClusterReport:
    """One HDBSCAN cluster of orphans and what became of it (``mid_id`` None: rejected)."""

    index: int
    round: int
    leaf_ids: tuple[str, ...]
    cohesion: float
    mid_id: str | None
    note: str


@dataclass(frozen=True, slots=True)
class NewMid:
    """A mid formed from a cluster."""

    id: str
    schema_type: str
    content: str
    member_ids: tuple[str, ...]
    logit: float
    confidence: float
    cluster: int


@dataclass(frozen=True, slots=True)
class Promotion:
    """Mids promoted into a root (``new``: a root created now, else an existing one)."""

    root_id: str
    schema_type: str
    content: str
    mid_ids: tuple[str, ...]
    new: bool
    confidence: float


@dataclass(frozen=True, slots=True)
class Merge:
    """A mid absorbed into an older one of the same type: a near-duplicate, or the same
    claim formed twice."""

    keeper_id: str
    absorbed_id: str
    similarity: float
    moved: int


@dataclass(frozen=True, slots=True)
class Decay:
    """A node whose confidence at ``now`` is below its stored one (information only:
    decay is lazy, so nothing is written for it)."""

    node_id: str
    level: str
    stored: float
    now: float


@dataclass(frozen=True, slots=True)
class Deletion:
    """An orphan leaf deleted for age (its observation stays in the log)."""

    node_id: str
    age_days: float


@dataclass(frozen=True, slots=True)
class Trim:
    """Supporting leaves removed from a mid above the leaf cap (its counts survive)."""

    mid_id: str
    removed_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Prune:
    """A root below θ_prune removed; its mids survive as loose patterns."""

    root_id: str
    confidence: float
    freed_mid_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PlanDiff:
    """The writes of a plan, in the order they are applied."""

    delete_edges: tuple[tuple[str, str], ...] = ()
    delete_nodes: tuple[str, ...] = ()
    upsert_nodes: tuple[NodeState, ...] = ()
    upsert_edges: tuple[Edge, ...] = ()

    def is_empty(self) -> bool:
        """True when the plan writes nothing."""
        return not (self.delete_edges or self.delete_nodes or self.upsert_nodes or self.upsert_edges)


_SECTIONS: dict[str, type] = {
    "clusters": ClusterReport, "new_mids": NewMid, "promotions": Promotion, "merges": Merge,
    "decays": Decay, "deletions": Deletion, "trims": Trim, "prunes": Prune,
}


@dataclass(frozen=True, slots=True)
class ConsolidationPlan:
    """What one consolidation pass of one user will change, planned at ``now``.

    Attributes
    ----------
    user_id : str
    now : datetime
        The logical time of the pass (decay and ages are read at it).
    base_version : int
        The user's store version the plan was made on. Applied at another version, the
        plan is rebased (see :mod:`~personatree.consolidate.rebase`) when it carries
        ``base_states``, and refused otherwise.
    digest : str
        SHA-256 of the graph state the plan was made on.
    seed : int
        Seed of the pass.
    method : str
        Clustering path: ``"exact"``, ``"knn"`` or ``"none"``.
    clusters, new_mids, promotions, merges, decays, deletions, trims, prunes : tuple
        The report sections.
    diff : PlanDiff
        The writes.
    base_states : tuple of (node id, fingerprint)
        The state of every node in the diff's footprint when the plan was made (see
        :func:`~personatree.consolidate.rebase.node_fingerprint`); empty for a plan that
        can only be applied on the very tree it was made on.
    base_written : tuple of (NodeState, tuple of str)
        For each existing mid the diff writes: its state and the sources of the edges
        into it when the plan was made (new evidence on it can then be replayed).
    rebased_from : int or None
        For a plan rebased onto a newer tree: the version it was first made on.
    dropped_parts : int
        How many independent parts rebasing left out because a concurrent write
        touched them (the next pass plans them again).
    """

    user_id: str
    now: datetime
    base_version: int
    digest: str
    seed: int
    method: str
    clusters: tuple[ClusterReport, ...] = ()
    new_mids: tuple[NewMid, ...] = ()
    promotions: tuple[Promotion, ...] = ()
    merges: tuple[Merge, ...] = ()
    decays: tuple[Decay, ...] = ()
    deletions: tuple[Deletion, ...] = ()
    trims: tuple[Trim, ...] = ()
    prunes: tuple[Prune, ...] = ()
    diff: PlanDiff = field(default_factory=PlanDiff)
    base_states: tuple[tuple[str, str], ...] = ()
    base_written: tuple[tuple[NodeState, tuple[str, ...]], ...] = ()
    rebased_from: int | None = None
    dropped_parts: int = 0

    def is_empty(self) -> bool:
        """True when applying the plan would change nothing (decays are information only)."""
        return self.diff.is_empty()

    def counts(self) -> dict[str, int]:
        """How many entries each section holds, plus the diff sizes."""
        out = {name: len(getattr(self, name)) for name in _SECTIONS}
        out["trimmed_leaves"] = sum(len(t.removed_ids) for t in self.trims)
        out["nodes_written"] = len(self.diff.upsert_nodes)
        out["nodes_deleted"] = len(self.diff.delete_nodes)
        return out

    # -- JSON -------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (datetimes as ISO strings, embeddings as base64)."""
        out: dict[str, Any] = {
            "format": "personatree.consolidation-plan/1",
            "user_id": self.user_id, "now": self.now.isoformat(), "base_version": self.base_version,
            "digest": self.digest, "seed": self.seed, "method": self.method,
        }
        for name in _SECTIONS:
            out[name] = [asdict(x) for x in getattr(self, name)]
        out["diff"] = diff_to_dict(self.diff)
        out["base_states"] = [list(x) for x in self.base_states]
        out["base_written"] = [[st.to_dict(), list(src)] for st, src in self.base_written]
        out["rebased_from"] = self.rebased_from
        out["dropped_parts"] = self.dropped_parts
        return out

    def to_json(self, *, indent: int | None = None) -> str:
        """The plan as JSON text."""
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ConsolidationPlan":
        """Inverse of :meth:`to_dict`."""
        sections: dict[str, Any] = {}
        for name, kind in _SECTIONS.items():
            names = {f.name: f.type for f in fields(kind)}
            sections[name] = tuple(
                kind(**{k: tuple(v) if isinstance(v, list) else v for k, v in row.items() if k in names})
                for row in data.get(name, [])
            )
        rebased = data.get("rebased_from")
        return cls(
            user_id=str(data["user_id"]), now=utc(datetime.fromisoformat(str(data["now"]))),
            base_version=int(data["base_version"]), digest=str(data["digest"]),
            seed=int(data["seed"]), method=str(data["method"]), diff=diff_from_dict(data.get("diff", {})),
            base_states=tuple((str(a), str(b)) for a, b in data.get("base_states", [])),
            base_written=tuple((NodeState.from_dict(st), tuple(str(x) for x in src))
                               for st, src in data.get("base_written", [])),
            rebased_from=None if rebased is None else int(rebased),
            dropped_parts=int(data.get("dropped_parts", 0)), **sections,
        )

    @classmethod
    def from_json(cls, text: str) -> "ConsolidationPlan":
        """Inverse of :meth:`to_json`."""
        return cls.from_dict(json.loads(text))

    # -- people -----------------------------------------------------------------------

    def describe(self, *, max_items: int = 20) -> str:
        """A readable multi-line account of the plan."""
        c = self.counts()
        lines = [
            f"consolidation plan for {self.user_id} at {self.now:%Y-%m-%d %H:%M} UTC "
            f"(version {self.base_version}, {self.method} clustering)",
            "  " + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in c.items() if v) if any(c.values())
            else "  nothing to do",
        ]
        if self.rebased_from is not None:
            lines.append(f"  rebased from version {self.rebased_from} onto {self.base_version} "
                         f"({self.dropped_parts} parts touched by concurrent writes left for the next pass)")

        def section(title: str, rows: list[str]) -> None:
            if not rows:
                return
            lines.append(f"{title}:")
            lines.extend(f"  {r}" for r in rows[:max_items])
            if len(rows) > max_items:
                lines.append(f"  ... and {len(rows) - max_items} more")

        section("new patterns (mids)", [
            f"+ [{m.schema_type} {m.confidence:.2f}] {m.content}  <- {len(m.member_ids)} leaves (cluster {m.cluster})"
            for m in self.new_mids])
        section("rejected clusters", [
            f"- cluster {k.index} (round {k.round}, {len(k.leaf_ids)} leaves, cohesion {k.cohesion:.2f}): {k.note}"
            for k in self.clusters if k.mid_id is None])
        section("promotions (roots)", [
            f"{'+' if p.new else '>'} [{p.schema_type} {p.confidence:.2f}] {p.content}  <- {len(p.mid_ids)} mids"
            for p in self.promotions])
        section("merges", [f"{m.absorbed_id} -> {m.keeper_id} (cos {m.similarity:.3f}, {m.moved} children)"
                           for m in self.merges])
        section("pruned roots", [f"{p.root_id} (confidence {p.confidence:.2f}; {len(p.freed_mid_ids)} mids kept)"
                                 for p in self.prunes])
        section("deleted old orphans", [f"{d.node_id} ({d.age_days:.0f} days old)" for d in self.deletions])
        section("leaf cap", [f"{t.mid_id}: {len(t.removed_ids)} oldest leaves removed" for t in self.trims])
        section("decay (read lazily, not written)", [
            f"{d.node_id} [{d.level}] {d.stored:.2f} -> {d.now:.2f}" for d in self.decays])
        return "\n".join(lines)


def diff_to_dict(diff: PlanDiff) -> dict[str, Any]:
    """A :class:`PlanDiff` as JSON-ready data (embeddings as base64)."""
    return {
        "delete_edges": [list(e) for e in diff.delete_edges],
        "delete_nodes": list(diff.delete_nodes),
        "upsert_nodes": [s.to_dict() for s in diff.upsert_nodes],
        "upsert_edges": [_edge_dict(e) for e in diff.upsert_edges],
    }


def diff_from_dict(d: Mapping[str, Any]) -> PlanDiff:
    """Inverse of :func:`diff_to_dict`."""
    return PlanDiff(
        delete_edges=tuple((str(a), str(b)) for a, b in d.get("delete_edges", [])),
        delete_nodes=tuple(str(x) for x in d.get("delete_nodes", [])),
        upsert_nodes=tuple(NodeState.from_dict(x) for x in d.get("upsert_nodes", [])),
        upsert_edges=tuple(_edge_from(x) for x in d.get("upsert_edges", [])),
    )


def _edge_dict(e: Edge) -> dict[str, Any]:
    return {"src": e.src, "dst": e.dst, "kind": e.kind.value, "psi": e.psi, "weight": e.weight,
            "reason": e.reason, "at": e.at.isoformat()}


def _edge_from(d: Mapping[str, Any]) -> Edge:
    return Edge(str(d["src"]), str(d["dst"]), EdgeKind(d["kind"]), float(d["psi"]), float(d["weight"]),
                str(d["reason"]), utc(datetime.fromisoformat(str(d["at"]))))
