"""Why a node is believed: the read model :meth:`PersonaTree.explain` returns.

An explanation is a support path with its evidence and the observations behind it; its
text form shows a changed pattern the way recall and ``render()`` do (the shared
wording of :mod:`personatree.render` and the dates of :mod:`personatree.timeline`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .render import change_text
from .timeline import Dated, timeline
from .types import Level, Observation

__all__ = ["ExplainStep", "Explanation"]


@dataclass(frozen=True, slots=True)
class ExplainStep:
    """One node on a support path, with its confidence now and its evidence."""

    node_id: str
    level: Level
    schema_type: str
    content: str
    confidence: float
    n_support: int
    n_conflict: int
    t_first: datetime
    t_last: datetime
    edge_psi: float | None
    edge_reason: str | None


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why a node is believed: its support path upward, its supporting leaves with the
    verbatim observations behind them, and the conflicting evidence."""

    user_id: str
    node_id: str
    path: tuple[ExplainStep, ...]
    support: tuple[ExplainStep, ...]
    conflicts: tuple[ExplainStep, ...]
    observations: tuple[Observation, ...]
    #: True for a leaf the tree's bounds moved to the archive: recall still finds it,
    #: but it supports no pattern any more.
    archived: bool = False

    def render(self) -> str:
        """A readable multi-line text form.

        A pattern whose latest evidence reverses or ends it (a contradiction newer
        than its last support, :mod:`personatree.timeline`) is shown as changed: the
        current statement first, then the span the pattern held, and its
        contradictions (newest first) before its support.
        """
        lines: list[str] = []
        tl = None
        if self.path and self.path[0].level is Level.MID:
            tl = timeline(
                self.node_id,
                [Dated(s.node_id, s.t_first) for s in self.support if s.level is Level.LEAF],
                [Dated(s.node_id, s.t_first) for s in self.conflicts],
            )
        for depth, step in enumerate(self.path):
            pad = "  " * depth
            content, span = step.content, f"{step.t_first:%Y-%m-%d}..{step.t_last:%Y-%m-%d}"
            if depth == 0 and tl is not None and tl.changed:
                latest = next(s for s in self.conflicts if s.node_id == tl.latest_conflict)
                content = change_text(step.content, tl, None)
                content = f'now: "{latest.content}" ({latest.t_first:%Y-%m-%d}); {content}'
                if tl.support_first is not None and tl.support_last is not None:
                    span = f"held {tl.support_first:%Y-%m-%d}..{tl.support_last:%Y-%m-%d}"
                span += f", changed {tl.since:%Y-%m-%d}" if tl.since is not None else ""
            lines.append(
                f"{pad}[{step.level.value}:{step.schema_type}] {content} "
                f"(conf {step.confidence:.2f}, +{step.n_support}/-{step.n_conflict}, {span})"
            )
        if self.archived:
            lines.append("archived: outside the tree (its bounds), still found by recall")

        def against() -> None:
            if self.conflicts:
                lines.append("contradicted by:")
                for s in sorted(self.conflicts, key=lambda c: (c.t_first, c.node_id), reverse=True):
                    why = f" -- {s.edge_reason}" if s.edge_reason else ""
                    lines.append(f"  - [{s.schema_type}] {s.content}  ({s.t_first:%Y-%m-%d}){why}")

        if tl is not None and tl.changed:
            against()  # the current state before the older pattern
        if self.support:
            lines.append("supported by:")
            for s in self.support:
                lines.append(f"  + [{s.schema_type}] {s.content}  ({s.t_first:%Y-%m-%d})")
        if not (tl is not None and tl.changed):
            against()
        if self.observations:
            lines.append("observations:")
            for o in self.observations:
                for m in o.messages:
                    who = m.name or m.role
                    lines.append(f"  {o.at:%Y-%m-%d %H:%M} {who}: {m.content}")
        return "\n".join(lines)
