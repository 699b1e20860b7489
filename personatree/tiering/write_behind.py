"""Writes of shared hot-tier entries after the answer is returned.

A recall that reached the store (tier 3, or an entry found missing or stale) owes
Redis a new entry: its promotions, or the rebuilt tiers. Building, indexing and
encoding one costs about what the recall itself did, and nothing in the answer
depends on it, so it is handed to one background thread per tier. What stays true:

* the process's next request for the same user waits for that user's pending write
  (:meth:`WriteBehind.wait`), so a sequence of requests in one process sees what
  in-process tiering would (the promotions of the previous answer);
* each job checks, when it runs, that the store is still at the version it was
  built from, and Redis refuses an entry older than the one it holds: a late write
  never replaces a newer tree;
* closing the engine waits for every pending write (:meth:`WriteBehind.drain`).

A job that fails is a warning; the next reader finds the entry stale or missing and
rebuilds it.
"""

from __future__ import annotations

import queue
import threading
import warnings
from typing import Callable

__all__ = ["WriteBehind"]


class WriteBehind:
    """One background thread running entry writes in submission order (thread-safe).

    Attributes
    ----------
    done, failed : int
        Jobs run, and jobs that raised.
    """

    def __init__(self) -> None:
        self.done = 0
        self.failed = 0
        self._jobs: queue.Queue[tuple[str, Callable[[], None]]] = queue.Queue()
        self._pending: dict[str, int] = {}
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def submit(self, user_id: str, job: Callable[[], None]) -> None:
        """Run ``job`` (a write of ``user_id``'s entry) in the background."""
        with self._cond:
            self._pending[user_id] = self._pending.get(user_id, 0) + 1
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="personatree-hot-writes", daemon=True)
                self._thread.start()
        self._jobs.put((user_id, job))

    def wait(self, user_id: str, lock: object = None) -> None:
        """Block until no write of ``user_id`` is pending.

        Parameters
        ----------
        user_id : str
        lock : RLock, optional
            The lock the jobs take (the engine's): a thread that holds it does not
            wait, since the job could not finish before it lets go.
        """
        owned = getattr(lock, "_is_owned", None)
        if callable(owned) and owned():
            return
        with self._cond:
            while self._pending.get(user_id):
                self._cond.wait()

    def drain(self) -> None:
        """Block until no write is pending."""
        with self._cond:
            while self._pending:
                self._cond.wait()

    def pending(self) -> int:
        """Writes submitted and not finished."""
        with self._cond:
            return sum(self._pending.values())

    def _run(self) -> None:
        while True:
            user_id, job = self._jobs.get()
            try:
                job()
            except Exception as exc:  # noqa: BLE001 - the answer was returned already
                self.failed += 1
                warnings.warn(f"writing the hot-tier entry of user {user_id!r} failed: {type(exc).__name__}: {exc}",
                              RuntimeWarning, stacklevel=1)
            finally:
                with self._cond:
                    self.done += 1
                    left = self._pending[user_id] - 1
                    if left:
                        self._pending[user_id] = left
                    else:
                        del self._pending[user_id]
                    self._cond.notify_all()
