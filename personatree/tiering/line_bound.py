"""The most a node's rendered line can cost, the unit of the tiers' sufficiency bound.

A tier is searched only when its nodes close to the query could fill
``sufficient_fill`` of the budget (:func:`~personatree.tiering.search.could_suffice`),
and :func:`~personatree.tiering.search.sufficient` counts the tokens of the lines
recall shows. The bound must never be below what those lines count, or a tier that
would have sufficed is skipped (slower, never less recall: the deeper tier holds
everything). In bytes it is safe for any tokenizer but about four times too loose
for English, so a tier holding two close lines was searched for a budget that needs
seven, and the search went to the store anyway. With the recall's own counter the
bound is counted in tokens: a leaf's line exactly as recall renders it, a claim's
with the widest prefix its line can take (the ``changed`` tag, five-digit counts,
a span across two years).
"""

from __future__ import annotations

from ..ports import TokenCounter
from ..retrieval.render import node_line
from ..types import Level, Node

__all__ = ["LINE_BYTES", "counter_name", "line_bytes", "line_tokens"]

# Bytes a rendered line adds to its node's content and speaker or schema type: the
# bullet, indent and date of a leaf, or the rest of a claim's
# "[type 0.82 | Nov 2023–Feb 2024 | +12/-3] " prefix.
LINE_BYTES = 64
# Tokens of slack over a counted line: a tokenizer may merge across the boundary of
# the text it was given and what recall puts around it.
_SLACK = 2


def line_bytes(n: Node) -> int:
    """The most bytes a node's rendered line could take (a bound in tokens for any tokenizer)."""
    speaker = n.attributes.get("speaker")
    extra = len(speaker.encode()) + 2 if isinstance(speaker, str) else 0  # "Name: "
    if n.level is not Level.LEAF:
        extra += len(n.schema_type.encode())
    return len(n.content.encode()) + LINE_BYTES + extra


def line_tokens(n: Node, counter: TokenCounter) -> int:
    """The most tokens ``counter`` can give the line recall renders for ``n``.

    Parameters
    ----------
    n : Node
    counter : TokenCounter
        The recall's counter.

    Returns
    -------
    int
    """
    if n.level is Level.LEAF:
        return counter.count(node_line(n, 0.0)) + _SLACK
    speaker = n.attributes.get("speaker")
    widest = (
        f"[{n.schema_type} 0.00 | Sep 2024–Dec 2025 | +{max(n.n_support, 10000)}"
        f"/-{max(n.n_conflict, 10000)} | changed 2024-06-22] "
        f"{speaker + ': ' if isinstance(speaker, str) else ''}before: {n.content}"
    )
    return counter.count(widest) + _SLACK


def counter_name(counter: TokenCounter) -> str:
    """A name of what ``counter`` counts, the same in every process (its class and model)."""
    return f"{type(counter).__module__}.{type(counter).__qualname__}:{getattr(counter, 'model', '')}"
