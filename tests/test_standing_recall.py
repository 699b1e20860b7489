"""A situation the person tells brings back the goal, value or condition it depends on.

The person states something that holds for a while (a goal they are saving towards,
a condition they are recovering from) and weeks later tells a situation whose
meaning depends on it, in other words ("A friend offered me her old climbing shoes
for next to nothing"). Recall gives the statements of what the person holds that
are nearest the situation a bonus, so the goal comes back. Real packaged embedder,
offline judge and a real SQLite file.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import pytest

from personatree import PersonaTree, PersonaTreeConfig
from personatree.text import is_standing, tells_own_situation

from .helpers import observe_story

GOAL = "I'm putting money aside every month so we can afford a campervan by the spring."
CONDITION = "I'm still getting over a torn hamstring, so no sprinting for a while."
STORY = [GOAL, CONDITION]
OTHER = [
    "My sister is visiting from Leeds next month.",
    "I finished a jigsaw of a windmill last night.",
    "The new bakery on our street does a great rye loaf.",
    "Work has been busy with the yearly audit.",
    "I'm reading a long novel about a family of fishermen.",
    "We repainted the hallway a pale yellow.",
    "My neighbour's dog keeps digging under our fence.",
    "I watched a documentary about volcanoes.",
    "Our team came second in the pub quiz on Thursday.",
    "I planted peppers and mint on the balcony.",
    "We had a barbecue with friends from school.",
    "I baked a carrot cake for a colleague's leaving do.",
    "The concert in the square was lovely despite the wind.",
    "I reorganised the kitchen cupboards by size.",
    "We went to a friend's wedding in the hills.",
    "I bought a new lamp for the reading corner.",
]
# Situations that depend on one of them and share almost no word with it.
SITUATIONS = [
    ("A colleague offered me his brand new gaming laptop for a thousand quid, so tempting.", GOAL),
    ("The office five-a-side team asked me to run the relay race on Saturday.", CONDITION),
]


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("I'm training for a triathlon in September.", True),
        ("My aim this year is to visit every county museum.", True),
        ("I want to be able to swim a mile before the summer.", True),
        ("Being on time means a lot to me.", True),
        ("I'd never borrow money from friends.", True),
        ("We're on a really tight budget until the new year.", True),
        ("I'm recovering from a chest infection.", True),
        ("My grandad is in hospital again.", True),
        ("Whenever I drink coffee after lunch I can't sleep.", True),
        ("My knee stopped hurting once I switched to softer shoes.", True),
        ("We went to the beach on Sunday.", False),
        ("The trains were late this morning.", False),
        ("Are you saving for anything?", False),
        ("She is recovering from a cold.", False),
    ],
)
def test_standing_statements_are_the_speakers_goals_values_conditions_and_causes(
    sentence: str, expected: bool
) -> None:
    assert is_standing(sentence) is expected


def test_the_anchor_words_never_change_a_verdict() -> None:
    # A pattern runs only on sentences holding one of its anchor words; over sentences
    # of every kind (and each pattern's own examples), the verdicts are those of
    # running every pattern.
    from itertools import product

    from personatree.text import has_first_person, normalize, tokenize
    from personatree.text.standing import _PATTERNS

    heads = ["I'm", "We've been", "My dad said I", "Honestly I", "Since last spring we"]
    tails = [
        "saving hard for a deposit", "training for the marathon", "keeping my word matters to me",
        "would never cheat at cards", "on a tight budget", "still recovering from the flu",
        "sleep better since I stopped coffee", "get headaches whenever I skip lunch",
        "went to the beach", "had pasta at the new place", "painted the fence blue",
    ]
    sentences = [f"{h} {t}." for h, t in product(heads, tails)] + STORY + OTHER
    sentences += [q for q, _ in SITUATIONS]
    for text in sentences:
        speaker = has_first_person(tokenize(text))
        every = speaker and any(p.search(normalize(text)) is not None for _, p in _PATTERNS)
        assert is_standing(text) is every, text
    assert sum(map(is_standing, sentences)) >= 40  # both verdicts exercised


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("The builders start drilling at seven, so I can't work from home this week.", True),
        ("Should I take the job in the city?", True),
        ("There's a sale on sofas this weekend, should I treat myself?", True),
        ("When did Sam move to Leeds?", False),
        ("Did Sam go to the concert?", False),
        ("List three hotels near the station.", False),
        ("Sam's brother is a nurse.", False),
        ("Sam shouted 'I'm not scared' and ran off.", False),
        ("In 2009 I lived in a tiny flat in Oslo.", False),
        ("When I was ten we had a tortoise.", False),
    ],
)
def test_a_situation_of_ones_own_is_a_first_person_statement_or_yes_no_question(query: str, expected: bool) -> None:
    assert tells_own_situation(query) is expected


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, PersonaTree]]:
    base = Path(tmp_path_factory.mktemp("standing"))
    cfg = PersonaTreeConfig()
    off = cfg.model_copy(update={"recall": cfg.recall.model_copy(update={"standing_weight": 0.0})})
    on = PersonaTree.open(base / "memory.db")
    observe_story(on, "ana", STORY, OTHER, datetime(2025, 3, 3, 9, 0, tzinfo=timezone.utc), days_between=8)
    trees = {"on": on, "off": PersonaTree.open(base / "memory.db", off, embedder=on.embedder)}
    yield trees
    for tree in trees.values():
        tree.close()


@pytest.mark.parametrize(("situation", "held"), SITUATIONS)
def test_the_situation_brings_back_what_it_depends_on(
    stores: dict[str, PersonaTree], situation: str, held: str
) -> None:
    rec = stores["on"].recall("ana", situation, budget=120)
    assert rec.tokens <= 120
    assert held in rec.text


@pytest.mark.parametrize(("situation", "held"), SITUATIONS)
def test_the_bonus_raises_what_the_person_holds(stores: dict[str, PersonaTree], situation: str, held: str) -> None:
    def relevance(tree: PersonaTree) -> float:
        rec = tree.recall("ana", situation, budget=1000)
        ids = {n.id for n in tree.nodes("ana", "leaf") if n.content == held}
        return max((it.relevance for it in rec.items if it.node_id in ids), default=0.0)

    assert relevance(stores["on"]) > relevance(stores["off"])


def test_a_question_about_what_happened_gets_no_bonus(stores: dict[str, PersonaTree]) -> None:
    # A factual question reads the same with the bonus on and off.
    q = "When did we repaint the hallway?"
    assert stores["on"].recall("ana", q, budget=300).text == stores["off"].recall("ana", q, budget=300).text


# The same situations told without the speaker in them: only the caller can say that
# such a message is the person's own.
UNSPOKEN = [
    ("A mate is selling his almost new gaming laptop for a thousand quid this week.", GOAL),
    ("The office relay race is on Saturday and the team is one runner short.", CONDITION),
]


@pytest.mark.parametrize(("message", "held"), UNSPOKEN)
def test_the_persons_own_message_brings_back_what_it_depends_on(
    stores: dict[str, PersonaTree], message: str, held: str
) -> None:
    assert not tells_own_situation(message)
    tree = stores["on"]
    ids = {n.id for n in tree.nodes("ana", "leaf") if n.content == held}

    def relevance(from_user: bool) -> float:
        rec = tree.recall("ana", message, budget=1000, from_user=from_user)
        return max((it.relevance for it in rec.items if it.node_id in ids), default=0.0)

    assert relevance(True) > relevance(False)
    rec = tree.recall("ana", message, budget=120, from_user=True)
    assert rec.tokens <= 120 and held in rec.text


def test_from_user_must_be_a_bool(stores: dict[str, PersonaTree]) -> None:
    from personatree.errors import InputError

    tree = stores["on"]
    before = tree.stats("ana")
    with pytest.raises(InputError, match="from_user"):
        tree.recall("ana", "The relay race is on Saturday.", from_user="yes")  # type: ignore[arg-type]
    assert tree.stats("ana") == before
