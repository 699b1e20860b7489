"""The Python API end to end on a real SQLite file with the real embedder and offline judge."""

from __future__ import annotations

import gc
import json
from datetime import timedelta

import pytest

from personatree import (
    FixedClock,
    InputError,
    MessageError,
    PersonaTree,
    QueryError,
    UnknownNodeError,
    UnknownUserError,
)
from personatree.types import Level

from .conftest import T0


@pytest.fixture()
def tree(db_path, embedder):
    t = PersonaTree.open(db_path, embedder=embedder, clock=FixedClock(T0 + timedelta(days=1)))
    yield t
    t.close()


def say(text: str, reply: str = "I see.") -> list[dict]:
    return [{"role": "user", "content": text}, {"role": "assistant", "content": reply}]


def test_observe_explain_back_to_the_verbatim_observation(tree) -> None:
    rep = tree.observe("ana", say("I'm allergic to peanuts. Thanks for asking!"), at=T0, session_id="s1")
    assert not rep.duplicate and len(rep.decisions) >= 1
    leaf = tree.node("ana", rep.decisions[0].leaf_id)
    assert leaf.level is Level.LEAF and "peanuts" in leaf.content
    assert leaf.provenance[0].observation_id == rep.observation_id
    ex = tree.explain("ana", leaf.id)
    assert ex.path[0].node_id == leaf.id
    assert ex.observations[0].messages[0].content == "I'm allergic to peanuts. Thanks for asking!"
    assert "peanuts" in ex.render()


def test_same_observation_twice_is_stored_once(tree) -> None:
    a = tree.observe("ana", say("I love hiking."), at=T0, session_id="s1")
    b = tree.observe("ana", say("I love hiking."), at=T0, session_id="s1")
    assert b.duplicate and b.observation_id == a.observation_id and b.decisions == ()
    assert tree.stats("ana")["observations"] == 1
    assert len(tree.nodes("ana", "leaf")) == len(a.decisions)


def test_observe_many_batches_and_keeps_order(tree) -> None:
    items = [{"messages": say(f"I visited museum number {i} in Paris."), "at": T0 + timedelta(hours=i)}
             for i in range(30)]
    reports = tree.observe_many("ana", items, batch_size=7)
    assert len(reports) == 30 and all(not r.duplicate for r in reports)
    obs = tree.store.observations("ana")
    assert [o.id for o in obs] == [r.observation_id for r in reports]
    hits = tree.search("ana", "museum in Paris", k=3)
    assert len(hits) == 3 and all("museum" in h.content for h in hits)


def test_observe_many_pauses_the_collector_per_step_and_leaves_it_on(tree) -> None:
    tree.observe("ana", say("I like tea."), at=T0)  # the judge and the store are built
    line = "I walked to the harbour {} times with my dog Rex, who loves the gulls."
    items = [{"messages": say(line.format(i)), "at": T0 + timedelta(hours=i + 1)} for i in range(200)]
    started: list[int] = []

    def count(phase: str, info: dict) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.collect()
    gc.callbacks.append(count)
    try:
        tree.observe_many("ana", items, batch_size=50)
    finally:
        gc.callbacks.remove(count)
    assert gc.isenabled() and tree.stats("ana")["observations"] == 201
    # Only the young collection after checking the input and after each of the four
    # chunks: none started by the objects the import makes.
    assert started == [0] * 5
    bad = [{"messages": say("I like coffee.")}, {"messages": [{"role": "user", "content": ""}]}]
    with pytest.raises(MessageError):
        tree.observe_many("ana", bad)
    assert gc.isenabled()


def test_unknown_ids_are_typed_errors(tree) -> None:
    with pytest.raises(UnknownUserError):
        tree.explain("nobody", "lf_x")
    with pytest.raises(UnknownUserError):
        tree.nodes("nobody")
    tree.observe("ana", say("I live in Oslo."), at=T0)
    with pytest.raises(UnknownNodeError):
        tree.explain("ana", "lf_missing")
    with pytest.raises(UnknownNodeError):
        tree.forget("ana", "lf_missing")
    with pytest.raises(KeyError):  # NotFoundError is also a KeyError
        tree.node("ana", "lf_missing")


def _snapshot(tree) -> str:
    return json.dumps({u: tree.export(u) for u in tree.users()}, sort_keys=True, default=str)


BAD_MESSAGES = [
    [],
    "   ",
    [{"role": "user", "content": ""}],
    [{"role": "user", "content": " \n\t "}],
    [{"role": "user"}],
    [{"role": "wizard", "content": "hello"}],
    [{"role": "user", "content": 42}],
    [{"role": "user", "content": "x" * 1_000_000}],
    [{"role": "user", "content": "bad \ud800 surrogate"}],
    [{"role": "user", "content": "nul \x00 byte"}],
    [{"role": "user", "content": "ok", "extra": 1}],
    [42],
    {"not": "messages"},
    None,
    12,
]


@pytest.mark.parametrize("messages", BAD_MESSAGES, ids=range(len(BAD_MESSAGES)))
def test_bad_messages_leave_the_store_unchanged(tree, messages) -> None:
    tree.observe("ana", say("I live in Oslo."), at=T0)
    before = _snapshot(tree)
    with pytest.raises(InputError):
        tree.observe("ana", messages, at=T0 + timedelta(hours=1))
    assert _snapshot(tree) == before


@pytest.mark.parametrize("kwargs", [
    {"user_id": ""}, {"user_id": None}, {"user_id": 7}, {"user_id": "a\nb"}, {"user_id": "x" * 1000},
    {"at": "not a date"}, {"at": float("nan")}, {"at": [2024]}, {"session_id": " "}, {"metadata": "x"},
    {"metadata": {"k": object()}}, {"observation_id": ""},
], ids=lambda k: next(iter(k)))
def test_bad_arguments_leave_the_store_unchanged(tree, kwargs) -> None:
    tree.observe("ana", say("I live in Oslo."), at=T0)
    before = _snapshot(tree)
    args = {"user_id": "ana", "messages": say("I like tea."), "at": T0 + timedelta(hours=1)} | kwargs
    with pytest.raises(InputError):
        tree.observe(**args)
    assert _snapshot(tree) == before


def test_a_bad_item_in_a_batch_writes_nothing(tree) -> None:
    tree.observe("ana", say("I live in Oslo."), at=T0)
    before = _snapshot(tree)
    items = [{"messages": say("I like tea.")}, {"messages": [{"role": "user", "content": ""}]}]
    with pytest.raises(MessageError, match="interaction 1"):
        tree.observe_many("ana", items)
    with pytest.raises(InputError):
        tree.observe_many("ana", [{"messages": say("hi"), "bogus": 1}])
    with pytest.raises(InputError):
        tree.observe_many("ana", "not a list")
    assert _snapshot(tree) == before


def test_bad_queries(tree) -> None:
    tree.observe("ana", say("I live in Oslo."), at=T0)
    with pytest.raises(QueryError):
        tree.search("ana", "  ")
    with pytest.raises(InputError):
        tree.search("ana", "Oslo", k=0)
    with pytest.raises(InputError):
        tree.search("ana", "Oslo", level="branch")


def test_forget_delete_export_rebuild(tree) -> None:
    r1 = tree.observe("ana", say("I live in Oslo. I work as a nurse."), at=T0, session_id="s1")
    tree.observe("bo", say("I have two cats."), at=T0)
    victim = r1.decisions[0].leaf_id
    rep = tree.forget("ana", victim)
    assert victim in rep.removed
    with pytest.raises(UnknownNodeError):
        tree.node("ana", victim)
    # the observation stays in the log; a rebuild replays the forget too
    assert tree.stats("ana")["observations"] == 1
    rb = tree.rebuild("ana")
    assert rb.equal and victim not in {n.id for n in tree.nodes("ana")}
    data = tree.export("ana")
    json.dumps(data)
    assert data["user_id"] == "ana" and all(n["id"] != victim for n in data["nodes"])
    assert "cats" not in json.dumps(data)  # tenant isolation
    tree.delete_user("ana")
    assert tree.users() == ["bo"]
    with pytest.raises(UnknownUserError):
        tree.delete_user("ana")


def test_persists_across_reopen(db_path, embedder) -> None:
    with PersonaTree.open(db_path, embedder=embedder) as t:
        rep = t.observe("ana", say("I'm training for a marathon."), at=T0)
    with PersonaTree.open(db_path, embedder=embedder) as t:
        assert t.node("ana", rep.decisions[0].leaf_id).content == "I'm training for a marathon."


def test_redaction_keeps_patterns_out_of_memory(db_path, embedder) -> None:
    from personatree import PersonaTreeConfig

    cfg = PersonaTreeConfig(redact=("email", "phone", "card"))
    with PersonaTree.open(db_path, cfg, embedder=embedder) as t:
        t.observe("ana", say("My email is ana.k@example.org and my card is 4111 1111 1111 1111."), at=T0)
        blob = json.dumps(t.export("ana"))
    assert "ana.k@example.org" not in blob and "4111 1111" not in blob
    assert "[EMAIL]" in blob and "[CARD]" in blob
    raw = b"".join(p.read_bytes() for p in db_path.parent.glob("memory.db*"))
    assert b"ana.k@example.org" not in raw


def test_custom_redactor_hook(db_path, embedder) -> None:
    with PersonaTree.open(db_path, embedder=embedder, redactor=lambda s: s.replace("Quimby", "[NAME]")) as t:
        rep = t.observe("ana", say("My friend Quimby lives in Oslo."), at=T0)
        assert all("Quimby" not in t.node("ana", d.leaf_id).content for d in rep.decisions)


def test_a_store_refuses_another_embedder_with_a_typed_error(tmp_path, embedder) -> None:
    from personatree import ConfigError
    from personatree.embedders import HashingEmbedder

    path = tmp_path / "e.db"
    with PersonaTree.open(path, embedder=HashingEmbedder(256)) as t:
        t.observe("ana", "I love spicy food.", at=T0)
        before = t.store.checksum("ana")
    for other in (embedder, HashingEmbedder(128)):
        with pytest.raises(ConfigError, match="built with the embedder 'hashing-256'"):
            PersonaTree.open(path, embedder=other)
    with PersonaTree.open(path, embedder=HashingEmbedder(256)) as t:  # the right one still works
        assert t.store.checksum("ana") == before and t.search("ana", "spicy", k=1)


def test_an_unreadable_embedder_record_is_a_typed_error(tmp_path) -> None:
    from personatree import ConfigError
    from personatree.embedders import HashingEmbedder
    from personatree.store import open_store

    path = tmp_path / "bad.db"
    with PersonaTree.open(path, embedder=HashingEmbedder(64)) as t:
        t.observe("ana", "I love spicy food.", at=T0)
        before = t.store.checksum("ana")
        t.store.set_meta("personatree.embedder", "{not json")
    with pytest.raises(ConfigError, match="embedder record is unreadable"):
        PersonaTree.open(path, embedder=HashingEmbedder(64))
    st = open_store(str(path))
    try:  # nothing stored was lost
        assert st.checksum("ana") == before
    finally:
        st.close()


def test_a_store_from_before_the_embedder_was_recorded_is_checked_per_user(tmp_path) -> None:
    from personatree import ConfigError
    from personatree.embedders import HashingEmbedder

    path = tmp_path / "old.db"
    with PersonaTree.open(path, embedder=HashingEmbedder(256)) as t:
        t.observe("ana", "I love spicy food.", at=T0)
        t.store.set_meta("personatree.embedder", json.dumps({"name": "hashing-64", "dim": 64}))
    with PersonaTree.open(path, embedder=HashingEmbedder(64)) as t:
        with pytest.raises(ConfigError, match="256-dimensional"):
            t.search("ana", "spicy", k=1)
