"""Compact, LLM-readable rendering of the chosen nodes, grouped by support path (pure).

Claims (roots, mids) come first with their confidence, schema type, time span and
support counts; each is followed, indented, by the chosen nodes that really support
it. Loose evidence follows in time order under one header per day, each leaf quoted
verbatim with its speaker (one date header for a day's leaves saves ~5 tokens a line,
which buys more evidence per budget). A node is indented under another only when that one is its real support
parent, so every rendered mid or root is shown with its real support path.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Mapping, Sequence

from ..types import Level, Node

__all__ = [
    "CLAIMS_HEADER",
    "EVIDENCE_HEADER",
    "compact_span",
    "node_line",
    "leaf_date",
    "date_header",
    "Layout",
    "layout",
    "render_text",
]

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
    """The one-line text of a node, without indentation, bullet or (for leaves) date.

    Parameters
    ----------
    node : Node
    confidence : float
        Confidence read at recall time.

    Returns
    -------
    str
        ``Corinne: I went to the support group yesterday.`` for a leaf (verbatim,
        with its speaker); ``[routine 0.82 | Mar–Jun 2024 | +5] Runs most mornings``
        for a mid or root.
    """
    if node.level is Level.LEAF:
        return f"{_speaker(node)}{node.content}"
    counts = f"+{node.n_support}" + (f"/-{node.n_conflict}" if node.n_conflict else "")
    text = (
        node.content
        if len(node.content) <= _MAX_CLAIM_CHARS
        else node.content[: _MAX_CLAIM_CHARS - 3] + "..."
    )
    return f"[{node.schema_type} {confidence:.2f} | {compact_span(node.t_first, node.t_last)} | {counts}] {text}"


def _speaker(node: Node) -> str:
    speaker = node.attributes.get("speaker")
    return (
        f"{speaker}: "
        if isinstance(speaker, str) and speaker and speaker not in ("user", "I")
        else ""
    )


def leaf_date(node: Node) -> str:
    """The date a leaf is quoted with (its observation's day)."""
    return f"{node.t_first:%Y-%m-%d}"


def date_header(date: str) -> str:
    """The line that opens a day's evidence."""
    return f"{date}:"


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
    rendered_parent = {
        c: (parent_of.get(c) if parent_of.get(c) in chosen_set else None) for c in chosen
    }
    kids: dict[str, list[str]] = {}
    for c in chosen:
        p = rendered_parent[c]
        if p is not None:
            kids.setdefault(p, []).append(c)

    def child_order(ids: list[str]) -> list[str]:
        # mids by value; leaves in time order (evidence reads best chronologically)
        return sorted(
            ids,
            key=lambda x: (
                nodes[x].level is Level.LEAF,
                -value.get(x, 0.0) if nodes[x].level is not Level.LEAF else 0.0,
                nodes[x].t_first,
                x,
            ),
        )

    order: list[str] = []
    depth: dict[str, int] = {}

    def walk(x: str, d: int) -> None:
        order.append(x)
        depth[x] = d
        for k in child_order(kids.get(x, [])):
            walk(k, d + 1)

    tops = [c for c in chosen if rendered_parent[c] is None]
    claims = sorted(
        (c for c in tops if nodes[c].level is not Level.LEAF),
        key=lambda x: (-nodes[x].level.rank, -value.get(x, 0.0), x),
    )
    evidence = sorted(
        (c for c in tops if nodes[c].level is Level.LEAF), key=lambda x: (nodes[x].t_first, x)
    )
    for c in claims:
        walk(c, 0)
    for c in evidence:
        walk(c, 0)
    return Layout(tuple(order), depth, rendered_parent, tuple(claims), tuple(evidence))


def render_text(lay: Layout, lines: Mapping[str, str], nodes: Mapping[str, Node]) -> str:
    """The context text for a layout, given each node's line.

    Claims come first, each followed by its nested support path; loose evidence
    follows under one header per day, in time order. A leaf nested under a claim
    carries its date inline.

    Returns
    -------
    str
        Empty when nothing was chosen.
    """
    out: list[str] = []
    evidence = set(lay.evidence)
    if lay.claims:
        out.append(CLAIMS_HEADER)
    day = None
    for x in lay.order:
        n = nodes[x]
        if x in evidence:
            if day is None:
                out.append(EVIDENCE_HEADER)
            if leaf_date(n) != day:
                day = leaf_date(n)
                out.append(date_header(day))
            out.append("- " + lines[x])
        elif n.level is Level.LEAF:
            out.append("  " * lay.depth[x] + f"- {leaf_date(n)} " + lines[x])
        else:
            out.append("  " * lay.depth[x] + "- " + lines[x])
    return "\n".join(out)
