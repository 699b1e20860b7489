"""A user's built retrieval state, kept in the store and read back in bulk.

Building a user's state node by node and turn by turn (signatures, stance and
change cues, the turn index and its BM25 inserts) is most of a first recall in a new
process. What it produces depends only on the user's data at one store version and
on the code that analysed it, so a freshly built state is encoded here (one orjson
document of plain lists: BM25 postings, turn maps, the cues' results) and kept in the
store's ``retrieval_snapshots`` (see :mod:`personatree.store.snapshots`) with that
version and a :func:`fingerprint` of the code.

It is never served stale: it is used only when its version is the user's current
version and its fingerprint the running code's; every commit of the user deletes it
in the same transaction; and on reading, its leaf, mid and root ids must be exactly
the ones the loaded tree and archive hold, or the state is built again. Only a state
built from scratch is written (never one refreshed incrementally), so a state read
back is identical to the one a fresh build would make, ties included. The tree is
still read from its tables; of the archive the snapshot keeps the ids, the embedding
rows (raw float32 after the document, read back as one array) and a digest of each
leaf's signature, and the leaves themselves are read by id when a recall needs them
(:mod:`.lazy_archive`).
"""

from __future__ import annotations

import hashlib
import struct
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Hashable

import numpy as np
import orjson

from ..graph import MemoryGraph
from ..types import Level
from .lazy_archive import ArchiveFetch, LazyArchive, signature_digest
from .lexical import BM25Index
from .state import RetrievalState, signature
from .turn_memo import fingerprint as analysis_fingerprint

__all__ = ["Snapshots", "encode", "fingerprint", "restore", "store_snapshots"]

#: Bumped when what a snapshot holds changes shape.
_FORMAT = "2"
#: A snapshot is this magic, the length of its JSON document (8 bytes, little-endian),
#: the document, zero padding to a multiple of 16 bytes, then the archive's embedding
#: rows as raw float32: read back as one array without decoding a leaf.
_MAGIC = b"PTS2"
_HEAD = struct.Struct("<4sQ")

# The modules whose code decides what a built state holds: the state itself, the
# lexical analysis, the cues (personatree.text, the lexicons), stances and times.
_MODULES = (
    "personatree.retrieval.state", "personatree.retrieval.lexical", "personatree.retrieval.turn_memo",
    "personatree.retrieval.snapshot", "personatree.stance", "personatree.timeline", "personatree.types",
    "personatree.lexicons", "personatree.graph", "personatree.text", "personatree.retrieval.node_text",
    "personatree.retrieval.lazy_archive",
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
    h = hashlib.blake2b(f"{_FORMAT}\x1f{analysis_fingerprint()}".encode(), digest_size=16)
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
    said = state.leaf_said
    graph = state.graph
    only = [k for k in state.archive if k not in graph]
    rows = state._archive_rows
    row_ids, matrix = rows if rows is not None else ([], np.zeros((0, 0), np.float32))
    doc = orjson.dumps({
        "format": _FORMAT,
        "turn_of": [list(state.turn_of), list(state.turn_of.values())],
        "turn_leaves": state.turn_leaves,
        "turn_seq": state.turn_seq,
        "turn_session": [list(state.turn_session), list(state.turn_session.values())],
        "dispositions": sorted(state.dispositions),
        "changes": sorted(state.changes),
        "said": [list(said), [s[0] for s in said.values()], [s[1] for s in said.values()],
                 [s[2] for s in said.values()]],
        "mid": state.bm25[Level.MID].parts(),
        "root": state.bm25[Level.ROOT].parts(),
        "turns": state.turns.parts(),
        "archive": list(state.archive),
        "archive_digests": [signature_digest(state._sig[k]) for k in only],
        "archive_rows": [list(row_ids), int(matrix.shape[1]) if matrix.ndim == 2 else 0],
    })
    head = _HEAD.pack(_MAGIC, len(doc))
    pad = b"\0" * (-(len(head) + len(doc)) % 16)
    return b"".join((head, doc, pad, np.ascontiguousarray(matrix, dtype=np.float32).tobytes()))


def _split(data: bytes) -> tuple[Any, np.ndarray]:
    # The document and the archive's rows (a read-only view over ``data``).
    magic, size = _HEAD.unpack_from(data)
    if magic != _MAGIC:
        raise ValueError("not a snapshot")
    start = _HEAD.size
    doc = orjson.loads(memoryview(data)[start:start + size])
    offset = start + size + (-(start + size) % 16)
    ids, dim = doc["archive_rows"]
    rows = np.frombuffer(data, dtype=np.float32, offset=offset)
    if rows.size != len(ids) * int(dim):
        raise ValueError("archive rows of the wrong size")
    return doc, rows.reshape(len(ids), int(dim))


def restore(
    state: RetrievalState,
    graph: MemoryGraph,
    version: Hashable,
    data: bytes,
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
    data : bytes
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
        Whether the state was filled. ``False`` (the snapshot is unreadable or does
        not hold exactly the tree's and archive's nodes) leaves the state empty, and
        the caller builds it.
    """
    try:
        d, rows = _split(data)
        if d.get("format") != _FORMAT:
            return False
        turn_of = dict(zip(d["turn_of"][0], d["turn_of"][1], strict=True))
        bm25 = {Level.MID: BM25Index.from_parts(d["mid"]), Level.ROOT: BM25Index.from_parts(d["root"])}
        turns = BM25Index.from_parts(d["turns"])
        ids, at, side, sess = d["said"]
        leaf_said = dict(zip(ids, zip(at, side, sess, strict=True), strict=True))
        turn_session = dict(zip(d["turn_session"][0], d["turn_session"][1], strict=True))
        turn_leaves, turn_seq = d["turn_leaves"], d["turn_seq"]
        archive_ids = [str(x) for x in d["archive"]]
        only = [k for k in archive_ids if k not in graph]
        digests = dict(zip(only, d["archive_digests"], strict=True))
        row_ids = [str(x) for x in d["archive_rows"][0]]
    except (ValueError, TypeError, KeyError, struct.error):
        return False
    by_level: dict[Level, set[str]] = {lv: set() for lv in Level}
    for n in graph.nodes():
        by_level[n.level].add(n.id)
    by_level[Level.LEAF].update(only)  # archived nodes are leaves
    if (turn_of.keys() != by_level[Level.LEAF] or leaf_said.keys() != by_level[Level.LEAF]
            or bm25[Level.MID].doc_ids() != by_level[Level.MID]
            or bm25[Level.ROOT].doc_ids() != by_level[Level.ROOT]
            or turns.doc_ids() != turn_leaves.keys() or not set(row_ids) <= set(archive_ids)):
        return False
    if fetch is not None:
        state.archive = LazyArchive(archive_ids, fetch, digests, content_version, current)
        state._sig = {n.id: signature(n) for n in graph.nodes()}
    else:
        archive = state.archive_source(state.archive) if state.archive_source is not None else {}
        if list(archive) != archive_ids:
            return False
        state.archive = archive
        state._sig = {n.id: signature(n) for n in state._every(graph)}
    state._archive_rows = (row_ids, rows) if archive_ids else None
    state.turn_of, state.turn_leaves, state.turn_seq = turn_of, turn_leaves, turn_seq
    state.dispositions, state.changes = set(d["dispositions"]), set(d["changes"])
    # orjson reads back exactly the float, int and str each entry was written with.
    state.leaf_said = leaf_said
    state.bm25, state.turns = bm25, turns
    state.turn_session = turn_session
    state.session_turns = {}
    for tk, s in turn_session.items():
        state.session_turns.setdefault(s, set()).add(tk)
    state.graph = graph
    state._rebuild_structure(graph)
    state.version = version
    return True


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
