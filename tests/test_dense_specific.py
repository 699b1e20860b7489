"""The dense ranking of leaves with what all of the person's statements share taken out."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from personatree.api import PersonaTree
from personatree.config import RecallConfig
from personatree.retrieval.scoring import score_nodes, specific_cosines
from personatree.retrieval.state import LevelArrays, RetrievalState, state_for
from personatree.specific import common_direction, specific_similarity
from personatree.types import Level

from .helpers import OWN_LIFE, PLEASANTRIES

T0 = datetime(2024, 3, 4, 18, 0, tzinfo=timezone.utc)
SMALL_TALK = PLEASANTRIES
FACTS = OWN_LIFE
COACH = OWN_LIFE[1]
QUESTION = "Is she good with children?"


def test_specific_cosines_are_kept_until_the_rows_change(embedder) -> None:
    rows = np.asarray(embedder.embed(SMALL_TALK + FACTS))
    ids = [f"l{i}" for i in range(len(rows))]
    arr = LevelArrays(ids, rows, {x: i for i, x in enumerate(ids)})
    state = RetrievalState(graph=None)  # type: ignore[arg-type]
    q = np.asarray(embedder.embed([QUESTION]))[0]
    got = specific_cosines(state, arr, rows @ q, q)
    want = specific_similarity((rows @ q)[:, None], rows, q[None, :], common_direction([rows]))[:, 0]
    np.testing.assert_allclose(got, want, atol=1e-5)
    held = state.centre_memo
    specific_cosines(state, arr, rows @ q, q)
    assert state.centre_memo is held
    # New rows (the state rebuilt them): the common direction is taken again.
    fewer = LevelArrays(ids[:12], rows[:12], {x: i for i, x in enumerate(ids[:12])})
    specific_cosines(state, fewer, rows[:12] @ q, q)
    assert state.centre_memo is not held and state.centre_memo[0] is fewer


@pytest.mark.parametrize("specific", [True, False])
def test_the_statement_about_the_topic_ranks_first_in_the_dense_ranking(tmp_path, embedder, specific) -> None:
    tree = PersonaTree.open(tmp_path / "m.db", embedder=embedder)
    try:
        tree.observe_many("jo", [
            {"messages": [{"role": "user", "content": t}], "at": T0 + timedelta(days=i), "session_id": f"s{i}"}
            for i, t in enumerate(SMALL_TALK + FACTS)
        ])
        st = tree._state("jo")
        state = state_for({}, "jo", st.graph, st.version, None)
        [coach] = [n.id for n in st.graph.nodes(Level.LEAF) if n.content == COACH]
        qvec = np.asarray(embedder.embed([QUESTION]))[0]
        scored, _ = score_nodes(state, QUESTION, qvec, [Level.LEAF], RecallConfig(dense_specific=specific))
        # By plain cosine the grandmother's recipes come first; with what every
        # statement shares taken out, coaching the under-tens does.
        assert (scored[coach].dense_rank == 1) is specific
    finally:
        tree.close()
