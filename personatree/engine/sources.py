"""Where reads of a user find what the tree does not hold: whole turns and the archive.

A turn is indexed lexically by its whole message as observed, read from the
observation log through a :data:`TurnText` loader; the user's archive (leaves that
consolidation's bounds took out of the tree) is read through an
:data:`ArchiveSource`. Used by the retrieval state (:mod:`personatree.retrieval.state`)
and by the engine's own reads (search over archived leaves).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, NamedTuple, Sequence

from ..types import Node

__all__ = ["ArchiveSource", "TurnSource", "TurnText", "store_archive", "store_turn_text"]


class TurnSource(NamedTuple):
    """A turn as the observation log holds it."""

    text: str
    seq: int  # the observation's position in the user's log


#: Turn keys ("observation id#message index") → :class:`TurnSource`; keys it cannot
#: resolve are left out (those turns are indexed by their leaves' text instead).
TurnText = Callable[[Sequence[str]], Mapping[str, TurnSource]]


#: The archived leaves of a user, given those already loaded (id → node): returns the
#: whole archive (id → node), reading only the nodes it does not know yet.
ArchiveSource = Callable[[Mapping[str, Node]], dict[str, Node]]


def store_turn_text(store: Any, user_id: str) -> TurnText:
    """A :data:`TurnText` loader reading a user's messages from a store's observation log.

    Parameters
    ----------
    store : Store
        Anything with ``observations(user_id, ids)``.
    user_id : str

    Returns
    -------
    TurnText
        Resolves "observation id#message index" keys to the message's content (with
        the speaker's name, which a query may use) and the observation's log
        position; unknown keys are left out.
    """

    def load(keys: Sequence[str]) -> Mapping[str, TurnSource]:
        wanted: dict[str, list[tuple[str, int]]] = {}
        for key in keys:
            obs, sep, turn = key.rpartition("#")
            if sep and turn.isdigit():
                wanted.setdefault(obs, []).append((key, int(turn)))
        out: dict[str, TurnSource] = {}
        if not wanted:
            return out
        for o in store.observations(user_id, list(wanted)):
            for key, i in wanted.get(o.id, ()):
                if 0 <= i < len(o.messages):
                    m = o.messages[i]
                    text = f"{m.content} {m.name}" if m.name else m.content
                    out[key] = TurnSource(text, o.seq)
        return out

    return load


def store_archive(store: Any, user_id: str) -> ArchiveSource:
    """An :data:`ArchiveSource` reading a user's archived leaves from a store.

    Parameters
    ----------
    store : Store
        Anything with ``archive_ids(user_id)`` and ``archive(user_id, ids)``; a store
        without them has an empty archive.
    user_id : str

    Returns
    -------
    ArchiveSource
        One id listing per call, and a read of only the leaves not already known
        (archived leaves never change: a leaf id names one sentence of one turn).
    """

    def load(known: Mapping[str, Node]) -> dict[str, Node]:
        list_ids = getattr(store, "archive_ids", None)
        if list_ids is None:
            return {}
        ids = list_ids(user_id)
        missing = [i for i in ids if i not in known]
        fresh = {n.id: n for n in store.archive(user_id, missing)} if missing else {}
        return {i: known[i] if i in known else fresh[i] for i in ids if i in known or i in fresh}

    return load
