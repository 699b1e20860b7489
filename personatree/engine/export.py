"""A user's stored data as JSON-ready values (the ``personatree.export/1`` format)."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from ..types import Edge, Node, Observation
from .core import Engine

__all__ = ["export_user", "observation_json", "node_json", "edge_json"]

EXPORT_FORMAT = "personatree.export/1"


def observation_json(o: Observation) -> dict[str, Any]:
    """One observation of an export."""
    return {
        "id": o.id, "seq": o.seq, "session_id": o.session_id, "at": o.at.isoformat(),
        "messages": [{"role": m.role, "content": m.content, **({"name": m.name} if m.name else {})} for m in o.messages],
        "metadata": dict(o.metadata),
    }


def node_json(n: Node) -> dict[str, Any]:
    """One node of an export; the embedding is base64 float32 (little-endian)."""
    return {
        "id": n.id, "level": n.level.value, "schema_type": n.schema_type, "content": n.content,
        "attributes": n.attributes, "t_first": n.t_first.isoformat(), "t_last": n.t_last.isoformat(),
        "logit": n.logit, "n_support": n.n_support, "n_conflict": n.n_conflict,
        "provenance": [p.to_dict() for p in n.provenance],
        "recall_count": n.recall_count, "t_access": n.t_access.isoformat() if n.t_access else None,
        "embedding": None if n.embedding is None else base64.b64encode(
            np.asarray(n.embedding, dtype="<f4").tobytes()).decode("ascii"),
    }


def edge_json(e: Edge) -> dict[str, Any]:
    """One edge of an export."""
    return {"src": e.src, "dst": e.dst, "kind": e.kind.value, "psi": e.psi, "weight": e.weight,
            "reason": e.reason, "at": e.at.isoformat()}


def export_user(engine: Engine, user_id: str) -> dict[str, Any]:
    """Everything stored about a (validated) user; see :meth:`PersonaTree.export`.

    Raises
    ------
    UnknownUserError
    """
    with engine.lock:
        g = engine.live_graph(user_id)
        return {
            "format": EXPORT_FORMAT,
            "user_id": user_id,
            "version": engine.state(user_id).version,
            "embedder": engine.embedder.name,
            "observations": [observation_json(o) for o in engine.store.observations(user_id)],
            "nodes": [node_json(n) for n in g.nodes()],
            "edges": [edge_json(e) for e in g.edges()],
            "journal": [
                {"seq": e.seq, "kind": e.kind, "payload": dict(e.payload), "at": e.at.isoformat()}
                for e in engine.store.events(user_id)
            ],
            "archive": [node_json(n) for n in engine.store.archive(user_id)],
        }
