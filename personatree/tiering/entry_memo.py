"""A small in-process memo of decoded hot-tier entries and their hot indexes.

A worker that serves the same user again, at the same entry, need not transfer,
decode and re-index it: it keeps the last few entries it decoded, with the graph and
hot indexes built from them, keyed by the user and the entry's id (``eid``, new
with every write of the entry, so a promotion written at the same store version is
a different entry). Whether an entry may be served is still decided on every
request against the store's content version; the memo only saves rebuilding what
the current entry already describes. Bounded (least recently used goes first):
each entry holds ~1,200 nodes with their embeddings at the default tier sizes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..graph import MemoryGraph
from .hot import HotIndex

if TYPE_CHECKING:  # pragma: no cover
    from ..hot_redis import EntryRows, HotEntry

__all__ = ["Decoded", "EntryMemo"]


@dataclass(slots=True)
class Decoded:
    """One entry as a process decoded it, and what it built from it so far.

    Attributes
    ----------
    eid : bytes
        The entry's id in Redis.
    entry : HotEntry
        Without its nodes until ``graph`` is built (they are in ``rows``).
    rows : EntryRows or None
        The entry's nodes, decoded on demand (``None``: ``entry`` holds them).
    graph : MemoryGraph or None
        :func:`~personatree.tiering.entries.entry_graph` of the entry, once built.
    t1, t12 : HotIndex or None
        The tier-1 and tier-1+2 hot indexes, once built.
    """

    eid: bytes
    entry: "HotEntry"
    rows: "EntryRows | None" = None
    graph: MemoryGraph | None = None
    t1: HotIndex | None = None
    t12: HotIndex | None = None


class EntryMemo:
    """The last ``size`` decoded entries, by user (thread-safe).

    Parameters
    ----------
    size : int
        Entries kept; 0 keeps none.
    """

    def __init__(self, size: int = 16) -> None:
        self.size = size
        self.hits = 0
        self._items: OrderedDict[str, Decoded] = OrderedDict()
        self._lock = threading.Lock()

    def eid_of(self, user_id: str) -> bytes | None:
        """The id of the user's entry kept here (``None``: none kept)."""
        with self._lock:
            got = self._items.get(user_id)
            return None if got is None else got.eid

    def get(self, user_id: str, eid: bytes | None) -> Decoded | None:
        """The user's decoded entry if it is the one with id ``eid``."""
        with self._lock:
            got = self._items.get(user_id)
            if got is None or eid is None or got.eid != eid:
                return None
            self._items.move_to_end(user_id)
            self.hits += 1
            return got

    def put(self, user_id: str, decoded: Decoded) -> None:
        """Keep ``decoded`` as the user's entry (dropping the least recently used)."""
        if self.size <= 0:
            return
        with self._lock:
            self._items[user_id] = decoded
            self._items.move_to_end(user_id)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def drop(self, user_id: str) -> None:
        """Forget the user's entry (its indexes are about to be changed in place)."""
        with self._lock:
            self._items.pop(user_id, None)
