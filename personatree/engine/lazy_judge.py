"""A judge built on its first call, so that opening a memory to read it loads no model.

The offline judge fits its leaf typer and its router on embeddings of the schema
examples when it is built, which loads the embedding model. Reading commands (show,
stats, export, forget...) never ask the judge anything, so they should not pay that.
"""

from __future__ import annotations

import threading
from typing import Callable, Sequence

from ..ports import Judge, judges_updates
from ..types import LeafDraft, Level, Node, Observation, Route, Summary, Verdict

__all__ = ["LazyJudge"]


class LazyJudge:
    """A :class:`~personatree.ports.Judge` that builds the real one on first use.

    Parameters
    ----------
    build : callable
        Returns the real judge; called once, on the first judge call.
    name : str
        The real judge's name, known without building it.
    """

    def __init__(self, build: Callable[[], Judge], name: str) -> None:
        self._build = build
        self._name = name
        self._judge: Judge | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """The real judge's name."""
        return self._name

    @property
    def built(self) -> bool:
        """Whether the real judge exists yet."""
        return self._judge is not None

    @property
    def judge(self) -> Judge:
        """The real judge, built now if it was not."""
        if self._judge is None:
            with self._lock:  # two first calls at once build it once
                if self._judge is None:
                    self._judge = self._build()
        return self._judge

    def extract(self, observations: Sequence[Observation]) -> list[list[LeafDraft]]:
        """See :meth:`personatree.ports.Judge.extract`."""
        return self.judge.extract(observations)

    def validate(self, pairs: Sequence[tuple[Node, Node, float]]) -> list[Verdict]:
        """See :meth:`personatree.ports.Judge.validate`."""
        return self.judge.validate(pairs)

    def route(self, query: str) -> Route:
        """See :meth:`personatree.ports.Judge.route`."""
        return self.judge.route(query)

    def summarize(self, members: Sequence[Node], level: Level, schema_type: str) -> Summary:
        """See :meth:`personatree.ports.Judge.summarize`."""
        return self.judge.summarize(members, level, schema_type)

    @property
    def judges_updates(self) -> bool:
        """Whether the judge reads which earlier statements a later one changes
        (see :class:`personatree.ports.UpdateJudge`)."""
        return judges_updates(self.judge)

    def updates(self, groups: Sequence[tuple[Node, Sequence[Node]]]) -> list[list[int]]:
        """See :meth:`personatree.ports.UpdateJudge.updates` (no links from a judge
        that does not read them)."""
        inner = self.judge
        return inner.updates(groups) if judges_updates(inner) else [[] for _ in groups]  # type: ignore[attr-defined]
