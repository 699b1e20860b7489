"""Applying a plan to a graph, and the glue to an :class:`~personatree.engine.Engine`.

:func:`apply_plan` is the only mutating step: it checks that the graph is the one the
plan was made on (same digest), writes the plan's diff, and returns the
:class:`~personatree.ports.ChangeSet` to commit, with a ``consolidate`` journal event
so that ``rebuild`` can replay the pass (see :func:`replay_consolidation`).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any, Sequence

from ..config import ConsolidationConfig
from ..engine.core import Engine, EngineLike, engine_of
from ..errors import StaleStateError
from ..graph import MemoryGraph
from ..ports import ChangeSet, JournalEvent
from ..schema import SchemaRegistry
from ..types import EdgeKind, utc
from .bounds import archived_leaves
from .estimator import Consolidator
from .plan import ConsolidationPlan, PlanDiff, Trim, diff_from_dict, diff_to_dict
from .rebase import base_states, base_written, rebase_plan
from .state import graph_digest

__all__ = ["apply_plan", "consolidate_user", "apply_user_plan", "apply_rebased", "replay_consolidation", "consolidator_for"]


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
    _write_diff(graph, plan.diff, registry, change, trims=plan.trims)
    change.events = [JournalEvent("consolidate", _payload(plan, config), plan.now)]
    return change


def _write_diff(
    graph: MemoryGraph, d: PlanDiff, registry: SchemaRegistry, change: ChangeSet, *, lenient: bool = False,
    trims: Sequence[Trim] = (),
) -> None:
    """Write a plan's diff into ``graph`` and record the rows in ``change``.

    ``lenient`` (replaying a recorded diff on a rebuilt tree) skips edges whose ends are
    missing instead of failing, so a rebuild never dies on a tree that came out slightly
    different from the one the diff was applied to.
    """
    for s in d.upsert_nodes:
        registry[s.schema_type]  # raises SchemaError for an unknown type before anything changes
    # Leaves that leave the tree stay in the memory: they go to the archive.
    change.archive_nodes = archived_leaves(graph, d.delete_nodes, trims)
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
    edges = list(d.upsert_edges)
    if lenient:
        edges = [e for e in edges if e.src in graph and e.dst in graph
                 and (e.kind is not EdgeKind.SUPPORT or graph.parent(e.src) in (None, e.dst))]
    for e in edges:
        if graph.edge(e.src, e.dst) is not None:
            graph.remove_edge(e.src, e.dst)
        graph.add_edge(e)
    change.delete_edges = list(d.delete_edges)
    change.delete_nodes = list(d.delete_nodes)
    change.upsert_nodes = [graph.node(s.id) for s in d.upsert_nodes]
    change.upsert_edges = edges


def _payload(plan: ConsolidationPlan, config: ConsolidationConfig) -> dict[str, Any]:
    out: dict[str, Any] = {
        "now": plan.now.isoformat(), "base_version": plan.base_version, "digest": plan.digest,
        "config": config.model_dump(), "counts": plan.counts(),
    }
    if plan.rebased_from is not None:
        # Planning again at replay would see the concurrent writes this pass did not, and
        # plan differently: a rebased pass records exactly what it wrote instead.
        out["rebased_from"] = plan.rebased_from
        out["dropped_parts"] = plan.dropped_parts
        out["diff"] = diff_to_dict(plan.diff)
    return out


def consolidator_for(tree: EngineLike, config: ConsolidationConfig | None = None) -> Consolidator:
    """A :class:`Consolidator` wired to an engine's registry, judge, embedder and confidence."""
    engine = engine_of(tree)
    return Consolidator(
        config or engine.config.consolidation, engine.registry, engine.judge,
        embedder=engine.embedder, confidence=engine.config.confidence, insertion=engine.config.insertion,
    )


class _PlanRefused(Exception):
    """Raised inside a transaction so that ``Engine.transact`` does not retry it (it retries
    only on StaleStateError); turned into StaleStateError outside."""


# How often consolidate_user plans again when concurrent writes touched every part of a
# plan. Rebasing keeps whatever they did not touch, so this is rarely reached; the bound
# stops a pass from re-planning a big tree forever under a writer that touches it all.
_PLAN_TRIES = 3


def apply_rebased(tree: EngineLike, plan: ConsolidationPlan) -> tuple[ConsolidationPlan, ChangeSet]:
    """Apply ``plan`` to the user's current tree in one transaction: whole when the tree
    is the one it was made on, else rebased (see :mod:`~personatree.consolidate.rebase`).

    Returns
    -------
    tuple of (ConsolidationPlan, ChangeSet)
        The plan as applied (rebased or not) and the committed change set.

    Raises
    ------
    StaleStateError
        As :func:`apply_user_plan`.
    """
    engine = engine_of(tree)
    uid = plan.user_id
    config = engine.config.consolidation
    applied: list[ConsolidationPlan] = []

    def work(graph: MemoryGraph) -> tuple[ChangeSet, ChangeSet]:
        applied.clear()
        current = engine.store.version(uid)
        if current == plan.base_version:
            try:
                change = apply_plan(graph, plan, engine.registry, config)
            except StaleStateError as exc:
                raise _PlanRefused(str(exc)) from None
            applied.append(plan)
            return change, change
        if not plan.base_states:
            raise _PlanRefused(f"user {uid!r} is at version {current}, the plan was made at "
                               f"{plan.base_version}; plan again")
        rebased = rebase_plan(plan, graph, current, engine.registry, engine.config.confidence)
        if rebased.is_empty():
            raise _PlanRefused(f"concurrent writes to {uid!r} touched every part of the plan made at "
                               f"version {plan.base_version}; plan again")
        change = ChangeSet(user_id=uid)
        _write_diff(graph, rebased.diff, engine.registry, change, trims=rebased.trims)
        # The parts were checked to be untouched, so this cannot fail; checking anyway
        # costs one pass over the tree and makes a bug refuse the pass, not corrupt it.
        graph.check()
        change.events = [JournalEvent("consolidate", _payload(rebased, config), rebased.now)]
        applied.append(rebased)
        return change, change

    try:
        change = engine.transact(uid, work)
    except _PlanRefused as exc:
        raise StaleStateError(str(exc)) from None
    return applied[0], change


def apply_user_plan(tree: EngineLike, plan: ConsolidationPlan) -> ChangeSet:
    """Apply a plan to a tree atomically, rebasing it if the user changed since planning.

    A plan made by :func:`consolidate_user` (even a dry run) records the state of every
    node it writes; when the user was written to since, the parts of the plan those
    writes touched are left out and the rest is applied (see
    :mod:`~personatree.consolidate.rebase`). A plan without those states (made by
    :meth:`Consolidator.plan` directly) is refused instead.

    Raises
    ------
    StaleStateError
        If every part of the plan was touched by concurrent writes (or the plan cannot
        be rebased and the user changed). Nothing is written.
    """
    return apply_rebased(tree, plan)[1]


def consolidate_user(
    tree: EngineLike, user_id: str, *, dry_run: bool = False, now: datetime | None = None,
) -> ConsolidationPlan:
    """Plan one pass for ``user_id`` and, unless ``dry_run``, apply it atomically.

    Writes that land while the pass plans do not make it fail: the plan is rebased onto
    them, keeping every part they did not touch, and planned again (at most a few
    times) only when they touched all of it.

    Parameters
    ----------
    tree : Engine or PersonaTree
    user_id : str
    dry_run : bool
        Only plan.
    now : datetime, optional
        Logical time of the pass (default: the tree's clock).

    Returns
    -------
    ConsolidationPlan
        The plan as applied (rebased plans name their ``rebased_from`` version and how
        many parts they left for the next pass), or as planned for ``dry_run``.

    Raises
    ------
    UnknownUserError
        If nothing is stored for the user.
    StaleStateError
        If concurrent writes touched every part of every plan tried.
    """
    engine = engine_of(tree)
    at = utc(now) if now is not None else engine.clock.now()
    for attempt in range(_PLAN_TRIES):
        with engine.lock:
            # Plan on a copy, outside the lock: other threads of this process keep
            # writing while a big tree is planned.
            graph = engine.live_graph(user_id).copy()
            base = engine.state(user_id).version
        plan = consolidator_for(engine).plan(graph, at, base_version=base)
        plan = replace(plan, base_states=base_states(graph, plan), base_written=base_written(graph, plan))
        if dry_run or plan.is_empty():
            return plan
        try:
            return apply_rebased(engine, plan)[0]
        except StaleStateError:
            if attempt + 1 == _PLAN_TRIES:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def replay_consolidation(engine: Engine, graph: MemoryGraph, event: JournalEvent) -> None:
    """Replayer of ``consolidate`` journal events: plan again at the recorded ``now``
    with the recorded configuration, and apply (deterministic for a given seed). A
    rebased pass recorded the diff it wrote; that diff is written again instead."""
    payload = event.payload
    diff = payload.get("diff")
    if isinstance(diff, dict):
        _write_diff(graph, diff_from_dict(diff), engine.registry, ChangeSet(user_id=graph.user_id), lenient=True)
        return
    at = utc(datetime.fromisoformat(str(payload["now"])))
    raw = payload.get("config")
    if isinstance(raw, dict):  # fields added since the event was written take their defaults
        config = ConsolidationConfig(**{k: v for k, v in raw.items() if k in ConsolidationConfig.model_fields})
    else:
        config = engine.config.consolidation
    plan = consolidator_for(engine, config).plan(graph, at, base_version=0)
    apply_plan(graph, plan, engine.registry, config)
