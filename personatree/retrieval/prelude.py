"""What every recall does before it searches: check, count, embed, route, look up.

Plain recall (:func:`personatree.retrieval.recall_user`) and tiered recall
(:func:`personatree.tiering.search.tiered_recall`) differ only in which retrieval
states they search; both start with :func:`prepare_recall` and run the engine's
search through the :class:`RecallQuery` it returns.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Callable, Iterator, Sequence

import numpy as np

from ..collector import paused_gc
from ..config import RecallConfig
from ..engine.caches import Slot
from ..engine.core import Engine, EngineLike, TreeState, engine_of
from ..errors import InputError, InvariantError, UnknownNodeError
from ..graph import MemoryGraph
from ..inputs import check_query
from ..ports import TokenCounter
from ..schema import SchemaRegistry
from ..types import Level, Route
from .engine import recall_state
from .result import Recall
from .router import Router, default_router
from .lazy_archive import store_fetch
from .snapshot import encode, restore, store_snapshots
from .snapshot_codec import Unpacked, decode_tree, tree_version, unpack_snapshot
from .state import RetrievalState, state_for, store_archive, store_turn_text
from .turn_memo import store_turn_memo
from .tokens import counter_of, shared_counter

__all__ = ["RecallQuery", "prepare_recall", "route_query", "user_state", "held_state", "check_budget"]

# The retrieval state of each user, per engine (indexes, lexical postings, turn keys).
_STATES: Slot[dict[str, RetrievalState]] = Slot("retrieval.states", per_user=True)


@dataclass(frozen=True, slots=True)
class RecallQuery:
    """One checked recall request with everything the search needs but the state.

    Attributes
    ----------
    query : str
        The checked query text.
    qvec : ndarray or None
        Its embedding (``None``: no dense ranking).
    route : Route
    registry : SchemaRegistry
    counter : TokenCounter
    budget : int
    now : datetime
        When confidences are read and accesses recorded.
    cfg : RecallConfig
    levels : sequence of Level or None
        Only these levels may be shown.
    from_user : bool
        The query is the person's own message to the agent, not a question about them.
    """

    query: str
    qvec: np.ndarray | None
    route: Route
    registry: SchemaRegistry
    counter: TokenCounter
    budget: int
    now: datetime
    cfg: RecallConfig
    levels: Sequence[Level] | None
    from_user: bool = False

    def run(self, state: RetrievalState) -> Recall:
        """Search ``state`` (select, render and count; see ``recall_state``)."""
        return recall_state(
            state, self.query, self.qvec, self.route, registry=self.registry, counter=self.counter,
            budget=self.budget, now=self.now, cfg=self.cfg, levels=self.levels,
            from_user=self.from_user)


def check_budget(budget: object) -> int:
    """``budget`` if it is a positive integer, else :class:`InputError`."""
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
        raise InputError("budget must be a positive integer")
    return budget


def route_query(engine: Engine, query: str, qvec: np.ndarray) -> Route:
    """The abstraction level a query needs, as the engine's judge decides it."""
    # Reuse the query vector when the judge routes with our offline router; any other
    # judge (an LLM judge) routes its own way.
    judge = engine.judge
    router = getattr(judge, "router", None) or getattr(judge, "_router", None)
    if isinstance(router, Router):
        return router.route_vector(query, qvec)
    try:
        route = judge.route(query)
    except NotImplementedError:
        route = None
    if isinstance(route, Route):
        return route
    return default_router(engine.embedder).route_vector(query, qvec)


def prepare_recall(
    engine: Engine,
    query: str,
    *,
    budget: int | None,
    model: str | None,
    levels: Sequence[Level] | None,
    from_user: bool = False,
) -> RecallQuery:
    """Check the query and budget, pick the token counter, embed and route the query.

    Raises
    ------
    QueryError, InputError
    """
    cfg = engine.config.recall
    q = check_query(query, engine.config.limits)
    if not isinstance(from_user, bool):
        raise InputError("from_user must be True or False")
    b = check_budget(cfg.budget if budget is None else budget)
    counter = shared_counter(model) if model else counter_of(engine, cfg.model)
    qvec = engine.embedder.embed([q])[0]
    route = route_query(engine, q, qvec)
    return RecallQuery(q, qvec, route, engine.registry, counter, b, engine.clock.now(), cfg, levels, from_user)


@contextmanager
def first_build(tree: EngineLike, user_id: str) -> Iterator[None]:
    """Keep the cyclic garbage collector paused while a user's retrieval state is first made.

    Loading a big user's tree and reading or building its state allocate hundreds of
    thousands of objects that all stay alive: every allocation threshold crossed
    starts a collection that walks them all and finds no garbage (about 40 % of a
    10,000-observation user's first recall). So the collector is paused during the
    build, what the build left alive is settled in the oldest generation (in a small
    worker it would otherwise make a full collection of the whole heap due within
    the next recall: :mod:`personatree.collector`), and the collector resumes. It is
    not moved out of the collector's reach (``gc.freeze`` alone): that is
    process-wide, and the application's objects would go uncollected. A state
    already cached, or a collector already off, changes nothing.
    """
    engine = engine_of(tree)
    if user_id in engine.caches.get(_STATES, dict) or not gc.isenabled():
        yield
        return
    with paused_gc(settle=True):
        yield


def user_state(
    tree: EngineLike, user_id: str, st: TreeState, read: tuple[int, Unpacked] | None = None
) -> RetrievalState:
    """The engine's cached retrieval state of a user, refreshed to ``st``.

    Call under the engine's lock. Whole turns are read from the store's observation
    log, and the user's archived leaves (evidence the tree's bounds took out of it)
    are searched too. A state not cached yet is read from the store's snapshot of it
    when there is one for this version (:mod:`.snapshot`), its archived leaves read
    only when a recall needs them; else it is built, and the build is kept as the
    snapshot. ``read``: the snapshot already read at a version (``(version, unpacked)``),
    used instead of reading it again when that is ``st``'s version.
    """
    engine = engine_of(tree)
    cache = engine.caches.get(_STATES, dict)
    turn_text, archive = store_turn_text(engine.store, user_id), store_archive(engine.store, user_id)
    snapshots = store_snapshots(engine.store, user_id) if user_id not in cache else None
    if snapshots is not None:
        # A new state: read back the one built at this version if the store keeps it.
        data: bytes | Unpacked | None = (
            read[1] if read is not None and read[0] == st.version else snapshots.load(st.version))
        if data is not None:
            fresh = RetrievalState(st.graph, turn_text=turn_text, archive_source=archive)
            content, current = _content_versions(engine.store, user_id, st.version)
            if restore(fresh, st.graph, st.version, data, store_fetch(engine.store, user_id), content, current):
                cache[user_id] = fresh
                return fresh
    state = state_for(cache, user_id, st.graph, st.version, turn_text, archive,
                      lambda: store_turn_memo(engine.store, user_id))
    if snapshots is not None:
        snapshots.save(st.version, encode(state))  # built from scratch: what a snapshot holds
    return state


def held_state(tree: EngineLike, user_id: str) -> RetrievalState:
    """The user's tree and retrieval state, as ``user_state(tree, user_id,
    engine.existing_state(user_id))`` gives them.

    Call under the engine's lock. An engine that holds neither yet reads both from
    the user's current snapshot when the store keeps one that holds the tree (its
    columns, :mod:`personatree.store.codec.tree_columns`): the tree's rows are then
    not read at all. Recall statistics written since the snapshot (they keep it
    current) are read apart; a snapshot that does not describe the tree it holds is
    not used.

    Raises
    ------
    UnknownUserError
        When nothing is stored for the user.
    """
    engine = engine_of(tree)
    restored, read = _from_snapshot(engine, user_id)
    if restored is not None:
        return restored
    # The snapshot already read (its tree unusable) still serves the state.
    return user_state(engine, user_id, engine.existing_state(user_id), read)


def _from_snapshot(engine: Engine, user_id: str) -> tuple[RetrievalState | None, tuple[int, Unpacked] | None]:
    # The state with the tree taken from the snapshot, or None and the snapshot read
    # (None when there is none at the user's version, or it is unreadable).
    cache = engine.caches.get(_STATES, dict)
    if user_id in cache or user_id in engine.trees:
        return None, None
    snapshots = store_snapshots(engine.store, user_id)
    version = engine.store.version(user_id)
    data = snapshots.load(version) if snapshots is not None and version else None
    if data is None:
        return None, None
    try:
        read = unpack_snapshot(data)
    except ValueError:
        return None, None
    kept = (version, read)
    try:
        built = tree_version(read)
        if built is None:
            return None, kept
        stats = None
        if built != version:
            # Recall statistics were written since (they leave the snapshot current).
            reader = getattr(engine.store, "recall_stats", None)
            if reader is None:
                return None, kept
            now, stats = reader(user_id)
            if now != version:
                return None, None  # the user moved on: the snapshot is no longer current
        nodes, edges = decode_tree(read, user_id, stats)
        graph = MemoryGraph.from_parts(user_id, nodes, edges)
    except (ValueError, TypeError, KeyError, IndexError, InvariantError, UnknownNodeError):
        return None, kept
    fresh = RetrievalState(graph, turn_text=store_turn_text(engine.store, user_id),
                           archive_source=store_archive(engine.store, user_id))
    content, current = _content_versions(engine.store, user_id, version)
    if not restore(fresh, graph, version, read, store_fetch(engine.store, user_id), content, current):
        return None, kept  # not this tree: the rows' tree may still match it
    engine.adopt(user_id, graph, version)
    cache[user_id] = fresh
    return fresh, None


def _content_versions(store: object, user_id: str, version: int) -> tuple[int | None, Callable[[], int | None] | None]:
    """The user's content version at ``version`` (``None`` when the user moved on or
    the store cannot tell), and a function reading it now."""
    read = getattr(store, "versions", None)
    if read is None:
        return None, None

    def current() -> int | None:
        return int(read(user_id)[1])

    now, content = read(user_id)
    return (int(content) if now == version else None), current
