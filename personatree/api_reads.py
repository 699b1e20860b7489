"""The reading half of the :class:`~personatree.api.PersonaTree` facade.

Each method checks what the caller passed and hands the call to the engine's reads
(:mod:`personatree.engine.reads`), to recall (:mod:`personatree.retrieval`, through
the tiers when ``config.tiering.tiers``) or to the profile
(:mod:`personatree.tiering.profile`).
"""

from __future__ import annotations

import warnings
from datetime import datetime
from typing import TYPE_CHECKING, Any, Sequence

from .engine import reads
from .engine.core import Engine
from .engine.export import export_user
from .errors import InputError
from .graph import MemoryGraph
from .inputs import check_query, parse_time
from .explanation import Explanation
from .types import Level, Node, SearchHit

if TYPE_CHECKING:  # pragma: no cover
    from .judge.accounting import UsageReport
    from .retrieval.result import Recall
    from .tiering.profile import Profile
    from .tiering.shared import SharedTier

__all__ = ["TreeReads", "positive", "deprecated"]


def positive(value: object, name: str) -> None:
    """Refuse a ``value`` (other than ``None``) that is not a positive integer."""
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise InputError(f"{name} must be a positive integer")


def deprecated(old: str, new: str) -> None:
    """Warn that the keyword ``old`` is the former name of ``new``."""
    warnings.warn(f"{old}= is deprecated; use {new}=", DeprecationWarning, stacklevel=3)


class TreeReads:
    """The read methods of :class:`~personatree.api.PersonaTree`."""

    engine: Engine
    #: The shared hot tier recall goes through (``PersonaTree(hot=...)``), or ``None``.
    hot: "SharedTier | None" = None

    def graph(self, user_id: str) -> MemoryGraph:
        """A copy of a user's tree, safe to explore and modify (e.g. in a notebook).

        Raises
        ------
        UnknownUserError
        """
        return reads.graph_copy(self.engine, self.engine.check_user(user_id))

    def users(self) -> list[str]:
        """Ids of every user with stored data."""
        return self.engine.store.users()

    def node(self, user_id: str, node_id: str) -> Node:
        """A copy of one node.

        Raises
        ------
        UnknownUserError, UnknownNodeError
        """
        return reads.node_copy(self.engine, self.engine.check_user(user_id), node_id)

    def nodes(
        self, user_id: str, level: Level | str | None = None, schema_type: str | None = None
    ) -> list[Node]:
        """Copies of a user's nodes, optionally of one level and/or schema type.

        Raises
        ------
        UnknownUserError
        InputError
            For an unknown level.
        """
        lv = reads.as_level(level)
        return reads.node_copies(self.engine, self.engine.check_user(user_id), lv, schema_type)

    def confidence(
        self, user_id: str, node_id: str, now: datetime | str | None = None, *, at: datetime | str | None = None
    ) -> float:
        """Confidence of a node read at ``now`` (default the clock's now), with lazy decay.

        ``at=`` is the former name of ``now`` (deprecated).

        Raises
        ------
        UnknownUserError, UnknownNodeError, InputError
        """
        if at is not None:
            deprecated("at", "now")
            if now is not None:
                raise InputError("give now or at (its deprecated name), not both")
            now = at
        when = self.engine.clock.now() if now is None else parse_time(now)
        return reads.confidence_of(self.engine, self.engine.check_user(user_id), node_id, when)

    def search(
        self,
        user_id: str,
        query: str,
        k: int = 10,
        level: Level | str | None = None,
        *,
        levels: Sequence[Level | str] | None = None,
    ) -> list[SearchHit]:
        """Plain cosine-similarity search over a user's nodes.

        Parameters
        ----------
        user_id : str
        query : str
        k : int
            How many hits.
        level : Level or str, optional
            Deprecated: restrict to one level (use ``levels=[level]``).
        levels : sequence of Level or str, optional
            Restrict to these levels (default all).

        Returns
        -------
        list of SearchHit
            Best first.

        Raises
        ------
        UnknownUserError, QueryError, InputError
        """
        q = check_query(query, self.engine.config.limits)
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise InputError("k must be a positive integer")
        if level is not None:
            deprecated("level", "levels")
            if levels is not None:
                raise InputError("give levels or level (its deprecated name), not both")
        lv = reads.as_level(level)
        chosen = [lv] if lv is not None else (None if levels is None else reads.as_levels(levels))
        return reads.search_user(self.engine, self.engine.check_user(user_id), q, k, chosen)

    def explain(self, user_id: str, node_id: str, *, max_observations: int = 20) -> Explanation:
        """Why a node is believed: its support path, its evidence and the observations behind it.

        Raises
        ------
        UnknownUserError, UnknownNodeError
        """
        uid, nid = self.engine.check_user(user_id), self.engine.check_node(node_id)
        if not isinstance(max_observations, int) or isinstance(max_observations, bool) or max_observations < 0:
            raise InputError("max_observations must be a non-negative integer")
        return reads.explain_node(self.engine, uid, nid, max_observations)

    def render(self, user_id: str, **kwargs: Any) -> str:
        """The user's tree as readable indented text (see :func:`personatree.render.tree_text`)."""
        return reads.render_user(self.engine, self.engine.check_user(user_id), **kwargs)

    def stats(self, user_id: str) -> dict[str, Any]:
        """Counts of nodes per level, edges per kind, orphans and observations."""
        return reads.user_stats(self.engine, self.engine.check_user(user_id))

    def recall(
        self,
        user_id: str,
        query: str,
        budget: int | None = None,
        model: str | None = None,
        *,
        levels: Sequence[Level | str] | None = None,
        from_user: bool = False,
    ) -> "Recall":
        """Query-conditioned, token-budgeted context for an LLM.

        ``from_user=True`` says the query is the person's own latest message rather
        than a question about them (see :func:`personatree.retrieval.recall_user`).
        See :mod:`personatree.retrieval`.
        """
        from .retrieval import recall_user

        if model is not None and not (isinstance(model, str) and model.strip()):
            raise InputError("model must be a model name such as 'gpt-4o-mini'")
        positive(budget, "budget")
        lv = None if levels is None else reads.as_levels(levels)
        uid = self.engine.check_user(user_id)
        if self.hot is not None:
            from .tiering.shared_read import shared_recall

            return shared_recall(self.engine, uid, query, budget=budget, model=model, levels=lv,
                                 from_user=from_user).recall
        if self.engine.config.tiering.tiers:
            from .tiering.search import tiered_recall

            return tiered_recall(self.engine, uid, query, budget=budget, model=model, levels=lv,
                                 from_user=from_user).recall
        return recall_user(self.engine, uid, query, budget=budget, model=model, levels=lv,
                           from_user=from_user)

    def profile(self, user_id: str, budget: int | None = None) -> "Profile":
        """The tier-1 profile block (top claims, pivotal patterns, recent evidence) for a
        system prompt, within ``budget`` tokens. See :mod:`personatree.tiering`.

        Raises
        ------
        UnknownUserError
        """
        positive(budget, "budget")
        uid = self.engine.check_user(user_id)
        if self.hot is not None:
            from .tiering.shared_profile import shared_profile

            return shared_profile(self.engine, uid, budget=budget)
        from .tiering.profile import profile_user

        return profile_user(self.engine, uid, budget=budget)

    def judge_usage(self, user_id: str | None = None) -> "UsageReport | None":
        """LLM token and cost accounting per user and operation (``None`` for the offline judge)."""
        usage = getattr(self.engine.judge, "usage", None)
        return usage(user_id) if callable(usage) else None

    def export(self, user_id: str) -> dict[str, Any]:
        """Everything stored about a user as JSON-ready data.

        Returns
        -------
        dict
            ``{"format", "user_id", "version", "embedder", "observations", "nodes",
            "edges", "journal", "archive"}``; embeddings are base64 float32 (little-endian).

        Raises
        ------
        UnknownUserError
        """
        return export_user(self.engine, self.engine.check_user(user_id))
