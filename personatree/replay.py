"""Journal replay: rebuild a user's tree from its observations and journal events.

``observe`` and ``forget`` events are replayed here; every other kind by the
:data:`~personatree.engine.core.Replayer` the engine was given for it (the facade
passes consolidation's and governance's).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .engine.core import Engine
from .engine.reports import RebuildReport
from .errors import PersonaTreeError, StoreError
from .forgetting import forget_node
from .graph import MemoryGraph
from .ports import ChangeSet, JournalEvent
from .types import Level, Observation
from .ingest import extract, insert_many

__all__ = ["replay_journal", "rebuild_user"]


def _journal_value(user_id: str, event: JournalEvent, key: str) -> Any:
    """A payload value the replay needs; a damaged event is a typed error naming it."""
    if key not in event.payload:
        raise StoreError(f"journal event {event.seq} ({event.kind}) of user {user_id!r} has no {key!r}: "
                         "the journal is damaged and rebuild cannot replay it")
    return event.payload[key]


def _replay_other(engine: Engine, user_id: str, graph: MemoryGraph, ev: JournalEvent) -> None:
    """Replay an event of a kind the engine was given a replayer for (else skip it)."""
    replayer = engine.replayers.get(ev.kind)
    if replayer is None:
        return
    try:
        replayer(engine, graph, ev)
    except PersonaTreeError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        # A damaged event (imports validate journals, older stores may not have): a
        # typed error that names it, not a bare KeyError.
        raise StoreError(f"journal event {ev.seq} ({ev.kind}) of user {user_id!r} cannot be "
                         f"replayed: {type(exc).__name__}: {exc}"[:400]) from None


def replay_journal(
    engine: Engine, user_id: str, events: Sequence[JournalEvent], observations: Mapping[str, Observation]
) -> MemoryGraph:
    """A fresh tree built by replaying ``events`` in order.

    Raises
    ------
    StoreError
        If an event is damaged.
    """
    graph = MemoryGraph(user_id)
    i = 0
    while i < len(events):
        ev = events[i]
        if ev.kind == "observe":
            # Extract a run of consecutive observations in one batch, then insert in order.
            j = i
            run: list[Observation] = []
            while j < len(events) and events[j].kind == "observe":
                o = observations.get(str(_journal_value(user_id, events[j], "observation_id")))
                if o is not None:
                    run.append(o)
                j += 1
            insert_many(engine, graph, extract(engine, run), ChangeSet(user_id=user_id))
            i = j
            continue
        if ev.kind == "forget":
            nid = str(_journal_value(user_id, ev, "node_id"))
            if nid in graph:
                forget_node(graph, nid, engine.config.confidence, cascade=bool(ev.payload.get("cascade")))
        else:
            _replay_other(engine, user_id, graph, ev)
        i += 1
    return graph


def rebuild_user(engine: Engine, user_id: str) -> RebuildReport:
    """Replay a (validated) user's journal into a fresh tree and store it in one transaction.

    See :meth:`personatree.api.PersonaTree.rebuild`.
    """
    # Imported here: the consolidation package pulls in the clustering stack, which a
    # process that never rebuilds should not pay for.
    from .consolidate.bounds import archived_leaves  # noqa: PLC0415

    with engine.lock:
        engine.live_graph(user_id)
        events = engine.store.events(user_id)
        observations = {o.id: o for o in engine.store.observations(user_id)}
        fresh = replay_journal(engine, user_id, events, observations)

        def work(graph: MemoryGraph) -> tuple[ChangeSet, RebuildReport]:
            # Recall counters are access statistics, not tree state: the journal does
            # not hold them, so a replay cannot produce them. They are carried over to
            # the nodes that survive (same_as does not compare them either).
            for n in fresh.nodes():
                if n.id in graph:
                    old = graph.node(n.id)
                    n.recall_count, n.t_access = old.recall_count, old.t_access
            equal = graph.same_as(fresh)
            report = RebuildReport(user_id, len(events), len(fresh), sum(1 for _ in fresh.edges()), equal)
            if equal:
                return ChangeSet(user_id=user_id), report
            new_edges = {(e.src, e.dst) for e in fresh.edges()}
            change = ChangeSet(
                user_id=user_id,
                upsert_nodes=list(fresh.nodes()),
                delete_nodes=[n.id for n in graph.nodes() if n.id not in fresh],
                delete_edges=[(e.src, e.dst) for e in graph.edges() if (e.src, e.dst) not in new_edges],
                upsert_edges=list(fresh.edges()),
                # Leaves the replay left out of the tree stay in the memory.
                archive_nodes=archived_leaves(graph, [n.id for n in graph.nodes(Level.LEAF) if n.id not in fresh]),
            )
            return change, report

        report = engine.transact(user_id, work)
        engine.drop(user_id)
        return report
