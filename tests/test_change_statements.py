"""Statements of a change in the person's life reach recall for questions that depend on them.

A habit stated a few times and then ended in one statement ("I sold my bike after the
crash") is asked about later in other words ("a helmet for the commute"): the old
statements match the question, the change does not. Recall gives the change
statements nearest the query a bonus, so the change is shown with the habit it ends.
Real packaged embedder, offline judge and a real SQLite file.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import pytest

from personatree import PersonaTree, PersonaTreeConfig, Recall
from personatree.types import Level
from personatree.text import is_change

from .helpers import observe_story

CHANGE = "I gave up the pool for good after the operation on my ear."
HABIT = [
    "I swim laps at the lido before work, forty lengths most days.",
    "Swimming in the open-air pool at sunrise is my favourite thing.",
    "I finally beat my best time for a kilometre of front crawl.",
]
OTHER = [
    "My sister is visiting from Porto next month.",
    "I finished a thousand-piece puzzle of a lighthouse last night.",
    "The new bakery on our street does a great sourdough.",
    "Work has been busy with the quarterly reports.",
    "I'm reading a long novel about a family of sailors.",
    "We repainted the kitchen a pale green colour.",
    "My neighbour's cat keeps sleeping on our doormat.",
    "I watched a documentary about deep sea creatures.",
    "Our team won the pub quiz on Thursday.",
    "I planted tomatoes and basil on the balcony.",
    "The dentist said my teeth look fine.",
    "I'm learning a few words of Japanese with an app.",
    "My parents celebrated their anniversary with a dinner.",
    "I found an old photo album in the attic.",
    "We had a barbecue with friends from college.",
    "I baked a lemon cake for a colleague's birthday.",
    "The concert in the park was lovely despite the rain.",
    "I reorganised my bookshelves by colour.",
    # Close to the question in words or meaning, and no change of anything.
    "We had pizza on the roof terrace with the neighbours.",
    "A good present for my dad is always a book about trains.",
    "I cleaned out the garage and found my old skateboard.",
    "We got the twins matching raincoats as a gift.",
    "I love wrapping presents with brown paper and string.",
    "The shop by the harbour sells lovely handmade gifts.",
]
QUESTION = "Would a waterproof stopwatch make a good gift for them?"


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("I gave up chess when the club closed.", True),
        ("We moved to a village by the coast in spring.", True),
        ("I got promoted to team lead last week.", True),
        ("Turns out I'm allergic to peanuts.", True),
        ("My partner and I broke up in the summer.", True),
        ("I took up rowing on Sundays.", True),
        ("Honestly I'm completely done with dating apps.", True),
        ("We've become proper early risers since the move.", True),
        ("I got rid of my car and my parking permit.", True),
        ("We bought a narrow little cottage near the river.", True),
        ("I took the job at the hospital in the end.", True),
        ("I signed the lease on a studio by the park.", True),
        ("My dentist told me to stop chewing ice.", True),
        ("I've had awful back pain for weeks now.", True),
        # A contrast with before told by time words alone.
        ("I'm a full-time illustrator now, no office for me.", True),
        ("We now rent a tiny flat above the bakery.", True),
        ("No more night shifts, my evenings are with the kids.", True),
        ("My weekends are all rehearsals since I joined the choir.", True),
        # Work, family, body and diet changed in words of their own.
        ("I handed in my notice at the agency.", True),
        ("Got made redundant when the plant closed.", True),
        ("I stepped down as chair of the residents' group.", True),
        ("We tied the knot at the town hall in May.", True),
        ("We had a baby girl at the end of March.", True),
        ("My husband and I are separating.", True),
        ("My leg is in a cast until Easter.", True),
        ("I've been signed off work with stress.", True),
        ("The GP put me on iron tablets.", True),
        ("I lost my sense of taste last winter.", True),
        ("I've swapped my car for an e-bike.", True),
        ("Nowadays I'd take a quiet pub over a club.", True),
        ("Since the accident I can't grip a racket.", True),
        ("I've gone completely off red wine.", True),
        ("I packed in the swimming after the winter.", True),
        ("I finally kicked the late-night snacking habit.", True),
        # The subject left out is the speaker.
        ("Started with a new agency on Monday.", True),
        ("Haven't had a drink since New Year.", True),
        ("I stopped by the post office on the way.", False),
        ("Sliding doors separating the kitchen from the hall.", False),
        ("A man in a wheelchair waved at us.", False),
        ("Reading takes my mind off work.", False),
        ("We had our first picnic of the year.", False),
        ("Took a trip to a new place by the sea.", False),
        ("Right now I'm making a cup of tea.", False),
        ("I've been knitting this scarf for a while now.", False),
        ("Now, I wanted to ask about the trip.", False),
        ("Loads has happened since we talked!", False),
        ("I've loved kites ever since I was a little kid.", False),
        ("Every now and then I bake bread.", False),
        ("I play chess at the club on Tuesdays.", False),
        ("I took the bus to the market.", False),
        ("I had a cold last week.", False),
        ("We sold lemonade at the school fair.", False),
        ("I love the coast in spring.", False),
        ("Did you move to a new flat?", False),
        ("She moved to Lisbon last year.", False),
        # A change denied, or gone through by somebody else, is none of the speaker's;
        # a death, a birth or a diagnosis in the family, or a change done to the
        # speaker, still changes the speaker's life.
        ("We're not splitting up, whatever the neighbours think.", False),
        ("I never moved away from my home town.", False),
        ("My cousin got married on a beach in Crete, which I loved.", False),
        ("Grandad had retired by the time I was born, my mum says.", False),
        ("My granny passed away in the autumn.", True),
        ("My sister was diagnosed with diabetes and I do her shopping.", True),
        ("He broke up with me on my birthday.", True),
        ("My girlfriend and I moved in together last month.", True),
        # A statement naming no one is the speaker's when its words name the change.
        ("A torn ligament means no netball this season.", True),
        ("Sober since the spring, and loving it.", True),
        ("The knee op went well, no running till summer.", True),
        ("A lot has changed since then.", False),
        ("Many retired teachers volunteer at the library, Sam says.", False),
        # More ways of telling work, family, body and habits changed.
        ("The garage let me go in the spring.", True),
        ("Took voluntary redundancy and went freelance.", True),
        ("I'm retraining as a plumber.", True),
        ("I dropped to four days a week after the baby.", True),
        ("We're expecting our first in October!", True),
        ("We're expecting about fifty guests.", False),
        ("Had my appendix out on Sunday.", True),
        ("Turns out I'm lactose intolerant.", True),
        ("The physio has banned me from the squash court.", True),
        ("Passed my driving test at the third go!", True),
        ("Been off the fags since March.", True),
        ("I've switched my evening wine for fizzy water.", True),
        ("We got a puppy, so no more weekends away.", True),
        ("We sold the caravan at the end of the summer.", True),
        ("I took a trip to a new place on the coast.", False),
        ("My consultant says no more contact sports.", True),
        ("My dad had to stop driving last year.", False),
        # A birth, a pet, a diagnosis told by who made it, a body gone back on the speaker.
        ("Our son was born just after midnight on Sunday.", True),
        ("Our baby came three weeks early!", True),
        ("I became a grandad in the spring.", True),
        ("I was born in a small town by the sea.", False),
        ("We brought home a collie pup on Saturday.", True),
        ("The dermatologist confirmed I have eczema.", True),
        ("My knees have given out on me, no more stairs for a while.", True),
        ("Three weeks in a walking boot after a hairline fracture.", True),
        ("I've been three weeks without sugar in my tea.", True),
        ("Last day at the agency was Thursday.", True),
        ("I start as a paramedic in the new year.", True),
        ("I've totally gone off running.", True),
        ("The yoghurt has gone off.", False),
        ("I bought the new home kit for my nephew.", False),
        ("The audiologist warned me off loud bars.", True),
        ("Salsa has lost its appeal for me since the studio moved.", True),
        ("The novelty of the rowing machine wore off by March.", True),
        ("I've been seeing Tom for six months now and it's serious.", True),
        ("I'm seeing friends for dinner on Friday.", False),
        ("I had to change my password again today.", False),
        ("I left the app running all night by mistake.", False),
        # A scene the speaker heard or saw is no change of theirs, "now" or not.
        ("I noticed the clock above the platform now said ten past nine.", False),
        ("I heard the neighbours were moving to the coast.", False),
        ("I noticed I don't crave sweets anymore since cutting sugar.", True),
    ],
)
def test_is_change(sentence: str, expected: bool) -> None:
    from personatree.text.stance import stance_label

    assert is_change(sentence, stance_label(sentence)) is expected


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, PersonaTree]]:
    base = Path(tmp_path_factory.mktemp("change"))
    cfg = PersonaTreeConfig()
    # Later statements lend the change the habit's relevance (retrieval.updates); these
    # two readings leave that out, to see the bonus alone.
    bonus = cfg.model_copy(update={"recall": cfg.recall.model_copy(update={"update_top": 0})})
    off = cfg.model_copy(update={"recall": cfg.recall.model_copy(update={"update_top": 0, "change_weight": 0.0})})
    on = PersonaTree.open(base / "memory.db")
    observe_story(on, "ana", HABIT + [CHANGE], OTHER, datetime(2025, 1, 6, 9, 0, tzinfo=timezone.utc))
    # The same store read with the bonus alone, and with neither.
    trees = {
        "on": on,
        "bonus": PersonaTree.open(base / "memory.db", bonus, embedder=on.embedder),
        "off": PersonaTree.open(base / "memory.db", off, embedder=on.embedder),
    }
    yield trees
    for tree in trees.values():
        tree.close()


@pytest.mark.parametrize("budget", [120, 300])
def test_the_change_comes_with_the_habit_it_ends(stores: dict[str, PersonaTree], budget: int) -> None:
    rec = stores["on"].recall("ana", QUESTION, budget=budget)
    assert rec.tokens <= budget
    assert CHANGE in rec.text


def _relevance(tree: PersonaTree, rec: Recall, text: str) -> float:
    ids = {n.id for n in tree.nodes("ana", Level.LEAF) if n.content == text}
    return max((it.relevance for it in rec.items if it.node_id in ids), default=0.0)


def test_the_bonus_raises_the_change_above_statements_that_change_nothing(stores: dict[str, PersonaTree]) -> None:
    # On its own words the change competes with statements that match the question as
    # well and change nothing; the bonus puts it first among the evidence.
    on = stores["bonus"].recall("ana", QUESTION, budget=1000)
    off = stores["off"].recall("ana", QUESTION, budget=1000)
    assert _relevance(stores["bonus"], on, CHANGE) > _relevance(stores["off"], off, CHANGE)
    assert _relevance(stores["bonus"], on, CHANGE) == max(it.relevance for it in on.items if it.level is Level.LEAF)


@pytest.mark.parametrize("budget", [40, 60, 90, 300, 1000])
@pytest.mark.parametrize(
    "question", ["Do they still go to the lido before work?", "Should I sign them up for the sunrise swim?"]
)
def test_no_statement_of_the_habit_is_shown_without_the_change(
    stores: dict[str, PersonaTree], question: str, budget: int
) -> None:
    # However tight the budget, an old statement of the habit never reaches the
    # context alone: it carries the later statement that ended it (or, when the two
    # do not fit, the change is shown instead).
    tree = stores["on"]
    rec = tree.recall("ana", question, budget=budget)
    assert rec.tokens <= budget
    if budget >= 60 or any(h in rec.text for h in HABIT):
        assert CHANGE in rec.text


def test_the_change_is_carried_by_the_habit_it_ends(stores: dict[str, PersonaTree]) -> None:
    tree = stores["on"]
    habit_ids = {n.id for n in tree.nodes("ana", Level.LEAF) if n.content in HABIT}
    change_ids = {n.id for n in tree.nodes("ana", Level.LEAF) if n.content == CHANGE}
    rec = tree.recall("ana", "Do they still go to the lido before work?", budget=300)
    carried = [it for it in rec.items if it.node_id in change_ids and it.reason.startswith("carried:")]
    shown_habit = [it for it in rec.items if it.node_id in habit_ids]
    assert shown_habit and carried
    assert any(h.node_id in carried[0].reason for h in shown_habit)


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("That must have been hard for you.", True),
        ("Sam, congrats on the new flat!", True),
        ("What a night, Priya!", True),
        ("I live in Porto, Portugal, near the river.", False),
        ("Trained for two hours tonight, legs are gone.", False),
        ("We sold the car in March.", False),
        ("That scarf looks lovely on you, Noor!", True),
        ("Yeah Theo, so proud of the team!", True),
        ("Thanks, Élise!", True),
        ("The gig was so loud, Ravi!", True),
        ("We flew from Oslo, Norway.", False),
        ("Honestly, the ferry was late again.", False),
        ("Tuesday, Wednesday and Friday work for me.", False),
    ],
)
def test_a_line_to_the_listener(sentence: str, expected: bool) -> None:
    from personatree.text import to_listener

    assert to_listener(sentence) is expected


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("I started painting three years ago.", True),
        ("We moved to the coast when I was ten.", True),
        ("As a kid I collected stamps.", True),
        ("Growing up, we never had a car.", True),
        ("I started painting last week.", False),
        ("I've lived here since 2019.", False),
        ("I stopped running after the injury.", False),
    ],
)
def test_a_memory_tells_the_past(sentence: str, expected: bool) -> None:
    from personatree.text import tells_the_past

    assert tells_the_past(sentence) is expected
