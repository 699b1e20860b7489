"""What the runner needs from a system, and the context a system returns for a question."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, Sequence

from .types import Turn

__all__ = ["Context", "System"]


@dataclass(frozen=True, slots=True)
class Context:
    """What a system put in front of the model for one question.

    Attributes
    ----------
    text : str
        The rendered context.
    turn_ids : tuple of str
        Turns whose content reached the context, in order of first appearance.
    tokens : int
        Tokens of ``text`` by the shared counter.
    seconds : float
        Wall time of the retrieval call.
    """

    text: str
    turn_ids: tuple[str, ...]
    tokens: int
    seconds: float


class System(Protocol):
    """What the runner needs from a system."""

    name: str

    def ingest(self, conv_id: str, turns: Sequence[Turn]) -> float:
        """Build memory for ``conv_id`` from its turns; return the seconds it took."""
        ...

    def retrieve(self, conv_id: str, query: str, at: datetime | None, budget: int, *,
                 from_user: bool = False) -> Context:
        """A context of at most ``budget`` tokens for ``query`` (``from_user``: see ``Question``)."""
        ...

    def ranked(self, conv_id: str, query: str, at: datetime | None, k: int, *,
               from_user: bool = False) -> list[str]:
        """The first ``k`` distinct turn ids the system would show, best first."""
        ...

    def checkpoints(self, conv_id: str) -> list[tuple[int, int]]:
        """(turns ingested, standing-context tokens) measured after each session."""
        ...

    def drop(self, conv_id: str) -> None:
        """Forget a conversation (frees memory between cases)."""
        ...

    def close(self) -> None:
        """Release resources."""
        ...
