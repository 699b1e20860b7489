"""Helpers shared by the test modules that run the real engine on real stores.

Plain values and functions only; the fixtures that build them live in ``conftest.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

from personatree import FixedClock, PersonaTree
from personatree.config import PersonaTreeConfig
from personatree.judge import OfflineJudge
from personatree.ports import ChangeSet, Store
from personatree.schema import SchemaRegistry
from personatree.store import open_store
from personatree.types import Level, Node

__all__ = ["T0", "Parts", "observe_story", "open_tree", "seed_mid"]

# The start of every test's timeline. Kept here rather than in conftest.py so that
# seed_mid can use it without importing conftest (which imports this module).
T0 = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Parts:
    """The real embedder, registry and offline judge, built once per test module."""

    embedder: Any
    registry: SchemaRegistry
    judge: OfflineJudge


def open_tree(where: str | Path | Store, parts: Parts, now: datetime) -> PersonaTree:
    """A tree with the real embedder and judge of ``parts`` and a clock fixed at ``now``.

    Parameters
    ----------
    where : str, Path or Store
        A SQLite file path or store URL (``"memory://"``, ``"postgresql://..."``), or
        an already opened store.
    parts : Parts
        The module's embedder, registry and judge.
    now : datetime
        What the tree's clock says.

    Returns
    -------
    PersonaTree
    """
    store = open_store(str(where)) if isinstance(where, (str, Path)) else where
    return PersonaTree(store, config=PersonaTreeConfig(), registry=parts.registry,
                       embedder=parts.embedder, judge=parts.judge, clock=FixedClock(now))


def seed_mid(
    tree: PersonaTree,
    user_id: str,
    node_id: str,
    text: str,
    schema_type: str = "preference",
    attrs: Mapping[str, Any] | None = None,
    *,
    t_first: datetime = T0,
    t_last: datetime = T0,
    logit: float = 0.4,
    n_support: int = 1,
) -> Node:
    """Commit a mid (what consolidation would create) so new leaves can support or contradict it.

    Parameters
    ----------
    tree : PersonaTree
    user_id, node_id, text : str
        The owner, id and summary text of the mid.
    schema_type : str
        The mid's type.
    attrs : mapping, optional
        The mid's attributes (none by default).
    t_first, t_last : datetime
        The span of its evidence.
    logit : float
        Its confidence logit.
    n_support : int
        How many observations it summarises.

    Returns
    -------
    Node
    """
    vec = tree.embedder.embed([text])[0]

    def work(graph: Any) -> tuple[ChangeSet, None]:
        graph.add_node(node)
        return ChangeSet(user_id, upsert_nodes=[node]), None

    node = Node(node_id, user_id, Level.MID, schema_type, text, dict(attrs or {}),
                t_first, t_last, logit, n_support, 0, vec)
    tree._transact(user_id, work)
    return node


def observe_story(
    tree: PersonaTree,
    user: str,
    story: Sequence[str],
    chatter: Sequence[str],
    start: datetime,
    *,
    days_between: int = 6,
    weeks: int = 3,
) -> None:
    """Observe ``story`` one message every ``weeks`` weeks, with ``chatter`` on the days
    after each (up to ``days_between`` a time), in one batch; then consolidate once.

    The import path every user starts with: a history observed at once, consolidated
    after its last message.
    """
    items = []
    others = iter(chatter)
    for i, text in enumerate(story):
        at = start + timedelta(weeks=weeks * i)
        items.append({"messages": [{"role": "user", "content": text}], "at": at})
        for day in range(1, days_between + 1):
            other = next(others, None)
            if other is not None:
                items.append({"messages": [{"role": "user", "content": other}], "at": at + timedelta(days=day)})
    tree.observe_many(user, sorted(items, key=lambda x: x["at"]))
    tree.consolidate(user, now=start + timedelta(weeks=weeks * len(story)))


#: A person's small talk: close to anything they say, more than any one habit is.
PLEASANTRIES = [
    "Wow, that sounds amazing, I'm so happy for you!", "That's awesome, congrats on the new puppy!",
    "Thanks so much, you always know what to say.", "Haha, that's hilarious, you made my day!",
    "Aw, that's so sweet of you, thank you!", "So glad it all worked out for you in the end!",
    "That's great to hear, keep me posted!", "Oh wow, what a lovely surprise, enjoy it!",
    "You're the best, thanks for checking in on me!", "Sounds like a blast, I'm a bit jealous!",
    "Good luck tomorrow, you've totally got this!", "Love that for you, you deserve it!",
]
#: The same person's statements about their own life, one topic each.
OWN_LIFE = [
    "My mornings start with laps in the lido before work.",
    "I coach the under-tens football team on Sunday mornings.",
    "Our flat above the florist is tiny but I adore it.",
    "Glazed a batch of bowls at the pottery studio tonight.",
    "My brother finally got his pilot's licence.",
    "I've been learning to bake rye bread from my grandmother's notes.",
]


def reason_for(tree: PersonaTree, user: str, items: Sequence[Any], content: str) -> str:
    """Why recall showed the statement ``content``: its item's reason without the
    "alone:" or "carried:" before it."""
    g = tree.graph(user)
    item = next(it for it in items if g.node(it.node_id).content == content)
    return str(item.reason.split(": ", 1)[1])
