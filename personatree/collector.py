"""The cyclic garbage collector paused while many long-lived objects are made.

Decoding a stored tree, a snapshot or a Redis entry allocates hundreds of thousands
of small objects that all stay alive. Every allocation threshold crossed starts a
collection that walks them all and finds no garbage (about half the time of a large
load). Pausing the collector for the block and resuming it after changes nothing
else: nothing is frozen, and the application's objects are collected as usual.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

__all__ = ["paused_gc"]


@contextmanager
def paused_gc(*, collect_after: bool = False) -> Iterator[None]:
    """The cyclic garbage collector paused for the block (resumed if it was on).

    Parameters
    ----------
    collect_after : bool
        Collect the young generation once the block ends. For blocks that run back to
        back on a background thread: the pause is process-wide, and without it the
        collector would find no moment of its own between them.

    Yields
    ------
    None
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
            if collect_after:
                gc.collect(0)
