"""Per-user retrieval state, cached per graph version and refreshed incrementally.

Everything a query needs that does not depend on the query lives here: the dense
matrices per level, the lexical indexes (BM25 over mids/roots and over leaf *turns*),
the support-edge maps and the leaf → turn grouping. It is built once per user and,
when the tree changes, updated by diffing node signatures, so only changed nodes are
re-tokenized. Queries never rebuild it.

A turn is indexed lexically by its whole message as observed (read from the
observation log through a :data:`TurnText` loader) when one is given: the sentences
that never became leaves, or were forgotten by consolidation since, still tell which
turn a query is about, and the turn is shown through the leaves it has left.

The user's *archive* (leaves that consolidation's bounds took out of the tree, see
:mod:`personatree.consolidate.bounds`) is part of this state, loaded through an
:data:`ArchiveSource`: archived leaves are rows of the leaf matrix, documents of the
turn index and entries of ``nodes`` like any orphan leaf, so recall scores and shows
them as verbatim evidence. They have no parent and no children: the tree the
consolidator, the tiers and the profile see does not hold them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterable, Mapping

import numpy as np

from ..change_links import links_of
from ..graph import MemoryGraph
from ..specific import common_direction
from ..types import EdgeKind, Level, Node
from ..stance import side_of, stance_of
from ..text import is_change, is_disposition, is_standing
from ..text.reach import reach_of
from ..timeline import said_at
from .archive_rows import archive_rows, with_archive_rows
from .lazy_archive import LazyArchive, LazyNodes, refreshed_signatures, settled_signatures
from .packed_maps import PackedMap
from .node_text import extra_text as _extra_text, node_doc_tokens, signature, turn_key
from .lexical import BM25Index, date_tokens, tokenize
from .scenes import scene_of
from .turn_memo import TurnDocument, TurnMemo, turn_digest
from ..engine.sources import ArchiveSource, TurnSource, TurnText, store_archive, store_turn_text

__all__ = [
    "LevelArrays", "RetrievalState", "TurnSource", "TurnText", "ArchiveSource", "store_archive", "turn_key",
    "node_doc_tokens", "store_turn_text", "state_for",
]


@dataclass(slots=True)
class LevelArrays:
    """Row ids and the (read-only) embedding matrix of one level."""

    ids: list[str]
    matrix: np.ndarray
    row: dict[str, int]


@dataclass(slots=True)
class RetrievalState:
    """Query-independent retrieval data for one user's graph at one version."""

    graph: MemoryGraph
    version: Hashable = None
    turn_text: TurnText | None = None
    archive_source: ArchiveSource | None = None
    # The turn documents kept in the store (see turn_memo); None: computed every time.
    memo: TurnMemo | None = None
    # Archived leaves (id → node) and their embedding rows, appended to the leaf level;
    # a state read from its snapshot reads the leaves only when shown (LazyArchive).
    archive: Mapping[str, Node] = field(default_factory=dict)
    _archive_rows: tuple[list[str], np.ndarray] | None = None
    arrays: dict[Level, LevelArrays] = field(default_factory=dict)
    bm25: dict[Level, BM25Index] = field(
        default_factory=lambda: {Level.MID: BM25Index(), Level.ROOT: BM25Index()}
    )
    turns: BM25Index = field(default_factory=BM25Index)
    turn_of: dict[str, str] = field(default_factory=dict)
    turn_seq: dict[str, int] = field(default_factory=dict)
    turn_leaves: dict[str, list[str]] = field(default_factory=dict)
    parent: dict[str, str] = field(default_factory=dict)
    children: dict[str, list[str]] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    # Leaves stating a lasting disposition of the speaker (text.is_disposition), and
    # their rows in the leaf matrix: a third retriever for questions about the person.
    dispositions: set[str] = field(default_factory=set)
    disposition_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # Leaves telling a change in the speaker's circumstances or habits (text.is_change),
    # and their rows: what a later question about the person depends on most.
    changes: set[str] = field(default_factory=set)
    change_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # Of those, the kinds of change that reach other statements (text.reach: a knee
    # injury reaches running), read here while the text is at hand: an archived
    # leaf's text is read from the store only when a recall shows it.
    reach: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Leaves stating a goal, value, ongoing condition or cause of the speaker
    # (text.is_standing), and their rows: what a later situation is read against.
    standing: set[str] = field(default_factory=set)
    standing_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # When each leaf was said (POSIX seconds), the side of its stance (+1/0/-1) and its
    # session, for telling which later statement updates an earlier one
    # (retrieval.updates).
    leaf_said: dict[str, tuple[float, int, str]] = field(default_factory=dict)
    # The statements each leaf changes as a judge read them at insertion
    # (change_links), for the tree's leaves and the archive's alike: a link outlives
    # the tree's bounds as the statements it joins do.
    judged: dict[str, tuple[str, ...]] = field(default_factory=dict)
    updates_memo: tuple[Any, Any] | None = None
    # The leaf rows' products with what they share (:meth:`leaf_centre`), with the
    # rows they were taken from.
    centre_memo: tuple[Any, Any, Any] | None = None
    # Scenes: the session of each turn, the turns of each session, and per session the
    # (previous, next) turn of each, in time order. A session's order is built on first
    # use and dropped only when one of its turns changes, so an observe does not make
    # the next recall re-sort every turn of the user.
    turn_session: dict[str, str] = field(default_factory=dict)
    session_turns: dict[str, set[str]] = field(default_factory=dict)
    _scenes: dict[str, dict[str, tuple[str | None, str | None]]] = field(default_factory=dict)
    line_cache: dict[Hashable, tuple[str, int, int, str]] = field(default_factory=dict)
    type_cache: dict[Hashable, tuple[float, float | None]] = field(default_factory=dict)
    _sig: dict[str, Hashable] = field(default_factory=dict)

    def refresh(
        self, graph: MemoryGraph, version: Hashable, changed: Iterable[str] | None = None
    ) -> "RetrievalState":
        """Bring the state in step with ``graph`` at ``version`` (cheap when unchanged).

        Parameters
        ----------
        graph : MemoryGraph
        version : hashable
        changed : iterable of str, optional
            The only node ids that may have been added, removed or edited since the
            last refresh (a caller that knows, such as a hot tier's promotion); the
            others are not compared. Default: compare every node.

        Returns
        -------
        RetrievalState
            ``self``, updated.
        """
        if graph is self.graph and version == self.version and version is not None:
            return self
        if isinstance(self.archive, LazyArchive):
            if self._lazy_refresh(graph, version):
                return self
        self.own_maps()
        self.graph = graph
        if self.archive_source is not None:
            archive = self.archive_source(self.archive)
            if archive.keys() != self.archive.keys():
                self._archive_rows = None
            self.archive = archive
        dirty_turns: set[str] = set()
        if changed is None:
            self._sig = self._diff_every(graph, dirty_turns)
            self._reindex_turns(graph, dirty_turns)
            self._rebuild_structure(graph)
        else:
            ids = list(dict.fromkeys(changed))
            self._sig = self._diff_some(graph, ids, dirty_turns)
            self._reindex_turns(graph, dirty_turns)
            self._patch_structure(graph, ids)
        self.version = version
        return self

    def _lazy_refresh(self, graph: MemoryGraph, version: Hashable) -> bool:
        # A state read from its snapshot, its archive still unread. When no commit
        # since changed content (only recall statistics, so the tree's signatures are
        # the same), only the structure follows the reloaded tree. Otherwise the
        # whole archive is read and each leaf's old signature recovered from the
        # snapshot's digest, and the ordinary refresh follows.
        lazy = self.archive
        assert isinstance(lazy, LazyArchive)
        tree = {n.id: signature(n) for n in graph.nodes()}
        # The tree's signatures, when the snapshot gave only their digests, from the tree now.
        held = self._sig if lazy.tree_digests is None else settled_signatures(lazy.tree_digests, tree.get)
        if lazy.unchanged() and all(held.get(k) == v for k, v in tree.items()) and len(tree) == len(held):
            self._sig, lazy.tree_digests = held, None
            self.graph = graph
            self._rebuild_structure(graph)
            self.version = version
            return True
        current = lazy.read_all()
        if lazy.tree_digests is not None:  # a node of the tree then may be archived now
            self._sig = settled_signatures(
                lazy.tree_digests, lambda k: tree.get(k) or (signature(current[k]) if k in current else None))
            lazy.tree_digests = None
        self._sig.update(refreshed_signatures(lazy, graph, current, signature))
        self.archive = {k: current[k] for k in lazy.ids if k in current}
        if len(self.archive) != len(lazy.ids):
            self._archive_rows = None
        return False

    def own_maps(self) -> None:
        """Turn the maps read from a snapshot (read-only views) into dicts, to update them."""
        for name in ("turn_of", "turn_leaves", "turn_seq", "turn_session", "leaf_said", "session_turns"):
            held = getattr(self, name)
            if isinstance(held, PackedMap):
                setattr(self, name, held.as_dict())

    def prefetch(self, ids: Iterable[str]) -> None:
        """Read, in one store read, the archived leaves among ``ids`` not read yet.

        Only a state read back from its snapshot reads archived leaves on demand; for
        any other state this does nothing.
        """
        if isinstance(self.nodes, LazyNodes):
            self.nodes.prefetch(ids)

    def _diff_every(self, graph: MemoryGraph, dirty_turns: set[str]) -> dict[str, Hashable]:
        # Compare every node's signature with the last refresh's; returns the new ones.
        every = self._every(graph)
        new_sig = {n.id: signature(n) for n in every}
        for nid, sig in self._sig.items():
            if new_sig.get(nid) != sig:
                self._drop(nid, sig, dirty_turns)
        for n in every:
            if self._sig.get(n.id) != new_sig[n.id]:
                self._add(n, dirty_turns)
        return new_sig

    def _diff_some(self, graph: MemoryGraph, ids: list[str], dirty_turns: set[str]) -> dict[str, Hashable]:
        # Only ``ids`` may have changed: compare just those; returns the new signatures.
        new_sig = dict(self._sig)
        for nid in ids:
            if nid in graph:
                new_sig[nid] = signature(graph.node(nid))
            else:
                new_sig.pop(nid, None)
        for nid in ids:
            old = self._sig.get(nid)
            if old is not None and new_sig.get(nid) != old:
                self._drop(nid, old, dirty_turns)
        for nid in ids:
            sig = new_sig.get(nid)
            if sig is not None and self._sig.get(nid) != sig:
                self._add(graph.node(nid), dirty_turns)
        return new_sig

    def _reindex_turns(self, graph: MemoryGraph, dirty_turns: set[str]) -> None:
        # Sorted: turn rows break BM25 ties, and set order changes with the hash seed.
        dirty = sorted(dirty_turns)
        members = {tk: self._members(graph, tk) for tk in dirty}
        memo = self.memo
        digests = {tk: turn_digest(ns, _extra_text) for tk, ns in members.items() if ns} if memo is not None else {}
        docs = {tk: memo.get(tk, d) for tk, d in digests.items()} if memo is not None else {}
        # Only the turns without a stored document read their message from the log.
        missing = [tk for tk in dirty if members[tk] and docs.get(tk) is None]
        texts = self.turn_text(missing) if self.turn_text is not None and missing else {}
        for tk in dirty:
            nodes = members[tk]
            self._leave_session(tk)
            if not nodes:
                self.turns.remove(tk)
                self.turn_leaves.pop(tk, None)
                self.turn_seq.pop(tk, None)
                if memo is not None:
                    memo.drop(tk)
                continue
            doc = docs.get(tk)
            if doc is None:
                doc = self._document(tk, nodes, texts.get(tk))
                if memo is not None and tk in texts:  # a turn without its message is not kept
                    memo.put(tk, digests[tk], doc)
            self.dispositions.difference_update(x.id for x in nodes)
            self.dispositions.update(doc.dispositions)
            if doc.seq >= 0:
                self.turn_seq[tk] = doc.seq
            if nodes[0].provenance:
                self._join_session(tk, nodes[0].provenance[0].session_id)
            self.turns.add(tk, doc.tokens)
        if memo is not None:
            memo.flush()

    def _members(self, graph: MemoryGraph, tk: str) -> list[Node]:
        # A turn's leaves in sentence order (empty when it has none left).
        return sorted(
            (self._node(graph, m) for m in self.turn_leaves.get(tk) or ()),
            key=lambda x: x.provenance[0].sentence if x.provenance else 0,
        )

    def _document(self, tk: str, nodes: list[Node], src: TurnSource | None) -> TurnDocument:
        # The whole message as observed when the log has it, else its leaves' text.
        toks: list[str] = []
        if src is not None:
            toks = tokenize(src.text)
            extra = {e for x in nodes for e in tokenize(_extra_text(x))}
            toks.extend(sorted(extra.difference(toks)))  # speaker and entity names
        else:
            for x in nodes:
                toks.extend(tokenize(x.content + " " + _extra_text(x)))
        toks.extend(date_tokens(nodes[0].t_first))
        disp = [x.id for x in nodes if is_disposition(x.content)]
        return TurnDocument(toks, src.seq if src is not None else -1, disp)

    def _every(self, graph: MemoryGraph) -> list[Node]:
        # The tree's nodes, then the archived leaves (an id in both is the tree's).
        out = list(graph.nodes())
        out.extend(n for k, n in self.archive.items() if k not in graph)
        return out

    def _node(self, graph: MemoryGraph, nid: str) -> Node:
        return graph.node(nid) if nid in graph else self.archive[nid]

    def _leave_session(self, tk: str) -> None:
        sess = self.turn_session.pop(tk, None)
        if sess is not None:
            self._scenes.pop(sess, None)
            turns = self.session_turns.get(sess)
            if turns is not None:
                turns.discard(tk)
                if not turns:
                    del self.session_turns[sess]

    def _join_session(self, tk: str, sess: str) -> None:
        self.turn_session[tk] = sess
        self.session_turns.setdefault(sess, set()).add(tk)
        self._scenes.pop(sess, None)

    def _drop(self, nid: str, sig: Hashable, dirty: set[str]) -> None:
        level = sig[0]  # type: ignore[index]
        if level is Level.LEAF:
            self.dispositions.discard(nid)
            self.changes.discard(nid)
            self.reach.pop(nid, None)
            self.standing.discard(nid)
            self.leaf_said.pop(nid, None)
            self.judged.pop(nid, None)
            tk = self.turn_of.pop(nid, None)
            if tk is not None:
                members = self.turn_leaves.get(tk, [])
                if nid in members:
                    members.remove(nid)
                dirty.add(tk)
        else:
            self.bm25[level].remove(nid)

    def _add(self, n: Node, dirty: set[str]) -> None:
        if n.level is Level.LEAF:
            stance = stance_of(n.attributes)
            if is_change(n.content, stance):
                self.changes.add(n.id)
                kinds = reach_of(n.content)
                if kinds:
                    self.reach[n.id] = kinds
            if is_standing(n.content):
                self.standing.add(n.id)
            session = n.provenance[0].session_id if n.provenance else ""
            self.leaf_said[n.id] = (said_at(n).timestamp(), side_of(stance), session)
            links = links_of(n)
            if links:
                self.judged[n.id] = links
            tk = turn_key(n)  # its disposition is decided with its turn (_reindex_turns)
            self.turn_of[n.id] = tk
            members = self.turn_leaves.setdefault(tk, [])
            if n.id not in members:
                members.append(n.id)
            dirty.add(tk)
        else:
            self.bm25[n.level].add(n.id, node_doc_tokens(n))

    def _rebuild_structure(self, graph: MemoryGraph, leaf: LevelArrays | None = None) -> None:
        # O(n) per version change: cheap next to one embedding call, and never per query.
        # ``leaf``: the leaf level's rows when already laid out (a snapshot's).
        if isinstance(self.archive, LazyArchive):
            self.nodes = LazyNodes(graph.nodes(), self.archive)
        else:
            self.nodes = {n.id: n for n in self._every(graph)}
        self.parent = {}
        self.children = {}
        for e in graph.edges(EdgeKind.SUPPORT):
            self.parent[e.src] = e.dst
            self.children.setdefault(e.dst, []).append(e.src)
        self._rebuild_rows(graph, leaf)

    def _patch_structure(self, graph: MemoryGraph, ids: list[str]) -> None:
        # Only ``ids`` were added, removed or edited: re-attach just those (a hot
        # tier's promotion touches a handful of its thousands of nodes, and walking
        # every edge of the tier cost more than the search it served).
        for nid in ids:
            p = self.parent.pop(nid, None)
            if p is not None:
                self._unlink(p, nid)
            for k in self.children.pop(nid, ()):
                self.parent.pop(k, None)
            if nid in graph:
                self.nodes[nid] = graph.node(nid)
            else:
                self.nodes.pop(nid, None)
        for nid in ids:
            if nid not in graph:
                continue
            p = graph.parent(nid)
            if p is not None:
                self._attach(nid, p)
            for k in graph.children(nid):
                old = self.parent.get(k)
                if old is not None and old != nid:
                    self._unlink(old, k)
                self._attach(k, nid)
        self._rebuild_rows(graph)

    def _attach(self, child: str, parent: str) -> None:
        self.parent[child] = parent
        kids = self.children.setdefault(parent, [])
        if child not in kids:
            kids.append(child)

    def _unlink(self, parent: str, child: str) -> None:
        kids = self.children.get(parent)
        if kids is not None and child in kids:
            kids.remove(child)
            if not kids:
                del self.children[parent]

    def _rebuild_rows(self, graph: MemoryGraph, leaf: LevelArrays | None = None) -> None:
        # Row maps of the embedding matrices and what hangs off them: O(n) but numpy-
        # and dict-bound, no graph walk.
        if len(self.line_cache) > 4 * len(self.nodes) + 1024:
            self.line_cache.clear()  # keyed by line inputs, so stale keys only cost memory
        self.arrays = {}
        for lv in Level:
            if lv is Level.LEAF and leaf is not None:
                self.arrays[lv] = leaf
                continue
            ix = graph.index(lv)
            ids, matrix = ix.ids, ix.matrix
            if lv is Level.LEAF and self.archive:
                ids, matrix = self._with_archive(graph, ids, matrix)
            self.arrays[lv] = LevelArrays(ids, matrix, {x: i for i, x in enumerate(ids)})
        leaf_row = self.arrays[Level.LEAF].row
        self.disposition_rows = np.fromiter(
            sorted(leaf_row[x] for x in self.dispositions if x in leaf_row), np.int64
        )
        self.change_rows, self.standing_rows = (
            np.fromiter(sorted(leaf_row[x] for x in marked if x in leaf_row), np.int64)
            for marked in (self.changes, self.standing)
        )

    def _with_archive(
        self, graph: MemoryGraph, ids: list[str], matrix: np.ndarray
    ) -> tuple[list[str], np.ndarray]:
        # The archive's rows change only when the archive does: stacked once per change.
        if self._archive_rows is None:
            self._archive_rows = archive_rows(self.archive.values(), matrix)
        return with_archive_rows(graph, ids, matrix, self._archive_rows)

    def leaf_centre(self, arr: LevelArrays) -> tuple[np.ndarray, np.ndarray]:
        """What the leaf rows share, and each row's product with it.

        :func:`~personatree.specific.common_direction` of ``arr``'s rows and
        ``arr.matrix @ mean``, kept until the rows change: a similarity with that
        direction taken out (:func:`~personatree.specific.centred_cosines`) then costs
        a pass over cosines already computed.

        Parameters
        ----------
        arr : LevelArrays
            The state's leaf rows.

        Returns
        -------
        mean : ndarray of float32
        row_mean : ndarray of float32
            One value per row.
        """
        memo = self.centre_memo
        if memo is None or memo[0] is not arr:
            mean = common_direction([arr.matrix])
            memo = self.centre_memo = (arr, mean, np.asarray(arr.matrix @ mean, np.float32))
        return memo[1], memo[2]

    def neighbours(self, turn: str) -> tuple[str | None, str | None]:
        """The turns told just before and just after ``turn`` in its session.

        Parameters
        ----------
        turn : str
            A turn key.

        Returns
        -------
        (str or None, str or None)
            Previous and next turn keys (``None`` at a session's ends or for an
            unknown turn).
        """
        sess = self.turn_session.get(turn)
        if sess is None:
            return (None, None)
        scene = self._scenes.get(sess)
        if scene is None:
            scene = self._scenes[sess] = scene_of(
                self.session_turns[sess], self.turn_leaves, self.leaf_said, self.turn_seq, self.nodes
            )
        return scene[turn]


def state_for(
    cache: dict[str, RetrievalState],
    user_id: str,
    graph: MemoryGraph,
    version: Hashable,
    turn_text: TurnText | None = None,
    archive: ArchiveSource | None = None,
    memo: Callable[[], TurnMemo | None] | None = None,
) -> RetrievalState:
    """The cached state of a user, refreshed to ``graph`` at ``version``.

    Parameters
    ----------
    cache : dict
        User id → state.
    user_id : str
    graph : MemoryGraph
    version : hashable
    turn_text : TurnText, optional
        Where whole turns are read from when a new state is made (see the module
        docstring); default: turns are indexed by their leaves' text.
    archive : ArchiveSource, optional
        Where the user's archived leaves are read from.
    memo : callable, optional
        Makes the user's stored turn documents (:mod:`.turn_memo`) when a new state
        is made; default: every turn is tokenized.

    Returns
    -------
    RetrievalState
    """
    st = cache.get(user_id)
    if st is None:
        st = cache[user_id] = RetrievalState(graph, turn_text=turn_text, archive_source=archive,
                                             memo=memo() if memo is not None else None)
    return st.refresh(graph, version)
