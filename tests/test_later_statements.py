"""A later statement that changes an earlier one comes with it in recall.

A habit mentioned three times over weeks and the one message that ends it often stay
separate leaves (no pattern forms), and a question that depends on the change shares
few words with it. Recall links each candidate leaf to the newest later statement
about the same thing that changes it, and values that statement at least as much.
The pure chain logic is tested on hand-made vectors; the end-to-end case uses the
real packaged embedder, the offline judge and a real SQLite file.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from personatree import PersonaTree, PersonaTreeConfig
from personatree.config import RecallConfig
from personatree.retrieval.state import LevelArrays
from personatree.retrieval.updates import LeafFacts, tried_first, update_chains
from personatree.specific import common_direction
from personatree.text import is_change
from personatree.text.stance import stance_label

from .helpers import observe_story, reason_for

@pytest.mark.parametrize(
    ("sentence", "stance", "change"),
    [
        ("I had to stop cycling to work when the bridge closed.", "stopped", True),
        ("I have to stop snacking so late.", "neutral", False),
        ("We adopted a scruffy terrier from the rescue centre.", "neutral", True),
        ("The nurse put me on a strict low-fat diet.", "neutral", True),
        ("I sprained my wrist at the climbing wall.", "neutral", True),
        ("I broke a mug this morning.", "negative", False),
        ("Give me a shout if you need any more recipes.", "neutral", False),
        ("I don't go to that gym any more.", "stopped", True),
        ("Handed the keys back to the allotment society, my vegetable-growing days are behind me.",
         "stopped", True),
        ("Those years are long over for us.", "stopped", True),
        ("I let my swimming club subscription expire last winter.", "stopped", True),
        ("The days are over too quickly this time of year.", "neutral", False),
        ("The man behind me in the queue kept coughing.", "neutral", False),
        ("I've properly got into bouldering this year.", "started", True),
        ("The cold has got into my bones this winter.", "neutral", False),
        ("I got into my car and drove to the coast.", "neutral", False),
    ],
)
def test_stops_and_changes_are_read(sentence: str, stance: str, change: bool) -> None:
    from personatree.text import is_change
    from personatree.text.stance import stance_label

    assert stance_label(sentence) == stance
    assert is_change(sentence, stance_label(sentence)) is change


# --------------------------------------------------------------------------------------
# The chain logic on hand-made unit vectors
# --------------------------------------------------------------------------------------


def _unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def _arrays(rows: dict[str, np.ndarray]) -> LevelArrays:
    ids = list(rows)
    return LevelArrays(ids, np.stack([rows[x] for x in ids]), {x: i for i, x in enumerate(ids)})


def _facts(
    at: list[float], side: list[int], change: list[bool], session: list[int] | None = None
) -> LeafFacts:
    n = len(at)
    return LeafFacts(
        np.asarray(at, float),
        np.asarray(side, np.int8),
        np.asarray(change, bool),
        np.zeros(n, bool),
        # A session of its own for every leaf unless the test says otherwise.
        np.arange(n, dtype=np.int64) if session is None else np.asarray(session, np.int64),
    )


CFG = RecallConfig()
# Only statements read as a change or an opposite stance update (the default).
READS = CFG.model_copy(update={"update_restate_floor": None})


def test_a_change_close_to_a_statement_updates_it() -> None:
    arr = _arrays({"old": _unit(1, 0.2, 0), "other": _unit(0, 0, 1), "stop": _unit(1, 0.6, 0)})
    facts = _facts([0, 1, 2], [0, 0, -1], [False, False, True])
    assert update_chains(arr, facts, ["old", "other"], CFG) == {"stop": ["old"]}


def test_a_statement_of_the_same_session_updates_nothing() -> None:
    # "Then we started the drive home" after "we stopped for coffee": one scene, in order.
    arr = _arrays({"old": _unit(1, 0.2, 0), "stop": _unit(1, 0.6, 0)})
    assert update_chains(arr, _facts([0, 1], [0, -1], [False, True], [4, 4]), ["old"], CFG) == {}
    assert update_chains(arr, _facts([0, 1], [0, -1], [False, True], [4, 5]), ["old"], CFG) == {"stop": ["old"]}


def test_an_earlier_change_updates_nothing() -> None:
    arr = _arrays({"stop": _unit(1, 0.6, 0), "old": _unit(1, 0.2, 0)})
    facts = _facts([0, 1], [-1, 0], [True, False])
    assert update_chains(arr, facts, ["old"], CFG) == {}


def test_the_newest_update_wins_and_chains_are_followed() -> None:
    arr = _arrays({"a": _unit(1, 0, 0), "b": _unit(1, 0.3, 0), "c": _unit(1, 0.5, 0)})
    facts = _facts([0, 1, 2], [1, -1, 1], [False, True, True])
    assert update_chains(arr, facts, ["a"], CFG) == {"c": ["a"]}
    one_step = CFG.model_copy(update={"update_rounds": 1})
    assert update_chains(arr, facts, ["b"], one_step) == {"c": ["b"]}


def test_an_opposite_stance_needs_the_higher_floor() -> None:
    # cos 0.30: enough for a change statement, not for a bare opposite stance.
    arr = _arrays({"likes": _unit(1, 0, 0), "dislikes": _unit(0.3, 0.954, 0)})
    flip = _facts([0, 1], [1, -1], [False, False])
    assert update_chains(arr, flip, ["likes"], READS) == {}
    change = _facts([0, 1], [1, -1], [False, True])
    assert update_chains(arr, change, ["likes"], READS) == {"dislikes": ["likes"]}
    closer = _arrays({"likes": _unit(1, 0, 0), "dislikes": _unit(0.45, 0.893, 0)})
    assert update_chains(closer, flip, ["likes"], READS) == {"dislikes": ["likes"]}


def test_a_neutral_mention_of_doing_a_thing_is_reversed_by_a_negative_one() -> None:
    # "I swim before my shift" (neutral) and a later "I can't get in the pool for now"
    # (negative): sides as patterns count them. Two neutral lines oppose nothing.
    arr = _arrays({"habit": _unit(1, 0, 0), "later": _unit(0.45, 0.893, 0)})
    assert update_chains(arr, _facts([0, 1], [0, -1], [False, False]), ["habit"], READS) == {"later": ["habit"]}
    assert update_chains(arr, _facts([0, 1], [0, 0], [False, False]), ["habit"], READS) == {}


def test_a_later_statement_close_enough_updates_whatever_its_words() -> None:
    # Neither a change nor a stance: the person's latest word on the same thing.
    arr = _arrays({"old": _unit(1, 0, 0), "later": _unit(0.5, 0.866, 0), "far": _unit(0.3, 0, 0.954)})
    plain = _facts([0, 1, 2], [0, 0, 0], [False, False, False])
    assert update_chains(arr, plain, ["old"], CFG.model_copy(update={"update_restate_floor": 0.6})) == {}
    assert update_chains(arr, plain, ["old"], CFG.model_copy(update={"update_restate_floor": 0.45})) == {
        "later": ["old"]
    }
    assert update_chains(arr, plain, ["old"], READS) == {}


def test_an_update_is_said_by_the_speaker_of_what_it_updates() -> None:
    arr = _arrays({"old": _unit(1, 0.2, 0), "mine": _unit(1, 0.4, 0), "theirs": _unit(1, 0.6, 0)})
    facts = _facts([0, 1, 2], [0, -1, -1], [False, True, True])
    who = {"old": "ana", "mine": "ana", "theirs": "ben"}
    # Without speakers the newest change wins; with them, the other person's is passed over.
    assert update_chains(arr, facts, ["old"], CFG) == {"theirs": ["old"]}
    assert update_chains(arr, facts, ["old"], CFG, speaker=who.__getitem__) == {"mine": ["old"]}


def test_a_change_updates_only_what_is_among_its_nearest_earlier_statements() -> None:
    # The change is closest to three earlier lines about its own topic; a fourth line,
    # close enough by cosine, is not among its nearest and is not updated.
    rows = {f"near{i}": _unit(1, 0.05 * i, 0) for i in range(3)}
    rows["far"] = _unit(1, 1.4, 0)
    rows["change"] = _unit(1, 0.1, 0.05)
    arr = _arrays(rows)
    facts = _facts([0, 1, 2, 3, 4], [0, 0, 0, 0, -1], [False] * 4 + [True])
    out = update_chains(arr, facts, ["far", "near0"], CFG)
    assert out == {"change": ["near0"]}
    assert update_chains(arr, facts, ["far"], CFG.model_copy(update={"update_k": 4})) == {"change": ["far"]}


def test_a_change_is_matched_by_what_is_specific_to_the_person() -> None:
    # Forty pleasantries share one direction and sit closer to the change than the
    # habit it ends does, by plain cosine; once what every line shares is taken out,
    # the habit is the change's nearest earlier statement.
    rng = np.random.default_rng(0)
    rows = {"habit": _unit(0.2, 1, 0, 0, 0)}
    rows.update({f"chat{i}": _unit(1, 0, *(0.15 * rng.standard_normal(3))) for i in range(40)})
    rows["change"] = _unit(0.75, 0.5, 0, 0, 0)
    arr = _arrays(rows)
    n = len(rows)
    facts = _facts(list(range(n)), [0] * n, [False] * (n - 1) + [True])
    mean = common_direction([arr.matrix])
    centre = (mean, np.asarray(arr.matrix @ mean, np.float32))
    assert update_chains(arr, facts, ["habit"], READS) == {}
    assert update_chains(arr, facts, ["habit"], READS, centre=centre) == {"change": ["habit"]}
    # A restatement keeps the plain test: any later line may be close to a candidate.
    restated = _facts(list(range(n)), [0] * n, [False] * n)
    near = CFG.model_copy(update={"update_restate_floor": 0.6})
    assert update_chains(arr, restated, ["habit"], near, centre=centre) == {}


def test_only_the_first_top_candidates_are_followed() -> None:
    # The old statement is the second candidate: followed when two are, not when one is.
    arr = _arrays({"old": _unit(1, 0.2, 0), "other": _unit(0, 0, 1), "stop": _unit(1, 0.6, 0)})
    facts = _facts([0, 1, 2], [0, 0, -1], [False, False, True])
    assert update_chains(arr, facts, ["other", "old"], CFG, 1) == {}
    assert update_chains(arr, facts, ["other", "old"], CFG, 2) == {"stop": ["old"]}
    one = CFG.model_copy(update={"update_top": 1})
    assert update_chains(arr, facts, ["other", "old"], one) == {}


def test_off_when_update_top_is_zero() -> None:
    arr = _arrays({"old": _unit(1, 0.2, 0), "stop": _unit(1, 0.6, 0)})
    facts = _facts([0, 1], [0, -1], [False, True])
    assert update_chains(arr, facts, ["old"], CFG.model_copy(update={"update_top": 0})) == {}


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.floats(-1, 1, allow_nan=False), min_size=3, max_size=3).filter(
                lambda v: sum(x * x for x in v) > 1e-3
            ),
            st.integers(0, 20),
            st.sampled_from([-1, 0, 1]),
            st.booleans(),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_an_update_is_always_said_later_than_what_it_updates(
    leaves: list[tuple[list[float], int, int, bool]]
) -> None:
    rows = {f"l{i}": _unit(*v) for i, (v, _, _, _) in enumerate(leaves)}
    arr = _arrays(rows)
    facts = _facts([t for _, t, _, _ in leaves], [s for *_, s, _ in leaves], [c for *_, c in leaves])
    for u, older in update_chains(arr, facts, list(rows), READS).items():
        ru = arr.row[u]
        assert facts.change[ru] or facts.side[ru] != 0
        for x in older:
            assert x != u and facts.at[arr.row[x]] < facts.at[ru]


# --------------------------------------------------------------------------------------
# End to end: a habit, the statement that ends it, a question in other words
# --------------------------------------------------------------------------------------

HABIT = [
    "I jog along the canal towpath most evenings after work.",
    "Did an eight-mile loop round the reservoir on Saturday, felt great.",
    "Signed up for a trail half marathon in the autumn, training hard.",
]
CHANGE = "A bad sprain put my ankle in a brace, so the towpath evenings have had to stop."
OTHER = [
    "My cousin is getting married in Lisbon next summer.",
    "We finally fixed the leaking tap in the bathroom.",
    "I'm halfway through a thick novel about lighthouse keepers.",
    "The quarterly figures kept the whole office late this week.",
    "Our street is having a jumble sale on Sunday.",
    "I repotted the fern and it looks much happier now.",
    "Tried a new ramen place downtown, the broth was amazing.",
    "My brother lent me his old record player.",
    "We painted the hallway a warm grey.",
    "The neighbours' toddler waves at me every morning.",
    "I sorted out the photos from our trip to Crete.",
    "Work sent me on a two-day course about spreadsheets.",
    "I baked cinnamon buns for the office.",
    "We watched the eclipse from the garden.",
    "I'm learning to knit a scarf, slowly.",
    "The library has a new reading room upstairs.",
    "Running errands all day, I'm exhausted.",
    "Sports day at my niece's school was chaotic fun.",
]
QUESTION = "Should I sign them up for the charity fun run in the park next month?"


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, PersonaTree]]:
    base = Path(tmp_path_factory.mktemp("later"))
    on = PersonaTree.open(base / "memory.db")
    observe_story(on, "ines", HABIT + [CHANGE], OTHER, datetime(2025, 2, 3, 18, 0, tzinfo=timezone.utc), days_between=5)
    cfg = PersonaTreeConfig()
    # The same store read without updates, and without the change and standing bonuses
    # either: what the words of the question alone bring.
    off = cfg.model_copy(update={"recall": cfg.recall.model_copy(
        update={"update_top": 0, "change_weight": 0.0, "standing_weight": 0.0})})
    out = {"on": on, "off": PersonaTree.open(base / "memory.db", off, embedder=on.embedder)}
    yield out
    for tree in out.values():
        tree.close()


def test_the_question_alone_finds_the_habit_and_not_its_end(trees: dict[str, PersonaTree]) -> None:
    rec = trees["off"].recall("ines", QUESTION, budget=150)
    assert any(h in rec.text for h in HABIT)
    assert CHANGE not in rec.text


@pytest.mark.parametrize("budget", [150, 300, 1000])
def test_the_habit_is_never_shown_without_its_end(trees: dict[str, PersonaTree], budget: int) -> None:
    rec = trees["on"].recall("ines", QUESTION, budget=budget)
    assert rec.tokens <= budget
    assert CHANGE in rec.text
    item = next(it for it in rec.items if trees["on"].graph("ines").node(it.node_id).content == CHANGE)
    # Shown with the habit it ends (carried), or on its own when the pair did not fit.
    assert item.reason.split(": ", 1)[1].startswith("a later statement that changes")


# --------------------------------------------------------------------------------------
# A change no rule reads: the latest word on the same thing still comes
# --------------------------------------------------------------------------------------

SWIM = [
    "I swim laps at the lido every morning before work.",
    "Forty lengths at the lido today, the water was freezing but lovely.",
    "The lido swim is the best part of my day, honestly.",
]
# Neither read as a change nor as a stance: only its meaning ties it to the habit.
PARTED = "The lido and I have parted ways, my mornings belong to the allotment."
GIFT = "Should I get them a season pass for the outdoor pool as a present?"


def test_a_change_in_words_no_rule_reads_still_comes_with_the_habit(tmp_path: Path) -> None:
    assert not is_change(PARTED, stance_label(PARTED)) and stance_label(PARTED) == "neutral"
    cfg = PersonaTreeConfig()
    off_cfg = cfg.model_copy(update={"recall": cfg.recall.model_copy(update={"update_restate_floor": None})})
    on = PersonaTree.open(tmp_path / "memory.db", cfg)
    try:
        observe_story(on, "rui", SWIM + [PARTED], OTHER, datetime(2025, 3, 3, 7, 0, tzinfo=timezone.utc))
        off = PersonaTree.open(tmp_path / "memory.db", off_cfg, embedder=on.embedder)
        try:
            before = off.recall("rui", GIFT, budget=300)
            assert any(h in before.text for h in SWIM) and PARTED not in before.text
        finally:
            off.close()
        rec = on.recall("rui", GIFT, budget=300)
        assert rec.tokens <= 300 and PARTED in rec.text
        assert reason_for(on, "rui", rec.items, PARTED).startswith("a later statement about the same thing as")
    finally:
        on.close()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 5), st.integers(0, 5)), min_size=1, max_size=40),
    st.integers(0, 12),
)
def test_the_first_tries_are_the_start_of_the_whole_order(rows, n) -> None:
    # Few distinct tiers, times and cosines: ties at the cut are the case to get right.
    tier = np.array([r for r, _, _ in rows], dtype=np.int8)
    at = np.array([float(t) for _, t, _ in rows])
    sims = np.array([c / 5 for _, _, c in rows])
    idx = np.arange(len(rows))[:: 1 if n % 2 else -1]  # any order of the qualifying rows
    whole = idx[np.lexsort((-sims[idx], -at[idx], tier[idx]))]
    assert tried_first(idx, tier, at, sims).tolist() == whole.tolist()
    assert tried_first(idx, tier, at, sims, n).tolist() == whole[:n].tolist()
