"""Write-behind access statistics: each recall bumps ``recall_count`` and ``t_access``.

Writing on every recall would turn a read into a transaction (and bump the user's
version, invalidating every cache). Instead the bumps are buffered per engine and
flushed through ``Engine.transact`` every N recalls and when the engine closes, as
``stats_only`` commits (a user whose tree the engine does not hold is bumped in the
store directly, ``add_access``, without loading the tree): the version moves (a concurrent writer's tree is reloaded,
so no bump is lost), the content version does not, so what was derived from the
content (the retrieval snapshot, a shared hot tier's entries) stays current.
Tiering reads these fields.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Iterable

from ..engine.caches import Slot
from ..engine.core import Engine, EngineLike, engine_of
from ..graph import MemoryGraph
from ..ports import AccessCounts, ChangeSet
from ..types import Node

__all__ = ["AccessLog", "access_log", "apply_bumps"]


@dataclass(slots=True)
class _Pending:
    count: int = 0
    last: datetime | None = None


def apply_bumps(graph: MemoryGraph, bumps: dict[str, _Pending]) -> list[Node]:
    """Add buffered bumps to the nodes still in ``graph``; return the changed nodes."""
    changed = []
    for nid, b in bumps.items():
        if nid not in graph:
            continue  # forgotten or pruned since the recall
        n = graph.node(nid)
        n.recall_count += b.count
        if b.last is not None and (n.t_access is None or b.last > n.t_access):
            n.t_access = b.last
        changed.append(n)
    return changed


@dataclass(slots=True)
class AccessLog:
    """Buffered access bumps of one :class:`~personatree.engine.Engine`.

    Parameters
    ----------
    engine : Engine
        Flushed through its ``transact``.
    every : int
        Flush after this many recorded recalls.
    """

    engine: Engine
    every: int = 32
    _pending: dict[str, dict[str, _Pending]] = field(default_factory=dict)
    _recalls: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, user_id: str, node_ids: Iterable[str], at: datetime) -> None:
        """Note that one recall of ``user_id`` used ``node_ids`` at ``at``; maybe flush."""
        with self._lock:
            bucket = self._pending.setdefault(user_id, {})
            for nid in node_ids:
                p = bucket.setdefault(nid, _Pending())
                p.count += 1
                p.last = at if p.last is None or at > p.last else p.last
            self._recalls += 1
            due = self._recalls >= self.every
        if due:
            self.flush()

    def pending(self, user_id: str) -> dict[str, int]:
        """Buffered recall counts of a user (for inspection and tests)."""
        with self._lock:
            return {k: v.count for k, v in self._pending.get(user_id, {}).items()}

    def flush(self) -> None:
        """Write every buffered bump, one transaction per user."""
        with self._lock:
            pending, self._pending, self._recalls = self._pending, {}, 0
        for user_id, bumps in pending.items():
            if self._add_direct(user_id, bumps):
                continue

            def work(
                graph: MemoryGraph, bumps: dict[str, _Pending] = bumps, uid: str = user_id
            ) -> tuple[ChangeSet, None]:
                # Only recall statistics change: the user's retrieval snapshot stays valid.
                return ChangeSet(user_id=uid, upsert_nodes=apply_bumps(graph, bumps), stats_only=True), None

            self.engine.transact(user_id, work)

    def _add_direct(self, user_id: str, bumps: dict[str, _Pending]) -> bool:
        # A user whose tree this engine does not hold (a stateless worker served it
        # from a shared hot tier) is bumped in the store, without loading the tree.
        engine = self.engine
        store = engine.store
        if not isinstance(store, AccessCounts) or user_id in engine.trees:
            return False
        with engine.lock, engine.turns.turn(engine.store, user_id, engine.config.busy_timeout_s):
            if user_id in engine.trees:
                return False  # loaded meanwhile: bumped through the tree, which stays current
            version = store.add_access(user_id, {k: (b.count, b.last) for k, b in bumps.items() if b.last is not None})
            if version is not None:
                engine.committed(user_id, version)
        return True


_LOG: Slot[AccessLog] = Slot("retrieval.access")


def access_log(tree: EngineLike, every: int) -> AccessLog:
    """The access log of an engine, made on first use with a close hook that flushes it."""
    engine = engine_of(tree)

    def make() -> AccessLog:
        log = AccessLog(engine, every)
        engine.on_close(log.flush)
        return log

    return engine.caches.get(_LOG, make)
