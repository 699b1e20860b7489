"""The garbage collector's pause: resumed after the block, never left off."""

from __future__ import annotations

import gc
import weakref

from personatree.collector import paused_gc


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_the_pause_resumes_the_collector_and_keeps_it_off_if_it_was() -> None:
    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_cycle_made_in_a_block_that_collects_after_is_gone_when_it_ends() -> None:
    gc.collect()
    with paused_gc(collect_after=True):
        ref = weakref.ref(_Cycle())
        assert ref() is not None  # the pause keeps the cycle alive inside the block
    assert ref() is None
