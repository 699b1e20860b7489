"""Per-user locks for the consolidation job, so overlapping runs are safe and cheap.

Safety does not rest on the lock: a plan is applied inside the user's write turn and
rebased onto whatever changed since it was made (see
:mod:`~personatree.consolidate.rebase`), so two overlapping passes over one user never
write the same nodes: the second keeps only the parts the first left untouched. The
lock only stops a second run from doing the same work: it *skips* a user another run
holds.

* :class:`FileLocks` — ``flock`` on one file per user in a directory next to the SQLite
  file. The kernel releases the lock when the holder dies, so a crashed run never
  leaves a user locked. POSIX only; it covers every process on one host (SQLite is
  single-host anyway).
* :class:`ThreadLocks` — in-process locks, for in-memory stores and tests.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import Protocol

__all__ = ["UserLocks", "FileLocks", "ThreadLocks", "default_lock_dir"]


class UserLocks(Protocol):
    """Non-blocking per-user mutual exclusion."""

    def acquire(self, user_id: str) -> bool:
        """Take the user's lock if it is free; False when someone else holds it."""
        ...

    def release(self, user_id: str) -> None:
        """Give the user's lock back."""
        ...


def default_lock_dir(store_url: str) -> Path | None:
    """``<file>.locks`` next to a SQLite store; None for a non-file store."""
    if store_url.startswith("memory://"):
        return None
    path = store_url
    if store_url.startswith("sqlite:///"):
        path = store_url[len("sqlite:///"):]
    elif "://" in store_url:
        return None
    return Path(path).expanduser().resolve().parent / (Path(path).name + ".locks")


class FileLocks:
    """``flock``-based user locks in ``directory`` (created if missing).

    Parameters
    ----------
    directory : str or Path
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._held: dict[str, int] = {}

    def _path(self, user_id: str) -> Path:
        # Hash the id: user ids may hold characters that are not safe in file names.
        return self.directory / (hashlib.sha256(user_id.encode()).hexdigest()[:32] + ".lock")

    def acquire(self, user_id: str) -> bool:
        """Take the lock without waiting."""
        import fcntl

        if user_id in self._held:
            return False
        fd = os.open(self._path(user_id), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._held[user_id] = fd
        return True

    def release(self, user_id: str) -> None:
        """Release (closing the descriptor drops the flock)."""
        fd = self._held.pop(user_id, None)
        if fd is not None:
            os.close(fd)


_THREAD_LOCKS: dict[str, threading.Lock] = {}
_GUARD = threading.Lock()


class ThreadLocks:
    """In-process user locks shared by every instance (threads of one process)."""

    def acquire(self, user_id: str) -> bool:
        """Take the lock without waiting."""
        with _GUARD:
            lock = _THREAD_LOCKS.setdefault(user_id, threading.Lock())
        return lock.acquire(blocking=False)

    def release(self, user_id: str) -> None:
        """Release the lock if held."""
        lock = _THREAD_LOCKS.get(user_id)
        if lock is not None and lock.locked():
            lock.release()
