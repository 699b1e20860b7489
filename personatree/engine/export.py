"""A user's stored data as JSON-ready values (the ``personatree.export/1`` format).

The format itself (one pydantic model per item) is :mod:`personatree.export_format`,
shared with import and the plan snapshots; this module only gathers what the engine
holds for a user, under its lock, in the order the export lists it.
"""

from __future__ import annotations

from typing import Any

from ..export_format import export_document
from .core import Engine

__all__ = ["export_user"]


def export_user(engine: Engine, user_id: str) -> dict[str, Any]:
    """Everything stored about a (validated) user; see :meth:`PersonaTree.export`.

    Raises
    ------
    UnknownUserError
    """
    with engine.lock:
        g = engine.live_graph(user_id)
        return export_document(
            user_id, engine.state(user_id).version, engine.embedder.name, engine.store.observations(user_id),
            g.nodes(), g.edges(), engine.store.events(user_id), engine.store.archive(user_id),
        )
