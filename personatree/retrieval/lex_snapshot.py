"""A retrieval state's text analysis as plain data, to rebuild the state without it.

Building a :class:`~personatree.retrieval.state.RetrievalState` costs mostly text
analysis: tokenizing every claim and every turn for BM25, testing each leaf for a
stated disposition or change, reading its stance and when it was said. A process
that receives a sub-tree built elsewhere (a shared hot tier) can receive that
analysis with it (:func:`lexical_snapshot`) and rebuild the state from it
(:func:`restore_state`): only the support maps and embedding rows are recomputed
from the graph, and the BM25 rows are laid out as a build from the text lays them
out, so the restored state is the one that build gives (ties included), whether
the snapshot was taken of a fresh state or of one updated in place.

A snapshot carries a fingerprint of the text analysis (:func:`analysis_fingerprint`):
a process whose tokenizer or cues behave differently rebuilds from the text instead
of trusting another release's analysis. It also names every node it analysed, and
is refused unless those are exactly the graph's nodes.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from functools import lru_cache
from typing import Any, Hashable, Iterable, Mapping

from ..change_links import links_of
from ..graph import MemoryGraph
from ..lexicons import (
    CHANGE_OF_STATE_RE, CHANGE_REACH, CHANGE_REACH_ANCHORS, ELIDED_SUBJECT_OPENERS, NEGATED_START_RE,
)
from ..text import is_change, is_standing, standing_patterns
from ..types import Level
from .lexical import BM25Index
from .node_text import turn_key
from .state import RetrievalState, signature
from .turn_memo import fingerprint as turn_fingerprint

__all__ = ["SNAPSHOT_FORMAT", "analysis_fingerprint", "lexical_snapshot", "patch_snapshot", "restore_state"]

#: Bumped when what a snapshot holds changes shape.
SNAPSHOT_FORMAT = "3"

_CLAIMS = (("mid", Level.MID), ("root", Level.ROOT))


@lru_cache(maxsize=1)
def analysis_fingerprint() -> str:
    """A digest of the text analysis a snapshot depends on (tokenizer, disposition,
    change and standing cues, measured on probe texts, the change and standing
    patterns, the openers of a statement without its subject, and what each kind of
    change reaches), with the snapshot format."""
    probes = ("I quit smoking last year and started running instead.",
              "These days I work from home; I used to commute.",
              "We went to the lake on Saturday.",
              "I'm saving up for a van and still recovering from a cold.",
              "My uncle retired, and we're not moving away.",
              "A torn ligament means no netball this season.")
    parts = [SNAPSHOT_FORMAT, turn_fingerprint()]
    parts.extend(f"{is_change(p)}{is_standing(p)}" for p in probes)
    # The patterns themselves too: a phrasing added to them flips no probe above.
    parts.extend(p.pattern for p in (CHANGE_OF_STATE_RE, NEGATED_START_RE, *standing_patterns()))
    parts.append(" ".join(sorted(ELIDED_SUBJECT_OPENERS)))
    # What each kind of change reaches, what names it, and the words it is tried on.
    for kind, pattern, words in CHANGE_REACH:
        tried_on = " ".join(sorted(CHANGE_REACH_ANCHORS[kind]))
        parts.append(f"{kind}\x1e{pattern.pattern}\x1e{' '.join(sorted(words))}\x1e{tried_on}")
    return hashlib.blake2b("\x1f".join(parts).encode(), digest_size=8).hexdigest()


def lexical_snapshot(state: RetrievalState) -> dict[str, Any]:
    """The text analysis of ``state`` as JSON-ready data.

    Parameters
    ----------
    state : RetrievalState
        A state without an archive (what a snapshot rebuilds is the graph's nodes).

    Returns
    -------
    dict

    Raises
    ------
    ValueError
        If the state holds archived leaves.
    """
    if state.archive:
        raise ValueError("a state with archived leaves has no snapshot")
    out: dict[str, Any] = {"fp": analysis_fingerprint()}
    for key, lv in _CLAIMS:
        out[key] = state.bm25[lv].documents()
    out["turns"] = state.turns.documents()
    out["turn_leaves"] = dict(state.turn_leaves)
    out["turn_seq"] = dict(state.turn_seq)
    out["turn_session"] = dict(state.turn_session)
    out["dispositions"] = sorted(state.dispositions)
    out["changes"] = sorted(state.changes)
    out["reach"] = {k: list(v) for k, v in sorted(state.reach.items())}
    out["standing"] = sorted(state.standing)
    out["said"] = {k: list(v) for k, v in state.leaf_said.items()}
    return out


def _index(docs: Mapping[str, Any], order: list[str]) -> BM25Index:
    ix = BM25Index()
    for doc_id in order:
        # Counter.elements repeats each term in its first-seen order: the same
        # counts, and the same postings order, as the tokens the state indexed.
        ix.add(doc_id, Counter({str(t): int(c) for t, c in docs[doc_id].items()}).elements())
    return ix


def restore_state(graph: MemoryGraph, version: Hashable, snap: Mapping[str, Any]) -> RetrievalState | None:
    """The retrieval state of ``graph`` at ``version``, from a :func:`lexical_snapshot`.

    Parameters
    ----------
    graph : MemoryGraph
        Exactly the nodes the snapshot was taken over, in any order.
    version : hashable
    snap : mapping

    Returns
    -------
    RetrievalState or None
        ``None`` when the snapshot is of another analysis, unreadable, or not of
        these nodes: the caller builds the state from the text.
    """
    if not isinstance(snap, Mapping) or snap.get("fp") != analysis_fingerprint():
        return None
    st = RetrievalState(graph)
    try:
        # Rows in the order a build from the text gives them (nodes in graph order,
        # turns sorted): ties break alike whatever state the snapshot was taken of.
        for key, lv in _CLAIMS:
            docs = {str(d): tf for d, tf in snap[key]}
            order = [n.id for n in graph.nodes(lv)]
            if len(docs) != len(order):
                return None
            st.bm25[lv] = _index(docs, order)
        turn_of = {str(x): str(tk) for tk, ids in snap["turn_leaves"].items() for x in ids}
        for n in graph.nodes(Level.LEAF):
            tk = turn_of[n.id]
            st.turn_of[n.id] = tk
            st.turn_leaves.setdefault(tk, []).append(n.id)
        if len(turn_of) != len(st.turn_of):
            return None
        docs = {str(d): tf for d, tf in snap["turns"]}
        if docs.keys() != st.turn_leaves.keys():
            return None
        st.turns = _index(docs, sorted(docs))
        st.turn_seq = {str(tk): int(s) for tk, s in snap["turn_seq"].items()}
        st.turn_session = {str(tk): str(s) for tk, s in snap["turn_session"].items()}
        for tk, sess in st.turn_session.items():
            st.session_turns.setdefault(sess, set()).add(tk)
        st.dispositions = {str(x) for x in snap["dispositions"]}
        st.changes = {str(x) for x in snap["changes"]}
        st.reach = {str(k): tuple(str(x) for x in v) for k, v in snap["reach"].items()}
        st.standing = {str(x) for x in snap["standing"]}
        st.leaf_said = {str(k): (float(v[0]), int(v[1]), str(v[2])) for k, v in snap["said"].items()}
        # A judge's links are the leaves' own attributes: read from the nodes.
        st.judged = {n.id: links for n in graph.nodes(Level.LEAF) if (links := links_of(n))}
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        return None
    if st.leaf_said.keys() != st.turn_of.keys():
        return None
    # What a later refresh compares against, as a build from the text leaves it.
    st._sig = {n.id: signature(n) for n in graph.nodes()}
    st._rebuild_structure(graph)
    st.version = version
    return st


def patch_snapshot(snap: Mapping[str, Any] | None, before: Iterable[str], graph: MemoryGraph,
                   after: Iterable[str]) -> dict[str, Any] | None:
    """The snapshot over the nodes ``after`` of ``graph``, from ``snap`` over ``before``.

    What :func:`lexical_snapshot` gives for a fresh state over ``after``, analysing
    only the nodes that came in and the turns whose leaves changed: a claim's
    document, a leaf's change, stance and time are its own; a turn's document is
    read from its leaves in the sub-tree, so a turn that gains or loses one is read
    again from all of them. For a sub-tree whose members changed (a hot tier's
    promotion), of the same content as the one ``snap`` was taken of.

    Parameters
    ----------
    snap : mapping or None
        A :func:`lexical_snapshot` over the nodes ``before`` (``None``: there is none).
    before : iterable of str
    graph : MemoryGraph
        Holds every node of ``after`` (the user's tree).
    after : iterable of str

    Returns
    -------
    dict or None
        ``None`` when ``snap`` is of another analysis or unreadable (the caller
        analyses the text).
    """
    if not isinstance(snap, Mapping) or snap.get("fp") != analysis_fingerprint():
        return None
    old, new = dict.fromkeys(before), dict.fromkeys(after)
    gone = [x for x in old if x not in new]
    came = [graph.node(x) for x in new if x not in old]
    try:
        turn_of = {str(x): str(tk) for tk, ids in snap["turn_leaves"].items() for x in ids}
        dirty = {turn_of[x] for x in gone if x in turn_of} | {turn_key(n) for n in came if n.level is Level.LEAF}
        # The leaves of the changed turns that stay, read again with the newcomers.
        again = [graph.node(x) for tk in sorted(dirty) for x in snap["turn_leaves"].get(tk, ()) if x in new]
        part = MemoryGraph(graph.user_id)
        for n in came + again:
            if n.id not in part:
                part.add_node(n)
        fresh = lexical_snapshot(RetrievalState(part).refresh(part, None))
        drop = set(gone)
        out: dict[str, Any] = {"fp": snap["fp"]}
        for key, _ in _CLAIMS:
            out[key] = [d for d in snap[key] if str(d[0]) not in drop] + fresh[key]
        out["turns"] = [d for d in snap["turns"] if str(d[0]) not in dirty] + fresh["turns"]
        for key in ("turn_leaves", "turn_seq", "turn_session"):
            out[key] = {tk: v for tk, v in snap[key].items() if tk not in dirty} | fresh[key]
        # A turn's leaves are tested for a disposition with their turn: the changed
        # turns' verdicts are the fresh ones.
        stale = drop | {x for x in turn_of if turn_of[x] in dirty}
        out["dispositions"] = sorted({x for x in snap["dispositions"] if x not in stale} | set(fresh["dispositions"]))
        for key in ("changes", "standing"):  # a leaf's own verdicts
            out[key] = sorted({x for x in snap[key] if x not in drop} | set(fresh[key]))
        kept = {k: v for k, v in snap["reach"].items() if k not in drop}
        out["reach"] = dict(sorted((kept | fresh["reach"]).items()))
        out["said"] = {k: v for k, v in snap["said"].items() if k not in drop} | fresh["said"]
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        return None
    return out
