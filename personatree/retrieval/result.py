"""What a recall returns: the rendered context, the items chosen and a trace."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..types import Level, Route

__all__ = ["RecallItem", "TraceEntry", "Recall"]


@dataclass(frozen=True, slots=True)
class RecallItem:
    """One node shown in the context, in render order.

    Attributes
    ----------
    node_id : str
    level : Level
    schema_type : str
    depth : int
        Depth in its rendered support path: 0 for the top of a group, 1 for a node
        shown under its parent, 2 for a leaf under a mid under a root.
    parent : str or None
        The rendered parent, or ``None``: the node's real support parent, or, for a
        leaf carried as evidence against a claim (its latest contradiction, or what
        was said around the change), that claim (``reason`` starts with "carried").
    tokens : int
        Tokens of the node's line (without indentation).
    relevance : float
        Fused relevance to the query in [0, 1].
    confidence : float
        Confidence read at recall time.
    fit : float
        How well the node's level fits the routed level, in (0, 1].
    utility : float
        relevance × reliability × fit − λ·tokens, as used by the packer.
    dense_rank, lexical_rank : int or None
        1-based rank in the dense and lexical candidate lists (``None``: not in it).
    sources : tuple of (str, int)
        (observation id, turn) pairs behind the node (leaves: their provenance).
    reason : str
        Why it was chosen.
    neighbour_of : str or None
        The leaf whose turn lent this one its relevance (the turn was told next to
        it in the same session), when that is how it got here.
    """

    node_id: str
    level: Level
    schema_type: str
    depth: int
    parent: str | None
    tokens: int
    relevance: float
    confidence: float
    fit: float
    utility: float
    dense_rank: int | None
    lexical_rank: int | None
    sources: tuple[tuple[str, int], ...]
    reason: str
    neighbour_of: str | None = None


@dataclass(frozen=True, slots=True)
class TraceEntry:
    """One decision of the packer: a candidate chosen or left out, and why."""

    node_ids: tuple[str, ...]
    action: str
    utility: float
    tokens: int
    reason: str


@dataclass(frozen=True, slots=True)
class Recall:
    """Query-conditioned, token-budgeted context for an LLM.

    Attributes
    ----------
    text : str
        The rendered context.
    items : tuple of RecallItem
        Nodes shown, in render order.
    route : Route
        Predicted level and schema constraints.
    tokens : int
        Tokens of ``text`` counted with the real tokenizer (always ≤ ``budget``).
    budget : int
        The token budget.
    trace : tuple of TraceEntry
        Chosen and left-out candidates with reasons.
    """

    text: str
    items: tuple[RecallItem, ...]
    route: Route
    tokens: int
    budget: int
    trace: tuple[TraceEntry, ...]

    @property
    def node_ids(self) -> tuple[str, ...]:
        """Ids of the nodes shown, in render order."""
        return tuple(i.node_id for i in self.items)

    @property
    def sources(self) -> tuple[tuple[str, int], ...]:
        """Every (observation id, turn) behind the nodes shown, without repeats."""
        return tuple(dict.fromkeys(s for i in self.items for s in i.sources))

    def level_shares(self) -> dict[Level, float]:
        """Share of items per level (zeros for an empty recall)."""
        n = len(self.items) or 1
        return {lv: sum(i.level is lv for i in self.items) / n for lv in Level}

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (for ``personatree recall --json``)."""
        return {
            "text": self.text,
            "tokens": self.tokens,
            "budget": self.budget,
            "route": {
                "level": self.route.level.value,
                "probabilities": {
                    k.value: round(v, 4) for k, v in self.route.probabilities.items()
                },
                "schema_types": list(self.route.schema_types),
            },
            "items": [
                {
                    "node_id": i.node_id,
                    "level": i.level.value,
                    "schema_type": i.schema_type,
                    "depth": i.depth,
                    "parent": i.parent,
                    "tokens": i.tokens,
                    "relevance": round(i.relevance, 4),
                    "confidence": round(i.confidence, 4),
                    "fit": round(i.fit, 4),
                    "utility": round(i.utility, 4),
                    "dense_rank": i.dense_rank,
                    "lexical_rank": i.lexical_rank,
                    "sources": [list(s) for s in i.sources],
                    "reason": i.reason,
                    "neighbour_of": i.neighbour_of,
                }
                for i in self.items
            ],
            "trace": [
                {
                    "node_ids": list(t.node_ids),
                    "action": t.action,
                    "utility": round(t.utility, 4),
                    "tokens": t.tokens,
                    "reason": t.reason,
                }
                for t in self.trace
            ],
        }
