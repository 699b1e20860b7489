"""Recall-count bumps as rows every store writes alike (``add_access``).

A process that serves a user's recalls without holding the user's tree (a stateless
worker answering from a shared hot tier) still owes the store its write-behind
access statistics. Loading the whole tree to add a few counts would cost what the
hot tier saved, so stores take the bumps themselves: ``recall_count`` grows by the
count and ``t_access`` becomes the later of the stored and the bumped time, for the
nodes still in the tree, in one commit of recall statistics only (the version moves,
the content version and the retrieval snapshot stay, as with a ``stats_only``
:class:`~personatree.ports.ChangeSet`).
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
    user_id : str
    bumps : mapping
        Node id → (recalls to add, when the last of them happened).

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
