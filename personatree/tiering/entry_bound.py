"""Whether a shared hot-tier entry could answer a query, decided before decoding it.

A query that neither tier 1 nor tiers 1+2 can answer goes to the store for tier 3.
In-process tiering tells so with :func:`~personatree.tiering.search.could_suffice`:
every node of the tier with cosine ≥ ``sufficient_cosine``, at the most its rendered
line could cost, must fill ``sufficient_fill`` of the budget. An entry carries what
that bound reads of each of its embedded nodes (``bound``: its level, that cost and
whether tier 1's sub-tree holds it), aligned with the rows of its embedding block,
so a reader decides from the embeddings and these columns alone, without decoding
the entry's nodes, building its graph or indexing it. The cost is kept in bytes
(a bound for any tokenizer) and, when the writer had a counter, in that counter's
tokens with its name: a reader counting with the same one uses the tokens.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from ..types import Level, Node
from ..ports import TokenCounter
from .line_bound import counter_name, line_bytes, line_tokens

__all__ = ["bound_data", "bound_could"]

_F32 = np.dtype("<f4")


def bound_data(nodes: Iterable[Node], tier1: set[str], counter: TokenCounter | None = None) -> dict[str, Any]:
    """The entry's ``bound``: one value per embedded node, in the entry's node order.

    Parameters
    ----------
    nodes : iterable of Node
        The entry's nodes, in its order (those without an embedding are skipped, as
        their rows are absent from the embedding block).
    tier1 : set of str
        The ids tier 1's sub-tree holds.
    counter : TokenCounter, optional
        The counter recall uses by default; adds the costs in its tokens.

    Returns
    -------
    dict
        ``lv`` (level values), ``cost`` (bytes, :func:`~.line_bound.line_bytes`),
        ``t1`` (1 when in tier 1's sub-tree) and, with a counter, ``tok``
        (:func:`~.line_bound.line_tokens`) and ``tok_by`` (its
        :func:`~.line_bound.counter_name`).
    """
    embedded = [n for n in nodes if n.embedding is not None]
    out: dict[str, Any] = {
        "lv": [n.level.value for n in embedded],
        "cost": [line_bytes(n) for n in embedded],
        "t1": [int(n.id in tier1) for n in embedded],
    }
    if counter is not None:
        out["tok"] = [line_tokens(n, counter) for n in embedded]
        out["tok_by"] = counter_name(counter)
    return out


def bound_could(bound: Any, emb: bytes, qvec: np.ndarray | None, cosine: float, need: float,
                levels: Sequence[Level] | None, counter: TokenCounter | None = None) -> tuple[bool, bool] | None:
    """Whether tiers 1+2, and tier 1, could be sufficient (the bound of ``could_suffice``).

    Parameters
    ----------
    bound : dict
        An entry's :func:`bound_data`.
    emb : bytes
        The entry's embedding block (float32, one row per embedded node).
    qvec : ndarray or None
        The query embedding; without one no tier can be sufficient.
    cosine, need : float
        ``sufficient_cosine`` and ``sufficient_fill`` × budget.
    levels : sequence of Level, optional
        Only these levels may be shown.
    counter : TokenCounter, optional
        The recall's counter: the costs in its tokens are read when the entry has
        them counted by the same one, else the costs in bytes.

    Returns
    -------
    (bool, bool) or None
        ``(tiers 1+2 could, tier 1 could)``; ``None`` when ``bound`` does not
        describe ``emb`` (the caller decodes the entry and decides from its nodes).
    """
    if qvec is None:
        return False, False
    try:
        key = "tok" if counter is not None and bound.get("tok_by") == counter_name(counter) else "cost"
        lv, cost, t1 = bound["lv"], np.asarray(bound[key], dtype=np.int64), np.asarray(bound["t1"], dtype=bool)
        n = len(lv)
        if n != len(cost) or n != len(t1):
            return None
        if n == 0:
            return False, False
        q = np.asarray(qvec, dtype=np.float32).reshape(-1)
        if len(emb) != 4 * n * q.shape[0]:
            return None
        mat = np.frombuffer(emb, dtype=_F32).reshape(n, q.shape[0])
        close = mat @ q >= cosine
        if levels:
            allowed = {Level(x).value for x in levels}
            close &= np.fromiter((x in allowed for x in lv), dtype=bool, count=n)
    except (AttributeError, KeyError, TypeError, ValueError):
        return None
    # could_fill stops at the first prefix reaching ``need``: true only with at least
    # one close node, even when ``need`` is 0.
    c1 = close & t1
    return bool(close.any()) and int(cost[close].sum()) >= need, bool(c1.any()) and int(cost[c1].sum()) >= need
