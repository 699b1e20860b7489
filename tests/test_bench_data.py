"""Loaders of the four upstream formats, on tiny synthetic files written in tmp_path
(and, when present, on the real files in ../shared/data)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from personatree_bench import (
    load_dataset,
    load_knowme,
    load_locomo,
    load_locomo_plus,
    load_prefeval,
    parse_evidence,
    parse_knowme_evidence,
    parse_locomo_date,
    parse_time_gap,
)
from personatree_bench.datasets.prefeval import preference_turn_ids

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

# -- synthetic files in the upstream formats (shared with the other bench tests) ------------

LOCOMO_SAMPLE: list[dict[str, Any]] = [
    {
        "sample_id": "conv-t1",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "4:12 pm on 2 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "Hi Ben! I just adopted a puppy called Miso."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Congrats! I started learning the cello last week."},
                {"speaker": "Ana", "dia_id": "D1:3", "text": "Look at him!", "img_url": ["http://x/y.jpg"],
                 "blip_caption": "a photo of a small brown dog on a sofa", "query": "puppy"},
            ],
            "session_2_date_time": "9:05 am on 22 June, 2023",
            "session_2": [
                {"speaker": "Ben", "dia_id": "D2:1", "text": "I played my first cello recital yesterday."},
                {"speaker": "Ana", "dia_id": "D2:2", "text": "Amazing. I am allergic to peanuts, so no snacks for me."},
                {"speaker": "Ben", "dia_id": "D2:3", "text": "Noted. I moved to Lisbon for work in June."},
            ],
            "session_10_date_time": "9:00 am on 3 July, 2023",
            "session_10": [
                {"speaker": "Ana", "dia_id": "D10:5", "text": "Miso learned to sit this week!"},
            ],
        },
        "qa": [
            {"question": "What is the name of Ana's puppy?", "answer": "Miso", "evidence": ["D1:1"], "category": 4},
            {"question": "What instrument does Ben play?", "answer": "cello", "evidence": ["D1:2; D2:1"], "category": 1},
            {"question": "Where did Ben move?", "answer": "Lisbon", "evidence": ["D:2:3"], "category": 2},
            {"question": "What did Miso learn?", "answer": "sit", "evidence": ["D10:05"], "category": 7},
            {"question": "What is Ben allergic to?", "adversarial_answer": "peanuts", "evidence": ["D2:2"],
             "category": 5},
            {"question": "Who is Ana?", "answer": "?", "evidence": ["D", "D9:9"], "category": 3},
        ],
    }
]


def write_locomo(tmp: Path, samples: list[dict[str, Any]] | None = None) -> Path:
    """A LoCoMo-format file in ``tmp``."""
    p = tmp / "locomo.json"
    p.write_text(json.dumps(samples if samples is not None else LOCOMO_SAMPLE))
    return p


def write_knowme(tmp: Path) -> Path:
    """A KnowMe-format dataset folder in ``tmp``."""
    root = tmp / "dataset9"
    for d in ("input", "question", "answer"):
        (root / d).mkdir(parents=True)
    entries = [
        {"id": 0, "timestamp": "1969-08-15 14:00:00", "location": "Path", "action": "I saw a bus coming.",
         "dialogue": None, "environment": "It was cloudy.", "background": None, "inner_thought": None},
        {"id": 1, "timestamp": "1969-08-15 14:00:30", "location": "Path", "action": None,
         "dialogue": "I heard my father say: 'Hurry up.'", "environment": None, "background": None,
         "inner_thought": "I was afraid of him."},
        {"id": 3, "timestamp": "", "location": "House", "action": None, "dialogue": None, "environment": None,
         "background": "We had moved from Oslo five years earlier.", "inner_thought": None},
        {"id": 4, "timestamp": "1964-01-10 09:00:00", "location": "Oslo", "action": "I remembered the flat.",
         "dialogue": None, "environment": None, "background": None, "inner_thought": None},
        {"id": 5, "timestamp": "1969-08-16 08:00:00", "location": "Empty", "action": None, "dialogue": None,
         "environment": None, "background": None, "inner_thought": None},
    ]
    (root / "input" / "dataset9.json").write_text(json.dumps(entries))
    tasks = {
        "Information Extraction": (
            [{"id": 1, "question": "What was coming?"}, {"id": 2, "question": "What did father say?"}],
            [{"id": 1, "answer": "a bus", "evidence": 0}, {"id": 2, "answer": "Hurry", "evidence": "1"}],
        ),
        "Mnestic Trigger Analysis": (
            [{"id": 1, "question": "Where did they live before?"}],
            [{"id": 1, "answer": "Oslo", "evidence": [3, 4, 99]}],
        ),
        "Expert-Annotated Psychoanalysis": (
            [{"id": "1", "question": "What does I fear?"}],
            [{"id": "1", "answer": "father"}],
        ),
        "Adversarial Abstention": (
            [{"id": 1, "question": "What colour was the father's car?"}],
            [{"id": 1, "answer": "unknown", "evidence": [0, 1], "strategy": "Non-existent"}],
        ),
    }
    for task, (qs, ans) in tasks.items():
        (root / "question" / f"{task}_questions.json").write_text(json.dumps(qs))
        (root / "answer" / f"{task}_answers.json").write_text(json.dumps(ans))
    return root


def write_prefeval(tmp: Path) -> Path:
    """A PrefEval-format benchmark folder in ``tmp`` (one topic, three forms, two distractors)."""
    root = tmp / "prefeval"
    (root / "explicit_preference").mkdir(parents=True)
    (root / "implicit_preference" / "choice-based").mkdir(parents=True)
    (root / "implicit_preference" / "persona-driven").mkdir(parents=True)
    pref = "I keep a plant-only diet and never eat eggs or dairy."
    q = "Can you suggest a restaurant for my birthday dinner?"
    (root / "explicit_preference" / "food.json").write_text(json.dumps(
        [{"preference": pref, "question": q, "explanation": "x"}]))
    (root / "implicit_preference" / "choice-based" / "food.json").write_text(json.dumps([{
        "preference": pref, "question": q, "explanation": "x", "implicit_query": "Lunch ideas?",
        "options": ["A steak", "A lentil curry"], "aligned_op": "A lentil curry",
        "conversation": {
            "query": "Lunch ideas?", "assistant_options": "A steak or a lentil curry.",
            "user_selection": "The lentil curry, please; I never eat meat.",
            "assistant_acknowledgment": "Lentil curry it is.",
        },
    }]))
    (root / "implicit_preference" / "persona-driven" / "food.json").write_text(json.dumps([{
        "preference": pref, "question": q, "explanation": "x", "persona": "a nurse",
        "conversation": {
            "0": {"user": "Hi, I work night shifts as a nurse.", "assistant": "Hello!"},
            "1": {"user": "I pack snacks; since I keep a plant-only diet I bring nuts.",
                  "assistant": "Nice."},
            "2": {"user": "Any tips for sleeping in daytime?", "assistant": "Blackout curtains."},
        },
    }]))
    distractors = [
        {"conversation_id": "a", "conversation": [
            {"role": "user", "content": "Convert this Python to Go."},
            {"role": "assistant", "content": "Here is the Go code."}]},
        {"conversation_id": "b", "conversation": [
            {"role": "user", "content": "Write a haiku about rain."},
            {"role": "assistant", "content": "Soft rain on the roof."},
            {"role": "user", "content": ""}]},
    ]
    (root / "filtered_inter_turns.json").write_text(json.dumps(distractors))
    return root


PLUS_SAMPLE = [
    {"relation_type": "causal",
     "cue_dialogue": "A: Since I moved to a standing desk, my headaches are gone.\nB: Good to hear.",
     "trigger_query": "A: The office swapped my desk back and the headaches have returned.",
     "time_gap": "three weeks later"},
    {"relation_type": "goal",
     "cue_dialogue": "A: I want to learn to sail before my brother's wedding.\nB: When is it?\nA: Next June.",
     "trigger_query": "A: The sailing school just cancelled every lesson until autumn.",
     "time_gap": "2 days later"},
]


def write_locomo_plus(tmp: Path) -> tuple[Path, Path]:
    """A LoCoMo-Plus cue/trigger file and its host LoCoMo file in ``tmp``."""
    host = write_locomo(tmp)
    p = tmp / "plus.json"
    p.write_text(json.dumps(PLUS_SAMPLE))
    return p, host


# -- LoCoMo ------------------------------------------------------------------------------------


def test_parse_evidence_is_lenient() -> None:
    ids, rejected = parse_evidence(["D8:6; D9:17", "D:11:26", "D30:05", "D", 7, "d2:3"])
    assert ids == ["D8:6", "D9:17", "D11:26", "D30:5", "D2:3"]
    assert rejected == ["D", "7"]
    assert parse_evidence("D1:1, D1:2") == (["D1:1", "D1:2"], [])
    assert parse_evidence(None) == ([], [])


def test_parse_locomo_date() -> None:
    assert parse_locomo_date("4:12 pm on 2 May, 2023") == datetime(2023, 5, 2, 16, 12, tzinfo=timezone.utc)
    assert parse_locomo_date("12:41 am on 2 October, 2022") == datetime(2022, 10, 2, 0, 41, tzinfo=timezone.utc)
    assert parse_locomo_date("12:30 pm on 1 Jan 2024") == datetime(2024, 1, 1, 12, 30, tzinfo=timezone.utc)
    assert parse_locomo_date("2023-05-08T10:00:00") == datetime(2023, 5, 8, 10, tzinfo=timezone.utc)
    assert parse_locomo_date("sometime") is None
    assert parse_locomo_date(None) is None


def test_load_locomo(tmp_path: Path) -> None:
    ds = load_locomo(write_locomo(tmp_path))
    (conv,) = ds.conversations
    assert conv.id == "conv-t1"
    assert [t.id for t in conv.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2", "D2:3", "D10:5"]
    # sessions are ordered numerically (10 after 2), and turns are strictly increasing in time
    assert all(a.at < b.at for a, b in zip(conv.turns, conv.turns[1:]))
    assert conv.turns[2].text == "Look at him! [shares a photo: a photo of a small brown dog on a sofa]"
    assert {t.role for t in conv.turns} == {"user"}
    assert conv.turns[1].speaker == "Ben"
    q = {x.text: x for x in conv.questions}
    assert q["What instrument does Ben play?"].evidence == ("D1:2", "D2:1")
    assert q["Where did Ben move?"].evidence == ("D2:3",)
    assert q["What did Miso learn?"].evidence == ("D10:5",)
    assert q["What did Miso learn?"].category == "7"  # unknown category ids are kept
    assert q["What is Ben allergic to?"].adversarial
    assert not q["What is the name of Ana's puppy?"].adversarial
    assert q["Who is Ana?"].evidence == () and set(q["Who is Ana?"].dropped_evidence) == {"D", "D9:9"}
    assert all(x.at is not None and x.at > conv.turns[-1].at for x in conv.questions)
    assert set(ds.meta["dropped_evidence"]) == {"D", "D9:9"}


def test_load_locomo_tolerates_a_single_sample_and_missing_dates(tmp_path: Path) -> None:
    sample = json.loads(json.dumps(LOCOMO_SAMPLE[0]))
    sample["conversation"]["session_2_date_time"] = "not a date"
    p = tmp_path / "one.json"
    p.write_text(json.dumps(sample))
    (conv,) = load_locomo(p).conversations
    s1 = [t for t in conv.turns if t.session.endswith("session_1")]
    s2 = [t for t in conv.turns if t.session.endswith("session_2")]
    assert s2[0].at.date() == (s1[0].at + timedelta(days=1)).date()


# -- KnowMe ------------------------------------------------------------------------------------


def test_parse_knowme_evidence() -> None:
    assert parse_knowme_evidence(5) == ["5"]
    assert parse_knowme_evidence([3, "30", [31, 3]]) == ["3", "30", "31"]
    assert parse_knowme_evidence("12, 15") == ["12", "15"]
    assert parse_knowme_evidence(None) == []
    assert parse_knowme_evidence(True) == []


def test_load_knowme(tmp_path: Path) -> None:
    ds = load_knowme(write_knowme(tmp_path))
    (conv,) = ds.conversations
    # the empty entry (id 5) is skipped; stream order is kept even through the flashback
    assert [t.id for t in conv.turns] == ["0", "1", "3", "4"]
    assert conv.turns[0].text == "[Path] I saw a bus coming. It was cloudy."
    assert "I was afraid of him." in conv.turns[1].text and "Hurry up" in conv.turns[1].text
    assert conv.turns[2].at == conv.turns[1].at  # an empty timestamp inherits the previous one
    assert conv.turns[3].session == "day-1964-01-10"
    q = {x.id: x for x in conv.questions}
    assert q["Information Extraction:1"].evidence == ("0",)
    assert q["Information Extraction:2"].evidence == ("1",)
    assert q["Mnestic Trigger Analysis:1"].evidence == ("3", "4")
    assert q["Mnestic Trigger Analysis:1"].dropped_evidence == ("99",)
    assert q["Expert-Annotated Psychoanalysis:1"].evidence == ()
    assert q["Adversarial Abstention:1"].adversarial
    assert q["Information Extraction:1"].category == "Information Extraction"


def test_load_knowme_slice_keeps_answerable_questions(tmp_path: Path) -> None:
    ds = load_knowme(write_knowme(tmp_path), limit=2)
    (conv,) = ds.conversations
    ids = {q.id for q in conv.questions}
    assert "Mnestic Trigger Analysis:1" not in ids  # evidence outside the slice
    assert "Information Extraction:2" in ids


# -- PrefEval ----------------------------------------------------------------------------------


def test_load_prefeval(tmp_path: Path) -> None:
    ds = load_prefeval(write_prefeval(tmp_path))
    forms = {c.meta["form"]: c for c in ds.conversations}
    assert set(forms) == {"explicit", "choice-based", "persona-driven"}
    ex = forms["explicit"]
    assert ex.turns[0].text.startswith("I keep a plant-only diet")
    assert ex.questions[0].evidence == ("pref:0",)
    # the preference comes first, then the distractors (empty messages skipped), then the question
    assert [t.id for t in ex.turns] == ["pref:0", "d0:0", "d0:1", "d1:0", "d1:1"]
    assert ex.questions[0].at > ex.turns[-1].at
    assert ex.turns[2].role == "assistant"
    cb = forms["choice-based"]
    assert cb.questions[0].evidence == ("pref:2",)
    assert cb.turns[2].text.startswith("The lentil curry")
    pd = forms["persona-driven"]
    gold = {t.id: t for t in pd.turns}[pd.questions[0].evidence[0]]
    assert "plant-only" in gold.text and len(pd.questions[0].evidence) == 1


def test_prefeval_distractor_count(tmp_path: Path) -> None:
    root = write_prefeval(tmp_path)
    assert len(load_prefeval(root, distractors=1, forms=["explicit"]).conversations[0].turns) == 3
    assert len(load_prefeval(root, distractors=0, forms=["explicit"]).conversations[0].turns) == 1
    with pytest.raises(ValueError):
        load_prefeval(root, forms=["nope"])


def test_prefeval_skip_takes_the_items_after_a_slice(tmp_path: Path) -> None:
    root = write_prefeval(tmp_path)
    f = root / "explicit_preference" / "food.json"
    items = json.loads(f.read_text())
    f.write_text(json.dumps(items + [dict(items[0], preference=f"I avoid food number {i}.") for i in (1, 2)]))
    ids = lambda **kw: [c.id for c in load_prefeval(root, forms=["explicit"], **kw).conversations]  # noqa: E731
    assert ids(limit=1) == ["explicit/food/0"]
    assert ids(skip=1) == ["explicit/food/1", "explicit/food/2"]
    assert ids(skip=1, limit=1) == ["explicit/food/1"]
    held = load_prefeval(root, forms=["explicit"], skip=2).conversations[0]
    assert held.turns[0].text == "I avoid food number 2."
    with pytest.raises(ValueError):
        load_prefeval(root, skip=-1)


def test_preference_turn_labelling() -> None:
    turns = [("a", "Hi there, I need help with my code."), ("b", "I usually avoid horror games, they scare me.")]
    assert preference_turn_ids("I do not enjoy games with horror themes.", turns) == ["b"]
    assert preference_turn_ids("x", []) == []


# -- LoCoMo-Plus -------------------------------------------------------------------------------


def test_parse_time_gap() -> None:
    assert parse_time_gap("three weeks later") == timedelta(days=21)
    assert parse_time_gap("2 days later") == timedelta(days=2)
    assert parse_time_gap("a month later") == timedelta(days=30)
    assert parse_time_gap("one year later") == timedelta(days=365)
    assert parse_time_gap("later on") == timedelta(days=7)


def test_load_locomo_plus(tmp_path: Path) -> None:
    plus, host = write_locomo_plus(tmp_path)
    ds = load_locomo_plus(plus, host=host, seed=3)
    assert len(ds.conversations) == 2
    for case in ds.conversations:
        (q,) = case.questions
        cue = [t for t in case.turns if t.session.endswith("/cue")]
        assert q.evidence == tuple(t.id for t in cue) and cue
        assert {t.speaker for t in cue} <= {"Ana", "Ben"}
        assert all(t.at < q.at for t in case.turns)  # nothing after the trigger is in memory
        assert all(a.at <= b.at for a, b in zip(case.turns, case.turns[1:]))
        assert not q.text.startswith("A:")
        assert q.from_user  # the trigger is the person's own message
    again = load_locomo_plus(plus, host=host, seed=3)
    assert [c.meta for c in again.conversations] == [c.meta for c in ds.conversations]
    with pytest.raises(FileNotFoundError):
        load_locomo_plus(plus, host=tmp_path / "missing.json")


def test_load_dataset_dispatch(tmp_path: Path) -> None:
    assert load_dataset("locomo", write_locomo(tmp_path)).name == "locomo"
    with pytest.raises(ValueError):
        load_dataset("nope", tmp_path)


# -- the real files, when present --------------------------------------------------------------


@pytest.mark.skipif(not (DATA / "locomo" / "locomo_dev.json").exists(),
                    reason="../shared/data/locomo/locomo_dev.json is not present")
def test_real_locomo_dev() -> None:
    ds = load_locomo(DATA / "locomo" / "locomo_dev.json")
    assert len(ds.conversations) == 5 and ds.n_questions == 999
    assert all(q.category in {"1", "2", "3", "4", "5"} for c in ds.conversations for q in c.questions)
    # the malformed strings upstream are recovered; only a bare "D" and a dangling id are lost
    assert sorted(ds.meta["dropped_evidence"]) == ["D", "D10:19"]


@pytest.mark.skipif(not (DATA / "knowme" / "dataset1").exists(), reason="../shared/data/knowme is not present")
def test_real_knowme_dataset1() -> None:
    ds = load_knowme(DATA / "knowme" / "dataset1")
    assert ds.n_turns > 6000 and ds.n_questions == 1010
    cats = {q.category for q in ds.conversations[0].questions}
    assert "Expert-Annotated Psychoanalysis" in cats and "Adversarial Abstention" in cats


@pytest.mark.skipif(not (DATA / "prefeval").exists(), reason="../shared/data/prefeval is not present")
def test_real_prefeval() -> None:
    ds = load_prefeval(DATA / "prefeval", limit=2)
    assert ds.meta["distractors"] == 24
    assert {c.meta["form"] for c in ds.conversations} == {"explicit", "choice-based", "persona-driven"}
    assert all(c.questions[0].evidence for c in ds.conversations)


@pytest.mark.skipif(not (DATA / "locomo_plus" / "format_sample.json").exists(),
                    reason="../shared/data/locomo_plus is not present")
def test_real_locomo_plus_sample() -> None:
    ds = load_locomo_plus(DATA / "locomo_plus" / "format_sample.json")
    assert len(ds.conversations) == 3
