"""The garbage collector's pause: resumed after the block, never left off; what a block settles."""

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


def _generation_of(obj: object) -> int:
    return next(g for g in range(3) if any(o is obj for o in gc.get_objects(generation=g)))


def test_a_settled_block_leaves_its_objects_in_the_oldest_generation_uncounted() -> None:
    gc.collect()
    before = gc.get_count()
    with paused_gc(settle=True):
        kept = [_Cycle() for _ in range(5_000)]
        assert _generation_of(kept) == 0
    assert gc.isenabled() and not gc.get_freeze_count()  # nothing left frozen
    assert _generation_of(kept) == 2 and _generation_of(kept[-1]) == 2
    # No promotion counted: the oldest generation's count is where it was, so these
    # objects make no full collection due; a full collection still reaches them.
    assert gc.get_count()[2] == before[2]
    ref = weakref.ref(kept[0])
    kept.clear()
    gc.collect()
    assert ref() is None


def test_a_block_that_fails_or_runs_with_the_collector_off_settles_nothing() -> None:
    gc.collect()
    try:
        with paused_gc(settle=True):
            young = [_Cycle()]
            raise RuntimeError("the build failed")
    except RuntimeError:
        pass
    assert gc.isenabled() and _generation_of(young) < 2
    gc.disable()
    try:
        with paused_gc(settle=True):
            off = [_Cycle()]
        assert _generation_of(off) == 0
    finally:
        gc.enable()


def test_a_settled_block_settles_what_it_made_not_young_garbage_from_before() -> None:
    gc.collect()
    ref = weakref.ref(_Cycle())  # young garbage of the application, made before the block
    with paused_gc(settle=True):
        kept = [_Cycle()]
    assert ref() is None  # collected, not settled where only a full collection looks
    assert _generation_of(kept) == 2


def test_objects_the_application_froze_stay_frozen() -> None:
    gc.collect()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with paused_gc(settle=True):
            young = [_Cycle()]
        # Thawing would empty the permanent generation; a few frozen objects may die
        # meanwhile (another thread dropping its last reference), which is no thaw.
        assert frozen - frozen // 100 <= gc.get_freeze_count() <= frozen
        assert _generation_of(young) < 2
    finally:
        gc.unfreeze()
