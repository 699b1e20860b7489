"""Whose evidence a node holds, in a memory of several people (pure functions).

A memory usually holds one person's statements, but the messages it records may name
their speaker (a conversation of several people, a benchmark dialogue): a leaf keeps
that name as ``attributes["speaker"]`` (``None`` for the memory's own user). A pattern
is one person's habit and a claim one person's trait, so consolidation and insertion
never put two speakers' evidence under one pattern or two speakers' patterns under one
claim. A pattern or claim made that way keeps its speaker as ``attributes["speaker"]``
when it is named; a node without that key (the memory's own user, or a tree written
before speakers were kept apart) is read as the speaker most of its supporting
evidence has.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence, cast

from .graph import MemoryGraph
from .types import EdgeKind, Level, Node

__all__ = ["NOBODY", "common_speaker", "leaf_speaker", "node_speaker", "same_person", "same_speaker", "speaker_attributes",
           "speaker_key", "speaker_prefix"]


def _name(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def leaf_speaker(node: Node) -> str | None:
    """The name a leaf's message carried, or ``None`` (the memory's own user)."""
    return _name(node.attributes.get("speaker"))


#: What a pattern with neither a speaker written nor supporting evidence in the tree
#: (seeded through the store, or its leaves all moved to the archive) tells: no name.
NOBODY = object()


def speaker_key(graph: MemoryGraph, node: Node) -> object:
    """:func:`node_speaker`, or :data:`NOBODY` for a pattern that names nobody, in one
    pass over its evidence: a caller comparing one node with many reads it once and
    compares with :func:`same_speaker`.

    Parameters
    ----------
    graph : MemoryGraph
    node : Node

    Returns
    -------
    str, None or NOBODY
    """
    if node.level is Level.LEAF:
        return leaf_speaker(node)
    if "speaker" in node.attributes:
        return _name(node.attributes["speaker"])
    counts = Counter(node_speaker(graph, graph.node(c)) for c in graph.children(node.id, EdgeKind.SUPPORT))
    if not counts:
        return NOBODY
    best = max(counts.values())
    return min((s for s, n in counts.items() if n == best), key=lambda s: (s is not None, s or ""))


def node_speaker(graph: MemoryGraph, node: Node) -> str | None:
    """The speaker of a leaf, a pattern or a claim.

    A pattern or claim reads its ``speaker`` attribute when it has one, else the most
    frequent speaker of its supporting children (ties: the first in name order, the
    memory's own user first); ``None`` when it has neither.

    Parameters
    ----------
    graph : MemoryGraph
    node : Node

    Returns
    -------
    str or None
    """
    found = speaker_key(graph, node)
    return None if found is NOBODY else cast("str | None", found)


def same_person(graph: MemoryGraph, a: Node, b: Node) -> bool:
    """Whether two nodes may be one person's evidence: the same speaker, or one of them
    names nobody (a pattern with neither a speaker written nor supporting evidence).

    Parameters
    ----------
    graph : MemoryGraph
    a, b : Node

    Returns
    -------
    bool
    """
    first = speaker_key(graph, a)
    return first is NOBODY or same_speaker(first, speaker_key(graph, b))


def same_speaker(a: object, b: object) -> bool:
    """:func:`same_person` of two :func:`speaker_key` values (pure).

    Parameters
    ----------
    a, b : str, None or NOBODY

    Returns
    -------
    bool
    """
    return a is NOBODY or b is NOBODY or a == b


def common_speaker(speakers: Iterable[str | None]) -> str | None:
    """The one speaker all of ``speakers`` share, else ``None``."""
    found = set(speakers)
    return found.pop() if len(found) == 1 else None


def speaker_attributes(speakers: Sequence[str | None]) -> dict[str, str]:
    """``{"speaker": name}`` for a new pattern or claim whose members share a named
    speaker, else ``{}`` (the memory's own user is not written down)."""
    name = common_speaker(speakers)
    return {"speaker": name} if name is not None else {}


def speaker_prefix(node: Node) -> str:
    """``"Name: "`` before the line of a node a named speaker said or holds, else ``""``.

    Read from the node's own ``speaker`` attribute (the names ``user`` and ``I``
    name the memory's own user)."""
    name = _name(node.attributes.get("speaker"))
    return f"{name}: " if name is not None and name not in ("user", "I") else ""
