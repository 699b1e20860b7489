"""What a retrieval snapshot holds, to and from its binary layout.

Every map of the state is written in the order it is held (row order breaks score
ties, and a state read back must equal a fresh build field for field). Ids are
written once, in two tables (the leaves, in ``turn_of`` order, and the turns, in
``turn_leaves`` order) plus one of sessions; the maps between them are arrays of
positions in those tables, and the numbers (when each leaf was said, its stance
side, turn positions, BM25 lengths and postings, the leaf matrix) are typed arrays
(:mod:`.snapshot_layout`). Reading leaves them as views over the stored bytes: the
state's maps as :class:`~.packed_maps.PackedMap` (an entry decoded when looked up),
the leaf matrix and the BM25 postings as arrays.

Every position read back is checked to be inside its table, so data that does not
describe one consistent state is refused (:class:`ValueError`), never misread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from ..store.codec.tree_columns import RecallStats, unpack_tree
from ..types import Edge, Level, Node
from .lexical import BM25Index
from .packed_maps import ABSENT, PackedMap, grouped
from .snapshot_layout import pack, unpack
from .state import RetrievalState

__all__ = [
    "FORMAT", "Parts", "Unpacked", "decode_parts", "decode_tree", "encode_parts", "tree_version", "unpack_snapshot",
]

#: Bumped when what a snapshot holds changes shape (with the layout's magic).
FORMAT = "7"
_MAGIC = b"PTS7"

#: A snapshot's document and arrays, read back but not decoded (:func:`unpack_snapshot`).
Unpacked = tuple[dict[str, Any], dict[str, np.ndarray]]


@dataclass(frozen=True, slots=True)
class Parts:
    """A snapshot read back: the state's maps and indexes, not yet checked against a tree.

    Attributes
    ----------
    turn_of, turn_leaves, turn_seq, turn_session, leaf_said : mapping
        As :class:`~.state.RetrievalState` holds them, in its order (read-only
        :class:`~.packed_maps.PackedMap` views).
    dispositions, changes, standing : set of str
    reach : dict of str to tuple of str
        Change leaf → the kinds of change it names that reach other statements.
    bm25 : dict of Level to BM25Index
        Mids and roots.
    turns : BM25Index
    archive : list of str
        Every archived leaf id, in archiving order.
    archive_digests : list of str
        The signature digest of each archived leaf the tree does not hold, in order.
    tree_digests : dict of str to str
        The signature digest of each node of the tree, in the tree's order.
    archive_row_ids : list of str
        The archived leaves with an embedding row.
    archive_matrix : ndarray
        Their rows.
    leaf_ids : list of str
        The ids of the leaf matrix's rows: the tree's leaves, then the archive's.
    leaf_matrix : ndarray
    tree_rows : int
        How many of its rows are the tree's.
    row_facts : tuple of ndarray
        Per leaf row: when it was said, the side of its stance, whether it has no
        leaf, and a code of its session (see ``retrieval.updates.LeafFacts``).
    session_turns : mapping
        Each session's turns.
    judged : dict
        Leaf id → the ids of the statements a judge read it as changing.
    """

    turn_of: PackedMap[str]
    turn_leaves: PackedMap[list[str]]
    turn_seq: PackedMap[int]
    turn_session: PackedMap[str]
    leaf_said: PackedMap[tuple[float, int, str]]
    dispositions: set[str]
    changes: set[str]
    reach: dict[str, tuple[str, ...]]
    standing: set[str]
    bm25: dict[Level, BM25Index]
    turns: BM25Index
    archive: list[str]
    archive_digests: list[str]
    tree_digests: dict[str, str]
    archive_row_ids: list[str]
    archive_matrix: np.ndarray
    leaf_ids: list[str]
    leaf_matrix: np.ndarray
    tree_rows: int
    row_facts: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    session_turns: PackedMap[set[str]]
    judged: dict[str, tuple[str, ...]]


def _positions(table: dict[str, int], keys: Sequence[str]) -> np.ndarray:
    return np.fromiter((table[k] for k in keys), np.int32, len(keys))


def encode_parts(
    state: RetrievalState, archive_digests: list[str], tree_rows: int, tree_digests: tuple[list[str], list[str]],
    tree: Unpacked | None = None,
) -> bytes:
    """The snapshot bytes of a state just built from scratch.

    Parameters
    ----------
    state : RetrievalState
    archive_digests : list of str
        The signature digest of each archived leaf the tree does not hold.
    tree_rows : int
        How many rows of the state's leaf matrix are the tree's.
    tree_digests : (list of str, list of str)
        The tree's node ids, in its order, and the signature digest of each.
    tree : (dict, dict of str to ndarray), optional
        The tree itself as columns (:func:`~personatree.store.codec.tree_columns.pack_tree`,
        its leaves' embeddings the leaf matrix's rows) and the version it was read at,
        under the document's ``"version"``.

    Returns
    -------
    bytes
    """
    leaves = list(state.turn_of)
    turns = list(state.turn_leaves)
    at_leaf = {x: i for i, x in enumerate(leaves)}
    at_turn = {t: i for i, t in enumerate(turns)}
    sessions: dict[str, int] = {}
    said = state.leaf_said
    for x in leaves:
        sessions.setdefault(said[x][2], len(sessions))
    for s in state.turn_session.values():
        sessions.setdefault(s, len(sessions))
    leaf = state.arrays[Level.LEAF]
    rows = state._archive_rows
    a_ids, a_matrix = rows if rows is not None else ([], np.zeros((0, 0), np.float32))
    arrays: dict[str, np.ndarray] = {
        "turn_of": _positions(at_turn, [state.turn_of[x] for x in leaves]),
        "turn_leaves": _positions(at_leaf, [x for t in turns for x in state.turn_leaves[t]]),
        "turn_bounds": np.cumsum([0] + [len(state.turn_leaves[t]) for t in turns], dtype=np.int64),
        "seq_turn": _positions(at_turn, list(state.turn_seq)),
        "seq": np.fromiter(state.turn_seq.values(), np.int64, len(state.turn_seq)),
        "session_turn": _positions(at_turn, list(state.turn_session)),
        "session_of_turn": _positions(sessions, list(state.turn_session.values())),
        "said_order": _positions(at_leaf, list(said)),
        "said_at": np.fromiter((said[x][0] for x in leaves), np.float64, len(leaves)),
        "said_side": np.fromiter((said[x][1] for x in leaves), np.int8, len(leaves)),
        "said_session": _positions(sessions, [said[x][2] for x in leaves]),
        "row_leaf": np.fromiter((at_leaf.get(x, -1) for x in leaf.ids), np.int32, len(leaf.ids)),
        "leaf_matrix": np.asarray(leaf.matrix, np.float32),
    }
    # The archive's own rows are the tail of the leaf matrix unless the tree holds one
    # of their ids, or they are of another width (then kept apart).
    tail = list(a_ids) == leaf.ids[tree_rows:] and a_matrix.shape[1:] == leaf.matrix.shape[1:]
    if not tail:
        arrays["archive_matrix"] = np.asarray(a_matrix, np.float32)
    archive = list(state.archive)
    # Lists that are usually another one are written as null: the archive's rows (the
    # archive), the leaf matrix's own ids past the tree's (the archive's rows).
    doc: dict[str, Any] = {
        "format": FORMAT, "leaves": leaves, "turns": turns, "sessions": list(sessions),
        "dispositions": sorted(state.dispositions), "changes": sorted(state.changes),
        "reach": {k: list(v) for k, v in sorted(state.reach.items())},
        "standing": sorted(state.standing), "judged": {k: list(v) for k, v in state.judged.items()},
        "archive": archive, "archive_digests": archive_digests, "tree_digests": list(tree_digests),
        "archive_rows": None if list(a_ids) == archive else list(a_ids),
        "tree_rows": tree_rows, "tree_ids": leaf.ids[:tree_rows],
        "leaf_tail": None if tail else leaf.ids[tree_rows:],
    }
    for key, ix in (("mid", state.bm25[Level.MID]), ("root", state.bm25[Level.ROOT]), ("turns_index", state.turns)):
        meta, parts = ix.packed()
        if key == "turns_index":
            # Its rows are turns (or free): positions in the turn table.
            parts["ids"] = np.fromiter((-1 if t is None else at_turn[t] for t in meta.pop("ids")), np.int32)
        doc[key] = meta
        arrays.update({f"{key}.{k}": v for k, v in parts.items()})
    if tree is not None:
        doc["tree"] = tree[0]
        arrays.update({f"tree.{k}": v for k, v in tree[1].items()})
    return pack(_MAGIC, doc, arrays)


def _within(a: np.ndarray, n: int, size: int | None = None) -> np.ndarray:
    # Positions into a table of ``n`` entries (checked: a negative one would wrap).
    if a.ndim != 1 or (size is not None and a.shape[0] != size):
        raise ValueError("an array of positions of the wrong shape")
    if a.size and (int(a.min()) < 0 or int(a.max()) >= n):
        raise ValueError("a position outside its table")
    return a


def _strings(values: Any) -> list[str]:
    if not isinstance(values, list) or not set(map(type, values)) <= {str}:
        raise ValueError("a list of strings expected")
    return values


def _table(keys: list[str]) -> dict[str, int]:
    at = dict(zip(keys, range(len(keys))))
    if len(at) != len(keys):
        raise ValueError("a table with repeats")
    return at


def _per_turn(turn: np.ndarray, values: np.ndarray, n_turn: int) -> np.ndarray:
    # A value per turn position (−1: the map holds no entry for the turn).
    if turn.shape != values.shape or (turn.size and int(np.bincount(turn, minlength=n_turn).max()) > 1):
        raise ValueError("one value per turn expected")
    out = np.full(n_turn, -1, np.int64)
    out[turn] = values
    return out


def unpack_snapshot(data: bytes) -> Unpacked:
    """The document and arrays of snapshot bytes written by :func:`encode_parts`.

    Raises
    ------
    ValueError
        Data of another format.
    """
    doc, a = unpack(_MAGIC, data)
    if doc.get("format") != FORMAT:
        raise ValueError("a snapshot of another format")
    return doc, a


def tree_version(read: Unpacked) -> int | None:
    """The version of the tree a snapshot keeps (``None``: it keeps none).

    Raises
    ------
    ValueError
        A tree without a version.
    """
    tree = read[0].get("tree")
    if tree is None:
        return None
    version = tree.get("version") if isinstance(tree, dict) else None
    if not isinstance(version, int) or isinstance(version, bool):
        raise ValueError("a tree without its version")
    return version


def decode_tree(read: Unpacked, user_id: str, stats: RecallStats | None = None) -> tuple[list[Node], list[Edge]]:
    """The tree a snapshot keeps (see :func:`tree_version` for whether it keeps one).

    Parameters
    ----------
    read : (dict, dict of str to ndarray)
        From :func:`unpack_snapshot`.
    user_id : str
    stats : mapping, optional
        Newer recall statistics (see :func:`~personatree.store.codec.tree_columns.unpack_tree`).

    Returns
    -------
    (list of Node, list of Edge)

    Raises
    ------
    ValueError, TypeError, KeyError
        No tree, or columns that do not describe one tree.
    """
    doc, a = read
    tree = doc.get("tree")
    if tree is None:
        raise ValueError("the snapshot keeps no tree")
    columns = {k[len("tree."):]: v for k, v in a.items() if k.startswith("tree.")}
    matrix = a["leaf_matrix"]
    shared = matrix[: int(doc["tree_rows"])] if matrix.ndim == 2 else None
    return unpack_tree(tree, columns, user_id, shared, stats)


def decode_parts(data: bytes | Unpacked) -> Parts:
    """The :class:`Parts` of snapshot bytes written by :func:`encode_parts`.

    The state's maps are :class:`~.packed_maps.PackedMap` views over the arrays.

    Parameters
    ----------
    data : bytes, or (dict, dict of str to ndarray)
        The bytes, or what :func:`unpack_snapshot` read from them.

    Raises
    ------
    ValueError, TypeError, KeyError, IndexError
        Data of another format, or not describing one consistent state.
    """
    doc, a = unpack_snapshot(data) if isinstance(data, (bytes, bytearray, memoryview)) else data
    leaves, turns, sessions = _strings(doc["leaves"]), _strings(doc["turns"]), _strings(doc["sessions"])
    n_leaf, n_turn, n_sess = len(leaves), len(turns), len(sessions)
    at_leaf, at_turn, at_sess = _table(leaves), _table(turns), _table(sessions)
    turn_item = _within(a["turn_of"], n_turn, n_leaf).item
    turn_of: PackedMap[str] = PackedMap(leaves, at_leaf, lambda i: turns[turn_item(i)])
    flat = _within(a["turn_leaves"], n_leaf)
    bounds = _within(a["turn_bounds"], flat.shape[0] + 1, n_turn + 1)
    if bounds[0] != 0 or bounds[-1] != flat.shape[0] or np.any(np.diff(bounds) < 0):
        raise ValueError("turn bounds out of order")
    bound = bounds.item
    turn_leaves: PackedMap[list[str]] = PackedMap(
        turns, at_turn, lambda i: [leaves[j] for j in flat[bound(i):bound(i + 1)].tolist()])
    seq_turn, seq = _within(a["seq_turn"], n_turn), a["seq"]
    if seq.size and int(seq.min()) < 0:
        raise ValueError("a negative turn position")
    seq_item = _per_turn(seq_turn, seq, n_turn).item
    turn_seq: PackedMap[int] = PackedMap(
        turns, at_turn, lambda i: ABSENT if (v := seq_item(i)) < 0 else v, seq_turn.tolist())
    session_turn = _within(a["session_turn"], n_turn)
    session_of_turn = _within(a["session_of_turn"], n_sess, session_turn.shape[0])
    session_item = _per_turn(session_turn, session_of_turn, n_turn).item
    turn_session: PackedMap[str] = PackedMap(
        turns, at_turn, lambda i: ABSENT if (c := session_item(i)) < 0 else sessions[c], session_turn.tolist())
    # Each session's turns, its sessions in the order a walk over turn_session meets them.
    members, member_bounds, found = grouped(session_of_turn.astype(np.int64), n_sess)
    m_bound = member_bounds.item
    session_turns: PackedMap[set[str]] = PackedMap(
        sessions, at_sess,
        lambda s: {turns[j] for j in session_turn[members[m_bound(s):m_bound(s + 1)]].tolist()}
        if m_bound(s) < m_bound(s + 1) else ABSENT, found)
    at, side = a["said_at"], a["said_side"]
    if at.shape != (n_leaf,) or side.shape != (n_leaf,):
        raise ValueError("one time and one side per leaf expected")
    sess = _within(a["said_session"], n_sess, n_leaf)
    at_item, side_item, sess_item = at.item, side.item, sess.item
    order = _within(a["said_order"], n_leaf, n_leaf)
    if n_leaf and int(np.bincount(order, minlength=n_leaf).max()) > 1:
        raise ValueError("said order with repeats")
    leaf_said: PackedMap[tuple[float, int, str]] = PackedMap(
        leaves, at_leaf, lambda i: (at_item(i), side_item(i), sessions[sess_item(i)]),
        None if np.array_equal(order, np.arange(n_leaf)) else order.tolist())
    archive = _strings(doc["archive"])
    a_ids = archive if doc["archive_rows"] is None else _strings(doc["archive_rows"])
    tree_ids = _strings(doc["tree_ids"])
    tree_rows = len(tree_ids)
    leaf_ids = tree_ids + (a_ids if doc["leaf_tail"] is None else _strings(doc["leaf_tail"]))
    matrix = a["leaf_matrix"]
    if matrix.ndim != 2 or matrix.shape[0] != len(leaf_ids) or int(doc["tree_rows"]) != tree_rows:
        raise ValueError("a leaf matrix of the wrong shape")
    a_matrix = a.get("archive_matrix", matrix[tree_rows:])
    if a_matrix.ndim != 2 or a_matrix.shape[0] != len(a_ids):
        raise ValueError("archive rows of the wrong shape")
    if ("archive_matrix" in a) == (doc["leaf_tail"] is None):
        raise ValueError("archive rows both in and apart from the leaf matrix")
    bm25 = {lv: BM25Index.from_packed(doc[key], {k: a[f"{key}.{k}"] for k in ("dl", "offsets", "rows", "tf")})
            for key, lv in (("mid", Level.MID), ("root", Level.ROOT))}
    rows = a["turns_index.ids"]
    _within(rows[rows >= 0], n_turn)
    turns_doc = {**doc["turns_index"], "ids": [None if i < 0 else turns[i] for i in rows.tolist()]}
    turns_ix = BM25Index.from_packed(turns_doc, {k: a[f"turns_index.{k}"] for k in ("dl", "offsets", "rows", "tf")})
    return Parts(
        turn_of=turn_of, turn_leaves=turn_leaves, turn_seq=turn_seq, turn_session=turn_session,
        leaf_said=leaf_said, dispositions=set(_strings(doc["dispositions"])),
        changes=set(_strings(doc["changes"])), reach=_per_leaf(doc["reach"], at_leaf, "reach"),
        standing=set(_strings(doc["standing"])), bm25=bm25, turns=turns_ix,
        tree_digests=dict(zip(_strings(doc["tree_digests"][0]), _strings(doc["tree_digests"][1]), strict=True)),
        archive=archive, archive_digests=_strings(doc["archive_digests"]),
        archive_row_ids=a_ids, archive_matrix=a_matrix, leaf_ids=leaf_ids, leaf_matrix=matrix,
        tree_rows=tree_rows, row_facts=_row_facts(a, at, side, sess, sessions, len(leaf_ids)),
        session_turns=session_turns, judged=_per_leaf(doc["judged"], at_leaf, "judged links"),
    )


def _per_leaf(held: Any, leaves: Mapping[str, int], what: str) -> dict[str, tuple[str, ...]]:
    # Leaf → strings (the ids a leaf changes, the kinds of change it names): every key
    # a leaf of the snapshot.
    if not isinstance(held, dict):
        raise ValueError(f"{what}: a mapping expected")
    out = {str(k): tuple(_strings(v)) for k, v in held.items()}
    if not out.keys() <= leaves.keys():
        raise ValueError(f"{what} of a leaf the snapshot does not hold")
    return out


def _row_facts(
    a: dict[str, np.ndarray], at: np.ndarray, side: np.ndarray, sess: np.ndarray, sessions: list[str], n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    # Per leaf row: its leaf's time, side and session code (-1 for a row without a
    # leaf, as retrieval.updates.leaf_facts gives; a leaf without a session gets a
    # code of its own, -2 - row).
    row_leaf = a["row_leaf"]
    _within(row_leaf[row_leaf >= 0], at.shape[0])
    if row_leaf.shape != (n,):
        raise ValueError("one leaf per row expected")
    has = row_leaf >= 0
    pick = np.where(has, row_leaf, 0)
    empty = np.array([s == "" for s in sessions], bool)
    codes = sess.astype(np.int64)
    row_at = np.where(has, at[pick] if at.size else np.inf, np.inf)
    row_side = np.where(has, side[pick] if side.size else 0, 0).astype(np.int8)
    row_sess = codes[pick] if codes.size else np.zeros(n, np.int64)
    no_session = empty[row_sess] if empty.size else np.zeros(n, bool)
    session = np.where(has, np.where(no_session, -2 - np.arange(n, dtype=np.int64), row_sess), -1)
    return row_at.astype(np.float64), row_side, ~has, session.astype(np.int64)
