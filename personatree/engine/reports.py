"""Results of the engine's own write operations (forget, rebuild)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RebuildReport", "ForgetReport"]


@dataclass(frozen=True, slots=True)
class RebuildReport:
    """Result of :meth:`PersonaTree.rebuild`."""

    user_id: str
    events: int
    nodes: int
    edges: int
    equal: bool


@dataclass(frozen=True, slots=True)
class ForgetReport:
    """Result of :meth:`PersonaTree.forget`: the node ids removed and those changed."""

    user_id: str
    removed: tuple[str, ...]
    changed: tuple[str, ...]
