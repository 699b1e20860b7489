"""What the retrieval state keeps of one node: its turn, its lexical tokens, its signature.

Pure functions of a node. A state is refreshed by comparing signatures, so whatever
the state derives from a node must depend on nothing but its signature.
"""

from __future__ import annotations

from typing import Hashable

from ..types import Level, Node
from .lexical import date_tokens, tokenize

__all__ = ["turn_key", "extra_text", "node_doc_tokens", "signature"]


def turn_key(node: Node) -> str:
    """The source turn of a leaf ("observation id#turn"), or the node id when unknown.

    A leaf is one sentence; the turn it came from is what a person (and a benchmark)
    would call "the evidence", so leaves of one turn are scored together lexically.
    """
    if node.level is Level.LEAF and node.provenance:
        p = node.provenance[0]
        return f"{p.observation_id}#{p.turn}"
    return node.id


def extra_text(node: Node) -> str:
    """A node's speaker and entity names, as one text."""
    a = node.attributes
    parts = [str(a.get("speaker") or "")]
    ents = a.get("entities")
    if isinstance(ents, (list, tuple)):
        parts.extend(str(e) for e in ents)
    return " ".join(p for p in parts if p)


def node_doc_tokens(node: Node) -> list[str]:
    """BM25 tokens of one node: its content, speaker, entities and its dates."""
    return tokenize(node.content + " " + extra_text(node)) + date_tokens(node.t_first)


def signature(node: Node) -> Hashable:
    """What the state holds of a node depends on only these (compared on refresh)."""
    return (node.level, node.content, node.t_first, extra_text(node), turn_key(node))
