"""Reading a user's stored snapshot on another thread while the tree loads.

A first recall in a new process reads the user's tree from its tables, then the
snapshot of the retrieval state built over it (:mod:`.snapshot`): tens of megabytes
read as one blob, during which the database driver holds no interpreter lock. The
two reads are independent, so the snapshot is read ahead on a thread of its own
while the tree is read and decoded, and taken when the state is restored. What is
taken is checked exactly as a snapshot read then would be (its version and code):
a commit that slipped in between makes it unusable, and it is read again.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

__all__ = ["ReadAhead", "read_ahead"]

Snapshot = tuple[int, str, bytes]


class ReadAhead:
    """One read of a user's stored snapshot, started now on a daemon thread.

    Parameters
    ----------
    read : callable
        ``read() -> (version, fingerprint, data) | None``, e.g. the store's
        ``retrieval_snapshot`` for one user.
    """

    def __init__(self, read: Callable[[], Snapshot | None]) -> None:
        self._read = read
        self._row: Snapshot | None = None
        self._failed = False
        self._thread = threading.Thread(target=self._run, name="personatree-read-ahead", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._row = self._read()
        except Exception:  # noqa: BLE001 - taken as "not read": the caller reads it itself
            self._failed = True

    def take(self) -> tuple[bool, Snapshot | None]:
        """Wait for the read: ``(done, row)``; ``done`` is False when it failed.

        A failed read is not an answer: the caller reads again, in its own thread,
        and any error of the store surfaces there as it always would.
        """
        self._thread.join()
        row, self._row = self._row, None  # the blob is handed over once, not kept
        return (not self._failed), row


def read_ahead(store: Any, user_id: str) -> ReadAhead | None:
    """Start reading ``user_id``'s snapshot from ``store``, or ``None`` without one.

    Parameters
    ----------
    store : Store
        Anything with ``retrieval_snapshot(user_id)``.
    user_id : str
        A validated user id.

    Returns
    -------
    ReadAhead or None
    """
    read = getattr(store, "retrieval_snapshot", None)
    if read is None:
        return None
    return ReadAhead(lambda: read(user_id))
