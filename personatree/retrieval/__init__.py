"""Query-conditioned path retrieval (ARCHITECTURE.md, "query-conditioned path retrieval").

``recall_user`` routes the query to an abstraction level, scores nodes by dense and
lexical relevance fused by RRF, packs support-path views (root alone, root + mid,
root + mid + leaves, mid alone, mid + leaves, leaves alone) under a token budget
counted with the target model's tokenizer, renders them for an LLM and records the
access for tiering.
"""

from __future__ import annotations

from typing import Sequence

from ..engine.core import EngineLike, engine_of
from ..types import Level
from .access import access_log
from .lazy_archive import ArchiveChanged
from .prelude import first_build, held_state, prepare_recall
from .result import Recall, RecallItem, TraceEntry
from .router import Router, default_router
from .tokens import LiteLLMTokenCounter

__all__ = [
    "recall_user",
    "Recall",
    "RecallItem",
    "TraceEntry",
    "Router",
    "default_router",
    "LiteLLMTokenCounter",
]


def recall_user(
    tree: EngineLike,
    user_id: str,
    query: str,
    *,
    budget: int | None = None,
    model: str | None = None,
    levels: Sequence[Level] | None = None,
    from_user: bool = False,
) -> Recall:
    """Query-conditioned, token-budgeted context for one user.

    Parameters
    ----------
    tree : Engine or PersonaTree
    user_id : str
        A validated user id.
    query : str
    budget : int, optional
        Token budget (default ``config.recall.budget``); the text never exceeds it.
    model : str, optional
        Model whose tokenizer counts tokens (default: the engine's
        ``token_counter``, else ``config.recall.model``).
    levels : sequence of Level, optional
        Only show nodes of these levels (e.g. ``[Level.LEAF]`` for the leaves-only ablation).
    from_user : bool
        ``True`` when ``query`` is the person's own message to the agent (their
        latest turn), not a question about them: whatever it says is read as their
        situation, so the goals, values, conditions and causes they have stated are
        offered with it even when it shares few words with them.

    Returns
    -------
    Recall

    Raises
    ------
    UnknownUserError, QueryError, InputError
    """
    engine = engine_of(tree)
    req = prepare_recall(engine, query, budget=budget, model=model, levels=levels, from_user=from_user)
    with engine.lock:
        for attempt in (0, 1):
            with first_build(engine, user_id):
                state = held_state(engine, user_id)
            try:
                result = req.run(state)
                break
            except ArchiveChanged:
                # Another process removed an archived leaf after the version was read;
                # the next read of the version refreshes the state past that commit.
                if attempt:
                    raise
    access_log(engine, req.cfg.access_flush_every).record(user_id, result.node_ids, req.now)
    return result
