"""Turn-level retrieval: whole turns from the observation log, and scenes across turns."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from personatree.api import PersonaTree
from personatree.config import RecallConfig
from personatree.retrieval.scoring import score_nodes
from personatree.retrieval.state import RetrievalState, state_for, store_turn_text, turn_key
from personatree.types import Level

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=timezone.utc)
FILLER = [
    "I bought new running shoes at the mall.",
    "My sister called me about her garden.",
    "We cooked pasta with fresh basil for dinner.",
    "I fixed the leaking kitchen tap myself.",
    "The train to work was late again this morning.",
    "I started reading a novel about sailors.",
]


@pytest.fixture()
def tree(tmp_path, embedder):
    t = PersonaTree.open(tmp_path / "m.db", embedder=embedder)
    yield t
    t.close()


def _state(tree: PersonaTree, user: str, loader: bool = True) -> RetrievalState:
    st = tree._state(user)
    text = store_turn_text(tree.store, user) if loader else None
    return state_for({}, user, st.graph, st.version, text)


def _leaf(tree: PersonaTree, user: str, words: str):
    [n] = [n for n in tree._state(user).graph.nodes(Level.LEAF) if words in n.content]
    return n


def test_a_turn_is_matched_by_its_whole_message_after_a_sentence_is_forgotten(tree) -> None:
    tree.observe_many("ana", [{"messages": m, "at": T0 + timedelta(days=i)} for i, m in enumerate(FILLER)])
    tree.observe("ana", "I finally visited the Rijksmuseum in Amsterdam. The guide there was very patient.",
                 at=T0 + timedelta(days=30))
    gone = _leaf(tree, "ana", "Rijksmuseum")
    kept = _leaf(tree, "ana", "guide")
    tree.forget("ana", gone.id)

    with_log = _state(tree, "ana")
    hits = [tk for tk, _ in with_log.turns.search(["rijksmuseum"], 5)]
    assert hits == [turn_key(kept)]
    # Without the log, the turn is known only by the sentence it has left.
    assert _state(tree, "ana", loader=False).turns.search(["rijksmuseum"], 5) == []

    rec = tree.recall("ana", "Which museum did I visit in Amsterdam?", budget=200, levels=["leaf"])
    item = next(i for i in rec.items if i.node_id == kept.id)
    assert item.lexical_rank == 1
    assert "Rijksmuseum" not in rec.text  # the forgotten sentence itself is never shown


def test_neighbours_follow_log_order_within_a_session(tree) -> None:
    # One batch observed at one instant: only the log order tells the turns apart.
    scene = ["We hiked up to the old fire lookout.", "Lena spotted a pair of eagles nesting there.",
             "I sketched the valley while the others rested."]
    tree.observe_many("ben", [{"messages": m, "at": T0, "session_id": "trip"} for m in scene])
    tree.observe("ben", "I paid the electricity bill online.", at=T0 + timedelta(days=2), session_id="home")
    state = _state(tree, "ben")
    first, middle, last = (turn_key(_leaf(tree, "ben", w)) for w in ("lookout", "eagles", "sketched"))
    assert state.neighbours(middle) == (first, last)
    assert state.neighbours(first) == (None, middle)
    assert state.neighbours(last) == (middle, None)  # the next session is another scene
    other = turn_key(_leaf(tree, "ben", "electricity"))
    assert state.neighbours(other) == (None, None)


def test_neighbours_follow_turns_added_and_forgotten_after_the_first_use(tree) -> None:
    scene = ["We rented kayaks at the harbour.", "A seal followed my kayak for a while.",
             "I capsized right next to the pier."]
    tree.observe_many("dan", [{"messages": m, "at": T0 + timedelta(minutes=i), "session_id": "sea"}
                              for i, m in enumerate(scene)])
    tree.observe("dan", "I renewed my library card.", at=T0 + timedelta(days=1), session_id="town")
    cache: dict[str, RetrievalState] = {}
    st = tree._state("dan")
    state = state_for(cache, "dan", st.graph, st.version, store_turn_text(tree.store, "dan"))
    kayaks, seal, pier = (turn_key(_leaf(tree, "dan", w)) for w in ("harbour", "seal", "pier"))
    library = turn_key(_leaf(tree, "dan", "library"))
    assert state.neighbours(seal) == (kayaks, pier) and state.neighbours(library) == (None, None)

    tree.observe("dan", "We dried off with hot cocoa at the harbour cafe.",
                 at=T0 + timedelta(minutes=5), session_id="sea")
    tree.forget("dan", _leaf(tree, "dan", "seal").id)
    st = tree._state("dan")
    state = state_for(cache, "dan", st.graph, st.version)  # the same state, refreshed
    cocoa = turn_key(_leaf(tree, "dan", "cocoa"))
    assert state.neighbours(kayaks) == (None, pier)
    assert state.neighbours(pier) == (kayaks, cocoa)
    assert state.neighbours(seal) == (None, None)  # no leaf left: no longer a turn
    assert state.neighbours(library) == (None, None)


def test_a_scene_lends_its_score_to_the_turns_around_it(tree, embedder) -> None:
    tree.observe_many("cai", [{"messages": m, "at": T0 + timedelta(days=i), "session_id": f"s{i}"}
                              for i, m in enumerate(FILLER)])
    scene = ["We drove up to the lake cabin on Friday.", "The water was freezing but Tom jumped in anyway.",
             "Later that night we grilled burgers by the fire."]
    tree.observe_many("cai", [{"messages": m, "at": T0 + timedelta(days=20, minutes=i), "session_id": "lake"}
                              for i, m in enumerate(scene)])
    state = _state(tree, "cai")
    query = "Did Tom jump into the freezing water?"
    qvec = embedder.embed([query])[0]
    middle = _leaf(tree, "cai", "Tom jumped").id
    around = [_leaf(tree, "cai", w).id for w in ("cabin", "burgers")]
    lend = RecallConfig(neighbour_share=0.7)
    scored, _ = score_nodes(state, query, qvec, [Level.LEAF], lend, personal=False)
    alone, _ = score_nodes(state, query, qvec, [Level.LEAF], RecallConfig(neighbour_share=0.0), personal=False)
    assert max(scored, key=lambda x: scored[x].relevance) == middle
    for x in around:
        assert scored[x].relevance >= 0.7 * scored[middle].relevance - 1e-9
        assert scored[x].neighbour_of == middle  # the trace says why it is there
        assert scored[x].relevance > (alone[x].relevance if x in alone else 0.0)
