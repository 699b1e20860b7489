"""Applying a plan to a graph, and the glue to a :class:`~personatree.api.PersonaTree`.

:func:`apply_plan` is the only mutating step: it checks that the graph is the one the
plan was made on (same digest), writes the plan's diff, and returns the
:class:`~personatree.ports.ChangeSet` to commit, with a ``consolidate`` journal event
so that ``rebuild`` can replay the pass (see :func:`replay_consolidation`).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..config import ConsolidationConfig
from ..errors import StaleStateError
from ..graph import MemoryGraph
from ..ports import ChangeSet, JournalEvent
from ..schema import SchemaRegistry
from ..types import utc
from .bounds import archived_leaves
from .estimator import Consolidator
from .plan import ConsolidationPlan
from .state import graph_digest

if TYPE_CHECKING:  # pragma: no cover
    from ..api import PersonaTree

__all__ = ["apply_plan", "consolidate_user", "apply_user_plan", "replay_consolidation", "consolidator_for"]


def apply_plan(
    graph: MemoryGraph, plan: ConsolidationPlan, registry: SchemaRegistry, config: ConsolidationConfig,
) -> ChangeSet:
    """Carry out ``plan`` on ``graph`` and return the change set to commit.

    Parameters
    ----------
    graph : MemoryGraph
        Mutated in place.
    plan : ConsolidationPlan
        Made on this very graph state.
    registry : SchemaRegistry
        Checked: every type the plan writes must exist.
    config : ConsolidationConfig
        Recorded in the journal event, so a rebuild replays the same pass.

    Returns
    -------
    ChangeSet
        Empty when the plan is empty (no journal event either: nothing happened).

    Raises
    ------
    StaleStateError
        If the graph is not the one the plan was made on (user or digest differ).
    """
    if plan.user_id != graph.user_id:
        raise StaleStateError(f"plan is for user {plan.user_id!r}, not {graph.user_id!r}")
    if graph_digest(graph) != plan.digest:
        raise StaleStateError(f"the tree of {graph.user_id!r} changed since the plan was made; plan again")
    change = ChangeSet(user_id=graph.user_id)
    if plan.is_empty():
        return change
    d = plan.diff
    for s in d.upsert_nodes:
        registry[s.schema_type]  # raises SchemaError for an unknown type before anything changes
    # Leaves that leave the tree stay in the memory: they go to the archive.
    change.archive_nodes = archived_leaves(graph, d.delete_nodes)
    for src, dst in d.delete_edges:
        if graph.edge(src, dst) is not None:
            graph.remove_edge(src, dst)
    for nid in d.delete_nodes:
        if nid in graph:
            graph.remove_node(nid)
    for s in d.upsert_nodes:
        if s.id in graph:
            node = graph.node(s.id)
            s.write_into(node)
            vec = s.vector()
            if vec is not None:
                graph.set_embedding(s.id, vec)
        else:
            graph.add_node(s.to_node(graph.user_id))
    for e in d.upsert_edges:
        if graph.edge(e.src, e.dst) is not None:
            graph.remove_edge(e.src, e.dst)
        graph.add_edge(e)
    change.delete_edges = list(d.delete_edges)
    change.delete_nodes = list(d.delete_nodes)
    change.upsert_nodes = [graph.node(s.id) for s in d.upsert_nodes]
    change.upsert_edges = list(d.upsert_edges)
    change.events = [JournalEvent("consolidate", _payload(plan, config), plan.now)]
    return change


def _payload(plan: ConsolidationPlan, config: ConsolidationConfig) -> dict[str, Any]:
    return {
        "now": plan.now.isoformat(), "base_version": plan.base_version, "digest": plan.digest,
        "config": config.model_dump(), "counts": plan.counts(),
    }


def consolidator_for(tree: "PersonaTree", config: ConsolidationConfig | None = None) -> Consolidator:
    """A :class:`Consolidator` wired to a tree's registry, judge, embedder and confidence."""
    return Consolidator(
        config or tree.config.consolidation, tree.registry, tree.judge,
        embedder=tree.embedder, confidence=tree.config.confidence,
    )


class _PlanRefused(Exception):
    """Raised inside a transaction so that ``_transact`` does not retry it (it retries
    only on StaleStateError); turned into StaleStateError outside."""


def apply_user_plan(tree: "PersonaTree", plan: ConsolidationPlan) -> ChangeSet:
    """Apply a plan to a tree atomically, refusing it if the user changed since planning.

    Raises
    ------
    StaleStateError
        If the user's store version or tree differ from those the plan was made on
        (a concurrent ``observe``, ``forget`` or consolidation). Nothing is written.
    """
    uid = plan.user_id
    config = tree.config.consolidation

    def work(graph: MemoryGraph) -> tuple[ChangeSet, ChangeSet]:
        current = tree.store.version(uid)
        if current != plan.base_version:
            raise _PlanRefused(f"user {uid!r} is at version {current}, the plan was made at "
                               f"{plan.base_version}; plan again")
        try:
            change = apply_plan(graph, plan, tree.registry, config)
        except StaleStateError as exc:
            raise _PlanRefused(str(exc)) from None
        return change, change

    try:
        return tree._transact(uid, work)
    except _PlanRefused as exc:
        raise StaleStateError(str(exc)) from None


def consolidate_user(
    tree: "PersonaTree", user_id: str, *, dry_run: bool = False, now: datetime | None = None,
) -> ConsolidationPlan:
    """Plan one pass for ``user_id`` and, unless ``dry_run``, apply it atomically.

    Parameters
    ----------
    tree : PersonaTree
    user_id : str
    dry_run : bool
        Only plan.
    now : datetime, optional
        Logical time of the pass (default: the tree's clock).

    Returns
    -------
    ConsolidationPlan
        The plan (applied unless ``dry_run``).

    Raises
    ------
    UnknownUserError
        If nothing is stored for the user.
    StaleStateError
        If the user changed between planning and applying (the plan is refused, not
        silently redone; run again to plan on the new tree).
    """
    at = utc(now) if now is not None else tree.clock.now()
    with tree._lock:
        graph = tree._graph(user_id)
        base = tree._state(user_id).version
        plan = consolidator_for(tree).plan(graph, at, base_version=base)
    if not dry_run and not plan.is_empty():
        apply_user_plan(tree, plan)
    return plan


def replay_consolidation(tree: "PersonaTree", graph: MemoryGraph, event: JournalEvent) -> None:
    """Replayer of ``consolidate`` journal events: plan again at the recorded ``now``
    with the recorded configuration, and apply (deterministic for a given seed)."""
    payload = event.payload
    at = utc(datetime.fromisoformat(str(payload["now"])))
    raw = payload.get("config")
    if isinstance(raw, dict):  # fields added since the event was written take their defaults
        config = ConsolidationConfig(**{k: v for k, v in raw.items() if k in ConsolidationConfig.model_fields})
    else:
        config = tree.config.consolidation
    plan = consolidator_for(tree, config).plan(graph, at, base_version=0)
    apply_plan(graph, plan, tree.registry, config)
