"""Read-only maps over a snapshot's tables, decoding an entry only when it is looked up.

A state read back from its snapshot holds maps of tens of thousands of entries (each
leaf's turn and when it was said, each turn's leaves, position and session, each
session's turns) of which a recall looks up a few hundred. Made as dicts they cost
more than the recall; these maps share one position dict per key table and decode
an entry from the snapshot's arrays when asked. The state turns them into dicts the
first time a change of the user's data makes it update them
(:meth:`~.state.RetrievalState.refresh`).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, KeysView, Mapping, Sequence, TypeVar

import numpy as np

__all__ = ["ABSENT", "PackedMap", "grouped"]

V = TypeVar("V")

#: What a value function returns for a key of the table the map does not hold.
ABSENT: Any = object()


class PackedMap(Mapping[str, V]):
    """Keys of one table, each with a value decoded from its position.

    Parameters
    ----------
    keys : list of str
        The table.
    at : dict of str to int
        Each key's position in ``keys`` (shared by the maps over one table).
    value : callable
        Position → value, or :data:`ABSENT` for a key this map does not hold.
    order : sequence of int, optional
        The positions the map holds, in its order; default every key, in table order.
    """

    __slots__ = ("_keys", "_at", "_value", "_order")

    def __init__(
        self,
        keys: list[str],
        at: dict[str, int],
        value: Callable[[int], Any],
        order: Sequence[int] | None = None,
    ) -> None:
        self._keys, self._at, self._value, self._order = keys, at, value, order

    def __getitem__(self, key: str) -> V:
        pos = self._at.get(key)
        if pos is not None:
            v = self._value(pos)
            if v is not ABSENT:
                return v  # type: ignore[no-any-return]
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        """The value of ``key``, or ``default``."""
        pos = self._at.get(key)
        if pos is None:
            return default
        v = self._value(pos)
        return default if v is ABSENT else v

    def __contains__(self, key: object) -> bool:
        pos = self._at.get(key) if isinstance(key, str) else None
        return pos is not None and (self._order is None or self._value(pos) is not ABSENT)

    def __iter__(self) -> Iterator[str]:
        if self._order is None:
            return iter(self._keys)
        keys = self._keys
        return (keys[i] for i in self._order)

    def __len__(self) -> int:
        return len(self._keys) if self._order is None else len(self._order)

    def key_set(self) -> KeysView[str] | set[str]:
        """The keys as a set, for comparing with another (the table's own view when the
        map holds every key: compared in C, not key by key in Python)."""
        return self._at.keys() if len(self) == len(self._keys) else set(self)

    def as_dict(self) -> dict[str, V]:
        """Every entry, as a dict in the map's order."""
        value, keys = self._value, self._keys
        order = range(len(keys)) if self._order is None else self._order
        return {keys[i]: value(i) for i in order}


def grouped(codes: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """The positions of each code's members, and the codes in order of first member (pure).

    Parameters
    ----------
    codes : ndarray of int
        A code in ``[0, n)`` per member, or −1 for a member of no group.
    n : int
        How many codes there are.

    Returns
    -------
    (ndarray, ndarray, list of int)
        The members' positions grouped by code (in member order within a code), the
        bounds of each code's group in it (``n + 1`` of them), and the codes that have
        members, by their first member.
    """
    members = np.flatnonzero(codes >= 0)
    by_code = members[np.argsort(codes[members], kind="stable")]
    bounds = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(codes[members], minlength=n), out=bounds[1:])
    found, first = np.unique(codes[members], return_index=True)
    return by_code, bounds, found[np.argsort(first, kind="stable")].tolist()
