"""Writers of one user take turns (``hold_user``), on SQLite and PostgreSQL.

A turn excludes other holders of the same user (in this process and in others), never
other users; a wait past its timeout is a typed ``StoreBusyError``; a holder that dies
(SIGKILL) frees the turn at once; and ``PersonaTree`` writers wait their turn instead of
failing with ``StaleStateError``.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from personatree.api import PersonaTree
from personatree.embedders import HashingEmbedder
from personatree.errors import StoreBusyError
from personatree.store import open_store
from tests.pg_fixtures import pg_server_url, pg_url  # noqa: F401 - fixtures


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "turns.db")
    else:
        yield request.getfixturevalue("pg_url")


def test_a_turn_excludes_the_same_user_only_and_times_out_typed(url: str) -> None:
    a, b = open_store(url), open_store(url)
    try:
        with a.hold_user("ana"):
            with b.hold_user("bo", timeout_s=1):
                pass  # another user is never held up
            t = time.monotonic()
            with pytest.raises(StoreBusyError, match="ana"):
                with b.hold_user("ana", timeout_s=0.3):
                    pass
            assert 0.25 <= time.monotonic() - t < 5
        with b.hold_user("ana", timeout_s=1):
            pass  # released with the block
    finally:
        a.close()
        b.close()


HOLDER = textwrap.dedent(
    r'''
    import sys, time
    from personatree.store import open_store
    store = open_store(sys.argv[1])
    with store.hold_user("ana"):
        print("holding", flush=True)
        time.sleep(120)
    '''
)


def test_a_killed_holder_frees_the_turn(url: str) -> None:
    open_store(url).close()  # create / migrate first
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, url], stdout=subprocess.PIPE, text=True)
    store = open_store(url)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "holding"
        with pytest.raises(StoreBusyError):
            with store.hold_user("ana", timeout_s=0.3):
                pass
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        with store.hold_user("ana", timeout_s=5):
            pass
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        store.close()


def test_writers_of_one_user_wait_for_each_others_turn(url: str) -> None:
    """A writer whose turn is taken waits, then commits on the tree the other left."""
    trees = [PersonaTree.open(url, embedder=HashingEmbedder(64)) for _ in range(2)]
    try:
        trees[0].observe("ana", "I like green tea.", observation_id="o0")
        holder = open_store(url)
        done: list[str] = []
        with holder.hold_user("ana"):
            th = threading.Thread(target=lambda: done.append(
                trees[1].observe("ana", "I play the cello.", observation_id="o1").observation_id))
            th.start()
            time.sleep(0.5)
            assert not done  # waiting, not failing
        th.join(30)
        holder.close()
        assert done == ["o1"]
        assert {o.id for o in trees[0].store.observations("ana")} == {"o0", "o1"}
        trees[0].graph("ana").check()
    finally:
        for t in trees:
            t.close()
