"""The store-independent checksum of one user's data."""

from __future__ import annotations

import hashlib
from typing import Any, Iterable

import orjson

from ...ports import JournalEvent
from ...types import Edge, Node, Observation
from .records import encode_edge, encode_event, encode_node, encode_observation
from .values import loads

__all__ = ["digest"]


# -- checksums ---------------------------------------------------------------------------


def _canon(text: str) -> Any:
    return loads(text)


def digest(
    observations: Iterable[Observation],
    nodes: Iterable[Node],
    edges: Iterable[Edge],
    events: Iterable[JournalEvent],
    archive: Iterable[Node] = (),
) -> str:
    """A store-independent SHA-256 of one user's data.

    Rows are re-encoded with sorted JSON keys and sorted by key, so two stores that
    hold the same data give the same digest whatever their internal order (used to
    verify copies between stores). The archived leaves are part of the data; a user
    without any has the digest it had before the archive existed.

    Returns
    -------
    str
        Hex digest.
    """
    h = hashlib.sha256()

    def feed(tag: str, rows: list[list[Any]]) -> None:
        h.update(tag.encode())
        h.update(orjson.dumps(rows, option=orjson.OPT_SORT_KEYS))

    obs_rows = []
    for o in sorted(observations, key=lambda o: o.seq):
        r = list(encode_observation(o, o.user_id))
        r[2] = o.seq
        r[5], r[6] = _canon(r[5]), _canon(r[6])
        obs_rows.append(r)
    def node_rows(found: Iterable[Node]) -> list[list[Any]]:
        out = []
        for n in sorted(found, key=lambda n: n.id):
            r = list(encode_node(n, n.user_id))
            r[5], r[11] = _canon(r[5]), _canon(r[11])
            r[14] = None if r[14] is None else r[14].hex()
            out.append(r)
        return out

    edge_rows = [list(encode_edge(e, "")) for e in sorted(edges, key=lambda e: (e.src, e.dst))]
    event_rows = []
    for ev in sorted(events, key=lambda e: e.seq):
        r = list(encode_event(ev, ""))
        r[1], r[3] = ev.seq, _canon(r[3])
        event_rows.append(r)
    feed("observations", obs_rows)
    feed("nodes", node_rows(nodes))
    feed("edges", edge_rows)
    feed("events", event_rows)
    archived = node_rows(archive)
    if archived:
        feed("archive", archived)
    return h.hexdigest()
