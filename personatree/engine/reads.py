"""Reading a user's tree: nodes, plain search, explanations, text and counts.

Every function takes validated ids and reads the cached tree under the engine's
lock; what it returns is a copy or a value, never the live tree.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable

import numpy as np

from ..errors import InputError
from ..explanation import ExplainStep, Explanation
from ..graph import MemoryGraph
from ..index import top_k
from ..inputs import ensure_iterable
from ..render import node_confidence, shown_confidence, tree_text
from ..timeline import node_timeline
from ..types import EdgeKind, Level, Node, SearchHit
from .caches import Slot
from .core import Engine
from .sources import store_archive

__all__ = ["as_level", "as_levels", "graph_copy", "node_copy", "node_copies", "search_user", "explain_node",
           "render_user", "user_stats", "confidence_of"]


def as_level(level: Level | str | None) -> Level | None:
    """``level`` as a :class:`Level` (``None`` stays ``None``); an unknown name is an InputError."""
    if level is None or isinstance(level, Level):
        return level
    try:
        return Level(level)
    except ValueError:
        raise InputError(f"unknown level {level!r}; use leaf, mid or root") from None


def as_levels(levels: object) -> list[Level]:
    """The levels a read may draw from: a non-empty list of leaf/mid/root, no ``None``."""
    out: list[Level] = []
    for x in ensure_iterable(levels, "levels"):
        if not isinstance(x, (str, Level)):
            raise InputError(f"levels must hold leaf, mid or root, got {type(x).__name__}")
        lv = as_level(x)
        assert lv is not None  # a str or Level never maps to None
        out.append(lv)
    if not out:
        raise InputError("levels is empty; give at least one of leaf, mid or root, or leave it out")
    return out


def graph_copy(engine: Engine, user_id: str) -> MemoryGraph:
    """A copy of a user's tree."""
    with engine.lock:
        return engine.live_graph(user_id).copy()


def node_copy(engine: Engine, user_id: str, node_id: object) -> Node:
    """A copy of one node of the tree, or of an archived leaf (the user is looked up
    before the node id is checked).

    An archived leaf (one the tree's bounds took out of it) is still the user's
    evidence: recall shows it by its id, so it is found by id too.
    """
    with engine.lock:
        g = engine.live_graph(user_id)
        nid = engine.check_node(node_id)
        if nid in g:
            return g.node(nid).copy()
        found = engine.store.archive(user_id, [nid])
        if found:
            return found[0]
        return g.node(nid)  # raises UnknownNodeError


def node_copies(engine: Engine, user_id: str, level: Level | None, schema_type: str | None) -> list[Node]:
    """Copies of a user's nodes, optionally of one level and/or schema type."""
    with engine.lock:
        g = engine.live_graph(user_id)
        return [n.copy() for n in g.nodes(level) if schema_type is None or n.schema_type == schema_type]


def confidence_of(engine: Engine, user_id: str, node_id: object, now: datetime) -> float:
    """Confidence of a node read at ``now``, with lazy decay."""
    return node_confidence(node_copy(engine, user_id, node_id), engine.registry, now)


def search_user(engine: Engine, user_id: str, query: str, k: int, levels: list[Level] | None) -> list[SearchHit]:
    """Plain cosine-similarity search over the nodes of ``levels`` (default all), best first."""
    vec = engine.embedder.embed([query])[0]
    now = engine.clock.now()
    with engine.lock:
        g = engine.live_graph(user_id)
        hits: list[tuple[str, float]] = []
        for level_ in levels or list(Level):
            hits.extend(g.index(level_).search(vec, k))
        archived = {n.id: n for n in archived_leaves(engine, user_id, g)} if not levels or Level.LEAF in levels else {}
        hits.extend(archive_hits(archived.values(), vec, k))
        hits.sort(key=lambda h: (-h[1], h[0]))
        out = []
        for nid, score in hits[:k]:
            n = archived[nid] if nid in archived else g.node(nid)
            out.append(SearchHit(nid, n.level, n.schema_type, n.content, score,
                                 node_confidence(n, engine.registry, now), archived=nid in archived))
        return out


#: Each user's archived leaves as last read: a search lists the archive's ids and reads
#: only the leaves it does not know yet (archived leaves never change).
_ARCHIVE: Slot[dict[str, dict[str, Node]]] = Slot("archived leaves", per_user=True)


def archived_leaves(engine: Engine, user_id: str, graph: MemoryGraph) -> list[Node]:
    """The user's archived leaves (an id both archived and in the tree is the tree's)."""
    known = engine.caches.get(_ARCHIVE, dict)
    current = store_archive(engine.store, user_id)(known.get(user_id, {}))
    # Held only while the store lists them: a forgotten leaf or a deleted user's
    # archive leaves this cache on the next read, as it leaves the retrieval state.
    if current:
        known[user_id] = current
    else:
        known.pop(user_id, None)
    return [n for n in current.values() if n.id not in graph]


def archive_hits(nodes: Iterable[Node], query: np.ndarray, k: int) -> list[tuple[str, float]]:
    """The ``k`` archived leaves most similar to ``query`` (cosine; rows are unit vectors
    like the tree's index rows). Leaves embedded with another dimension are skipped."""
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    keep = [n for n in nodes if n.embedding is not None and np.shape(n.embedding) == q.shape]
    if not keep:
        return []
    scores = np.stack([np.asarray(n.embedding, dtype=np.float32) for n in keep]) @ q
    return [(keep[i].id, float(scores[i])) for i in top_k(scores, k)]


def explain_node(engine: Engine, user_id: str, node_id: str, max_observations: int) -> Explanation:
    """Why a node is believed: its support path, its evidence and the observations behind it."""
    now = engine.clock.now()
    with engine.lock:
        g = engine.live_graph(user_id)
        if node_id not in g:
            return explain_archived(engine, user_id, node_id, g, now, max_observations)
        path = g.support_path(node_id)

        def step(x: str, edge_to: str | None) -> ExplainStep:
            n = g.node(x)
            e = g.edge(x, edge_to) if edge_to else None
            return ExplainStep(
                n.id, n.level, n.schema_type, n.content,
                shown_confidence(n, engine.registry, now, node_timeline(g, x)),
                n.n_support, n.n_conflict, n.t_first, n.t_last,
                e.psi if e else None, e.reason if e else None,
            )

        steps = tuple(step(x, path[i + 1] if i + 1 < len(path) else None) for i, x in enumerate(path))
        support = tuple(step(c, node_id) for c in g.children(node_id))
        conflicts = tuple(step(c, node_id) for c in g.conflicts_of(node_id))
        obs_ids: list[str] = []
        for x in g.subtree(node_id) + [c.node_id for c in conflicts]:
            for p in g.node(x).provenance:
                if p.observation_id not in obs_ids:
                    obs_ids.append(p.observation_id)
        observations = tuple(engine.store.observations(user_id, obs_ids[:max_observations])) if obs_ids else ()
        return Explanation(user_id, node_id, steps, support, conflicts, observations)


def explain_archived(
    engine: Engine, user_id: str, node_id: str, graph: MemoryGraph, now: datetime, max_observations: int,
) -> Explanation:
    """The explanation of an archived leaf: itself and the observation behind it."""
    found = engine.store.archive(user_id, [node_id])
    if not found:
        graph.node(node_id)  # raises UnknownNodeError
    n = found[0]
    # Outside the tree it has no support path and no timeline: its own stored belief.
    step = ExplainStep(
        n.id, n.level, n.schema_type, n.content, node_confidence(n, engine.registry, now),
        n.n_support, n.n_conflict, n.t_first, n.t_last, None, None,
    )
    obs_ids = list(dict.fromkeys(p.observation_id for p in n.provenance))[:max_observations]
    observations = tuple(engine.store.observations(user_id, obs_ids)) if obs_ids else ()
    return Explanation(user_id, node_id, (step,), (), (), observations, archived=True)


def render_user(engine: Engine, user_id: str, **kwargs: Any) -> str:
    """The user's tree as readable indented text (see :func:`personatree.render.tree_text`)."""
    with engine.lock:
        return tree_text(engine.live_graph(user_id), engine.registry, engine.clock.now(), **kwargs)


def user_stats(engine: Engine, user_id: str) -> dict[str, Any]:
    """Counts of nodes per level, edges per kind, orphans, observations and archived
    leaves."""
    with engine.lock:
        g = engine.live_graph(user_id)
        counts = engine.store.counts(user_id)
        return {
            "user_id": user_id,
            "leaves": sum(1 for _ in g.nodes(Level.LEAF)),
            "mids": sum(1 for _ in g.nodes(Level.MID)),
            "roots": sum(1 for _ in g.nodes(Level.ROOT)),
            "orphans": len(g.orphans()),
            "support_edges": sum(1 for _ in g.edges(EdgeKind.SUPPORT)),
            "conflict_edges": sum(1 for _ in g.edges(EdgeKind.CONFLICT)),
            "observations": int(counts["observations"]),
            "archived_leaves": int(counts.get("archive", 0)),
            "version": engine.state(user_id).version,
        }
