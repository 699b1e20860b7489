"""Which earlier statements a new statement changes, as a judge reads them.

A change of mind is often told in words no rule reads as one, and far in meaning from
what it ends: "sold the wheel and gave my spot at the studio away" ends a pottery
habit that "glazed six mugs this week" told (cosine 0.1 with MiniLM). Recall's own
rules link a later statement to an earlier one by meaning
(:mod:`personatree.retrieval.updates`), so they miss it. A judge that reads changes
(:class:`~personatree.ports.UpdateJudge`, the LLM judge's ``update`` operation) is
shown each new statement with the person's earlier statements closest to it, and
says which of them it changes; the answer is kept on the new leaf as
``attributes["updates"]`` (the ids of the statements it changes), so it is stored,
exported and read back with the leaf, and recall shows the change with what it
changes.

Earlier statements are the ones said before the new one, in another session, by the
same speaker: within one session a person tells one scene in order. They are read
from the tree and from the statements inserted before it in the same call (an import
inserts a whole history at once), most similar first, at cosine
``insertion.update_floor`` or more, at most ``insertion.update_candidates``.
Archived statements (evidence the tree's bounds moved out of it) are not shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .config import InsertionConfig
from .graph import MemoryGraph
from .index import top_k
from .ports import judges_updates
from .timeline import said_at
from .types import Level, Node

__all__ = ["UPDATES", "Statements", "earlier_candidates", "link_changes"]

#: The leaf attribute that holds the ids of the statements a leaf changes.
UPDATES = "updates"


def _session(node: Node) -> str | None:
    return node.provenance[0].session_id if node.provenance else None


@dataclass(frozen=True, slots=True)
class Statements:
    """Statements a new one may be shown with, as arrays over rows.

    Attributes
    ----------
    nodes : list of Node
    matrix : ndarray
        Their unit embeddings, one row each.
    at : ndarray
        When each was said (POSIX seconds).
    session, speaker : ndarray of object
        Each one's session id and speaker (``None`` where it has none).
    """

    nodes: list[Node]
    matrix: np.ndarray
    at: np.ndarray
    session: np.ndarray
    speaker: np.ndarray

    @classmethod
    def of(cls, nodes: Sequence[Node], matrix: np.ndarray) -> "Statements":
        """The rows of ``nodes``, whose unit embeddings are the rows of ``matrix``."""
        return cls(
            list(nodes), matrix, np.array([said_at(n).timestamp() for n in nodes], dtype=float),
            np.array([_session(n) for n in nodes], dtype=object),
            np.array([n.attributes.get("speaker") for n in nodes], dtype=object),
        )


def earlier_candidates(rows: Statements, leaf: Node, upto: int, cfg: InsertionConfig) -> list[Node]:
    """The earlier statements a new leaf is shown with (pure).

    Parameters
    ----------
    rows : Statements
    leaf : Node
        The new statement (embedded).
    upto : int
        Only the first ``upto`` rows may be shown (those inserted before it).
    cfg : InsertionConfig
        ``update_candidates`` and ``update_floor``.

    Returns
    -------
    list of Node
        Most similar first (ties by row): said before ``leaf``, in another session,
        by its speaker, at cosine ``update_floor`` or more.
    """
    if leaf.embedding is None or upto <= 0:
        return []
    sims = rows.matrix[:upto] @ leaf.embedding
    ok = (
        (sims >= cfg.update_floor)
        & (rows.at[:upto] < said_at(leaf).timestamp())
        & (rows.session[:upto] != _session(leaf))
        & (rows.speaker[:upto] == leaf.attributes.get("speaker"))
    )
    idx = np.flatnonzero(ok)
    return [rows.nodes[int(idx[i])] for i in top_k(sims[idx], cfg.update_candidates)]


def link_changes(graph: MemoryGraph, leaves: Sequence[Node], judge: object, cfg: InsertionConfig) -> int:
    """Ask the judge which earlier statements each new leaf changes; keep its answer.

    Parameters
    ----------
    graph : MemoryGraph
        The tree the leaves are about to be inserted into (read only).
    leaves : sequence of Node
        The new leaves, in insertion order (their ``attributes`` are updated).
    judge : object
        Asked only when it is an :class:`~personatree.ports.UpdateJudge` that reads
        updates.
    cfg : InsertionConfig

    Returns
    -------
    int
        How many leaves now say which statements they change.
    """
    if not leaves or not judges_updates(judge):
        return 0
    new = [leaf for leaf in leaves if leaf.embedding is not None]
    if not new:
        return 0
    # The tree's leaves as its leaf index holds them (rows in the index's order),
    # then the new ones.
    index = graph.index(Level.LEAF)
    tree = [graph.node(x) for x in index.ids]
    fresh = np.stack([leaf.embedding for leaf in new if leaf.embedding is not None])
    rows = Statements.of(tree + new, np.vstack([index.matrix, fresh]) if tree else fresh)
    first = len(tree)
    groups = [(leaf, earlier_candidates(rows, leaf, first + k, cfg)) for k, leaf in enumerate(new)]
    asked = [(later, earlier) for later, earlier in groups if earlier]
    if not asked:
        return 0
    answers = judge.updates(asked)  # type: ignore[attr-defined]
    linked = 0
    for (later, earlier), picks in zip(asked, answers):
        ids = [earlier[j].id for j in picks if 0 <= j < len(earlier)]
        if ids:
            later.attributes[UPDATES] = ids
            linked += 1
    return linked
