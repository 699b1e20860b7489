"""Recall's per-turn lexical documents, kept in the store across processes.

Building a user's turn index means reading every message of the log and tokenizing
it, and testing every leaf for a stated disposition: most of the cost of a first
recall in a new process. What that produces for one turn (its tokens, its log
position and which of its leaves state a disposition) depends only on the turn's
leaves and its message, so it is kept in the store (``turn_docs``) under a digest of
those inputs and of the text analysis itself (:func:`fingerprint`). A document is used
only when the digest of the leaves the tree holds now equals the recorded one, so a
changed turn is always recomputed; the message can only change by leaving the log,
and the store removes its turns' documents in the same commit.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any, Callable, Iterable, NamedTuple

import orjson

from ..text import is_disposition
from ..types import Node
from .lexical import date_tokens, tokenize

__all__ = ["TurnDocument", "TurnMemo", "store_turn_memo", "turn_digest", "fingerprint"]

#: Bumped when what a document holds changes shape.
_FORMAT = "1"


class TurnDocument(NamedTuple):
    """What the turn index holds for one turn."""

    tokens: list[str]
    seq: int
    dispositions: list[str]  # ids of the turn's leaves that state a disposition


@lru_cache(maxsize=1)
def fingerprint() -> str:
    """A digest of the text analysis a document depends on (tokenizer, disposition cue).

    Computed on probe texts, so a release whose tokenizer or cues behave differently
    invalidates every stored document without anyone remembering to bump a number.
    """
    probes = (
        "I went hiking with Anna at the lake on Saturday, 3 May 2023; we're running later.",
        "I am a vegetarian and I always hate crowded places.",
        "My sister's kids loved the museums in Kyoto!",
    )
    parts = [_FORMAT]
    for p in probes:
        parts.append(" ".join(tokenize(p)))
        parts.append(str(is_disposition(p)))
    parts.append(" ".join(date_tokens(datetime(2023, 5, 8, tzinfo=timezone.utc))))
    return hashlib.blake2b("\x1f".join(parts).encode(), digest_size=8).hexdigest()


def turn_digest(nodes: Iterable[Node], extra: Callable[[Node], str]) -> str:
    """The digest of a turn's leaves (ids, text, speaker and entities, time, order)."""
    h = hashlib.blake2b(fingerprint().encode(), digest_size=16)
    for n in nodes:
        sentence = n.provenance[0].sentence if n.provenance else -1
        h.update(f"\x1e{n.id}\x1f{n.content}\x1f{extra(n)}\x1f{n.t_first.isoformat()}\x1f{sentence}".encode(
            "utf-8", "surrogatepass"))
    return h.hexdigest()


@dataclass
class TurnMemo:
    """The stored documents of one user, and the changes not written back yet.

    Parameters
    ----------
    stored : dict
        Turn key → ``(digest, doc)`` as read from the store.
    write : callable, optional
        ``write(upserts, drops) -> bool``: where changes go on :meth:`flush`.
    """

    stored: dict[str, tuple[str, str]]
    write: Callable[[dict[str, tuple[str, str]], list[str]], bool] | None = None
    _upserts: dict[str, tuple[str, str]] = field(default_factory=dict)
    _drops: set[str] = field(default_factory=set)
    hits: int = 0
    misses: int = 0

    def get(self, turn: str, digest: str) -> TurnDocument | None:
        """The stored document of ``turn`` if it was computed from the same inputs."""
        row = self.stored.get(turn)
        if row is None or row[0] != digest:
            self.misses += 1
            return None
        try:
            seq, tokens, disp = orjson.loads(row[1])
            doc = TurnDocument([str(t) for t in tokens], int(seq), [str(d) for d in disp])
        except (ValueError, TypeError):  # a row this release cannot read: recompute it
            self.misses += 1
            return None
        self.hits += 1
        return doc

    def put(self, turn: str, digest: str, doc: TurnDocument) -> None:
        """Record a computed document (written on the next :meth:`flush`)."""
        row = (digest, orjson.dumps([doc.seq, doc.tokens, doc.dispositions]).decode("utf-8"))
        self.stored[turn] = row
        self._upserts[turn] = row
        self._drops.discard(turn)

    def drop(self, turn: str) -> None:
        """Forget a turn that has no leaves left."""
        if self.stored.pop(turn, None) is not None:
            self._drops.add(turn)
        self._upserts.pop(turn, None)

    def flush(self) -> None:
        """Write the pending changes; kept pending when the store could not take them."""
        if self.write is None or not (self._upserts or self._drops):
            return
        if self.write(dict(self._upserts), sorted(self._drops)):
            self._upserts.clear()
            self._drops.clear()


def store_turn_memo(store: Any, user_id: str) -> TurnMemo | None:
    """The memo of a user backed by a store's ``turn_docs``, or ``None`` if it has none.

    Parameters
    ----------
    store : Store
        Anything with ``turn_docs(user_id)`` and ``put_turn_docs(user_id, docs, drop)``.
    user_id : str

    Returns
    -------
    TurnMemo or None
    """
    read = getattr(store, "turn_docs", None)
    put = getattr(store, "put_turn_docs", None)
    if read is None or put is None:
        return None
    return TurnMemo(dict(read(user_id)), lambda docs, drops: bool(put(user_id, docs, drops)))
