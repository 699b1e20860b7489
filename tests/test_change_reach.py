"""A change reaches the habits its kind rules out, however far apart in meaning.

"Tore a ligament in my knee" and "five-a-side on Thursday nights" share no words and
sit far apart for a sentence embedder; that one ends the other is knowledge of the
world. The reading of a change's kind is tested on sentences of our own, the link on
hand-made vectors (orthogonal: no cosine could make it), and the whole path with the
real packaged embedder, the offline judge and a real SQLite file.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pytest

from personatree import PersonaTree
from personatree.config import RecallConfig
from personatree.retrieval.state import LevelArrays
from personatree.retrieval.updates import LeafFacts, reach_rows, update_chains
from personatree.text import is_change
from personatree.retrieval.snapshot_codec import decode_parts
from personatree.text.reach import named_words, reach_of, words_of
from personatree.text.stance import stance_label

from .helpers import observe_story, reason_for


def _reaches(kinds: tuple[str, ...], statement: str) -> bool:
    # What recall's update test asks: does the statement name a word the kinds reach?
    return not words_of(kinds).isdisjoint(named_words(statement))


@pytest.mark.parametrize(
    ("change", "kind", "habit"),
    [
        ("Tore a ligament in my knee, six weeks on crutches.", "an injury of the legs or back",
         "Five-a-side football every Thursday night."),
        ("I broke my wrist falling off a ladder.", "an injury of the arms", "I practise piano after dinner."),
        ("I've been sober since the spring.", "giving up alcohol", "Friday pints with the team are sacred."),
        ("I'm off coffee for good after the palpitations.", "giving up caffeine",
         "Two lattes before nine, every day."),
        ("We're expecting our first in May!", "a pregnancy", "A cold beer on the balcony is my treat."),
        ("We had a baby girl last Sunday.", "a baby born", "Clubbing until four most Saturdays."),
        ("We adopted a spaniel puppy from a farm in Wales.", "a new pet", "We're always off on city trips."),
        ("I handed in my notice on Friday.", "leaving a job", "My boss keeps piling on the overtime."),
        ("We moved to Leeds in the summer.", "a move", "Our landlord finally fixed the boiler."),
        ("My girlfriend and I split up after six years.", "a break-up", "Date night is every Wednesday."),
        ("I've gone vegetarian since January.", "going meat-free", "Nothing beats a bacon roll."),
        ("I was diagnosed as coeliac in March.", "going gluten-free", "I bake sourdough on Sundays."),
        ("I was diagnosed with type 2 diabetes.", "giving up sugar", "Dessert is the best part of a meal."),
        ("I just got engaged!", "a new partner", "Swiping on dating apps is exhausting."),
        ("Quit smoking in January, four months clean.", "giving up smoking", "Ten cigarettes a day, I know."),
        ("I sold my car last month.", "giving up the car", "The drive to my parents' takes three hours."),
        ("Turns out I'm allergic to nuts.", "an allergy to nuts", "Satay is my go-to takeaway."),
        ("I found out I have a shellfish allergy.", "an allergy to seafood", "Nothing beats a bowl of mussels."),
        ("The optician says my eyesight is too poor for night driving now.", "failing eyesight",
         "I drive up to the lakes most weekends."),
        ("I've had tinnitus for months and wear earplugs everywhere.", "hearing loss",
         "Two gigs a month, minimum."),
        ("My reflux is so bad I've had to change what I eat.", "a stomach condition",
         "The hotter the chilli the better."),
        ("I had a heart attack in June, so it's a new diet for me.", "a heart condition",
         "A full fry-up with extra bacon on Sundays."),
        ("Boxed up the Xbox and gave it to my nephew.", "giving up gaming",
         "Online raids every Friday night."),
        ("I deleted Instagram a month ago and feel calmer.", "leaving social media",
         "I post a new reel every day."),
        ("We traded the city for a cottage by the sea.", "a move", "The neighbourhood bakery knows my order."),
        ("Four months without a drop and I sleep so much better.", "giving up alcohol",
         "A bottle of wine on a Friday is tradition."),
        ("Pulled my hamstring, three weeks in a walking boot.", "an injury of the legs or back",
         "Parkrun every Saturday morning."),
    ],
)
def test_a_change_reaches_the_habit_its_kind_rules_out(change: str, kind: str, habit: str) -> None:
    assert is_change(change, stance_label(change))
    kinds = reach_of(change)
    assert kind in kinds
    assert _reaches(kinds, habit)


@pytest.mark.parametrize(
    ("change", "unrelated"),
    [
        ("Tore a ligament in my knee, six weeks on crutches.", "I'm reading a novel about whalers."),
        ("I handed in my notice on Friday.", "The tomatoes in the greenhouse are ripening."),
        ("We moved to Leeds in the summer.", "My sister plays the cello."),
        ("My reflux is so bad I've had to change what I eat.", "We play board games on Sundays."),
        ("I deleted Instagram a month ago and feel calmer.", "I walk the dog before breakfast."),
    ],
)
def test_a_change_does_not_reach_what_its_kind_leaves_alone(change: str, unrelated: str) -> None:
    assert not _reaches(reach_of(change), unrelated)


def test_a_change_of_no_known_kind_reaches_nothing() -> None:
    assert reach_of("I took up the accordion this winter.") == ()
    assert words_of(()) == frozenset()


def test_a_habit_given_up_needs_the_giving_up_in_its_words() -> None:
    # A gamer's news read as a change by its "now" gives up nothing: it must not reach
    # every earlier line about games.
    news = "Gaming pays the rent now, I went full time in May."
    assert is_change(news, stance_label(news))
    assert "giving up gaming" not in reach_of(news)
    assert "leaving social media" not in reach_of("I post on Instagram a lot more these days.")
    assert "giving up gaming" in reach_of("Sold the PlayStation, I'm done with it.")


def test_a_possessive_names_its_noun() -> None:
    assert "team" in named_words("The team's kit is new.")
    assert "kit" in named_words("The team's kit is new.")


# --------------------------------------------------------------------------------------
# The link on hand-made vectors
# --------------------------------------------------------------------------------------

TEXTS = {
    "habit": "I run along the river before work.",
    "chat": "The weather has been grey all week.",
    "injury": "My knee is strapped up for a month.",
    "hobby": "I took up the accordion this winter.",
}
# Each row orthogonal to the others: no cosine links anything.
ARR = LevelArrays(list(TEXTS), np.eye(4, dtype=np.float32), {x: i for i, x in enumerate(TEXTS)})


def _texts(ids: Sequence[str]) -> list[str]:
    return [TEXTS[x] for x in ids]


READS = RecallConfig().model_copy(update={"update_restate_floor": None})


def _facts(at: list[float], change: list[bool], session: list[int] | None = None) -> LeafFacts:
    # The kinds each change names, as the retrieval state reads them.
    n = len(at)
    gone = np.zeros(n, bool)
    kinds = {x: reach_of(TEXTS[x]) for x, c in zip(ARR.ids, change) if c and reach_of(TEXTS[x])}
    return LeafFacts(
        np.asarray(at, float), np.zeros(n, np.int8), np.asarray(change, bool), gone,
        np.arange(n, dtype=np.int64) if session is None else np.asarray(session, np.int64),
        reach=reach_rows(ARR, kinds, gone),
    )


def test_a_change_updates_what_its_kind_reaches_whatever_their_cosine() -> None:
    facts = _facts([0, 1, 2, 3], [False, False, True, True])
    assert update_chains(ARR, facts, ["habit", "chat"], READS, texts=_texts) == {"injury": ["habit"]}
    # Without the texts, by cosine alone: nothing.
    assert update_chains(ARR, _facts([0, 1, 2, 3], [False, False, True, True]), ["habit"], READS) == {}


def test_a_reaching_change_keeps_the_other_rules() -> None:
    # Said before the habit: updates nothing.
    before = _facts([5, 1, 2, 3], [False, False, True, True])
    assert update_chains(ARR, before, ["habit"], READS, texts=_texts) == {}
    # Said in the same session: one scene told in order.
    same = _facts([0, 1, 2, 3], [False, False, True, True], [7, 1, 7, 3])
    assert update_chains(ARR, same, ["habit"], READS, texts=_texts) == {}
    # Said by someone else.
    who = {"habit": "ana", "chat": "ana", "injury": "ben", "hobby": "ana"}
    facts = _facts([0, 1, 2, 3], [False, False, True, True])
    assert update_chains(ARR, facts, ["habit"], READS, speaker=who.__getitem__, texts=_texts) == {}
    # Not read as a change: its words alone link nothing.
    unread = _facts([0, 1, 2, 3], [False, False, False, True])
    assert update_chains(ARR, unread, ["habit"], READS, texts=_texts) == {}


def _three(
    texts: dict[str, str], second: tuple[float, float], sides: list[int], change: list[bool]
) -> tuple[LevelArrays, LeafFacts, Callable[[Sequence[str]], list[str]]]:
    # A habit, a statement at cosine ``second[0]`` with it, and a change orthogonal to
    # both, said in that order in three sessions; the kinds read from the change.
    arr = LevelArrays(list(texts), np.array([[1, 0, 0], [*second, 0], [0, 0, 1]], np.float32),
                      {x: i for i, x in enumerate(texts)})
    gone = np.zeros(3, bool)
    last = list(texts)[2]
    facts = LeafFacts(
        np.array([0.0, 1.0, 2.0]), np.asarray(sides, np.int8), np.asarray(change, bool), gone,
        np.arange(3, dtype=np.int64), reach=reach_rows(arr, {last: reach_of(texts[last])}, gone),
    )

    def said(ids: Sequence[str]) -> list[str]:
        return [texts[x] for x in ids]

    return arr, facts, said


def _without(facts: LeafFacts, row: int) -> LeafFacts:
    # The same facts with one row gone.
    gone = facts.gone.copy()
    gone[row] = True
    return LeafFacts(facts.at, facts.side, facts.change, gone, facts.session, reach=facts.reach)


def test_a_statement_that_reverses_the_habit_goes_before_a_later_one_its_kind_reaches() -> None:
    # "I can't run at the moment" reverses the runs directly (an opposite side, close
    # in meaning); the later "I stopped hiking after my knee injury" reaches them only
    # by its kind, and comes second.
    texts = {
        "habit": "I run along the river before work.",
        "cant": "I can't run at the moment.",
        "stop": "I stopped hiking after my knee injury.",
    }
    arr, facts, said = _three(texts, (0.45, 0.893), [0, -1, -1], [False, False, True])
    # The knee injury is the later word on "I can't run" in its turn, but the runs'
    # chain does not go through a link made by a kind of change alone.
    assert update_chains(arr, facts, ["habit"], READS, texts=said) == {"cant": ["habit"], "stop": ["cant"]}
    # Without the direct reversal, the change its kind reaches updates the runs.
    assert update_chains(arr, _without(facts, 1), ["habit"], READS, texts=said) == {"stop": ["habit"]}


def test_an_opposite_side_that_names_nothing_of_the_habit_goes_after_a_change_its_kind_reaches() -> None:
    # "Rough week, the boiler packed in" is on the other side of the digging at a
    # cosine past the flip floor, but names nothing of it; the slipped disc after it
    # ends the digging by its kind and is tried first.
    texts = {
        "habit": "Spent Sunday digging over the vegetable beds.",
        "rough": "Rough week, the boiler packed in again.",
        "disc": "I've got a slipped disc, no bending for weeks.",
    }
    arr, facts, said = _three(texts, (0.4, 0.917), [0, -1, 0], [False, False, True])
    assert update_chains(arr, facts, ["habit"], READS, texts=said) == {"disc": ["habit"]}
    # Without the change that reaches it, the opposite side still updates the habit.
    assert update_chains(arr, _without(facts, 2), ["habit"], READS, texts=said) == {"rough": ["habit"]}


# --------------------------------------------------------------------------------------
# End to end
# --------------------------------------------------------------------------------------

HABIT = [
    "Five-a-side football every Thursday night with the lads from work.",
    "Scored twice in the Sunday league match, buzzing.",
    "Our team made the cup semi-final, training is intense.",
]
CHANGE = "Tore a ligament in my knee, the surgeon says six months on crutches."
CHATTER = [
    "My cousin is getting married in Lisbon next summer.",
    "We finally fixed the leaking tap in the bathroom.",
    "I'm halfway through a thick novel about lighthouse keepers.",
    "Our street is having a jumble sale on Sunday.",
    "I repotted the fern and it looks much happier now.",
    "Tried a new ramen place downtown, the broth was amazing.",
    "My brother lent me his old record player.",
    "We painted the hallway a warm grey.",
    "I sorted out the photos from our trip to Crete.",
    "I'm learning to knit a scarf, slowly.",
    "The library has a new reading room upstairs.",
    "We watched the eclipse from the garden.",
]
QUESTION = "Shall I put their name down for the charity five-a-side tournament?"


def test_the_injury_comes_with_the_habit_it_ends(tmp_path: Path) -> None:
    tree = PersonaTree.open(tmp_path / "memory.db")
    try:
        observe_story(tree, "tom", HABIT + [CHANGE], CHATTER, datetime(2025, 1, 6, 19, 0, tzinfo=timezone.utc))
        rec = tree.recall("tom", QUESTION, budget=300)
        assert rec.tokens <= 300 and CHANGE in rec.text
        assert reason_for(tree, "tom", rec.items, CHANGE).startswith("a later statement that changes")
    finally:
        tree.close()


def test_a_fresh_process_reads_what_a_change_reaches_from_the_snapshot(tmp_path: Path) -> None:
    # The kinds are read with the text when the state is built and kept in its
    # snapshot: a new process, reading the state back, links the injury as the first.
    tree = PersonaTree.open(tmp_path / "memory.db")
    try:
        observe_story(tree, "tom", HABIT + [CHANGE], CHATTER, datetime(2025, 1, 6, 19, 0, tzinfo=timezone.utc))
        first = tree.recall("tom", QUESTION, budget=300)
        injury = next(n.id for n in tree.graph("tom").nodes() if n.content == CHANGE)
    finally:
        tree.close()
    raw = sqlite3.connect(tmp_path / "memory.db")
    try:
        (data,) = raw.execute("SELECT data FROM retrieval_snapshots WHERE user_id = 'tom'").fetchone()
    finally:
        raw.close()
    assert "an injury of the legs or back" in decode_parts(bytes(data)).reach[injury]
    again = PersonaTree.open(tmp_path / "memory.db")
    try:
        rec = again.recall("tom", QUESTION, budget=300)
        assert CHANGE in rec.text and rec.text == first.text
    finally:
        again.close()


def test_the_words_that_gate_each_pattern_never_hide_a_match() -> None:
    # A pattern is tried only on sentences holding one of its kind's words: over
    # sentences that name each kind in several ways, that gives what trying every
    # pattern gives.
    from personatree.lexicons import CHANGE_REACH
    from personatree.text.tokens import normalize

    sentences = [
        "My knee is in a brace", "I put my back out", "Sprained my left ankle at netball", "on crutches again",
        "I broke my wrist", "Hurt my shoulder at the climbing wall", "I've been teetotal since June",
        "Stopped drinking for the new year", "I'm off coffee", "Switched to decaf", "I'm pregnant!",
        "We're expecting twins", "Our baby was born on Friday", "I gave birth last week", "We rescued a greyhound",
        "Adopted a kitten", "Handed in my notice", "I was made redundant", "I'm self-employed now",
        "We moved to the coast", "Relocating to Oslo", "We split up", "I'm divorced now", "Got married in May",
        "Just engaged!", "Quit smoking", "I'm a non-smoker now", "Sold my car", "Lost my licence",
        "Went vegetarian", "I'm plant-based now", "Lactose intolerant, sadly", "Diagnosed coeliac",
        "I'm pre-diabetic", "Cut out sugar", "Allergic to nuts", "Allergic to peanuts", "a peanut allergy",
        "A shellfish allergy", "allergic to prawns",
    ]
    for s in sentences:
        low = normalize(s)
        every = tuple(kind for kind, pattern, _ in CHANGE_REACH if pattern.search(low))
        assert reach_of(s) == every, s
        assert every, s
