"""A judge that reads changes from the scenarios' labels: what recall gives when every
change is linked to what it changes.

The offline judge cannot read a change told in other words than what it ends (it is
the LLM judge's ``update`` operation that does). To measure the rest of the way on
the faithfulness scenarios (which earlier statements insertion shows with a change,
then recall's use of the link) without an LLM, this judge answers ``updates`` from
the labels: a scenario's change changes each of its earlier statements that
insertion showed it with. Everything else is the offline judge's. It is an upper
bound for a judge that reads changes, never a result of one.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from personatree.judge import OfflineJudge
from personatree.types import Node

__all__ = ["LabelledChanges"]


def _observation(node: Node) -> str | None:
    return node.provenance[0].observation_id if node.provenance else None


class LabelledChanges(OfflineJudge):
    """The offline judge, with :meth:`updates` answered from labels.

    Parameters
    ----------
    changes : Mapping[str, frozenset of str]
        Observation id of each change → observation ids of the statements it changes.
    *args, **kwargs
        The offline judge's.
    """

    def __init__(self, changes: Mapping[str, frozenset[str]], *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._changes = dict(changes)

    @property
    def name(self) -> str:
        return "offline+labelled-changes"

    @property
    def judges_updates(self) -> bool:
        return True

    def updates(self, groups: Sequence[tuple[Node, Sequence[Node]]]) -> list[list[int]]:
        out = []
        for later, earlier in groups:
            olds = self._changes.get(_observation(later) or "", frozenset())
            out.append([j for j, e in enumerate(earlier) if _observation(e) in olds])
        return out
