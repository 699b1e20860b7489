"""Recall-count bumps as rows every store writes alike.

The checked rows of :meth:`personatree.ports.AccessCounts.add_access`: one per node
still to bump, in id order, with its count and its ``t_access`` as stored text.
"""

from __future__ import annotations

from datetime import datetime
from typing import Mapping

from ..errors import InputError
from .codec import check_text, encode_time
from .codec.values import check_int

__all__ = ["bump_rows"]


def bump_rows(user_id: str, bumps: Mapping[str, tuple[int, datetime]]) -> list[tuple[str, int, str]]:
    """Checked ``(node id, count, t_access text)`` rows of ``bumps``, in id order.

    Parameters
    ----------
    user_id, bumps
        As :meth:`personatree.ports.AccessCounts.add_access` takes them.

    Returns
    -------
    list of tuple

    Raises
    ------
    InputError
        If an id, count or time is malformed, or a count is below 1.
    """
    check_text(user_id, "user_id", nonempty=True)
    out = []
    for nid in sorted(bumps):
        n, at = bumps[nid]
        count = check_int(n, "recall count")
        if count < 1:
            raise InputError(f"a recall count bump must be >= 1, got {count}")
        out.append((check_text(nid, "node id", nonempty=True), count, encode_time(at, "t_access")))
    return out
