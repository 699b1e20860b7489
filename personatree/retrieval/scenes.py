"""The order a session's turns were told in: each turn's previous and next turn.

Recall lends a turn's relevance to the turns told just around it (one scene), so it
needs each session's turns in time order. Every leaf of a turn shares its
provenance time and message index, kept as the turn key ("observation id#turn") and
the leaf's time in POSIX seconds (ordered as the times are), so no leaf is read for
them. Log order breaks ties of time (a batch observed at one instant).
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from ..types import Node

__all__ = ["scene_of"]


def scene_of(
    turns: Iterable[str],
    turn_leaves: Mapping[str, Sequence[str]],
    leaf_said: Mapping[str, tuple[float, int, str]],
    turn_seq: Mapping[str, int],
    nodes: Mapping[str, Node],
) -> dict[str, tuple[str | None, str | None]]:
    """Each turn of one session → (previous turn, next turn) in the order told (pure).

    Parameters
    ----------
    turns : iterable of str
        The session's turn keys.
    turn_leaves : mapping
        Turn key → its leaf ids (the first is read).
    leaf_said : mapping
        Leaf id → (POSIX time, stance side, session), as the state keeps it.
    turn_seq : mapping
        Turn key → its position in the log (−1 when unknown).
    nodes : mapping
        Leaf id → node, read only for a leaf whose time is not kept.

    Returns
    -------
    dict
        Turn key → (previous or ``None``, next or ``None``).
    """
    order: list[tuple[float, int, int, str]] = []
    for tk in turns:
        first = turn_leaves[tk][0]
        hit = leaf_said.get(first)
        _, sep, index = tk.rpartition("#")
        if hit is not None and sep and index.isdigit():
            order.append((hit[0], turn_seq.get(tk, -1), int(index), tk))
        else:
            p = nodes[first].provenance[0]
            order.append((p.at.timestamp(), turn_seq.get(tk, -1), p.turn, tk))
    order.sort()
    keys = [o[-1] for o in order]
    return {
        tk: (keys[i - 1] if i else None, keys[i + 1] if i + 1 < len(keys) else None)
        for i, tk in enumerate(keys)
    }
