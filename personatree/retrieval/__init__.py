"""Query-conditioned path retrieval (DESIGN.md, "query-conditioned path retrieval").

``recall_user`` routes the query to an abstraction level, scores nodes by dense and
lexical relevance fused by RRF, packs support-path views (root alone, root + mid,
root + mid + leaves, mid alone, mid + leaves, leaves alone) under a token budget
counted with the target model's tokenizer, renders them for an LLM and records the
access for tiering.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Sequence

from ..errors import UnknownUserError
from ..inputs import check_query
from ..types import Level, Route
from .access import access_log
from .engine import recall_state
from .result import Recall, RecallItem, TraceEntry
from .router import Router, default_router
from .state import RetrievalState, state_for, store_archive, store_turn_text
from .tokens import LiteLLMTokenCounter, counter_of, shared_counter

__all__ = [
    "recall_user",
    "Recall",
    "RecallItem",
    "TraceEntry",
    "Router",
    "default_router",
    "LiteLLMTokenCounter",
]

_STATES: "weakref.WeakKeyDictionary[Any, dict[str, RetrievalState]]" = weakref.WeakKeyDictionary()
_STATES_LOCK = threading.Lock()


def _route(tree: Any, query: str, qvec: Any) -> Route:
    # Reuse the query vector when the judge routes with our offline router; any other
    # judge (an LLM judge) routes its own way.
    judge = tree.judge
    router = getattr(judge, "router", None) or getattr(judge, "_router", None)
    if isinstance(router, Router):
        return router.route_vector(query, qvec)
    try:
        route = judge.route(query)
    except NotImplementedError:
        route = None
    if isinstance(route, Route):
        return route
    return default_router(tree.embedder).route_vector(query, qvec)


def recall_user(
    tree: Any,
    user_id: str,
    query: str,
    *,
    budget: int | None = None,
    model: str | None = None,
    levels: Sequence[Level] | None = None,
) -> Recall:
    """Query-conditioned, token-budgeted context for one user.

    Parameters
    ----------
    tree : PersonaTree
    user_id : str
        A validated user id.
    query : str
    budget : int, optional
        Token budget (default ``config.recall.budget``); the text never exceeds it.
    model : str, optional
        Model whose tokenizer counts tokens (default: the tree's injected
        ``token_counter``, else ``config.recall.model``).
    levels : sequence of Level, optional
        Only show nodes of these levels (e.g. ``[Level.LEAF]`` for the leaves-only ablation).

    Returns
    -------
    Recall

    Raises
    ------
    UnknownUserError, QueryError, InputError
    """
    from ..errors import InputError

    cfg = tree.config.recall
    q = check_query(query, tree.config.limits)
    b = cfg.budget if budget is None else budget
    if not isinstance(b, int) or isinstance(b, bool) or b < 1:
        raise InputError("budget must be a positive integer")
    counter = shared_counter(model) if model else counter_of(tree, cfg.model)
    qvec = tree.embedder.embed([q])[0]
    route = _route(tree, q, qvec)
    now = tree.clock.now()
    with tree._lock:
        st = tree._state(user_id)
        if st.version == 0:
            raise UnknownUserError(f"no data stored for user {user_id!r}")
        state = _user_state(tree, user_id, st)
        result = recall_state(
            state,
            q,
            qvec,
            route,
            registry=tree.registry,
            counter=counter,
            budget=b,
            now=now,
            cfg=cfg,
            levels=levels,
        )
    access_log(tree, cfg.access_flush_every).record(user_id, result.node_ids, now)
    return result


def _user_state(tree: Any, user_id: str, st: Any) -> RetrievalState:
    """The engine's cached retrieval state of a user, refreshed to ``st`` (call under
    ``tree._lock``); whole turns are read from the tree's observation log, and the
    user's archived leaves (evidence the tree's bounds took out of it) are searched too."""
    with _STATES_LOCK:
        cache = _STATES.setdefault(tree, {})
    return state_for(cache, user_id, st.graph, st.version, store_turn_text(tree.store, user_id),
                     store_archive(tree.store, user_id))
