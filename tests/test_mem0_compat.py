"""The Mem0 facade driven by code written against Mem0's documented ``Memory`` calls.

``test_a_mem0_script_runs_unchanged`` is a script as a Mem0 user writes it (the
quickstart's calls in order: ``from_config``, ``add``, ``get_all``, ``get``,
``search``, ``update``, ``history``, ``delete``, ``delete_all``, ``reset``), on a real
SQLite file with the real packaged embedder and the offline judge. The other tests
check what an evidence tree does differently: scopes, claims after consolidation,
delete of a leaf vs a claim, and the typed errors.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any, Iterator

import pytest

from personatree import ConfigError, FixedClock, InputError, PersonaTree, PersonaTreeConfig, UnknownNodeError
from personatree.compat.mem0 import Memory

from .helpers import T0, Parts, open_tree

ITEM_KEYS = {"id", "memory", "hash", "metadata", "created_at", "updated_at"}


@pytest.fixture
def memory(tmp_path: Path, parts: Parts) -> Iterator[Memory]:
    tree = open_tree(tmp_path / "mem0.db", parts, T0)
    yield Memory(tree=tree)
    tree.close()


def test_a_mem0_script_runs_unchanged(tmp_path: Path) -> None:
    # --- the script, as written for Mem0 (only the import and the config differ) ---
    m = Memory.from_config({"path": str(tmp_path / "memories.db"), "history_db_path": "ignored.db"})
    messages = [
        {"role": "user", "content": "Can you suggest a board game for tonight?"},
        {"role": "assistant", "content": "How about a long strategy game?"},
        {"role": "user", "content": "I dislike long strategy games. I love quick party games."},
        {"role": "assistant", "content": "Noted, quick party games it is."},
    ]
    result = m.add(messages, user_id="alice", metadata={"category": "games"})
    added = result["results"]
    assert added and all(r["event"] == "ADD" and r["metadata"] == {"category": "games"} for r in added)
    assert any("party games" in r["memory"] for r in added)
    # The question to the assistant is not a memory about alice.
    assert not any("suggest" in r["memory"] for r in added)

    m.add("I work night shifts at the harbour.", user_id="alice")
    all_memories = m.get_all(user_id="alice")
    assert {r["memory"] for r in all_memories["results"]} >= {r["memory"] for r in added}
    for item in all_memories["results"]:
        assert ITEM_KEYS <= set(item) and item["user_id"] == "alice"
        assert len(item["hash"]) == 32 and item["created_at"].startswith("20")

    memory_id = added[0]["id"]
    specific = m.get(memory_id)
    assert specific is not None and specific["id"] == memory_id and specific["memory"] == added[0]["memory"]
    assert specific["metadata"] == {"category": "games"}

    related = m.search(query="What games does alice enjoy?", user_id="alice", limit=3)
    assert 1 <= len(related["results"]) <= 3
    scores = [r["score"] for r in related["results"]]
    assert scores == sorted(scores, reverse=True) and "party games" in related["results"][0]["memory"]

    updated = m.update(memory_id=memory_id, data="I now love long strategy games.")
    assert updated["message"] == "Memory updated successfully!"
    assert updated["results"] and updated["results"][0]["event"] == "UPDATE"
    history = m.history(memory_id=memory_id)
    assert [h["action"] for h in history] == ["ADD", "UPDATE"]
    assert history[0]["new_value"] == added[0]["memory"] and history[1]["new_value"] == "I now love long strategy games."
    assert history[1]["previous_value"] == added[0]["memory"]

    assert m.delete(memory_id=memory_id) == {"message": "Memory deleted successfully!"}
    assert m.get(memory_id) is None
    assert [h["action"] for h in m.history(memory_id)] == ["UPDATE", "DELETE"]

    m.add("I keep two cats.", user_id="bob")
    m.delete_all(user_id="alice")
    assert m.get_all(user_id="alice") == {"results": []}
    assert m.get_all(user_id="bob")["results"]
    m.reset()
    assert m.get_all(user_id="bob") == {"results": []}
    m.close()


def test_update_keeps_the_old_evidence_as_history(memory: Memory) -> None:
    [first] = memory.add("I live in Leeds.", user_id="cy")["results"]
    new = memory.update(first["id"], "I live in Bristol.")["results"]
    assert [r["memory"] for r in new] == ["I live in Bristol."] and new[0]["previous_id"] == first["id"]
    # The old statement is still the user's evidence; both are returned.
    texts = {r["memory"] for r in memory.get_all(user_id="cy")["results"]}
    assert {"I live in Leeds.", "I live in Bristol."} <= texts
    assert memory.get(first["id"])["memory"] == "I live in Leeds."
    with pytest.raises(UnknownNodeError):
        memory.update("lf_nope", "x")


def test_scopes_agent_run_and_metadata_filters(memory: Memory) -> None:
    memory.add("I play chess on Tuesdays.", user_id="dee", run_id="r1", metadata={"topic": "hobby"})
    memory.add("I drink green tea every morning.", user_id="dee", run_id="r2", agent_id="coach",
               metadata={"topic": "food"})
    everything = memory.get_all(user_id="dee")["results"]
    assert len(everything) == 2
    run1 = memory.get_all(user_id="dee", run_id="r1")["results"]
    assert [r["memory"] for r in run1] == ["I play chess on Tuesdays."] and run1[0]["run_id"] == "r1"
    coach = memory.get_all(filters={"user_id": "dee", "agent_id": "coach"})["results"]
    assert [r["memory"] for r in coach] == ["I drink green tea every morning."]
    food = memory.search("drinks", filters={"user_id": "dee", "topic": {"in": ["food", "x"]}})["results"]
    assert [r["memory"] for r in food] == ["I drink green tea every morning."]
    not_hobby = memory.search("chess", user_id="dee", filters={"topic": {"ne": "hobby"}}, threshold=0.0)["results"]
    assert [r["metadata"]["topic"] for r in not_hobby] == ["food"]
    # An agent alone has its own tree.
    memory.add("I am a cheerful assistant persona.", agent_id="helper")
    assert [r.get("agent_id") for r in memory.get_all(agent_id="helper")["results"]] == ["helper"]
    # delete_all of a run removes those observations and what was read from them.
    memory.delete_all(user_id="dee", run_id="r1")
    assert [r["memory"] for r in memory.get_all(user_id="dee")["results"]] == ["I drink green tea every morning."]
    assert len(memory.tree.store.observations("dee")) == 1


def test_claims_after_consolidation_and_delete_of_a_claim(tmp_path: Path, parts: Parts) -> None:
    tree = PersonaTree(open_tree(tmp_path / "c.db", parts, T0).store, config=PersonaTreeConfig(),
                       registry=parts.registry, embedder=parts.embedder, judge=parts.judge,
                       clock=FixedClock(T0 + timedelta(days=20)))
    m = Memory(tree=tree)
    try:
        for day, text in enumerate(["I love hiking in the mountains.", "I went hiking in the mountains again.",
                                    "Hiking in the mountains is my favourite thing.",
                                    "I love long mountain hikes."]):
            tree.observe("eve", text, at=T0 + timedelta(days=day * 3))
        tree.consolidate("eve")
        items = m.get_all(user_id="eve")["results"]
        mids = [r for r in items if r["level"] == "mid"]
        assert mids, [r["memory"] for r in items]
        claim = mids[0]
        assert claim["support"] >= 2 and claim["metadata"] == {} and 0.0 < claim["confidence"] <= 1.0
        leaves_before = {r["id"] for r in items if r["level"] == "leaf"}
        # Deleting the claim removes the claim only: its evidence stays.
        m.delete(claim["id"])
        after = m.get_all(user_id="eve")["results"]
        assert claim["id"] not in {r["id"] for r in after}
        assert leaves_before <= {r["id"] for r in after}
        # Deleting a leaf removes that statement.
        leaf = sorted(leaves_before)[0]
        m.delete(leaf)
        assert leaf not in {r["id"] for r in m.get_all(user_id="eve")["results"]}
    finally:
        tree.close()


@pytest.mark.parametrize(("call", "needle"), [
    (lambda m: m.add("hi"), "user_id"),
    (lambda m: m.get_all(user_id="a", filters={"user_id": "b"}), "disagree"),
    (lambda m: m.search("x", user_id="a", filters={"OR": []}), "not supported"),
    (lambda m: m.search("x", user_id="a", limit=0), "positive"),
    (lambda m: m.search("x", user_id="a", threshold=3), "threshold"),
    (lambda m: m.add("I swim.", user_id="a", metadata={"run_id": "x"}), "reserved"),
    (lambda m: m.add("I swim.", user_id="a", memory_type="procedural_memory"), "not supported"),
])
def test_bad_arguments_are_typed_errors(memory: Memory, call: Any, needle: str) -> None:
    with pytest.raises(InputError, match=needle):
        call(memory)
    assert isinstance(InputError("x"), ValueError)  # Mem0's callers catch ValueError


def test_from_config_maps_the_llm_block_and_refuses_other_stores(tmp_path: Path) -> None:
    from personatree.compat.mem0_items import tree_options

    path, cfg = tree_options({"path": str(tmp_path / "x.db"),
                              "llm": {"provider": "ollama", "config": {"model": "qwen3:8b", "temperature": 0.1,
                                                                       "ollama_base_url": "http://127.0.0.1:11434"}}})
    assert path.endswith("x.db") and cfg.judge == "ollama/qwen3:8b"
    assert cfg.judge_options["completion_kwargs"] == {"api_base": "http://127.0.0.1:11434"}
    assert cfg.judge_options["temperature"] == 0.1
    with pytest.raises(ConfigError, match="vector_store"):
        Memory.from_config({"vector_store": {"provider": "qdrant"}})
    with pytest.raises(ConfigError, match="not supported"):
        tree_options({"llm": {"provider": "openai", "config": {"model": "gpt-4o-mini", "seed": 3}}})
