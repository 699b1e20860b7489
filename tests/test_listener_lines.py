"""Lines about the listener are no evidence of the speaker's patterns.

"I love how your loaf came out" says something of the person spoken to; it is kept as a
leaf (recall can still find it) but supports and contradicts none of the speaker's
patterns, on the live path (consolidate, then observe) and the bulk path (observe a
history, consolidate once)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from personatree.graph import MemoryGraph
from personatree.text import about_listener
from personatree.types import Level

from .conftest import T0
from .helpers import open_tree

# Our own sentences: the person's own baking, and their praise of the listener's baking.
OWN = [
    "I bake sourdough bread every weekend, it's my favourite hobby.",
    "I love baking bread, the smell of a fresh loaf makes my day.",
    "Baked two loaves of rye bread this morning, I really enjoy baking.",
    "Baking bread is how I relax after a long week at work.",
    "I've been baking bread with my own starter for three years now.",
    "My sourdough loaves keep getting better, I love baking them.",
]
LISTENER = [
    "I love how your sourdough bread came out, it looks perfect!",
    "I love that you bake bread every weekend too.",
    "I bet your sourdough bread tastes great fresh from the oven.",
    "Keep up the great baking, those loaves look amazing!",
]
#: The history as it was said: two of the person's lines, then one about the listener.
MIXED = OWN[:2] + LISTENER[:1] + OWN[2:4] + LISTENER[1:2] + OWN[4:] + LISTENER[2:]


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("I love how your garden turned out this year.", True),
        ("Cool that you kept the old bike running.", True),
        ("We're so proud of you!", True),
        ("I bet you'll ace the exam.", True),
        ("I'm sure you'll love the new kayak.", True),
        ("I'm confident your talk will go well.", True),
        ("I can't wait to see your new studio.", True),
        ("Lucky you, a whole week by the sea!", True),
        ("Make sure you drink enough water on the climb.", True),
        ("Hiking looks like a great way for you to unwind.", True),
        # Cheers, wishes and advice with the listener left unsaid.
        ("Congrats on the new flat, Priya!", True),
        ("Keep at it, the finish line is close!", True),
        ("Go Sam!", True),
        ("Have fun at the gig tonight.", True),
        ("Chase those dreams, mate!", True),
        ("Good luck with the interview.", True),
        ("Don't give up on the novel!", True),
        # ... but the speaker's own news, with the "I" dropped or said.
        ("Went for a long swim after work.", False),
        ("Love this time of year.", False),
        ("Keep going, I tell myself every mile.", False),
        ("Let's keep chasing our dreams together!", False),
        ("Going to the climbing wall twice a week now.", False),
        # The speaker tells something of their own as well.
        ("I know you love jazz, I do too.", False),
        ("You know I love a long walk on the beach.", False),
        ("I think you'd like the trail I hiked last week.", False),
        ("I'm sure I'll finish the quilt before you visit.", False),
        ("I went sailing with you last spring.", False),
        # Gratitude and closeness are the speaker's relationship.
        ("I'm so lucky to have you.", False),
        ("Your advice means a lot to me.", False),
        ("Really appreciate your help with the move.", False),
        ("Thanks so much for your notes on my draft!", False),
        ("Oh, so grateful for your patience this week.", False),
        # A generic "you", a filler, or a name alone.
        ("You can't beat a cold swim in the morning.", False),
        ("Thank you, the ferry ride was lovely.", False),
        ("Back from the mountains, Jo!", False),
        ("I cook dinner for my parents every Sunday.", False),
    ],
)
def test_a_line_about_the_listener(sentence: str, expected: bool) -> None:
    assert about_listener(sentence) is expected


def _at(i: int):
    return T0 + timedelta(days=6 * i, hours=2)


def _items(texts: list[str], start: int) -> list[dict]:
    return [{"messages": [{"role": "user", "content": t}], "at": _at(start + i), "session_id": f"s{start + i}"}
            for i, t in enumerate(texts)]


def _listener_leaves(g: MemoryGraph) -> list[str]:
    return [n.id for n in g.nodes(Level.LEAF) if about_listener(n.content)]


def _assert_only_own_support(g: MemoryGraph) -> None:
    mids = list(g.nodes(Level.MID))
    assert mids, "the person's own baking formed no pattern"
    for mid in mids:
        for child in g.children(mid.id):
            assert not about_listener(g.node(child).content), (mid.content, g.node(child).content)
    heard = _listener_leaves(g)
    assert len(heard) == len(LISTENER), "a line about the listener was lost"
    for leaf_id in heard:
        assert g.parent(leaf_id) is None
        assert not [e for e in g.edges() if e.src == leaf_id]


@pytest.mark.parametrize("path", ["bulk", "live"])
def test_praise_of_the_listener_joins_none_of_the_speakers_patterns(path, parts, tmp_path) -> None:
    tree = open_tree(tmp_path / "m.db", parts, _at(0))
    if path == "bulk":
        tree.observe_many("rui", _items(MIXED, 0))
    else:
        tree.observe_many("rui", _items(OWN, 0))
        tree.consolidate("rui", now=_at(len(OWN)))
        assert list(tree.graph("rui").nodes(Level.MID))
        for item in _items(LISTENER, len(OWN)):
            report = tree.observe("rui", item["messages"], at=item["at"], session_id=item["session_id"])
            assert report.decisions and {d.action for d in report.decisions} == {"orphan"}
    tree.consolidate("rui", now=_at(len(MIXED) + 1))
    g = tree.graph("rui")
    g.check()
    _assert_only_own_support(g)
    # Still evidence recall can reach.
    text = tree.recall("rui", "What did they say about the listener's sourdough?", budget=400).text
    assert "your sourdough bread came out" in text
    tree.close()
