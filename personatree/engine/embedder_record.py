"""The embedder a store was built with, recorded in it and checked on open.

Vectors of two models live in different spaces, so a tree embedded with one model
and searched with another would rank nonsense (or fail on a dimension mismatch).
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import ConfigError
from ..ports import Embedder, Store

__all__ = ["EMBEDDER_META_KEY", "embedder_meta", "recorded_embedder", "check_embedder", "record_embedder"]

EMBEDDER_META_KEY = "personatree.embedder"


def embedder_meta(embedder: Embedder) -> dict[str, Any]:
    """What a store records of an embedder: ``{"name": ..., "dim": ...}``."""
    return {"name": embedder.name, "dim": int(embedder.dim)}


def recorded_embedder(store: Store) -> dict[str, Any] | None:
    """The embedder a store records (``{"name": ..., "dim": ...}``), or ``None``.

    Raises
    ------
    ConfigError
        The record is not what personatree writes (a JSON object with a name).
    """
    raw = store.get_meta(EMBEDDER_META_KEY)
    if raw is None:
        return None
    try:
        meta = json.loads(raw)
    except ValueError:
        meta = None
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        raise ConfigError(f"this store's embedder record is unreadable: {raw[:80]!r}")
    return meta


def check_embedder(store: Store, embedder: Embedder) -> bool:
    """Refuse an embedder other than the one the store was built with.

    The embedder is recorded with the first write (so a command that fails writes
    nothing); stores from before that record are checked per user when loaded.

    Returns
    -------
    bool
        Whether the store already records this embedder.

    Raises
    ------
    ConfigError
        The store was built with another embedder (name or dimension).
    """
    mine = embedder_meta(embedder)
    theirs = recorded_embedder(store)
    if theirs is None:
        return False
    if theirs != mine:
        raise ConfigError(
            f"this store was built with the embedder {theirs.get('name')!r} "
            f"({theirs.get('dim', '?')} dimensions); it was opened with {mine['name']!r} "
            f"({mine['dim']}): open it with the embedder it was built with"
        )
    return True


def record_embedder(store: Store, embedder: Embedder) -> None:
    """Write the embedder's record into the store."""
    store.set_meta(EMBEDDER_META_KEY, json.dumps(embedder_meta(embedder), sort_keys=True))
