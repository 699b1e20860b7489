"""Compact, LLM-readable rendering of the chosen nodes, grouped by support path (pure).

Claims (roots, mids) come first with their confidence, schema type, time span and
support counts; each is followed, indented, by the chosen nodes that really support
it. Loose evidence follows in time order, each leaf quoted verbatim with its date and
speaker. A node is indented under another only when that one is its real support
parent, so every rendered mid or root is shown with its real support path.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Mapping, Sequence

from ..types import Level, Node

__all__ = ["CLAIMS_HEADER", "EVIDENCE_HEADER", "compact_span", "node_line", "Layout", "layout", "render_text", "line_cost"]

CLAIMS_HEADER = "Claims (type, confidence, time span, support):"
EVIDENCE_HEADER = "Evidence (verbatim, dated):"
_MAX_CLAIM_CHARS = 300


_MON = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def compact_span(first: datetime, last: datetime) -> str:
    """A short time span: "2024-03-02", "Mar 2024", "Mar–Jun 2024" or "Nov 2023–Feb 2024"."""
    if first.date() == last.date():
        return f"{first:%Y-%m-%d}"
    a, b = _MON[first.month - 1], _MON[last.month - 1]
    if first.year == last.year:
        return f"{a} {first.year}" if a == b else f"{a}–{b} {first.year}"
    return f"{a} {first.year}–{b} {last.year}"


def node_line(node: Node, confidence: float) -> str:
    """The one-line text of a node, without indentation or bullet.

    Parameters
    ----------
    node : Node
    confidence : float
        Confidence read at recall time.

    Returns
    -------
    str
    """
    if node.level is Level.LEAF:
        speaker = node.attributes.get("speaker")
        who = f"{speaker}: " if isinstance(speaker, str) and speaker and speaker not in ("user", "I") else ""
        return f'{node.t_first:%Y-%m-%d} {who}"{node.content}"'
    counts = f"+{node.n_support}" + (f"/-{node.n_conflict}" if node.n_conflict else "")
    text = node.content if len(node.content) <= _MAX_CLAIM_CHARS else node.content[: _MAX_CLAIM_CHARS - 3] + "..."
    return f"[{node.schema_type} {confidence:.2f} | {compact_span(node.t_first, node.t_last)} | {counts}] {text}"


def line_cost(line_tokens: int, depth: int) -> int:
    """Tokens a line costs in the rendered text: its own, "- ", the newline and indentation.

    An upper bound in practice: BPE tokenizers split at newlines, so lines never merge.
    """
    return line_tokens + 2 + (1 if depth else 0)


@dataclass(frozen=True, slots=True)
class Layout:
    """Render order of the chosen nodes with their depth and rendered parent."""

    order: tuple[str, ...]
    depth: Mapping[str, int]
    parent: Mapping[str, str | None]
    claims: tuple[str, ...]
    evidence: tuple[str, ...]


def layout(
    chosen: Sequence[str],
    nodes: Mapping[str, Node],
    parent_of: Mapping[str, str],
    value: Mapping[str, float],
) -> Layout:
    """Group chosen nodes into support-path blocks.

    Parameters
    ----------
    chosen : sequence of str
        Chosen node ids (no repeats).
    nodes : mapping
        Node objects by id.
    parent_of : mapping
        Real support parent of each node (absent: none).
    value : mapping
        Packing value per id, orders claim groups (best first).

    Returns
    -------
    Layout
    """
    chosen_set = set(chosen)
    rendered_parent = {c: (parent_of.get(c) if parent_of.get(c) in chosen_set else None) for c in chosen}
    kids: dict[str, list[str]] = {}
    for c in chosen:
        p = rendered_parent[c]
        if p is not None:
            kids.setdefault(p, []).append(c)

    def child_order(ids: list[str]) -> list[str]:
        # mids by value; leaves in time order (evidence reads best chronologically)
        return sorted(ids, key=lambda x: (nodes[x].level is Level.LEAF, -value.get(x, 0.0)
                                          if nodes[x].level is not Level.LEAF else 0.0, nodes[x].t_first, x))

    order: list[str] = []
    depth: dict[str, int] = {}

    def walk(x: str, d: int) -> None:
        order.append(x)
        depth[x] = d
        for k in child_order(kids.get(x, [])):
            walk(k, d + 1)

    tops = [c for c in chosen if rendered_parent[c] is None]
    claims = sorted((c for c in tops if nodes[c].level is not Level.LEAF),
                    key=lambda x: (-nodes[x].level.rank, -value.get(x, 0.0), x))
    evidence = sorted((c for c in tops if nodes[c].level is Level.LEAF), key=lambda x: (nodes[x].t_first, x))
    for c in claims:
        walk(c, 0)
    for c in evidence:
        walk(c, 0)
    return Layout(tuple(order), depth, rendered_parent, tuple(claims), tuple(evidence))


def render_text(lay: Layout, lines: Mapping[str, str]) -> str:
    """The context text for a layout, given each node's line.

    Returns
    -------
    str
        Empty when nothing was chosen.
    """
    out: list[str] = []
    evidence_start = lay.evidence[0] if lay.evidence else None
    if lay.claims:
        out.append(CLAIMS_HEADER)
    for x in lay.order:
        if x == evidence_start:
            out.append(EVIDENCE_HEADER)
        out.append("  " * lay.depth[x] + "- " + lines[x])
    return "\n".join(out)
