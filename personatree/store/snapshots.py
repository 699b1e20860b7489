"""The stores' shared rules for ``retrieval_snapshots``: recall's derived built state.

A row is ``(user_id, version, fingerprint, data)``: the user's version the state was
built at, a fingerprint of the code that built it and the encoded state (opaque bytes
to the store, see :mod:`personatree.retrieval.snapshot`). Every commit of the user
deletes the row, and a row is written only while the user is still at its version,
so a stored snapshot always describes the user's current data. The rows are a cache:
writing them never waits long for a lock, and a failed write is dropped, not raised.
"""

from __future__ import annotations

from . import codec
from ..errors import InputError

__all__ = ["Snapshot", "check_snapshot"]

#: ``(version, fingerprint, data)`` of one user's snapshot.
Snapshot = tuple[int, str, bytes]


def check_snapshot(version: object, fingerprint: object, data: object) -> tuple[int, str, bytes]:
    """The arguments of a ``put_retrieval_snapshot`` call, checked.

    Raises
    ------
    InputError
        A version that is not a non-negative integer, a fingerprint that is not text,
        or data that is not bytes.
    """
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise InputError("version must be a non-negative integer")
    codec.check_text(fingerprint, "fingerprint")
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise InputError("data must be bytes")
    return version, str(fingerprint), bytes(data)
