"""A user's tree as columns: what the node and edge rows hold, laid out for a bulk read.

Reading a big tree row by row (a fetch of every node and edge row, then a decode of
each row's JSON and times) is most of what a new process does before its first
recall. The same values as columns (a JSON document of the texts, typed arrays of
the numbers) are read back in a fraction of that time, and a cache of derived data
(the retrieval snapshot) keeps them with the state it was built from.

Every value is normalised as the row encoders normalise it
(:func:`~.records.encode_node`, :func:`~.records.encode_edge`), so the nodes and
edges read back are exactly those the rows decode to: the same attributes (through
JSON), times (UTC, to the microsecond) and float32 embeddings.
Repeated texts (times, session ids, schema types, edge reasons) are written once, in
tables, and referred to by position; every position read back is checked to be
inside its table, so data that does not describe one tree is refused
(:class:`ValueError`), never misread.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Mapping, Sequence

import numpy as np

from ...collector import paused_gc
from ...types import Edge, EdgeKind, Level, Node, Provenance
from ...errors import InputError
from .values import decode_time, dumps, encode_time, loads

__all__ = ["RecallStats", "pack_tree", "unpack_tree"]

#: Node id → (recall count, last access as stored text or ``None``).
RecallStats = Mapping[str, tuple[int, "str | None"]]

_LEVEL_CODE = {Level.LEAF.value: 0, Level.MID.value: 1, Level.ROOT.value: 2}
_LEVELS = (Level.LEAF, Level.MID, Level.ROOT)
_KIND_CODE = {EdgeKind.SUPPORT.value: 0, EdgeKind.CONFLICT.value: 1}
_KINDS = (EdgeKind.SUPPORT, EdgeKind.CONFLICT)


class _Table:
    """Distinct texts in first-seen order, each referred to by its position."""

    def __init__(self) -> None:
        self.at: dict[str, int] = {}

    def __call__(self, text: str | None) -> int:
        if text is None:
            return -1
        return self.at.setdefault(text, len(self.at))

    @property
    def values(self) -> list[str]:
        return list(self.at)


def pack_tree(
    nodes: Sequence[Node],
    edges: Sequence[Edge],
    user_id: str,
    shared: Mapping[str, int] | None = None,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The columns of a tree: a JSON-ready document and named typed arrays.

    Parameters
    ----------
    nodes, edges : sequence
        The tree, in its order.
    user_id : str
        Its owner.
    shared : mapping of str to int, optional
        Nodes whose embedding is a row of a matrix the caller keeps beside the
        columns (the row, by node id); the others' embeddings are in the columns.

    Returns
    -------
    (dict, dict of str to ndarray)

    Raises
    ------
    InputError
        A node of another user, or attributes that are not JSON.

    Notes
    -----
    The nodes are those of a tree the store holds, checked when they were written;
    their values are normalised as a node row normalises them (attributes through
    JSON, times as the row's UTC text, embeddings as float32), so the tree read
    back is the one its rows give.
    """
    shared = shared or {}
    times, sessions, schemas, reasons = _Table(), _Table(), _Table(), _Table()
    ids: list[str] = []
    content: list[str] = []
    attributes: list[Any] = []
    prov_obs: list[str] = []
    level: list[int] = []
    schema: list[int] = []
    stamps: list[tuple[int, int, int]] = []  # t_first, t_last, t_access
    logit: list[float] = []
    counts: list[tuple[int, int, int]] = []  # n_support, n_conflict, recall_count
    emb: list[int] = []
    prov_count: list[int] = []
    own: list[np.ndarray] = []
    prov_nums: list[tuple[int, int, int, int]] = []  # turn, sentence, at, session
    dim = 0
    for node in nodes:
        if node.user_id != user_id:
            raise InputError(f"the tree of user {user_id!r} holds a node of user {node.user_id!r}")
        # The values a node row holds once written and read back (see records.encode_node).
        ids.append(node.id)
        content.append(node.content)
        attributes.append(loads(dumps(node.attributes, "node.attributes")))
        level.append(_LEVEL_CODE[node.level])  # a str enum: its value is the key
        schema.append(schemas(node.schema_type))
        t_access = None if node.t_access is None else encode_time(node.t_access)
        stamps.append((times(encode_time(node.t_first)), times(encode_time(node.t_last)), times(t_access)))
        logit.append(float(node.logit))
        counts.append((int(node.n_support), int(node.n_conflict), int(node.recall_count)))
        vector = node.embedding
        if vector is None:
            emb.append(-1)
        else:
            row_vec = np.asarray(vector, dtype="<f4").reshape(-1)
            if dim and row_vec.shape[0] != dim:
                raise ValueError("embeddings of two dimensions in one tree")
            dim = row_vec.shape[0]
            row = shared.get(node.id)
            if row is None:
                emb.append(-2 - len(own))  # a row of the columns' own matrix
                own.append(row_vec)
            else:
                emb.append(row)
        prov_count.append(len(node.provenance))
        for p in node.provenance:
            prov_obs.append(p.observation_id)
            prov_nums.append((int(p.turn), int(p.sentence), times(encode_time(p.at)), sessions(p.session_id)))
    at_id = {x: i for i, x in enumerate(ids)}
    ends: list[tuple[int, int]] = []
    kind: list[int] = []
    scores: list[tuple[float, float]] = []
    edge_facts: list[tuple[int, int]] = []  # reason, at
    for edge in edges:
        ends.append((at_id[edge.src], at_id[edge.dst]))
        kind.append(_KIND_CODE[edge.kind])
        scores.append((float(edge.psi), float(edge.weight)))
        edge_facts.append((reasons(edge.reason), times(encode_time(edge.at))))
    n, m = len(ids), len(ends)
    own_matrix = np.stack(own) if own else np.zeros((0, dim), np.float32)
    doc: dict[str, Any] = {
        "ids": ids, "content": content, "attributes": attributes, "times": times.values,
        "sessions": sessions.values, "schemas": schemas.values, "reasons": reasons.values,
        "prov_obs": prov_obs, "dim": dim,
    }
    arrays: dict[str, np.ndarray] = {
        "level": np.asarray(level, np.int8), "schema": np.asarray(schema, np.int32),
        "stamps": np.asarray(stamps, np.int32).reshape(n, 3),
        "logit": np.asarray(logit, np.float64), "counts": np.asarray(counts, np.int64).reshape(n, 3),
        "emb": np.asarray(emb, np.int64), "own": own_matrix, "prov_count": np.asarray(prov_count, np.int32),
        "prov": np.asarray(prov_nums, np.int64).reshape(len(prov_nums), 4),
        "ends": np.asarray(ends, np.int32).reshape(m, 2), "kind": np.asarray(kind, np.int8),
        "scores": np.asarray(scores, np.float64).reshape(m, 2),
        "edge_facts": np.asarray(edge_facts, np.int32).reshape(m, 2),
    }
    return doc, arrays


def _texts(values: Any, size: int | None = None) -> list[str]:
    if not isinstance(values, list) or not set(map(type, values)) <= {str}:
        raise ValueError("a list of strings expected")
    if size is not None and len(values) != size:
        raise ValueError("a list of the wrong length")
    return values


def _positions(a: np.ndarray, shape: tuple[int, ...], size: int, *, absent: bool = False) -> list[Any]:
    # Positions into a table of ``size`` entries (−1 allowed where a value may be absent).
    if a.shape != shape:
        raise ValueError("an array of the wrong shape")
    low = -1 if absent else 0
    if a.size and (int(a.min()) < low or int(a.max()) >= size):
        raise ValueError("a position outside its table")
    return a.tolist()


def unpack_tree(
    doc: Mapping[str, Any],
    arrays: Mapping[str, np.ndarray],
    user_id: str,
    shared: np.ndarray | None = None,
    stats: RecallStats | None = None,
) -> tuple[list[Node], list[Edge]]:
    """The nodes and edges :func:`pack_tree` wrote.

    Parameters
    ----------
    doc, arrays
        What :func:`pack_tree` returned (read back from storage).
    user_id : str
    shared : ndarray, optional
        The matrix whose rows ``pack_tree`` was told embed some nodes.
    stats : mapping, optional
        Recall statistics newer than the columns': every node takes its recall count
        and last access from here (a node not in it was never recalled).

    Returns
    -------
    (list of Node, list of Edge)
        In the order they were packed. Embeddings are read-only views; attribute
        mappings are the document's own (a document parsed once makes one tree).

    Raises
    ------
    ValueError, TypeError, KeyError
        Columns that do not describe one tree.
    """
    ids = _texts(doc["ids"])
    n = len(ids)
    content = _texts(doc["content"], n)
    attributes = doc["attributes"]
    if not isinstance(attributes, list) or len(attributes) != n or not all(isinstance(x, dict) for x in attributes):
        raise ValueError("one attribute mapping per node expected")
    times: list[datetime | None] = [decode_time(t) for t in _texts(doc["times"])]
    times.append(None)  # position −1: no time
    sessions, schemas = _texts(doc["sessions"]), _texts(doc["schemas"])
    reasons = _texts(doc["reasons"])
    a = arrays
    level = _positions(a["level"], (n,), 3)
    schema = _positions(a["schema"], (n,), len(schemas))
    n_times = len(times) - 1
    stamps = a["stamps"]
    if stamps.shape != (n, 3):
        raise ValueError("an array of the wrong shape")
    t_first, t_last = _positions(stamps[:, 0], (n,), n_times), _positions(stamps[:, 1], (n,), n_times)
    t_access = _positions(stamps[:, 2], (n,), n_times, absent=True)
    logit = a["logit"]
    counts = a["counts"]
    if logit.shape != (n,) or counts.shape != (n, 3):
        raise ValueError("an array of the wrong shape")
    own = a["own"]
    dim = int(doc["dim"])
    if own.ndim != 2 or (own.shape[0] and own.shape[1] != dim):
        raise ValueError("embedding rows of the wrong shape")
    if shared is not None and shared.shape[0] and (shared.ndim != 2 or shared.shape[1] != dim):
        raise ValueError("shared embedding rows of the wrong width")
    emb = a["emb"]
    rows = 0 if shared is None else shared.shape[0]
    if emb.shape != (n,) or (emb.size and (int(emb.min()) < -1 - own.shape[0] or int(emb.max()) >= rows)):
        raise ValueError("an embedding row outside its matrix")
    prov_count = a["prov_count"]
    prov = a["prov"]
    prov_obs = _texts(doc["prov_obs"])
    total = len(prov_obs)
    if prov_count.shape != (n,) or int(prov_count.sum()) != total or (n and int(prov_count.min()) < 0):
        raise ValueError("provenance counts that do not add up")
    if prov.shape != (total, 4):
        raise ValueError("provenance of the wrong shape")
    p_turn, p_sentence = prov[:, 0].tolist(), prov[:, 1].tolist()
    p_at = _positions(prov[:, 2], (total,), n_times)
    p_session = _positions(prov[:, 3], (total,), len(sessions))
    if stats is not None:
        recalls = [stats.get(x, (0, None)) for x in ids]
        recall_count = [r[0] for r in recalls]
        access = [None if r[1] is None else decode_time(r[1]) for r in recalls]
    else:
        recall_count = counts[:, 2].tolist()
        access = [times[t] for t in t_access]
    with paused_gc():
        entries = [Provenance(o, t, s, times[a], sessions[c])  # type: ignore[arg-type]
                   for o, t, s, a, c in zip(prov_obs, p_turn, p_sentence, p_at, p_session)]
        provenance: list[tuple[Provenance, ...]] = []
        k = 0
        for c in prov_count.tolist():  # most leaves have one entry, mids and roots none
            provenance.append((entries[k],) if c == 1 else tuple(entries[k:k + c]))
            k += c
        vectors = _vectors(emb.tolist(), own, shared)
        levels = [_LEVELS[x] for x in level]
        # Positional, in the order of Node's fields (keywords cost a third more here).
        nodes = [
            Node(nid, user_id, lv, schemas[s], text, attrs, times[tf], times[tl], lg, sup, con, vec, pv, rc, ta)  # type: ignore[arg-type]
            for nid, lv, s, text, attrs, tf, tl, lg, (sup, con), vec, pv, rc, ta in zip(
                ids, levels, schema, content, attributes, t_first, t_last, logit.tolist(),
                counts[:, :2].tolist(), vectors, provenance, recall_count, access)
        ]
        edges = _edges(a, ids, reasons, times, n_times)
    return nodes, edges


def _vectors(rows: list[int], own: np.ndarray, shared: np.ndarray | None) -> list[np.ndarray | None]:
    # Row r ≥ 0: the shared matrix's; −1: no embedding; −2 − j: the own matrix's row j.
    # (The rows were checked to be inside their matrices.)
    return [shared[r] if r >= 0 else None if r == -1 else own[-2 - r] for r in rows]  # type: ignore[index]


def _edges(a: Mapping[str, np.ndarray], ids: list[str], reasons: list[str],
           times: Sequence[datetime | None], n_times: int) -> list[Edge]:
    ends, kind, scores, facts = a["ends"], a["kind"], a["scores"], a["edge_facts"]
    m = ends.shape[0] if ends.ndim == 2 else -1
    if ends.shape != (m, 2) or scores.shape != (m, 2) or facts.shape != (m, 2):
        raise ValueError("edge arrays of the wrong shape")
    src, dst = _positions(ends[:, 0], (m,), len(ids)), _positions(ends[:, 1], (m,), len(ids))
    kinds = _positions(kind, (m,), 2)
    why = _positions(facts[:, 0], (m,), len(reasons))
    at = _positions(facts[:, 1], (m,), n_times)
    return [
        Edge(ids[s], ids[d], _KINDS[k], psi, w, reasons[r], times[t])  # type: ignore[arg-type]
        for s, d, k, (psi, w), r, t in zip(src, dst, kinds, scores.tolist(), why, at)
    ]
