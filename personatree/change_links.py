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
from the tree, from the user's archive (a habit last told more than a year before it
ends has left the tree by then, and is still what the change ends) and from the
statements inserted before it in the same call (an import inserts a whole history at
once), most similar first, at cosine ``insertion.update_floor`` or more, at most
``insertion.update_candidates``.

Most similar means most similar once what all of the memory's statements share is
taken out (``insertion.update_specific``; the floor stays on the plain cosine): a
person's chat has a common direction (greetings, praise of the other speaker, "that
sounds awesome") that puts their small talk close to anything they say, so by plain
cosine the habit a change ends ranks behind tens of pleasantries. The cosine is then
taken with the mean statement subtracted from both vectors
(:func:`~personatree.specific.specific_similarity`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .config import InsertionConfig
from .engine.caches import Slot
from .engine.core import Engine
from .engine.reads import archived_leaves
from .graph import MemoryGraph
from .index import top_k
from .ports import judges_updates
from .specific import common_direction, specific_similarity
from .timeline import said_at
from .types import Level, Node

__all__ = [
    "UPDATES", "Block", "Statements", "archived_block", "earlier_candidates", "link_changes", "links_of",
    "stacked",
]

#: The leaf attribute that holds the ids of the statements a leaf changes.
UPDATES = "updates"


def links_of(node: Node) -> tuple[str, ...]:
    """The ids of the statements ``node`` changes, as a judge read them (none: ``()``)."""
    held = node.attributes.get(UPDATES) if node.attributes else None
    if not isinstance(held, list):
        return ()
    return tuple(x for x in held if isinstance(x, str))


def _session(node: Node) -> str | None:
    return node.provenance[0].session_id if node.provenance else None


@dataclass(frozen=True, slots=True)
class Statements:
    """Statements a new one may be shown with, as arrays over rows.

    Attributes
    ----------
    nodes : list of Node
    at : ndarray
        When each was said (POSIX seconds).
    session, speaker : ndarray of int
        Each one's session id and speaker, as codes of ``codes``.
    codes : dict
        Session id or speaker (``None`` where a statement has none) → its code: one
        table for both, so a value is compared as one integer over every row.
    """

    nodes: list[Node]
    at: np.ndarray
    session: np.ndarray
    speaker: np.ndarray
    codes: dict[str | None, int]

    @classmethod
    def of(cls, nodes: Sequence[Node]) -> "Statements":
        """The rows of ``nodes``, in their order."""
        codes: dict[str | None, int] = {}

        def code(value: str | None) -> int:
            return codes.setdefault(value, len(codes))

        n = len(nodes)
        return cls(
            list(nodes), np.fromiter((said_at(x).timestamp() for x in nodes), float, n),
            np.fromiter((code(_session(x)) for x in nodes), np.int64, n),
            np.fromiter((code(x.attributes.get("speaker")) for x in nodes), np.int64, n), codes,
        )

    @classmethod
    def joined(cls, parts: Sequence["Statements"]) -> "Statements":
        """The rows of ``parts``, one after the other (codes mapped into one table)."""
        codes: dict[str | None, int] = {}
        session, speaker = [], []
        for p in parts:
            remap = np.fromiter(
                (codes.setdefault(v, len(codes)) for v in p.codes), np.int64, len(p.codes))
            session.append(remap[p.session])
            speaker.append(remap[p.speaker])
        return cls(
            [x for p in parts for x in p.nodes], np.concatenate([p.at for p in parts]),
            np.concatenate(session), np.concatenate(speaker), codes,
        )


#: Statements and their unit embeddings (one row each): a block of rows shown to a judge.
Block = tuple[Statements, np.ndarray]


def stacked(nodes: Sequence[Node], width: int) -> Block:
    """The :data:`Block` of the ``nodes`` embedded at ``width`` (the others are left out)."""
    keep = [n for n in nodes if n.embedding is not None and np.shape(n.embedding) == (width,)]
    if not keep:
        return Statements.of([]), np.zeros((0, width), np.float32)
    return Statements.of(keep), np.stack([np.asarray(n.embedding, np.float32) for n in keep])


#: Each user's archived block as last stacked, with the archived ids it was stacked from.
_ARCHIVED: Slot[dict[str, tuple[list[str], Block]]] = Slot("change_links.archived", per_user=True)


def archived_block(engine: Engine, user_id: str, graph: MemoryGraph) -> Block:
    """The user's archived leaves (those the tree does not hold) as a :data:`Block`.

    Stacked again only when the archive changed: an insert lists the archive's ids, and
    the leaves and their embeddings are read and stacked once per change (archived
    leaves never change; only consolidation, ``forget`` and deletion change the list).
    """
    nodes = archived_leaves(engine, user_id, graph)
    ids = [n.id for n in nodes]
    held = engine.caches.get(_ARCHIVED, dict)
    hit = held.get(user_id)
    if hit is None or hit[0] != ids:
        hit = held[user_id] = (ids, stacked(nodes, engine.embedder.dim))
    return hit[1]


def earlier_candidates(
    rows: Statements, leaf: Node, sims: np.ndarray, upto: int, cfg: InsertionConfig,
    order: np.ndarray | None = None,
) -> list[Node]:
    """The earlier statements a new leaf is shown with (pure).

    Parameters
    ----------
    rows : Statements
    leaf : Node
        The new statement.
    sims : ndarray
        Its cosine with each row.
    upto : int
        Only the first ``upto`` rows may be shown (those inserted before it).
    cfg : InsertionConfig
        ``update_candidates`` and ``update_floor``.
    order : ndarray, optional
        The similarity the rows are ranked by (default ``sims``), such as
        :func:`~personatree.specific.specific_similarity`; the floor is always on
        ``sims``.

    Returns
    -------
    list of Node
        Highest ``order`` first (ties by row): said before ``leaf``, in another
        session, by its speaker, at cosine ``update_floor`` or more.
    """
    if upto <= 0:
        return []
    close = sims[:upto]
    ok = (
        (close >= cfg.update_floor)
        & (rows.at[:upto] < said_at(leaf).timestamp())
        & (rows.session[:upto] != rows.codes.get(_session(leaf), -1))
        & (rows.speaker[:upto] == rows.codes.get(leaf.attributes.get("speaker"), -1))
    )
    idx = np.flatnonzero(ok)
    rank = close if order is None else order[:upto]
    return [rows.nodes[int(idx[i])] for i in top_k(rank[idx], cfg.update_candidates)]


def link_changes(
    graph: MemoryGraph, leaves: Sequence[Node], judge: object, cfg: InsertionConfig,
    archived: Block | None = None,
) -> int:
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
    archived : Block, optional
        The user's archived leaves the tree does not hold (:func:`stacked`): shown
        like the tree's. Left out when embedded at another width than the leaves.

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
    # The tree's leaves as its leaf index holds them (rows in the index's order), the
    # archived ones, then the new ones; each block's similarities in one product, the
    # blocks never stacked into one matrix.
    fresh = np.stack([np.asarray(leaf.embedding, np.float32) for leaf in new])
    index = graph.index(Level.LEAF)
    blocks: list[Block] = []
    if index.ids:
        blocks.append((Statements.of([graph.node(x) for x in index.ids]), index.matrix))
    if archived is not None and archived[0].nodes and archived[1].shape[1:] == fresh.shape[1:]:
        blocks.append(archived)
    blocks.append((Statements.of(new), fresh))
    rows = Statements.joined([b[0] for b in blocks])
    parts = [np.asarray(b[1] @ fresh.T, np.float32) for b in blocks]
    sims = np.concatenate(parts)
    order = sims
    if cfg.update_specific:
        mean = common_direction([b[1] for b in blocks])
        order = np.concatenate([specific_similarity(p, b[1], fresh, mean) for p, b in zip(parts, blocks)])
    first = len(rows.nodes) - len(new)
    groups = [
        (leaf, earlier_candidates(rows, leaf, sims[:, k], first + k, cfg, order[:, k]))
        for k, leaf in enumerate(new)
    ]
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
