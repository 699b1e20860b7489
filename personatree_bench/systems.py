"""The systems compared in one run, all with the same embedder and token counter.

- ``personatree``: the full engine through its public API (``observe_many`` per
  session, ``consolidate`` at session boundaries, ``recall`` per question);
- ``personatree-leaves``: the same tree, recalled with ``levels=["leaf"]`` (ablation);
- ``personatree-tiered``: the same tree, recalled through the HMO tiers (hot cache →
  buffer → whole tree); recall counts feed the tiers, and every personatree system
  of the run bumps them, as every recall of an agent would;
- ``personatree-redis``: the same tree, recalled through the shared Redis hot tier
  (tiers 1 and 2 read from a local redis-server the run starts, written through
  on every commit; the whole tree only when they do not suffice);
- ``dense``: flat cosine retrieval over raw turns, packed best first;
- ``dense+bm25``: dense and BM25 rankings fused by reciprocal rank, packed best first;
- ``recency``: the most recent turns, truncated to the budget.

A system is built for one conversation at a time from its turns only (never its
questions), answers ``retrieve`` (a context within a token budget) and ``ranked``
(the first ``k`` distinct turns it would show), and reports its *standing context*
(what it puts in every prompt whatever the query; see :mod:`personatree_bench.metrics`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from .engine import PersonaTreeEngine, PersonaTreeSystem, interaction, item_node_ids
from .flat import DenseSystem, FlatIndex, FusionSystem, RecencySystem, render_turn
from .protocol import Context, System
from .schedule import consolidation_due, parse_schedule

if TYPE_CHECKING:
    from personatree import Embedder, TokenCounter

__all__ = [
    "SYSTEMS",
    "parse_schedule",
    "consolidation_due",
    "Context",
    "System",
    "FlatIndex",
    "DenseSystem",
    "FusionSystem",
    "RecencySystem",
    "PersonaTreeEngine",
    "PersonaTreeSystem",
    "build_systems",
    "render_turn",
    "interaction",
    "item_node_ids",
]

SYSTEMS = ("personatree", "personatree-leaves", "personatree-tiered", "personatree-redis", "dense", "dense+bm25",
           "recency")


def build_systems(
    names: Iterable[str],
    embedder: Embedder,
    counter: TokenCounter,
    *,
    engine_options: dict[str, Any] | None = None,
) -> list[System]:
    """Instantiate the named systems, sharing one flat index and one personatree engine.

    Parameters
    ----------
    names : iterable of str
        Any of :data:`SYSTEMS`.
    embedder, counter
        Shared by every system.
    engine_options : dict, optional
        Keyword arguments of :class:`PersonaTreeEngine`.

    Returns
    -------
    list of System

    Raises
    ------
    ValueError
        For an unknown name.
    """
    names = list(names)
    unknown = [n for n in names if n not in SYSTEMS]
    if unknown:
        raise ValueError(f"unknown systems {unknown}; choose from {', '.join(SYSTEMS)}")
    index = FlatIndex(embedder, counter)
    engine: PersonaTreeEngine | None = None
    out: list[System] = []
    for name in names:
        if name.startswith("personatree"):
            if engine is None:
                hot = "personatree-redis" in names
                engine = PersonaTreeEngine(embedder, counter, **(engine_options or {}), hot=hot)
            levels = ["leaf"] if name == "personatree-leaves" else None
            out.append(PersonaTreeSystem(engine, name, levels, tiered=name == "personatree-tiered",
                                         hot=name == "personatree-redis"))
        elif name == "dense":
            out.append(DenseSystem(index))
        elif name == "dense+bm25":
            out.append(FusionSystem(index))
        else:
            out.append(RecencySystem(index))
    return out
