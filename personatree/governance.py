"""Data governance: deleting for real.

Functions over an :class:`~personatree.engine.Engine` (or the
:class:`~personatree.api.PersonaTree` that owns one), each committed through the
engine's transaction:

* :func:`forget_node_of_user` — what ``PersonaTree.forget`` does: remove a node (or an
  archived leaf), withdraw its evidence, drop summaries derived only from it, and
  remove the cache entries derived from the removed nodes (the convention: such
  entries live in the namespace :func:`node_cache_namespace` of their node, scoped to
  the user); :func:`forget` is the same call on a facade;
* :func:`delete_observation` — remove one observation from the verbatim log together
  with everything extracted from it (its leaves, and summaries derived only from them);
* :func:`delete_user_data` — what ``PersonaTree.delete_user`` does, with its vacuum;
  :func:`erase_user` — ``delete_user`` followed by ``vacuum``, so the user's bytes
  leave the database file and its write-ahead log.

The archive (leaves that consolidation's bounds took out of the tree, still recalled)
is evidence like the tree: forgetting an archived leaf, forgetting a mid with its
evidence (``cascade``), deleting an observation and deleting the user remove archived
leaves too (:func:`forget_archived`, :func:`archive_cascade`, :func:`delete_observation`).

The pure part, :func:`plan_observation_deletion`, works on a graph and returns what
changed, so it is tested without a store.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Callable, Iterable

from .config import ConfidenceConfig
from .engine.core import Engine, EngineLike, engine_of
from .engine.reports import ForgetReport
from .errors import UnknownNodeError, UnknownUserError, VacuumPendingError
from .forgetting import ForgetResult, forget_node
from .graph import MemoryGraph
from .inputs import check_id
from .ports import ChangeSet, JournalEvent, Store
from .types import Level, Node

__all__ = [
    "NODE_CACHE_PREFIX",
    "node_cache_namespace",
    "purge_node_caches",
    "forget",
    "forget_node_of_user",
    "ObservationDeletion",
    "derived_leaves",
    "plan_observation_deletion",
    "supports_observation_deletion",
    "delete_observation",
    "replay_delete_observation",
    "delete_user_data",
    "erase_user",
    "forget_archived",
    "archive_cascade",
    "archived_of_observation",
]

NODE_CACHE_PREFIX = "node:"


def node_cache_namespace(node_id: str) -> str:
    """The cache namespace holding entries derived from one node (``node:<id>``).

    Components that cache anything computed from a node's content (LLM validations,
    summaries, renderings) put it here, scoped to the node's user, so that forgetting
    the node can drop it with one ``cache_delete(namespace, user_id=...)``.
    """
    return NODE_CACHE_PREFIX + node_id


def purge_node_caches(store: Store, user_id: str, node_ids: Iterable[str]) -> int:
    """Delete the user-scoped cache namespaces of ``node_ids``; returns entries removed.

    Stores without ``cache_delete`` hold no caches, so there is nothing to purge.
    """
    delete = getattr(store, "cache_delete", None)
    if delete is None:
        return 0
    return sum(int(delete(node_cache_namespace(n), user_id=user_id)) for n in node_ids)


def forget(tree: EngineLike, user_id: str, node_id: str, *, cascade: bool = False) -> ForgetReport:
    """Forget a node, everything derived only from it, and their cache entries.

    Parameters
    ----------
    tree : Engine or PersonaTree
    user_id, node_id : str
    cascade : bool
        Also remove the node's support subtree (see ``PersonaTree.forget``).

    Returns
    -------
    ForgetReport

    Raises
    ------
    UnknownUserError, UnknownNodeError, InputError

    Notes
    -----
    Cache entries are removed after the node's commit; a crash in between leaves
    entries that belong to no node, which the next call for the same id removes (and
    ``delete_user`` always does).
    """
    engine = engine_of(tree)
    uid, nid = engine.check_user(user_id), engine.check_node(node_id)
    report = forget_node_of_user(engine, uid, nid, cascade=cascade)
    purge_node_caches(engine.store, report.user_id, report.removed)
    return report


def forget_node_of_user(engine: Engine, user_id: str, node_id: str, *, cascade: bool = False) -> ForgetReport:
    """Remove a node, withdraw its evidence, and drop summaries derived only from it.

    See :meth:`personatree.api.PersonaTree.forget`; ids are validated already.

    Raises
    ------
    UnknownUserError, UnknownNodeError
    """
    now = engine.clock.now()
    archived = forget_archived(engine, user_id, node_id)  # a leaf recall showed from the archive
    if archived is not None:
        return archived

    def work(graph: MemoryGraph) -> tuple[ChangeSet, ForgetReport]:
        graph.node(node_id)
        res = forget_node(graph, node_id, engine.config.confidence, cascade=cascade)
        change = ChangeSet(
            user_id=user_id,
            upsert_nodes=list(res.changed.values()),
            delete_nodes=list(res.removed),
            delete_edges=list(res.removed_edges),
            events=[JournalEvent("forget", {"node_id": node_id, "cascade": cascade}, now)],
            unarchive=archive_cascade(engine.store, user_id, res.removed) if cascade else [],
        )
        return change, ForgetReport(user_id, tuple(res.removed), tuple(res.changed))

    engine.live_graph(user_id)
    report = engine.transact(user_id, work)
    # Cached derivations (LLM answers about the node) go after the commit; a crash in
    # between leaves orphaned entries that delete_user and the next forget remove.
    purge_node_caches(engine.store, user_id, report.removed)
    return report


def forget_archived(tree: EngineLike, user_id: str, node_id: str) -> ForgetReport | None:
    """Forget an archived leaf (one recall showed from the archive), if ``node_id`` is one.

    Parameters
    ----------
    tree : Engine or PersonaTree
    user_id, node_id : str
        Validated ids.

    Returns
    -------
    ForgetReport or None
        ``None`` when the node is in the tree or not archived (``PersonaTree.forget``
        handles it); else the report of its removal from the archive, journaled as a
        ``forget`` like any other.
    """
    engine = engine_of(tree)
    with engine.lock:
        if engine.state(user_id).version == 0 or node_id in engine.live_graph(user_id):
            return None
        if node_id not in set(engine.store.archive_ids(user_id)):
            return None
        now = engine.clock.now()

        def work(graph: MemoryGraph) -> tuple[ChangeSet, None]:
            return ChangeSet(
                user_id=user_id, unarchive=[node_id],
                events=[JournalEvent("forget", {"node_id": node_id, "cascade": False}, now)],
            ), None

        engine.transact(user_id, work)
    purge_node_caches(engine.store, user_id, [node_id])
    return ForgetReport(user_id, (node_id,), ())


def archive_cascade(store: Store, user_id: str, removed: Iterable[str]) -> list[str]:
    """Archived leaves that supported one of the ``removed`` mids when they left the tree.

    A cascading forget removes a pattern *with its evidence*: the evidence trimmed from
    it into the archive goes too.

    Parameters
    ----------
    store : Store
    user_id : str
    removed : iterable of str
        Node ids a forget removes.

    Returns
    -------
    list of str
        Archive ids to remove (``ChangeSet.unarchive``).
    """
    from .consolidate.bounds import ARCHIVED_FROM

    gone = set(removed)
    if not gone:
        return []
    return [n.id for n in store.archive(user_id) if n.attributes.get(ARCHIVED_FROM) in gone]


def archived_of_observation(store: Store, user_id: str, observation_id: str) -> tuple[list[str], list[Node]]:
    """What deleting an observation does to the archive: (ids to remove, leaves to rewrite).

    As in the tree, an archived leaf citing only this observation goes; one that also
    cites others only loses the citation.
    """
    remove: list[str] = []
    rewrite: list[Node] = []
    for n in store.archive(user_id):
        if not any(p.observation_id == observation_id for p in n.provenance):
            continue
        rest = tuple(p for p in n.provenance if p.observation_id != observation_id)
        if rest:
            n.provenance = rest
            rewrite.append(n)
        else:
            remove.append(n.id)
    return remove, rewrite


@dataclass(slots=True)
class ObservationDeletion:
    """What deleting an observation removes and changes.

    Attributes
    ----------
    user_id, observation_id : str
    removed : tuple of str
        Node ids removed: the observation's leaves and summaries derived only from them.
    changed : tuple of str
        Node ids whose evidence was withdrawn or whose provenance lost the observation.
    log_deleted : bool
        Whether the observation was in the log (and is now gone from it).
    """

    user_id: str
    observation_id: str
    removed: tuple[str, ...]
    changed: tuple[str, ...]
    log_deleted: bool


def derived_leaves(graph: MemoryGraph, observation_id: str) -> list[str]:
    """Ids of the leaves whose provenance names ``observation_id`` (in node order)."""
    return [
        n.id for n in graph.nodes(Level.LEAF)
        if any(p.observation_id == observation_id for p in n.provenance)
    ]


def plan_observation_deletion(
    graph: MemoryGraph, observation_id: str, confidence: ConfidenceConfig
) -> ForgetResult:
    """Remove from ``graph`` what was extracted from one observation.

    A leaf that cites only this observation is forgotten (its evidence is withdrawn
    from its parent, and parents left without support go too, as in
    :func:`~personatree.forgetting.forget_node`). A leaf that also cites other
    observations keeps its evidence and only loses the citation.

    Parameters
    ----------
    graph : MemoryGraph
        Mutated in place.
    observation_id : str
    confidence : ConfidenceConfig
        For the logit clip.

    Returns
    -------
    ForgetResult
        Removed node ids, changed nodes and removed edges, ready for a change set.
    """
    total = ForgetResult()
    for leaf_id in derived_leaves(graph, observation_id):
        if leaf_id not in graph:  # went with an earlier leaf's parent chain? (leaves never do)
            continue
        leaf = graph.node(leaf_id)
        rest = tuple(p for p in leaf.provenance if p.observation_id != observation_id)
        if rest:
            leaf.provenance = rest
            total.changed[leaf.id] = leaf
            continue
        res = forget_node(graph, leaf_id, confidence)
        total.removed.extend(res.removed)
        total.removed_edges.extend(res.removed_edges)
        total.changed.update(res.changed)
    for nid in total.removed:
        total.changed.pop(nid, None)
    return total


def supports_observation_deletion() -> bool:
    """Whether ``ChangeSet`` can delete log rows (``delete_observations``): always true."""
    return "delete_observations" in {f.name for f in fields(ChangeSet)}


def delete_observation(tree: EngineLike, user_id: str, observation_id: str) -> ObservationDeletion:
    """Delete one observation from the log and everything extracted from it, atomically.

    Parameters
    ----------
    tree : Engine or PersonaTree
    user_id : str
    observation_id : str

    Returns
    -------
    ObservationDeletion

    Raises
    ------
    UnknownUserError
        If the user has no data.
    UnknownNodeError
        If the observation is neither in the log nor cited by any node.
    """
    engine = engine_of(tree)
    uid = engine.check_user(user_id)
    oid = check_id(observation_id, "observation_id", engine.config.limits)
    now = engine.clock.now()

    def work(graph: MemoryGraph) -> tuple[ChangeSet, ObservationDeletion]:
        in_log = bool(engine.store.existing_observations(uid, [oid]))
        res = plan_observation_deletion(graph, oid, engine.config.confidence)
        gone, kept = archived_of_observation(engine.store, uid, oid)
        if not in_log and not res.removed and not res.changed and not gone and not kept:
            raise UnknownNodeError(f"user {uid!r} has no observation {oid!r}")
        change = ChangeSet(
            user_id=uid,
            upsert_nodes=list(res.changed.values()),
            delete_nodes=list(res.removed),
            delete_edges=list(res.removed_edges),
            events=[JournalEvent("delete_observation", {"observation_id": oid}, now)],
            archive_nodes=kept,
            unarchive=gone,
            delete_observations=[oid],
        )
        out = ObservationDeletion(uid, oid, tuple(res.removed) + tuple(gone),
                                  tuple(res.changed) + tuple(n.id for n in kept), in_log)
        return change, out

    engine.live_graph(uid)  # UnknownUserError before anything else
    result = engine.transact(uid, work)
    purge_node_caches(engine.store, uid, result.removed)
    return result


def replay_delete_observation(engine: Engine, graph: MemoryGraph, event: JournalEvent) -> None:
    """Replayer of ``delete_observation`` journal events.

    On rebuild the row is already gone from the log, so its ``observe`` event replays
    nothing; this removes anything a later event could have re-derived from it.
    """
    plan_observation_deletion(graph, str(event.payload["observation_id"]), engine.config.confidence)


def delete_user_data(engine: Engine, user_id: str, *, vacuum: bool = False) -> None:
    """Delete every stored row of a (validated) user; see :meth:`PersonaTree.delete_user`.

    Raises
    ------
    UnknownUserError, VacuumPendingError
    """
    store = engine.store
    # Only stores that can vacuum later (SQLite) mark a vacuum as pending; they also
    # take ``vacuum=True`` in ``delete_user``, which the Store port does not require.
    pending_for = getattr(store, "vacuum_pending_for", None)
    with engine.lock:
        if store.version(user_id) == 0:
            if vacuum and pending_for is not None and pending_for(user_id):
                # The rows went in an earlier call whose vacuum could not finish:
                # calling again finishes it instead of calling the user unknown.
                _vacuum_after_delete(engine, user_id, lambda: getattr(store, "vacuum")())
                return
            raise UnknownUserError(f"no data stored for user {user_id!r}")
        if vacuum and pending_for is not None:
            # Delete and "vacuum pending" commit together, so a vacuum that cannot
            # run now is finished by the next open or write of the store.
            _vacuum_after_delete(engine, user_id, lambda: store.delete_user(user_id, vacuum=True))  # type: ignore[call-arg]
            return
        store.delete_user(user_id)
        engine.evict(user_id)  # the user's text leaves this process's memory too
        engine.committed(user_id, 0)  # copies kept elsewhere (a hot tier) go too
        if vacuum and hasattr(store, "vacuum"):
            getattr(store, "vacuum")()


def _vacuum_after_delete(engine: Engine, user_id: str, run: Callable[[], None]) -> None:
    try:
        run()
    except VacuumPendingError:
        raise VacuumPendingError(
            f"user {user_id!r} is deleted (the delete is committed), but the vacuum that removes the "
            "deleted text from the file and its write-ahead log is pending: other connections are "
            "reading the store. It finishes by itself on the next open of or write to the store; "
            f"or call delete_user({user_id!r}, vacuum=True) or store.vacuum() again when they are done",
            user_id=user_id,
        ) from None
    finally:
        engine.evict(user_id)  # the user's text leaves this process's memory too
        engine.committed(user_id, 0)


def erase_user(tree: EngineLike, user_id: str, *, vacuum: bool = True) -> None:
    """Delete every row of a user and, by default, rewrite the file without them.

    ``delete_user`` alone removes the rows (SQLite zeroes them in place with
    ``secure_delete``); ``vacuum`` also rebuilds the database file and truncates the
    write-ahead log, so no copy of the user's bytes is left on disk by the store.

    Raises
    ------
    UnknownUserError
    StoreBusyError
        If other connections kept the write-ahead log from being truncated; the rows
        are deleted already, retry ``tree.store.vacuum()`` when the store is idle.
    """
    engine = engine_of(tree)
    delete_user_data(engine, engine.check_user(user_id))
    if vacuum:
        fn = getattr(engine.store, "vacuum", None)
        if fn is not None:
            fn()
