"""The engine core: the collaborators, the lock, the cached trees and the transaction.

Services (insertion, consolidation, retrieval, tiering, governance, import/export)
receive an :class:`Engine` and work through its public methods; the
:class:`~personatree.api.PersonaTree` facade validates public input and hands the
calls on to them. The engine keeps each user's tree in memory as a
:class:`MemoryGraph` (with its embedding matrix), checked against the store's
per-user version counter before use, so writes from other processes are noticed.
"""

from __future__ import annotations

import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Protocol, TypeVar, Union

from ..config import PersonaTreeConfig
from ..errors import ConfigError, UnknownUserError
from ..graph import MemoryGraph
from ..inputs import check_id
from ..ports import Clock, Embedder, JournalEvent, Judge, Store, TokenCounter
from ..schema import SchemaRegistry
from ..types import Node
from .caches import Caches
from .embedder_record import record_embedder
from .transact import Work, WriteTurns, run_transaction

__all__ = ["Engine", "TreeState", "Replayer", "HasEngine", "EngineLike", "engine_of"]

R = TypeVar("R")


@dataclass(slots=True)
class TreeState:
    """A user's cached tree and the store version it was read at."""

    graph: MemoryGraph
    version: int


#: Redoes one kind of journal event on a graph being rebuilt.
Replayer = Callable[["Engine", MemoryGraph, JournalEvent], None]


class Engine:
    """The core a facade and its services share.

    Parameters
    ----------
    store : Store
        Durable storage.
    config : PersonaTreeConfig
    registry : SchemaRegistry
    embedder : Embedder
    judge : Judge
    clock : Clock
    redactor : callable, optional
        Applied to every message before it is stored.
    token_counter : TokenCounter, optional
        Counts recall and profile budgets; default the shared counter of
        ``config.recall.model``.
    replayers : mapping of str to Replayer, optional
        How :meth:`~personatree.api.PersonaTree.rebuild` redoes journal events of
        kinds other than ``observe`` and ``forget``.
    embedder_recorded : bool
        Whether the store records this embedder already; when not, the first commit
        records it.
    """

    def __init__(
        self,
        store: Store,
        *,
        config: PersonaTreeConfig,
        registry: SchemaRegistry,
        embedder: Embedder,
        judge: Judge,
        clock: Clock,
        redactor: Callable[[str], str] | None = None,
        token_counter: TokenCounter | None = None,
        replayers: Mapping[str, Replayer] | None = None,
        embedder_recorded: bool = True,
    ) -> None:
        self.store = store
        self.config = config
        self.registry = registry
        self.embedder = embedder
        self.judge = judge
        self.clock = clock
        self.redactor = redactor
        self.token_counter = token_counter
        self.replayers: dict[str, Replayer] = dict(replayers or {})
        self.embedder_recorded = embedder_recorded
        self.lock = threading.RLock()
        self.turns = WriteTurns()
        #: Each user's tree as last read from the store.
        self.trees: dict[str, TreeState] = {}
        # The users kept in memory, least recently read first (``config.resident_users``).
        self._resident: OrderedDict[str, None] = OrderedDict()
        # Its own lock: a hot tier's writer thread reads trees without the engine's.
        self._resident_lock = threading.Lock()
        #: The services' per-engine state (see :mod:`~personatree.engine.caches`).
        self.caches = Caches()
        # Services with write-behind state (recall access counts) flush here on close.
        self._close_hooks: list[Callable[[], None]] = []
        # Services that keep a copy of users' trees elsewhere (a shared hot tier)
        # hear of every commit and deletion here.
        self._commit_hooks: list[Callable[[str, int], None]] = []

    # -- ids ----------------------------------------------------------------------------

    def check_user(self, user_id: object) -> str:
        """A valid user id, or :class:`~personatree.errors.InputError`."""
        return check_id(user_id, "user_id", self.config.limits)

    def check_node(self, node_id: object) -> str:
        """A valid node id, or :class:`~personatree.errors.InputError`."""
        return check_id(node_id, "node_id", self.config.limits)

    # -- cached trees -------------------------------------------------------------------

    def _load(self, user_id: str) -> TreeState:
        # One snapshot for rows and version: a cache can never be newer than its version.
        nodes, edges, version = self.store.load_graph_with_version(user_id)
        self._check_dims(user_id, nodes)
        return TreeState(MemoryGraph.from_parts(user_id, nodes, edges), version)

    def _check_dims(self, user_id: str, nodes: Iterable[Node]) -> None:
        dim = self.embedder.dim
        for n in nodes:
            if n.embedding is not None and n.embedding.shape[-1] != dim:
                # A store written before the embedder was recorded in it (see open()).
                raise ConfigError(
                    f"user {user_id!r} was embedded with {n.embedding.shape[-1]}-dimensional vectors; "
                    f"the embedder {self.embedder.name!r} gives {dim}: open the store with the "
                    "embedder it was built with"
                )

    def adopt(self, user_id: str, graph: MemoryGraph, version: int) -> TreeState:
        """Hold ``graph`` as the user's tree at ``version`` (call under :attr:`lock`).

        For a tree read from a copy of the user's rows kept at that version (a
        retrieval snapshot): it must hold exactly what the store holds at ``version``.

        Raises
        ------
        ConfigError
            If its embeddings are not of the engine's embedder's dimension.
        """
        self._check_dims(user_id, graph.nodes())
        state = TreeState(graph, version)
        self.trees[user_id] = state
        self._keep(user_id)
        return state

    def state(self, user_id: str) -> TreeState:
        """The cached tree of a user, reloaded when the store's version moved on.

        Read it under :attr:`lock`; mutate its graph only inside :meth:`transact`.
        """
        version = self.store.version(user_id)
        cached = self.trees.get(user_id)
        if cached is None or cached.version != version:
            cached = self._load(user_id)
            self.trees[user_id] = cached
        self._keep(user_id)
        return cached

    def _keep(self, user_id: str) -> None:
        # A process that meets many users keeps the most recently read ones: their
        # trees and everything derived from them are read back from the store when
        # next met, and nothing stored is touched.
        cap = self.config.resident_users
        gone: list[str] = []
        with self._resident_lock:
            resident = self._resident
            resident[user_id] = None
            resident.move_to_end(user_id)  # the last, so never one of those that go
            while cap is not None and len(resident) > cap:
                gone.append(resident.popitem(last=False)[0])
        for oldest in gone:
            self.evict(oldest)

    def evict(self, user_id: str) -> None:
        """Stop keeping a user in memory: the tree and every per-user cache built over it.

        Nothing stored changes; the next read loads the user from the store (and a
        recall reads back the user's stored retrieval snapshot, when it is current).
        """
        with self._resident_lock:
            self._resident.pop(user_id, None)
        self.trees.pop(user_id, None)
        self.caches.evict(user_id)

    @property
    def resident(self) -> list[str]:
        """The users this engine keeps in memory, least recently read first."""
        with self._resident_lock:
            return list(self._resident)

    def live_graph(self, user_id: str, *, must_exist: bool = True) -> MemoryGraph:
        """The live in-memory tree of a user (read it; mutate only inside a commit).

        Raises
        ------
        UnknownUserError
            With ``must_exist``, if nothing is stored for the user.
        """
        state = self.state(user_id)
        if must_exist and state.version == 0:
            raise UnknownUserError(f"no data stored for user {user_id!r}")
        return state.graph

    def existing_state(self, user_id: str) -> TreeState:
        """:meth:`state`, or :class:`UnknownUserError` when nothing is stored for the user."""
        state = self.state(user_id)
        if state.version == 0:
            raise UnknownUserError(f"no data stored for user {user_id!r}")
        return state

    def drop(self, user_id: str) -> None:
        """Forget the cached tree of a user (the next read loads it from the store)."""
        self.trees.pop(user_id, None)

    # -- writing ------------------------------------------------------------------------

    def transact(self, user_id: str, work: Work[R]) -> R:
        """Run ``work`` on the user's tree and commit its change set atomically.

        See :func:`~personatree.engine.transact.run_transaction`.
        """
        return run_transaction(self, user_id, work)

    def record_embedder(self) -> None:
        """Record the embedder in the store before its first write (a no-op after)."""
        if not self.embedder_recorded:
            record_embedder(self.store, self.embedder)
            self.embedder_recorded = True

    def on_commit(self, hook: Callable[[str, int], None]) -> None:
        """Call ``hook(user_id, version)`` after each commit of this engine.

        ``version`` is the user's store version after the commit; 0 means the user's
        data was deleted.
        """
        self._commit_hooks.append(hook)

    def committed(self, user_id: str, version: int) -> None:
        """Tell the commit hooks that ``user_id`` is now at ``version`` (0: deleted).

        Never raises: the change is stored, and a stored change is never reported
        as failed. A failing hook is reported as a warning; what it keeps must
        notice the missed version itself (by comparing versions).
        """
        for hook in self._commit_hooks:
            try:
                hook(user_id, version)
            except Exception as exc:  # noqa: BLE001 - the commit already happened
                warnings.warn(f"a commit hook failed for user {user_id!r}: {type(exc).__name__}: {exc}",
                              RuntimeWarning, stacklevel=2)

    # -- lifetime -----------------------------------------------------------------------

    def on_close(self, hook: Callable[[], None]) -> None:
        """Call ``hook`` when the engine closes (before the store does)."""
        self._close_hooks.append(hook)

    def close(self) -> None:
        """Run the close hooks (write-behind flushes), then close the store."""
        for hook in self._close_hooks:
            hook()
        self.store.close()


class HasEngine(Protocol):
    """Anything that hands out its engine (the :class:`~personatree.api.PersonaTree` facade)."""

    @property
    def engine(self) -> Engine: ...


#: What a service accepts: the engine, or the facade that owns one.
EngineLike = Union[Engine, HasEngine]


def engine_of(owner: EngineLike) -> Engine:
    """The engine itself, or the engine of a facade."""
    return owner if isinstance(owner, Engine) else owner.engine
