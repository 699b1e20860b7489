"""The profile block: the standing summary of a user that an agent puts in every prompt.

When the tree offers ``tree.profile(user_id)`` (the tiered profile of the retrieval
component) that is used as is. Until then the block is built here from the tree's own
claims: the top roots, then the top mids, by confidence read now — the compressed
persona the tree maintains (ARCHITECTURE.md: "the tree's own claims are the persona").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..render import node_confidence
from ..types import Level

__all__ = ["ProfileBlock", "ProfileLine", "profile_block"]


@dataclass(frozen=True, slots=True)
class ProfileLine:
    """One line of the block: a claim or pattern, or a recent statement.

    Attributes
    ----------
    node_id, level, schema_type : str
    content : str
        What the block says of the node: for the tiered profile its rendered line (a
        changed claim reads ``now: "<latest statement>"; before: <claim>``), else the
        claim's text.
    confidence : float
        As the block shows it (a changed claim's is the belief it still holds).
    n_support, n_conflict : int
    section : str
        ``"claims"`` or ``"recent"`` (the tiered profile's verbatim recent statements).
    """

    node_id: str
    level: str
    schema_type: str
    content: str
    confidence: float
    n_support: int
    n_conflict: int
    section: str = "claims"


@dataclass(frozen=True, slots=True)
class ProfileBlock:
    """A user's profile as text plus the lines behind it.

    Attributes
    ----------
    user_id : str
    text : str
        Ready to paste into a prompt.
    lines : tuple of ProfileLine
        Empty when ``source`` is ``"tree.profile"`` and that result has no items.
    source : str
        ``"tree.profile"`` (the retrieval component's tiered profile) or
        ``"claims"`` (the top roots and mids by confidence, built here).
    note : str or None
        Why the fallback was used, for people reading the CLI output.
    """

    user_id: str
    text: str
    lines: tuple[ProfileLine, ...] = field(default_factory=tuple)
    source: str = "claims"
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {
            "user_id": self.user_id, "text": self.text, "source": self.source, "note": self.note,
            "lines": [
                {"node_id": x.node_id, "level": x.level, "schema_type": x.schema_type, "content": x.content,
                 "confidence": round(x.confidence, 4), "n_support": x.n_support, "n_conflict": x.n_conflict,
                 "section": x.section}
                for x in self.lines
            ],
        }


def profile_block(tree: Any, user_id: str, *, limit: int = 12) -> ProfileBlock:
    """The profile block of ``user_id``.

    Parameters
    ----------
    tree : PersonaTree
    user_id : str
    limit : int
        Most claims and patterns listed in ``lines`` (roots first, then mids). The
        tiered profile's recent statements are all listed: its token budget bounds
        them, and they are what a changed claim's latest word is read against.

    Returns
    -------
    ProfileBlock

    Raises
    ------
    UnknownUserError
    InputError
        For a non-positive ``limit``.
    """
    from ..errors import InputError

    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise InputError("limit must be a positive integer")
    fn = getattr(tree, "profile", None)
    if callable(fn):
        out = fn(user_id)
        tiered: list[ProfileLine] = []
        claims = 0
        for item in getattr(out, "items", ()):
            if item.section == "claims":
                claims += 1
                if claims > limit:
                    continue
            n = tree.node(user_id, item.node_id)
            # The line and confidence the block shows: a claim's stored text alone would
            # hide that the person changed their mind since.
            tiered.append(ProfileLine(n.id, n.level.value, n.schema_type, item.line, item.confidence,
                                      n.n_support, n.n_conflict, item.section))
        return ProfileBlock(user_id, str(getattr(out, "text", out)), tuple(tiered), "tree.profile")
    now = tree.clock.now()
    lines: list[ProfileLine] = []
    for level in (Level.ROOT, Level.MID):
        ranked = sorted(
            ((node_confidence(n, tree.registry, now), n) for n in tree.nodes(user_id, level)),
            key=lambda cn: (-cn[0], -cn[1].n_support, cn[1].id),
        )
        for conf, n in ranked:
            if len(lines) >= limit:
                break
            lines.append(ProfileLine(n.id, level.value, n.schema_type, n.content, conf, n.n_support, n.n_conflict))
    text = "\n".join(
        f"- {x.content} ({x.schema_type}, confidence {x.confidence:.2f}, {x.n_support} supporting"
        + (f", {x.n_conflict} conflicting" if x.n_conflict else "") + ")"
        for x in lines
    )
    note = "tiered profile not available in this build: showing the top claims and patterns by confidence"
    if not lines:
        note = "no claims or patterns yet: run `personatree consolidate` after observing enough evidence"
    return ProfileBlock(user_id, text, tuple(lines), "claims", note)
