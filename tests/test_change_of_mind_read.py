"""What a person sees after a change of mind: the demo's hiking question.

The shipped sample conversation is ingested exactly as ``personatree demo`` does
(three months of conversations and a consolidation, then the weeks after a knee
injury and a second consolidation), with the real packaged embedder and offline
judge, into a real SQLite file. The person loved hiking, then stopped after a knee
injury: recall for a hiking holiday must carry the stop and the injury at every
budget, the tree view, the profile and ``explain`` must show the pattern as changed,
and no budget is ever exceeded.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from personatree import PersonaTree
from personatree.demo import run_demo
from personatree.timeline import node_timeline
from personatree.types import Level

QUESTION = "Would Maya enjoy a hiking holiday?"
STOP = "I stopped hiking after my knee injury"
INJURY = "I twisted my knee badly on a trail"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PersonaTree]:
    path = Path(tmp_path_factory.mktemp("demo")) / "demo.db"
    tree = run_demo(path, Console(file=io.StringIO(), width=100))
    yield tree
    tree.close()


def _hiking(tree: PersonaTree) -> str:
    """The hiking pattern: the mid the stop contradicts."""
    g = tree._graph("maya")
    (mid,) = [m.id for m in g.nodes(Level.MID) if any(STOP in g.node(c).content for c in g.conflicts_of(m.id))]
    return mid


RACE = "Any tips for my half marathon training?"
CANT_RUN = "I can't run at the moment either"
RUNS = ("I go for a run every morning", "I still run every morning")


@pytest.mark.parametrize("budget", [150, 300, 1000])
def test_a_running_habit_is_never_shown_without_the_line_that_reverses_it(demo: PersonaTree, budget: int) -> None:
    # Told in neutral words ("I go for a run every morning"), reversed weeks later by a
    # plain negative at cosine 0.38: an opposite side, not a restatement.
    rec = demo.recall("maya", RACE, budget=budget)
    assert rec.tokens <= budget
    if any(r in rec.text for r in RUNS):
        assert CANT_RUN in rec.text


def test_the_hiking_pattern_reads_as_changed(demo: PersonaTree) -> None:
    tl = node_timeline(demo._graph("maya"), _hiking(demo))
    assert tl.changed
    assert f"{tl.since:%Y-%m}" == "2024-06" and f"{tl.support_last:%Y-%m}" == "2024-05"


@pytest.mark.parametrize("budget", [150, 300, 500, 1000])
def test_recall_carries_the_stop_and_the_injury(demo: PersonaTree, budget: int) -> None:
    rec = demo.recall("maya", QUESTION, budget=budget)
    assert rec.tokens <= budget
    assert STOP in rec.text
    if budget >= 300:
        assert INJURY in rec.text
    # Under a changed claim, the current state comes before any older hiking statement
    # (loose evidence is listed by date, each line dated).
    if "now: " + STOP in rec.text and "I love hiking" in rec.text:
        assert rec.text.index("now: " + STOP) < rec.text.index("I love hiking")


def test_recall_shows_the_claim_changed_with_the_stop_under_it(demo: PersonaTree) -> None:
    rec = demo.recall("maya", QUESTION, budget=1000)
    shown = {i.node_id: i for i in rec.items}
    claims = [i for i in rec.items if i.level is not Level.LEAF]
    assert claims, rec.text
    # Every contradicted claim shown is shown with its latest contradiction under it.
    g = demo._graph("maya")
    for item in claims:
        tl = node_timeline(g, item.node_id)
        if tl.contradicted:
            assert tl.latest_conflict in shown, rec.text
            assert shown[tl.latest_conflict].parent == item.node_id or any(
                shown[tl.latest_conflict].parent == c.node_id for c in claims
            )
    lines = rec.text.splitlines()
    tagged = [i for i, line in enumerate(lines) if "changed 2024-06" in line]
    assert tagged, rec.text
    # The newer stance right under the changed claim, before any of its support.
    assert "now: " + STOP in lines[tagged[0] + 1]
    # A changed claim is shown with the confidence that it still holds: below even odds.
    changed = [i for i in claims if node_timeline(g, i.node_id).changed]
    assert changed and all(i.confidence < 0.5 for i in changed)
    carried = shown[node_timeline(g, changed[0].node_id).latest_conflict]
    assert carried.reason.startswith("carried")


def test_the_tree_view_shows_the_change_current_state_first(demo: PersonaTree) -> None:
    text = demo.render("maya")
    line = next(x for x in text.splitlines() if "changed 2024-06" in x and "◆" in x)
    assert line.index("now: ") < line.index(STOP) < line.index("before: ")
    assert "2024-03-02..2024-05-11" in line  # the span the pattern held
    # The contradicting leaves are listed under the pattern they contradict, not again as orphans.
    lines = text.splitlines()
    listed = [x for x in lines if "(conflicts)" in x]
    assert any(STOP in x for x in listed) and any(INJURY in x for x in listed)
    orphans = lines[next(i for i, x in enumerate(lines) if x.startswith("orphan evidence")):]
    assert not any(STOP in x or INJURY in x for x in orphans), orphans


def test_the_profile_leads_with_the_current_state(demo: PersonaTree) -> None:
    prof = demo.profile("maya")
    assert prof.tokens <= prof.budget
    lines = [x for x in prof.text.splitlines() if "changed 2024-06" in x]
    assert lines, prof.text
    first = lines[0]
    assert first.index("now: ") < first.index(STOP) < first.index("before: ")
    # Quoted once, even when the claim and its pattern are both shown.
    assert prof.text.count(STOP) == 1
    hiking = next(i for i in prof.items if i.node_id == _hiking(demo))
    assert hiking.confidence < 0.5


def test_explain_leads_with_the_change(demo: PersonaTree) -> None:
    ex = demo.explain("maya", _hiking(demo))
    text = ex.render()
    assert text.startswith("[mid:") and "now: \"" + STOP in text.splitlines()[0]
    assert text.index("contradicted by:") < text.index("supported by:")
    assert ex.path[0].confidence < 0.5


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(budget=st.integers(20, 1200))
def test_the_budget_holds_with_the_carried_contradiction(demo: PersonaTree, budget: int) -> None:
    rec = demo.recall("maya", QUESTION, budget=budget)
    assert rec.tokens <= budget
    assert len(rec.node_ids) == len(set(rec.node_ids))
    g = demo._graph("maya")
    shown = set(rec.node_ids)
    for nid in shown:
        if g.node(nid).level is not Level.LEAF:
            tl = node_timeline(g, nid)
            assert not tl.contradicted or tl.latest_conflict in shown
