"""The cue/trigger dev set and its measure: the packaged set is well formed, the loader
selects a split and scores only the cue speaker's own turns when asked, and the measure
tells the speaker's statement apart from the listener's reply."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from personatree_bench.cues import CueRecallResult, cue_measures, format_cue_recall
from personatree_bench.datasets import load_locomo_plus
from personatree_bench.datasets.locomo_plus import default_cues_path, parse_cue
from personatree_bench.metrics import QueryRecord
from personatree_bench.runner import BenchResult

from .test_bench_data import write_locomo_plus

_STOP = set("the a an to and of in on at for is it was be so that this with we you our my me i "
            "i'm i've it's just now all up as by from are have has not no but or if out what when".split())


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z']+", text.lower()) if w not in _STOP and len(w) > 2}


def test_the_packaged_cue_set_is_well_formed() -> None:
    items = json.loads(default_cues_path().read_text())
    assert len(items) >= 60
    assert len({it["id"] for it in items}) == len(items)
    assert {it["split"] for it in items} == {"tune", "heldout"}
    assert {it["relation_type"] for it in items} == {"causal", "state", "goal", "value"}
    for it in items:
        cue, trigger = parse_cue(it["cue_dialogue"]), parse_cue(it["trigger_query"])
        assert cue[0][0] == "A" and any(who == "B" for who, _ in cue), it["id"]
        assert [who for who, _ in trigger] == ["A"], it["id"]
        # The trigger depends on the cue without repeating it: at most one shared content word.
        assert len(_words(cue[0][1]) & _words(trigger[0][1])) <= 1, it["id"]
    for split in ("tune", "heldout"):
        assert {it["relation_type"] for it in items if it["split"] == split} == {"causal", "state", "goal", "value"}


def test_speaker_gold_keeps_only_the_cue_speakers_turns(tmp_path: Path) -> None:
    plus, host = write_locomo_plus(tmp_path)
    every = load_locomo_plus(plus, host=host, seed=3)
    own = load_locomo_plus(plus, host=host, seed=3, gold="speaker")
    for a, b in zip(every.conversations, own.conversations):
        assert a.turns == b.turns  # the same stream, only the gold differs
        (qa,), (qb,) = a.questions, b.questions
        speakers = {t.id: t.speaker for t in a.turns}
        assert set(qb.evidence) < set(qa.evidence)
        assert {speakers[t] for t in qb.evidence} == {"Ana"}  # A is the host's first speaker
        assert b.meta["cue_turns"] == list(qa.evidence) and b.meta["speaker_turns"] == list(qb.evidence)
    # The second sample item has two lines of A around B's question.
    assert len(own.conversations[1].questions[0].evidence) == 2
    with pytest.raises(ValueError, match="gold"):
        load_locomo_plus(plus, host=host, gold="listener")


def test_split_selection_does_not_move_an_item(tmp_path: Path) -> None:
    plus, host = write_locomo_plus(tmp_path)
    items = json.loads(plus.read_text())
    for i, it in enumerate(items):
        it["split"] = "tune" if i == 0 else "heldout"
    plus.write_text(json.dumps(items))
    every = load_locomo_plus(plus, host=host, seed=5)
    tune = load_locomo_plus(plus, host=host, seed=5, split="tune")
    held = load_locomo_plus(plus, host=host, seed=5, split="heldout")
    assert [c.id for c in tune.conversations] == ["plus-0"] and [c.id for c in held.conversations] == ["plus-1"]
    assert held.conversations[0].turns == every.conversations[1].turns
    assert load_locomo_plus(plus, host=host, split="heldout", limit=1).conversations[0].id == "plus-1"
    with pytest.raises(ValueError, match="no item"):
        load_locomo_plus(plus, host=host, split="test")


def _record(system: str, conv: str, shown: tuple[str, ...]) -> QueryRecord:
    return QueryRecord(system, conv, "trigger", "causal", False, "budget", 1000, ("C0:1",), shown, 10, 0.0)


def test_cue_measures_separate_the_statement_from_the_reply() -> None:
    run = BenchResult("locomo_plus", ["personatree", "dense"], [1000], [])
    run.records = [
        _record("personatree", "plus-0", ("D1:1", "C0:2")),   # only the listener's reply came back
        _record("personatree", "plus-1", ("C0:1",)),          # the statement itself came back
        _record("dense", "plus-0", ("C0:1", "C0:2")),
        _record("dense", "plus-1", ("D2:2",)),
    ]
    cue_turns = {"plus-0": ["C0:1", "C0:2"], "plus-1": ["C0:1", "C0:2"]}
    m = cue_measures(run, cue_turns)
    assert m["personatree"][1000] == {"n": 2, "speaker_recall": 0.5, "speaker_hit": 0.5, "any_cue_hit": 1.0}
    assert m["dense"][1000]["speaker_recall"] == 0.5 and m["dense"][1000]["any_cue_hit"] == 0.5
    result = CueRecallResult([1000], ["personatree", "dense"], {"heldout": m})
    assert "| held out | personatree | 2 | 0.500 | 1.000 |" in format_cue_recall(result)


@pytest.mark.slow
def test_cli_cue_recall_on_a_tiny_file(tmp_path: Path) -> None:
    from personatree.cli import app

    plus, host = write_locomo_plus(tmp_path)
    items = json.loads(plus.read_text())
    for i, it in enumerate(items):
        it["split"] = ("tune", "heldout")[i % 2]
    plus.write_text(json.dumps(items))
    out = tmp_path / "cues.json"
    res = CliRunner().invoke(app, ["bench", "cue-recall", str(plus), "--host", str(host), "--systems", "dense",
                                   "--budgets", "40,400", "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "| tuning | dense | 1 |" in res.output and "| held out | dense | 1 |" in res.output
    saved = json.loads(out.read_text())
    assert saved["format"] == "personatree.bench.cue_recall/1" and set(saved["runs"]) == {"tune", "heldout"}
    # At 400 tokens the whole tiny stream fits: the speaker's statement is certainly there.
    assert saved["measures"]["tune"]["dense"]["400"]["speaker_recall"] == 1.0
    bad = CliRunner().invoke(app, ["bench", "cue-recall", str(plus), "--host", str(host), "--split", "dev"])
    assert bad.exit_code == 1 and "--split" in bad.output


_LOCOMO_DEV = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "locomo" / "locomo_dev.json"


@pytest.mark.slow
@pytest.mark.skipif(not _LOCOMO_DEV.exists(), reason="../shared/data/locomo is not present")
def test_quick_runs_on_the_real_host(tmp_path: Path) -> None:
    """``bench cue-recall --quick`` and ``bench faithfulness --quick`` end to end on LoCoMo dev."""
    from personatree.cli import app

    runner = CliRunner()
    res = runner.invoke(app, ["bench", "cue-recall", "--quick", "--host", str(_LOCOMO_DEV), "--no-progress",
                              "--out", str(tmp_path / "c.json")])
    assert res.exit_code == 0, res.output
    saved = json.loads((tmp_path / "c.json").read_text())
    assert {s: saved["meta"][s]["cases"] for s in ("tune", "heldout")} == {"tune": 1, "heldout": 1}
    res = runner.invoke(app, ["bench", "faithfulness", "--quick", "--host", str(_LOCOMO_DEV), "--no-progress",
                              "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert set(data["summary"]) == {"personatree-live", "personatree-bulk", "dense"}
    assert data["summary"]["dense"]["tune"]["n"] == data["summary"]["dense"]["heldout"]["n"] == 1
    assert len(data["graphs"]) == 4 and len(data["contexts"]) == 12
