"""A user's built retrieval state, kept in the store and read back in bulk.

Building a user's state node by node and turn by turn (signatures, stance and
change cues, the turn index and its BM25 inserts) is most of a first recall in a new
process. What it produces depends only on the user's data at one store version and
on the code that analysed it, so a freshly built state is encoded here (its turn
maps, BM25 postings, the cues' results, when each leaf was said and the whole leaf
matrix, mostly as flat arrays: :mod:`.snapshot_codec`) and kept in the store's ``retrieval_snapshots`` (see :mod:`personatree.store.snapshots`) with that
version and a :func:`fingerprint` of the code.

It is never served stale: it is used only when its version is the user's current
version and its fingerprint the running code's; every commit of the user deletes it
in the same transaction; and on reading, its leaf, mid and root ids must be exactly
the ones the loaded tree and archive hold, or the state is built again. Only a state
built from scratch is written (never one refreshed incrementally), so a state read
back is identical to the one a fresh build would make, ties included. The snapshot
also keeps the tree it was built from, as columns
(:mod:`personatree.store.codec.tree_columns`): a process that holds no tree yet takes
it from there (:func:`personatree.retrieval.prelude.held_state`), else the tree read
from its tables must match the snapshot (its leaf rows equal). Of the
archive the snapshot keeps the ids, the embedding rows and a digest of each leaf's
signature, and the leaves themselves are read by id when a recall needs them
(:mod:`.lazy_archive`). What the first search over the leaves derives from when each
leaf was said (``retrieval.updates.LeafFacts``) comes from the same arrays. A
snapshot of another format (its magic and format tag) is never read: it is rebuilt.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Hashable, cast

import numpy as np

from ..errors import InputError
from ..graph import MemoryGraph
from ..store.codec.tree_columns import pack_tree
from ..types import Level
from .lazy_archive import ArchiveFetch, LazyArchive, signature_digest
from .lexical import BM25Index
from .snapshot_codec import Unpacked, decode_parts, encode_parts
from .state import LevelArrays, RetrievalState, signature
from .turn_memo import fingerprint as analysis_fingerprint
from .updates import LeafFacts, judged_links, reach_rows

__all__ = ["Snapshots", "encode", "fingerprint", "restore", "store_snapshots"]

# The modules whose code decides what a built state holds: the state itself, the
# lexical analysis, the cues (personatree.text, the lexicons), stances and times, and
# how the tree is kept in it (its columns, the values as a row normalises them).
_MODULES = (
    "personatree.retrieval.state", "personatree.retrieval.lexical", "personatree.retrieval.turn_memo",
    "personatree.retrieval.snapshot", "personatree.stance", "personatree.timeline", "personatree.types",
    "personatree.lexicons", "personatree.graph", "personatree.text", "personatree.retrieval.node_text",
    "personatree.retrieval.lazy_archive", "personatree.retrieval.snapshot_codec",
    "personatree.retrieval.snapshot_layout", "personatree.store.codec.tree_columns",
    "personatree.store.codec.values",
)


@lru_cache(maxsize=1)
def fingerprint() -> str | None:
    """A digest of the code a built state depends on, or ``None`` when it cannot be read.

    The source of every module that decides what the state holds (a package: all its
    ``.py`` files), the snapshot format, and the probe-based fingerprint of the text
    analysis: any release or local edit of that code gives another fingerprint, so its
    snapshots are rebuilt rather than trusted. Without readable sources (a frozen
    build), snapshots are not used at all.
    """
    from .snapshot_codec import FORMAT

    h = hashlib.blake2b(f"{FORMAT}\x1f{analysis_fingerprint()}".encode(), digest_size=16)
    for name in _MODULES:
        module = sys.modules.get(name)
        origin = getattr(module, "__file__", None)
        if origin is None:
            __import__(name)
            origin = getattr(sys.modules[name], "__file__", None)
        if origin is None:
            return None
        path = Path(origin)
        files = sorted(path.parent.glob("*.py")) if path.name == "__init__.py" else [path]
        try:
            for f in files:
                h.update(f"\x1e{f.name}\x1f".encode())
                h.update(f.read_bytes())
        except OSError:
            return None
    return h.hexdigest()


def encode(state: RetrievalState) -> bytes:
    """The snapshot of a state just built from scratch.

    Parameters
    ----------
    state : RetrievalState

    Returns
    -------
    bytes
    """
    graph = state.graph
    only = [k for k in state.archive if k not in graph]
    tree = [n.id for n in graph.nodes()]
    leaf_ids = graph.index(Level.LEAF).ids
    columns: Unpacked | None = None
    if isinstance(state.version, int):
        try:
            columns = pack_tree(list(graph.nodes()), graph.edge_sequence(), graph.user_id,
                                dict(zip(leaf_ids, range(len(leaf_ids)))))
            columns[0]["version"] = state.version
        except (InputError, ValueError):
            columns = None  # a tree the store would not hold as it is: read from its rows
    return encode_parts(state, [signature_digest(state._sig[k]) for k in only], len(leaf_ids),
                        (tree, [signature_digest(state._sig[k]) for k in tree]), columns)


def restore(
    state: RetrievalState,
    graph: MemoryGraph,
    version: Hashable,
    data: bytes | Unpacked,
    fetch: ArchiveFetch | None = None,
    content_version: int | None = None,
    current: Callable[[], int | None] | None = None,
) -> bool:
    """Fill a new, empty ``state`` from a snapshot of ``graph`` at ``version``.

    Parameters
    ----------
    state : RetrievalState
        Made for the user, not refreshed yet.
    graph : MemoryGraph
        The user's tree at ``version`` (the snapshot's version: the caller checked).
    version : hashable
    data : bytes, or (dict, dict of str to ndarray)
        The snapshot, or what :func:`~.snapshot_codec.unpack_snapshot` read from it.
    fetch : ArchiveFetch, optional
        Reads archived leaves by id. Given, the archive is not read: its ids, rows
        and postings come from the snapshot, and each leaf is read when a recall
        first needs it (:class:`~.lazy_archive.LazyArchive`). Without it the whole
        archive is read through ``state.archive_source``, and must hold exactly the
        snapshot's ids.
    content_version : int, optional
        The user's content version at ``version``, when known.
    current : callable, optional
        Reads the user's content version now (see :class:`~.lazy_archive.LazyArchive`).

    Returns
    -------
    bool
        Whether the state was filled. ``False`` (the snapshot is unreadable, of
        another format, or does not hold exactly the tree's and archive's nodes)
        leaves the state empty, and the caller builds it.
    """
    levels = {n.id: n.level for n in graph.nodes()}
    by_level: dict[Level, set[str]] = {lv: set() for lv in Level}
    for k, lv in levels.items():
        by_level[lv].add(k)
    tree = levels.keys()
    try:
        p = decode_parts(data)
        only = [k for k in p.archive if k not in tree]
        digests = dict(zip(only, p.archive_digests, strict=True))
    except (ValueError, TypeError, KeyError, IndexError):
        return False
    by_level[Level.LEAF].update(only)  # archived nodes are leaves
    tree_leaves = graph.index(Level.LEAF)
    tree_matrix = tree_leaves.matrix
    n_tree = p.tree_rows
    if (p.turn_of.key_set() != by_level[Level.LEAF] or p.leaf_said.key_set() != by_level[Level.LEAF]
            or p.bm25[Level.MID].doc_ids() != by_level[Level.MID]
            or p.bm25[Level.ROOT].doc_ids() != by_level[Level.ROOT]
            or p.turns.doc_ids() != p.turn_leaves.key_set()
            or (p.archive_row_ids is not p.archive and not set(p.archive_row_ids) <= set(p.archive))
            or p.leaf_ids[:n_tree] != tree_leaves.ids
            or (n_tree and (p.leaf_matrix.shape[1:] != tree_matrix.shape[1:]
                            or not np.array_equal(p.leaf_matrix[:n_tree], tree_matrix)))):
        return False
    if fetch is not None:
        # The tree's signatures stay digests until a refresh compares them (the
        # tree is read again then): a first recall needs none.
        if p.tree_digests.keys() != levels.keys():
            return False
        tree_digests = {k: (levels[k], d) for k, d in p.tree_digests.items()}
        state.archive = LazyArchive(p.archive, fetch, digests, content_version, current, tree_digests)
        state._sig = {}
    else:
        archive = state.archive_source(state.archive) if state.archive_source is not None else {}
        if list(archive) != p.archive:
            return False
        state.archive = archive
        state._sig = {n.id: signature(n) for n in state._every(graph)}
    state._archive_rows = (p.archive_row_ids, p.archive_matrix) if p.archive else None
    # Read-only views until the state first updates them (RetrievalState.own_maps).
    state.turn_of, state.turn_leaves = cast(dict, p.turn_of), cast(dict, p.turn_leaves)
    state.turn_seq, state.turn_session = cast(dict, p.turn_seq), cast(dict, p.turn_session)
    state.leaf_said, state.session_turns = cast(dict, p.leaf_said), cast(dict, p.session_turns)
    state.dispositions, state.changes, state.standing = p.dispositions, p.changes, p.standing
    state.reach = p.reach
    state.judged = p.judged
    state.bm25, state.turns = p.bm25, p.turns
    state.graph = graph
    # The leaf level as the build laid it out (the tree's rows, then the archive's),
    # read from the snapshot rather than stacked again.
    leaf = LevelArrays(p.leaf_ids, p.leaf_matrix, dict(zip(p.leaf_ids, range(len(p.leaf_ids)))))
    state._rebuild_structure(graph, leaf)
    state.updates_memo = (leaf, _facts(state, leaf, p.row_facts))
    state.version = version
    return True


def _facts(
    state: RetrievalState, leaf: LevelArrays, rows: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
) -> LeafFacts:
    # What retrieval.updates.leaf_facts computes leaf by leaf, from the snapshot's
    # arrays: the same times and sides, and session codes equal exactly where the
    # sessions are (a leaf without one, or a row without a leaf, equal to no other).
    at, side, gone, session = rows
    change = np.zeros(at.shape[0], bool)
    change[state.change_rows] = True
    judged, reach = judged_links(leaf, state.judged, gone), reach_rows(leaf, state.reach, gone)
    return LeafFacts(at, side, change, gone, session, judged, reach)


@dataclass(frozen=True, slots=True)
class Snapshots:
    """Where one user's snapshot is read from and written to.

    Attributes
    ----------
    load : callable
        ``load(version) -> bytes | None``: the stored snapshot if it was made at
        ``version`` by this code.
    save : callable
        ``save(version, data) -> bool``: store a snapshot made at ``version``.
    """

    load: Callable[[int], bytes | None]
    save: Callable[[int, bytes], bool]


def store_snapshots(store: Any, user_id: str) -> Snapshots | None:
    """The snapshots of a user in a store's ``retrieval_snapshots``, or ``None``.

    Parameters
    ----------
    store : Store
        Anything with ``retrieval_snapshot(user_id)`` and
        ``put_retrieval_snapshot(user_id, version, fingerprint, data)``.
    user_id : str

    Returns
    -------
    Snapshots or None
        ``None`` for a store without snapshots or code whose sources cannot be read.
    """
    read = getattr(store, "retrieval_snapshot", None)
    put = getattr(store, "put_retrieval_snapshot", None)
    code = fingerprint()
    if read is None or put is None or code is None:
        return None

    def load(version: int) -> bytes | None:
        row = read(user_id)
        if row is None or row[0] != version or row[1] != code:
            return None
        return bytes(row[2])

    return Snapshots(load, lambda version, data: bool(put(user_id, version, code, data)))
