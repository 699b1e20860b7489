"""The cyclic garbage collector paused while many long-lived objects are made.

Decoding a stored tree, a snapshot or a Redis entry allocates hundreds of thousands
of small objects that all stay alive; ingesting a batch makes tens of thousands that
the tree keeps or reference counting frees. Every allocation threshold crossed starts a
collection that walks them all and finds no garbage (about half the time of a large
load). Pausing the collector for the block and resuming it after changes nothing
else: nothing is frozen, and the application's objects are collected as usual.

A block may also *settle* what it made: hand it to the oldest generation at once,
as the collector itself would after two young collections that find it all alive.
Only a full collection looks at the oldest generation, and the collector runs one
when the objects promoted into it since the last one reach a quarter of those it
kept; settled objects are not counted as promoted. So a load that is large next to
the process's heap does not make a full collection due by itself (in a small
worker, 150–280 ms walking a heap the load just made, all of it alive): the next
one comes when the application's own promotions make it due, as if the load had
not happened, and walks the loaded objects then. The price: settled objects that
die in a reference cycle wait for such a collection, which they never make due (a
process that loads and drops user after user would grow by a tree a time). So only
what reference counting frees once dropped is settled: a user's tree holds no cycle
(:class:`~personatree.graph.MemoryGraph` keeps no networkx view of itself), nor does
its retrieval state.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

__all__ = ["paused_gc"]


@contextmanager
def paused_gc(*, collect_after: bool = False, settle: bool = False) -> Iterator[None]:
    """The cyclic garbage collector paused for the block (resumed if it was on).

    Parameters
    ----------
    collect_after : bool
        Collect the young generation once the block ends. For blocks that run back to
        back on a background thread: the pause is process-wide, and without it the
        collector would find no moment of its own between them.
    settle : bool
        When the block ends without an error, move every object of the young
        generations to the oldest one, uncounted (see the module's docstring). For
        a block whose objects stay alive for long, and that hold no reference cycle
        once dropped (reference counting must free them): a user's tree and its
        retrieval state. The young generations are collected before the block
        starts, so that what the block settles is what it made, not the
        application's young garbage (a cycle settled uncounted would wait for a
        full collection, with all it holds). Nothing is frozen, and nothing is
        settled while the application keeps objects frozen.

    Yields
    ------
    None
    """
    was = gc.isenabled()
    # An application that froze its own objects (``gc.freeze`` after a preload) keeps
    # them frozen: ``unfreeze`` below would thaw them too, so nothing is settled then.
    settle = settle and was and not gc.get_freeze_count()
    if settle:
        gc.collect(1)  # the young generations only: what is young now is not the block's
    gc.disable()
    try:
        yield
        if settle:
            # ``freeze`` moves every generation to the permanent one and ``unfreeze``
            # moves that into the oldest: two list splices, no walk, and no count of
            # promotions (the count that makes a full collection due).
            gc.freeze()
            gc.unfreeze()
    finally:
        if was:
            gc.enable()
            if collect_after:
                gc.collect(0)
