"""The wire form of one user's hot-tier entry: what a stateless process needs to recall.

An entry is built from one store version of the user's tree (``v``; ``cv`` is
that version's content version, what a reader checks it against; ``eid`` is new
with every write, so a process can tell the entry it decoded last) and holds:

* ``tiers``: the tier lists (recent-session leaves, top roots, pivotal nodes, tier
  2 best first), each hot member's closure (the sub-tree ids it brings, as the
  in-process hot index computes them from the whole tree), the hot members'
  headers and S_m;
* ``gate``: the drift gate's state (the anchored persona vector's re-rank count
  and the configuration fingerprint the tiers were ranked under);
* ``anchor``: the anchored persona vector P (float32 bytes);
* ``heads``: the headers of every other node of the tree (importance, Sim(m, P),
  C_m, t_last), which tier 3's promotions score hits with, as in-process;
* ``rows`` and ``emb``: every node of the closures (the store's row codec, so a
  node reads back exactly as the store gives it) and their embeddings as one
  float32 block; ``edges``: the support edges among them;
* ``prof``: what the profile block needs beyond tier 1's nodes: each tier-1
  claim's timeline over the whole tree, and the contradicting statements those
  quote (``quotes``, without embeddings);
* ``bound``: what the sufficiency bound reads of each embedded node (its level,
  the most its line could cost, whether tier 1 holds it), aligned with ``emb``, so
  a reader tells a query no hot tier can answer from these two fields alone;
* ``lex``: the text analysis of the hot sub-trees' retrieval states (their BM25
  documents, turn grouping, dispositions, changes and standing statements), so a
  reader rebuilds the states without tokenizing; unreadable, it is left out (the
  reader re-indexes).

Nodes are JSON, never pickles: a process must not run what it reads from a shared
server.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from ..errors import StoreError
from ..store.codec import decode_edge, decode_node, encode_edge, encode_node
from ..types import Edge, Node

if TYPE_CHECKING:  # pragma: no cover
    from .rows import EntryRows

__all__ = ["HotEntry", "HOT_FIELDS", "PROBE_FIELDS", "REST_FIELDS", "DEEP_FIELDS", "PROFILE_FIELDS", "encode_entry", "decode_entry", "decode_gate", "decode_heads"]

#: The fields a recall from tiers 1 and 2 reads (``heads`` is read only for tier 3).
HOT_FIELDS = ("cv", "eid", "tiers", "gate", "anchor", "rows", "emb", "edges", "lex")
#: Read first by recall: whether the entry may be served, and whether a hot tier
#: could answer (``bound`` with the embeddings).
PROBE_FIELDS = ("cv", "eid", "gate", "anchor", "bound", "emb")
#: With the probe, what searching the hot tiers needs (``eid`` again: the same entry).
REST_FIELDS = ("eid", "tiers", "rows", "edges", "lex")
#: With the probe, what tier 3 needs of an entry it does not search.
DEEP_FIELDS = ("eid", "tiers", "heads")
#: The fields the profile block reads.
PROFILE_FIELDS = ("cv", "tiers", "gate", "anchor", "rows", "emb", "edges", "prof")

_F32 = np.dtype("<f4")


@dataclass(slots=True)
class HotEntry:
    """One user's hot-tier entry.

    Attributes
    ----------
    user_id : str
    version : int
        The store version of the tree it was built from.
    tiers : dict
        ``recent``, ``roots``, ``pivotal``, ``tier2`` (lists of ids), ``closures``
        (member id → list of ids), ``headers`` (member id → [importance,
        persona_sim, recall_count, t_last ISO]) and ``scores`` (member id → S_m).
    gate : dict
        ``fingerprint``, ``reranks``, ``lazy_updates``, ``promotions``.
    anchor : ndarray or None
        The anchored persona vector.
    heads : dict
        Node id → header list, for the nodes outside tiers 1 and 2.
    nodes : list of Node
        Every node of the closures.
    edges : list of Edge
        The support edges among ``nodes``.
    prof : dict
        ``timelines``: tier-1 claim id → its timeline (JSON, see
        :mod:`personatree.tiering.shared_profile`).
    quotes : list of Node
        Statements the profile quotes that are not in ``nodes`` (no embeddings).
    bound : dict
        ``lv``, ``cost``, ``t1``: one value per embedded node, in node order
        (:mod:`personatree.tiering.entry_bound`); empty when absent.
    eid : bytes or None
        The id of the write it was read from (a fresh one is given at each write).
    content_version : int
        The store's content version at ``version`` (what recall-statistics commits do not
        move); ``version`` when not given.
    lex : dict
        ``t1``, ``t12``: snapshots of the tier-1 and tier-1+2 retrieval states'
        text analysis (:mod:`personatree.retrieval.lex_snapshot`); empty when absent.
    """

    user_id: str
    version: int
    tiers: dict[str, Any] = field(default_factory=dict)
    gate: dict[str, Any] = field(default_factory=dict)
    anchor: np.ndarray | None = None
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    heads: dict[str, Any] = field(default_factory=dict)
    lex: dict[str, Any] = field(default_factory=dict)
    content_version: int = -1
    prof: dict[str, Any] = field(default_factory=dict)
    quotes: list[Node] = field(default_factory=list)
    eid: bytes | None = None
    bound: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.content_version < 0:
            self.content_version = self.version


def encode_entry(entry: HotEntry, prior: "EntryRows | None" = None) -> dict[str, bytes]:
    """The hash fields of ``entry`` (without ``v``, which the writer sets).

    Parameters
    ----------
    entry : HotEntry
    prior : EntryRows, optional
        The rows of an entry of the same content version (a promotion's prior
        entry): the nodes and edges it holds are taken from it, not encoded again
        (:meth:`EntryRows.stored`); the fields are the same.

    Raises
    ------
    InputError
        If a node is malformed (as the store would refuse it).
    """
    rows: list[list[Any]] = []
    blobs: list[bytes] = []
    for n in entry.nodes:
        got = prior.stored(n) if prior is not None else None
        if got is not None:
            row, blob = got
            rows.append(row)
        else:
            full = list(encode_node(n, entry.user_id))
            blob = full[-2]
            rows.append(full[1:-2] + [full[-1]])
        if blob is not None:
            blobs.append(blob)
    edges = []
    for e in entry.edges:
        raw = prior.stored_edge(e) if prior is not None else None
        edges.append(raw if raw is not None else list(encode_edge(e, entry.user_id))[1:])
    return {
        "cv": str(entry.content_version).encode(),
        "eid": os.urandom(8).hex().encode(),
        "tiers": orjson.dumps(entry.tiers),
        "gate": orjson.dumps(entry.gate),
        "anchor": b"" if entry.anchor is None else np.asarray(entry.anchor, _F32).tobytes(),
        "rows": orjson.dumps(rows),
        "emb": b"".join(blobs),
        "edges": orjson.dumps(edges),
        "heads": orjson.dumps(entry.heads),
        "lex": orjson.dumps(entry.lex),
        "bound": orjson.dumps(entry.bound),
        "prof": orjson.dumps(entry.prof | {"quotes": [list(encode_node(replace(n, embedding=None), entry.user_id))[1:]
                                                      for n in entry.quotes]}),
    }


def decode_heads(raw: bytes | None) -> dict[str, Any]:
    """The ``heads``, ``lex`` or ``bound`` field (``{}`` when absent or unreadable: promotions
    then score hits afresh, readers index the text)."""
    try:
        out = orjson.loads(raw) if raw else {}
    except orjson.JSONDecodeError:
        return {}
    return out if isinstance(out, dict) else {}


def decode_gate(gate: bytes | None, anchor: bytes | None) -> tuple[dict[str, Any], np.ndarray | None]:
    """The drift gate's state and anchor from their fields (``{}``, ``None`` when absent)."""
    g = orjson.loads(gate) if gate else {}
    a = np.frombuffer(anchor, dtype=_F32) if anchor else None
    return (g if isinstance(g, dict) else {}), a


def decode_entry(user_id: str, fields: dict[str, bytes], *, nodes: bool = True) -> HotEntry:
    """Inverse of :func:`encode_entry` (with the ``v`` field; ``heads`` only when given).

    ``nodes=False`` leaves ``nodes`` and ``edges`` empty (and ``rows``, ``emb``,
    ``edges`` unread): for a reader that decodes them on demand
    (:class:`~personatree.hot_redis.rows.EntryRows`).

    Raises
    ------
    StoreError
        If the fields are not an entry of this format (the caller treats it as
        missing and rebuilds it).
    """
    try:
        version = int(fields["v"])
        content = int(fields.get("cv", version))
        gate, anchor = decode_gate(fields.get("gate"), fields.get("anchor"))
        tiers = orjson.loads(fields["tiers"])
        emb = fields["emb"] if nodes else b""
        held: list[Node] = []
        at = 0
        for row in orjson.loads(fields["rows"]) if nodes else ():
            dim = row[-1]
            blob = None
            if dim is not None:
                end = at + 4 * int(dim)
                blob, at = emb[at:end], end
            held.append(decode_node([user_id, *row[:-1], blob, dim]))
        edges = [decode_edge([user_id, *r]) for r in orjson.loads(fields["edges"])] if nodes else []
    except (KeyError, ValueError, TypeError, IndexError, orjson.JSONDecodeError) as exc:
        raise StoreError(f"unreadable hot-tier entry for user {user_id!r}: {type(exc).__name__}: {exc}") from exc
    if at != len(emb):
        raise StoreError(f"unreadable hot-tier entry for user {user_id!r}: embedding block size")
    prof = decode_heads(fields.get("prof"))
    try:
        quotes = [decode_node([user_id, *r]) for r in prof.pop("quotes", [])]
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        raise StoreError(f"unreadable hot-tier entry for user {user_id!r}: quotes: {exc}") from exc
    return HotEntry(user_id, version, tiers, gate, anchor, held, edges, decode_heads(fields.get("heads")),
                    decode_heads(fields.get("lex")), content, prof, quotes, fields.get("eid"),
                    decode_heads(fields.get("bound")))
