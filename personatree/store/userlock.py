"""Per-user write turns for a store file shared by several processes.

Commits are guarded by the user's version (optimistic), which is safe but not fair: a
writer whose work takes longer than the gap between other writers' commits is refused
again and again. Writers of one user therefore take turns: each holds the user's turn
from reading the tree to committing, and the others wait.

For a SQLite file the turn is an **open-file-description lock** (``F_OFD_SETLK``) on one
byte of ``<file>-lock`` chosen by a hash of the user id: one small file for every user,
held per open descriptor (so two stores in one process exclude each other too, unlike
POSIX record locks), released by the kernel when the holder dies, so a crashed process
never leaves a user locked. Where OFD locks are missing (not Linux) the whole file is
locked with ``flock``: all users then share one turn, which is slower but still correct.

Safety never rests on the turn: the version check still refuses a commit built on an
old tree, so a process that does not take turns (an older version, another tool) only
costs retries.
"""

from __future__ import annotations

import errno
import hashlib
import os
import random
import struct
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..errors import StoreBusyError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no turns, the version check alone guards
    fcntl = None  # type: ignore[assignment]

__all__ = ["lock_path", "user_file_turn"]

_OFD = getattr(fcntl, "F_OFD_SETLK", None) if fcntl is not None else None
# struct flock on LP64 Linux: short l_type, short l_whence, off_t l_start, off_t l_len,
# pid_t l_pid (0 for OFD locks), padded to 32 bytes.
_FLOCK = "hhqqi4x"


def lock_path(db_path: Path) -> Path:
    """The lock file of a SQLite store: ``<file>-lock`` beside it (like ``-wal``)."""
    return db_path.with_name(db_path.name + "-lock")


def _byte(user_id: str) -> int:
    # 2**62 slots: two users share a byte (and a turn) only on a hash collision.
    return int.from_bytes(hashlib.sha256(user_id.encode("utf-8", "surrogatepass")).digest()[:8], "big") >> 2


def _try(fd: int, offset: int) -> bool:
    try:
        if _OFD is not None and struct.calcsize(_FLOCK) == 32:
            fcntl.fcntl(fd, _OFD, struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0))
        else:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            return False
        raise
    return True


@contextmanager
def user_file_turn(path: Path, user_id: str, timeout_s: float) -> Iterator[None]:
    """Hold ``user_id``'s turn in the lock file ``path`` for the ``with`` block.

    Parameters
    ----------
    path : Path
        The lock file (created when missing).
    user_id : str
    timeout_s : float
        Longest wait for the turn.

    Raises
    ------
    StoreBusyError
        If another process held the user's turn for longer than ``timeout_s``.
    """
    if fcntl is None:  # pragma: no cover
        yield
        return
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError:
        # No lock file can be made (a read-only folder): no turns; commits stay
        # guarded by the version check, as for writers that do not take turns.
        yield
        return
    try:
        offset = _byte(user_id)
        deadline = time.monotonic() + timeout_s
        pause = 0.0005
        while not _try(fd, offset):
            if time.monotonic() >= deadline:
                raise StoreBusyError(
                    f"another writer held user {user_id!r} for more than {timeout_s:g} s (busy_timeout_s)")
            # Short, jittered polls: waiters notice a released turn within a few ms,
            # and do not wake in lock-step.
            time.sleep(random.uniform(pause / 2, pause))
            pause = min(pause * 2, 0.005)
        yield
    finally:
        os.close(fd)  # closing the descriptor drops the lock
