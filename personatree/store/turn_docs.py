"""The stores' shared rules for ``turn_docs``: recall's derived per-turn documents.

A row is ``(user_id, turn, digest, doc)``: the turn key ("observation id#message
index"), a digest of everything the document was computed from, and the document
itself (opaque text to the store). The retrieval state reads them all when it first
builds a user's turn index and writes back only the rows it had to compute, so a new
process does not re-read and re-tokenize the whole log (see
:mod:`personatree.engine.turn_memo`). The rows are a cache: writing them never waits
long for a lock, and a failed write is dropped, not raised.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from . import codec

__all__ = ["TurnDoc", "turn_prefixes", "check_turn_docs"]

#: ``(digest, doc)`` of one turn.
TurnDoc = tuple[str, str]


def turn_prefixes(observation_ids: Iterable[str]) -> list[str]:
    """The turn-key prefixes of observations (``"<id>#"``), whose rows go with them."""
    return [f"{o}#" for o in observation_ids]


def check_turn_docs(docs: Mapping[str, TurnDoc], drop: Sequence[str]) -> list[tuple[str, str, str]]:
    """The rows of a ``put_turn_docs`` call as ``(turn, digest, doc)``, checked.

    Raises
    ------
    InputError
        A key, digest or document that is not text (the codec's text rule).
    """
    out = []
    for turn, (digest, doc) in docs.items():
        codec.check_text(turn, "turn")
        codec.check_text(digest, "digest")
        codec.check_text(doc, "doc")
        out.append((turn, digest, doc))
    for turn in drop:
        codec.check_text(turn, "turn")
    return out
