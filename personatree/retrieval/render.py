"""Compact, LLM-readable rendering of the chosen nodes, grouped by support path (pure).

Claims (roots, mids) come first with their confidence, schema type, time span and
support counts; each is followed, indented, by the chosen nodes that really support
it. Loose evidence follows in time order under one header per day, each leaf quoted
verbatim with its speaker (one date header for a day's leaves saves ~5 tokens a line,
which buys more evidence per budget). A node is indented under another only when that one is its real support
parent, so every rendered mid or root is shown with its real support path, or when
it is evidence *against* that claim: a claim's latest contradiction (and what the
person said around it) is shown right under it, before its support, marked
``now:`` when it changed the claim and ``contradicts:`` otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Mapping, Sequence

from ..render import quote
from ..speakers import speaker_prefix
from ..text import strip_summary_suffix
from ..timeline import Timeline
from ..types import Level, Node

__all__ = [
    "CLAIMS_HEADER",
    "EVIDENCE_HEADER",
    "compact_span",
    "node_line",
    "quote",
    "CONFLICT_MARKS",
    "leaf_date",
    "date_header",
    "Layout",
    "layout",
    "render_text",
]

CLAIMS_HEADER = "Claims (type, confidence, time span, support):"
EVIDENCE_HEADER = "Evidence (verbatim, dated):"
_MAX_CLAIM_CHARS = 300

#: How a leaf shown under a claim it is not evidence for is introduced: the claim's
#: latest contradiction when it changed the claim ("now"), when it did not
#: ("contradicts"), and what the person said around the change ("context").
CONFLICT_MARKS = {"now": "now: ", "contradicts": "contradicts: ", "context": "context: "}


_MON = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def compact_span(first: datetime, last: datetime) -> str:
    """A short time span: "2024-03-02", "Mar 2024", "Mar–Jun 2024" or "Nov 2023–Feb 2024"."""
    if first.date() == last.date():
        return f"{first:%Y-%m-%d}"
    a, b = _MON[first.month - 1], _MON[last.month - 1]
    if first.year == last.year:
        return f"{a} {first.year}" if a == b else f"{a}–{b} {first.year}"
    return f"{a} {first.year}–{b} {last.year}"


def node_line(
    node: Node,
    confidence: float,
    timeline: Timeline | None = None,
    latest: Node | None = None,
) -> str:
    """The one-line text of a node, without indentation, bullet or (for leaves) date.

    Parameters
    ----------
    node : Node
    confidence : float
        Confidence read at recall time (for a changed claim, the belief it still holds).
    timeline : Timeline, optional
        The claim's dated evidence: a changed claim is tagged ``changed <date>`` and
        shown with the span its support covered.
    latest : Node, optional
        The claim's latest contradicting leaf, to quote in the line itself (for views
        that show no evidence lines under a claim: the profile, the tree view). A
        changed claim then reads current state first: ``now: "<quote>"; before: ...``.

    Returns
    -------
    str
        ``Corinne: I went to the support group yesterday.`` for a leaf (verbatim,
        with its speaker); ``[routine 0.82 | Mar–Jun 2024 | +5] Runs most mornings``
        for a mid or root (``… | +5] Corinne: Runs most mornings`` when it is a named
        speaker's, :mod:`personatree.speakers`); ``[preference 0.39 | Mar–May 2024 | +5/-1 | changed
        2024-06-22] now: "I stopped ..."; before: Enjoys hiking`` for a changed one.
    """
    if node.level is Level.LEAF:
        return f"{speaker_prefix(node)}{node.content}"
    counts = f"+{node.n_support}" + (f"/-{node.n_conflict}" if node.n_conflict else "")
    text = (
        node.content
        if len(node.content) <= _MAX_CLAIM_CHARS
        else node.content[: _MAX_CLAIM_CHARS - 3] + "..."
    )
    span = compact_span(node.t_first, node.t_last)
    tag = ""
    if timeline is not None and timeline.changed:
        if timeline.support_first is not None and timeline.support_last is not None:
            # The span the pattern held, not the one its contradiction extended.
            span = compact_span(timeline.support_first, timeline.support_last)
            text = strip_summary_suffix(text)
        if timeline.since is not None:
            tag = f" | changed {timeline.since:%Y-%m-%d}"
        if latest is not None:
            text = f"now: {quote(latest.content)} ({leaf_date(latest)}); before: {text}"
        else:
            text = f"before: {text}"
    elif latest is not None:
        text = f"{text}; contradicted {leaf_date(latest)}: {quote(latest.content)}"
    # A pattern of one named speaker says whose it is, as that speaker's lines do.
    return f"[{node.schema_type} {confidence:.2f} | {span} | {counts}{tag}] {speaker_prefix(node)}{text}"


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
    marks: Mapping[str, str] = field(default_factory=dict)


def layout(
    chosen: Sequence[str],
    nodes: Mapping[str, Node],
    parent_of: Mapping[str, str],
    value: Mapping[str, float],
    against: Mapping[str, tuple[str, str]] | None = None,
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
    against : mapping, optional
        Leaf id → (claim id, mark) for leaves carried as evidence against a claim
        (a key of :data:`CONFLICT_MARKS`). Such a leaf is shown under that claim when
        the claim is chosen (rather than under its own support parent: the change is
        what a reader must not miss), first among the claim's lines.

    Returns
    -------
    Layout
    """
    rendered_parent, marks = _rendered_parents(chosen, parent_of, against)
    kids: dict[str, list[str]] = {}
    for c in chosen:
        p = rendered_parent[c]
        if p is not None:
            kids.setdefault(p, []).append(c)
    order: list[str] = []
    depth: dict[str, int] = {}

    def walk(x: str, d: int) -> None:
        order.append(x)
        depth[x] = d
        for k in _child_order(kids.get(x, []), nodes, value, marks):
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
    return Layout(tuple(order), depth, rendered_parent, tuple(claims), tuple(evidence), marks)


def _rendered_parents(
    chosen: Sequence[str],
    parent_of: Mapping[str, str],
    against: Mapping[str, tuple[str, str]] | None,
) -> tuple[dict[str, str | None], dict[str, str]]:
    """The parent each chosen node is shown under (``None``: a top), and the carried marks."""
    chosen_set = set(chosen)
    rendered_parent = {
        c: (parent_of.get(c) if parent_of.get(c) in chosen_set else None) for c in chosen
    }
    marks: dict[str, str] = {}
    for leaf, (claim, mark) in (against or {}).items():
        if leaf in chosen_set and claim in chosen_set and leaf != claim:
            rendered_parent[leaf] = claim
            marks[leaf] = mark
    return rendered_parent, marks


_MARK_RANK = {m: i for i, m in enumerate(CONFLICT_MARKS)}


def _child_order(
    ids: list[str], nodes: Mapping[str, Node], value: Mapping[str, float], marks: Mapping[str, str]
) -> list[str]:
    # What speaks against the claim first (the current state before the older
    # pattern); then mids by value; leaves in time order (evidence reads best
    # chronologically).
    rank = _MARK_RANK
    return sorted(
        ids,
        key=lambda x: (
            rank.get(marks.get(x, ""), len(rank)),
            nodes[x].level is Level.LEAF,
            -value.get(x, 0.0) if nodes[x].level is not Level.LEAF else 0.0,
            nodes[x].t_first,
            x,
        ),
    )


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
            mark = CONFLICT_MARKS.get(lay.marks.get(x, ""), "")
            out.append("  " * lay.depth[x] + f"- {leaf_date(n)} {mark}" + lines[x])
        else:
            out.append("  " * lay.depth[x] + "- " + lines[x])
    return "\n".join(out)
