"""One transaction per public call: writers take turns, stale commits are redone.

:class:`WriteTurns` gives one engine its turn to write a user (the store's
``hold_user``, when it has one: a lock beside a SQLite file, an advisory lock in
PostgreSQL). :func:`run_transaction` runs a unit of work on the user's cached tree
and commits its change set, retrying on a stale version with a jittered backoff.
"""

from __future__ import annotations

import random
import time
from contextlib import contextmanager
from typing import Any, Callable, ContextManager, Iterator, Protocol, TypeVar

from ..errors import StaleStateError
from ..graph import MemoryGraph
from ..config import PersonaTreeConfig
from ..ports import ChangeSet, Store

__all__ = ["Work", "WriteTurns", "run_transaction", "MAX_RETRIES"]

R = TypeVar("R")

#: A unit of work: mutate the graph it is given, return the change set and a result.
Work = Callable[[MemoryGraph], tuple[ChangeSet, R]]

# Stale retries are not given up before this many tries, nor before busy_timeout_s.
MAX_RETRIES = 8


class WriteTurns:
    """Which users this engine holds the write turn of, with the nesting depth.

    Re-entrant: nested transactions of one call take the turn once. A no-op for
    stores without ``hold_user``.
    """

    def __init__(self) -> None:
        self._depth: dict[str, int] = {}

    @contextmanager
    def turn(self, store: Store, user_id: str, timeout_s: float) -> Iterator[None]:
        """Hold the turn to write ``user_id`` in ``store`` for the ``with`` block."""
        hold = getattr(store, "hold_user", None)
        if hold is None or self._depth.get(user_id):
            self._depth[user_id] = self._depth.get(user_id, 0) + 1
            try:
                yield
            finally:
                self._depth[user_id] -= 1
            return
        with hold(user_id, timeout_s=timeout_s):
            self._depth[user_id] = 1
            try:
                yield
            finally:
                self._depth.pop(user_id, None)


class _TreeState(Protocol):
    graph: MemoryGraph
    version: int  # the transaction advances it after a commit


class TransactionHost(Protocol):
    """What a transaction needs of its engine (:class:`personatree.engine.Engine` is one)."""

    @property
    def config(self) -> PersonaTreeConfig: ...

    @property
    def store(self) -> Store: ...

    @property
    def lock(self) -> ContextManager[Any]: ...

    @property
    def turns(self) -> "WriteTurns": ...

    def state(self, user_id: str) -> _TreeState: ...

    def record_embedder(self) -> None: ...

    def drop(self, user_id: str) -> None: ...

    def committed(self, user_id: str, version: int) -> None: ...


def run_transaction(engine: TransactionHost, user_id: str, work: Work[R]) -> R:
    """Run ``work`` on the user's tree and commit its change set atomically.

    Writers of one user take turns (see :class:`WriteTurns`), so the tree read here
    is the one the commit lands on, and a busy user makes callers wait, not fail. A
    stale version (a writer that does not take turns) reloads the tree and runs
    ``work`` again, with a jittered backoff, until ``busy_timeout_s`` has passed. On
    any failure the cached tree is dropped, so memory never runs ahead of the store.

    Raises
    ------
    StoreBusyError
        If the user's turn did not come within ``busy_timeout_s``.
    StaleStateError
        If the user kept changing under non-waiting writers past ``busy_timeout_s``.
    """
    timeout_s = engine.config.busy_timeout_s
    with engine.lock, engine.turns.turn(engine.store, user_id, timeout_s):
        deadline = time.monotonic() + timeout_s
        attempt = 0
        while True:
            state = engine.state(user_id)
            try:
                change, result = work(state.graph)
                if change.is_empty():
                    return result
                change.expected_version = state.version
                # Before the first write, not after it: a failure here loses nothing,
                # and a stored change is never reported as failed.
                engine.record_embedder()
                state.version = engine.store.commit(change)
                engine.committed(user_id, state.version)  # never raises
                return result
            except StaleStateError:
                engine.drop(user_id)
                attempt += 1
                if attempt >= MAX_RETRIES and time.monotonic() >= deadline:
                    raise StaleStateError(
                        f"user {user_id!r} kept changing for {timeout_s:g} s "
                        f"(busy_timeout_s); gave up after {attempt} tries") from None
                # Another instance writes this user without taking turns: a jittered
                # backoff stops lock-step re-collisions between processes.
                time.sleep(random.uniform(0.0, min(0.002 * 2 ** min(attempt, 10), 0.05)))
            except BaseException:
                engine.drop(user_id)
                raise
