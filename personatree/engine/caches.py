"""Per-engine caches of the services, each behind a typed slot.

Services keep derived state per tree (retrieval indexes per user, buffered access
counts, tier states). That state belongs to one engine and goes with it, so it lives
in the engine's :class:`Caches`, not in module globals keyed by the tree. A service
declares a :class:`Slot` once and asks the engine's caches for it; the slot's type
parameter types what comes back.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Generic, TypeVar

__all__ = ["Slot", "Caches"]

T = TypeVar("T")


class Slot(Generic[T]):
    """The key of one service's cache (compared by identity; the name is for ``repr``).

    Parameters
    ----------
    name : str
    per_user : bool
        The cache is a dict keyed by user id of state derived from that user's tree:
        :meth:`Caches.evict` removes a user's entry when the engine stops keeping
        the user in memory.
    """

    __slots__ = ("name", "per_user")

    def __init__(self, name: str, *, per_user: bool = False) -> None:
        self.name = name
        self.per_user = per_user

    def __repr__(self) -> str:
        return f"Slot({self.name!r})"


class Caches:
    """The values of the slots one engine was asked for, each made on first use."""

    def __init__(self) -> None:
        self._values: dict[Slot[Any], Any] = {}
        self._lock = threading.Lock()

    def get(self, slot: Slot[T], make: Callable[[], T]) -> T:
        """The value of ``slot``; ``make()`` builds it the first time (once, under a lock)."""
        with self._lock:
            if slot not in self._values:
                self._values[slot] = make()
            value: T = self._values[slot]
            return value

    def evict(self, user_id: str) -> None:
        """Remove ``user_id``'s entry from every per-user cache (see :class:`Slot`)."""
        with self._lock:
            for slot, value in self._values.items():
                if slot.per_user:
                    value.pop(user_id, None)
