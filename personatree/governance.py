"""Data governance: deleting for real.

Functions over a :class:`~personatree.api.PersonaTree` that complete what its methods
do, each committed through the tree's own transaction (``_transact``):

* :func:`forget` — ``PersonaTree.forget`` plus removal of the cache entries derived from
  the removed nodes (the convention: such entries live in the namespace
  :func:`node_cache_namespace` of their node, scoped to the user);
* :func:`delete_observation` — remove one observation from the verbatim log together
  with everything extracted from it (its leaves, and summaries derived only from them);
* :func:`erase_user` — ``delete_user`` followed by ``vacuum``, so the user's bytes leave
  the database file and its write-ahead log.

The archive (leaves that consolidation's bounds took out of the tree, still recalled)
is evidence like the tree: forgetting an archived leaf, forgetting a mid with its
evidence (``cascade``), deleting an observation and deleting the user remove archived
leaves too (:func:`forget_archived`, :func:`archive_cascade`, :func:`delete_observation`).

The pure part, :func:`plan_observation_deletion`, works on a graph and returns what
changed, so it is tested without a store.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Iterable

from .config import ConfidenceConfig
from .errors import StoreError, UnknownNodeError
from .forgetting import ForgetResult, forget_node
from .graph import MemoryGraph
from .inputs import check_id
from .ports import ChangeSet, JournalEvent
from .types import Level, Node

if TYPE_CHECKING:  # pragma: no cover
    from .api import ForgetReport, PersonaTree

__all__ = [
    "NODE_CACHE_PREFIX",
    "node_cache_namespace",
    "purge_node_caches",
    "forget",
    "ObservationDeletion",
    "derived_leaves",
    "plan_observation_deletion",
    "supports_observation_deletion",
    "delete_observation",
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


def purge_node_caches(store: Any, user_id: str, node_ids: Iterable[str]) -> int:
    """Delete the user-scoped cache namespaces of ``node_ids``; returns entries removed.

    Stores without ``cache_delete`` hold no caches, so there is nothing to purge.
    """
    delete = getattr(store, "cache_delete", None)
    if delete is None:
        return 0
    return sum(int(delete(node_cache_namespace(n), user_id=user_id)) for n in node_ids)


def forget(tree: "PersonaTree", user_id: str, node_id: str, *, cascade: bool = False) -> "ForgetReport":
    """Forget a node, everything derived only from it, and their cache entries.

    Parameters
    ----------
    tree : PersonaTree
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
    report = tree.forget(user_id, node_id, cascade=cascade)
    purge_node_caches(tree.store, report.user_id, report.removed)
    return report


def _archive(store: Any, user_id: str) -> list[Node]:
    # A store without an archive (a custom Store from before it) has nothing archived.
    read = getattr(store, "archive", None)
    return [] if read is None else list(read(user_id))


def forget_archived(tree: "PersonaTree", user_id: str, node_id: str) -> "ForgetReport | None":
    """Forget an archived leaf (one recall showed from the archive), if ``node_id`` is one.

    Parameters
    ----------
    tree : PersonaTree
    user_id, node_id : str
        Validated ids.

    Returns
    -------
    ForgetReport or None
        ``None`` when the node is in the tree or not archived (``PersonaTree.forget``
        handles it); else the report of its removal from the archive, journaled as a
        ``forget`` like any other.
    """
    from .api import ForgetReport

    with tree._lock:
        if tree._state(user_id).version == 0 or node_id in tree._graph(user_id):
            return None
        ids = getattr(tree.store, "archive_ids", None)
        if ids is None or node_id not in set(ids(user_id)):
            return None
        now = tree.clock.now()

        def work(graph: MemoryGraph) -> tuple[ChangeSet, None]:
            return ChangeSet(
                user_id=user_id, unarchive=[node_id],
                events=[JournalEvent("forget", {"node_id": node_id, "cascade": False}, now)],
            ), None

        tree._transact(user_id, work)
    purge_node_caches(tree.store, user_id, [node_id])
    return ForgetReport(user_id, (node_id,), ())


def archive_cascade(store: Any, user_id: str, removed: Iterable[str]) -> list[str]:
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
    return [n.id for n in _archive(store, user_id) if n.attributes.get(ARCHIVED_FROM) in gone]


def archived_of_observation(store: Any, user_id: str, observation_id: str) -> tuple[list[str], list[Node]]:
    """What deleting an observation does to the archive: (ids to remove, leaves to rewrite).

    As in the tree, an archived leaf citing only this observation goes; one that also
    cites others only loses the citation.
    """
    remove: list[str] = []
    rewrite: list[Node] = []
    for n in _archive(store, user_id):
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
    """Whether this build's ``ChangeSet`` can delete log rows (``delete_observations``)."""
    return "delete_observations" in {f.name for f in fields(ChangeSet)}


def delete_observation(tree: "PersonaTree", user_id: str, observation_id: str) -> ObservationDeletion:
    """Delete one observation from the log and everything extracted from it, atomically.

    Parameters
    ----------
    tree : PersonaTree
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
    StoreError
        If this build's change sets cannot delete log rows yet (nothing is written).
    """
    uid = tree._uid(user_id)
    oid = check_id(observation_id, "observation_id", tree.config.limits)
    if not supports_observation_deletion():
        # Removing the leaves but keeping the verbatim text would look like a deletion
        # and not be one: refuse instead of doing half the job.
        raise StoreError(
            "deleting observations needs ChangeSet.delete_observations, which this build's "
            "stores do not support yet; nothing was deleted"
        )
    now = tree.clock.now()

    def work(graph: MemoryGraph) -> tuple[ChangeSet, ObservationDeletion]:
        in_log = bool(tree.store.existing_observations(uid, [oid]))
        res = plan_observation_deletion(graph, oid, tree.config.confidence)
        gone, kept = archived_of_observation(tree.store, uid, oid)
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
        )
        change.delete_observations = [oid]  # type: ignore[attr-defined]
        out = ObservationDeletion(uid, oid, tuple(res.removed) + tuple(gone),
                                  tuple(res.changed) + tuple(n.id for n in kept), in_log)
        return change, out

    tree._graph(uid)  # UnknownUserError before anything else
    result: ObservationDeletion = tree._transact(uid, work)
    purge_node_caches(tree.store, uid, result.removed)
    return result


def _replay_delete_observation(tree: "PersonaTree", graph: MemoryGraph, event: JournalEvent) -> None:
    # On rebuild the row is already gone from the log, so its "observe" event replays
    # nothing; this removes anything a later event could have re-derived from it.
    plan_observation_deletion(graph, str(event.payload["observation_id"]), tree.config.confidence)


def _register() -> None:
    from .api import register_replayer

    register_replayer("delete_observation", _replay_delete_observation)


_register()


def erase_user(tree: "PersonaTree", user_id: str, *, vacuum: bool = True) -> None:
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
    tree.delete_user(user_id)
    if vacuum:
        fn = getattr(tree.store, "vacuum", None)
        if fn is not None:
            fn()
