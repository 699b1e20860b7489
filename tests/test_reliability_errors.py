"""Typed errors and nothing lost, at the edges an adversarial run found open.

Each test pins one defect: a hostile model answer (deep brackets, non-finite route
probabilities) must fall back like invalid JSON does; bad ``levels``, metadata that
cannot be stored and read back, and forged journal events must be refused at the
door with an :class:`InputError` and nothing written; ``delete_user(vacuum=True)``
against a busy store must say what it did and finish the vacuum later; ``rebuild``
must keep recall counters; the MCP tools check their arguments like the API; the CLI
does not create a store in a mistyped folder and reports a broken JSONL file's real line.

Behaviour here does not depend on meaning, so trees use the ``HashingEmbedder`` with
the real offline judge, on real SQLite files where the store matters.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any, Iterator

import litellm
import orjson
import pytest
from typer.testing import CliRunner

from personatree import FixedClock, InputError, PersonaTree, PersonaTreeError
from personatree.cli import app
from personatree.config import PersonaTreeConfig
from personatree.embedders import HashingEmbedder
from personatree.errors import StoreBusyError, UnknownUserError, VacuumPendingError
from personatree.judge import LLMJudge, OfflineJudge
from personatree.judge.parsing import AnswerError, RouteAnswer, parse_answer
from personatree.portability import import_export
from personatree.schema import SchemaRegistry
from personatree.store import open_store
from personatree.types import Level

from .conftest import T0

MODEL = "openai/gpt-4o-mini"
NOW = T0 + timedelta(days=30)
SECRET = "Zanzibar-quokka-7731"


@pytest.fixture(scope="module")
def hparts(registry: SchemaRegistry) -> tuple[HashingEmbedder, OfflineJudge]:
    emb = HashingEmbedder(256)
    return emb, OfflineJudge(emb, registry)


def make_tree(where: str | Path, hparts: Any, registry: SchemaRegistry, judge: Any = None,
              busy_timeout_s: float = 10.0) -> PersonaTree:
    emb, offline = hparts
    return PersonaTree(open_store(str(where), busy_timeout_s=busy_timeout_s), config=PersonaTreeConfig(),
                       registry=registry, embedder=emb, judge=judge or offline, clock=FixedClock(NOW))


def mock_model(answer: Any) -> Any:
    """A litellm ``completion`` that answers ``answer(messages)`` through ``mock_response``."""
    def completion(**kw: Any) -> Any:
        return litellm.completion(model=kw["model"], messages=kw["messages"], mock_response=answer(kw["messages"]))
    return completion


def llm_tree(tmp_path: Path, hparts: Any, registry: SchemaRegistry, answer: Any) -> tuple[PersonaTree, LLMJudge]:
    emb, offline = hparts
    judge = LLMJudge(MODEL, embedder=emb, registry=registry, offline=offline, completion=mock_model(answer),
                     sleep=lambda s: None, timeout_s=0.05)
    return make_tree(tmp_path / "llm.db", hparts, registry, judge), judge


def snapshot(tree: PersonaTree) -> tuple[Any, ...]:
    st = tree.store
    return st.counts(), tuple((u, st.checksum(u)) for u in st.users())


# -- the LLM judge's parser and router --------------------------------------------------------

BOMBS = {
    "arrays": "[" * 5000 + "]" * 5000,
    "objects": '{"a":' * 5000 + "1" + "}" * 5000,
    "unclosed": "[" * 5000,
    "fenced": "```json\n" + "[" * 5000 + "]" * 5000 + "\n```",
}


@pytest.mark.parametrize("case", sorted(BOMBS))
def test_deeply_nested_answer_is_an_answer_error(case: str) -> None:
    with pytest.raises(AnswerError) as info:
        parse_answer(BOMBS[case], RouteAnswer)
    assert info.value.kind in ("invalid_json", "invalid_schema")


def test_bracket_bomb_answers_fall_back_and_store_everything(tmp_path: Path, hparts: Any,
                                                             registry: SchemaRegistry) -> None:
    tree, judge = llm_tree(tmp_path, hparts, registry, lambda messages: BOMBS["arrays"])
    try:
        reports = tree.observe_many("ana", [{"messages": f"I keep {n} potted ferns on my balcony.",
                                             "at": T0 + timedelta(hours=n)} for n in range(19)])
        assert len(reports) == 19
        assert len(tree.store.observations("ana")) == 19
        assert tree.nodes("ana", "leaf"), "the offline fallback extracted nothing"
        rec = tree.recall("ana", "how many ferns do I keep?")
        assert rec.text
        fallbacks = judge.stats().fallbacks
        assert fallbacks.get("extract", 0) >= 1 and fallbacks.get("route", 0) >= 1, fallbacks
    finally:
        tree.close()


@pytest.mark.parametrize("probabilities", [
    '{"leaf": NaN, "mid": Infinity, "root": 1}',
    '{"leaf": -Infinity, "mid": 0.5, "root": 0.5}',
    '{"leaf": 1e400, "mid": 0, "root": 0}',
])
def test_non_finite_route_probabilities_fall_back(tmp_path: Path, hparts: Any, registry: SchemaRegistry,
                                                  probabilities: str) -> None:
    def answer(messages: list[dict[str, str]]) -> str:
        if messages[0]["content"].startswith("You route"):
            return '{"probabilities": %s}' % probabilities
        return "not json"  # extraction falls back to the offline judge

    tree, judge = llm_tree(tmp_path, hparts, registry, answer)
    try:
        tree.observe("ana", "I bake sourdough bread every weekend.", at=T0)
        rec = tree.recall("ana", "what do I bake?")
        assert rec.text
        assert judge.stats().fallbacks.get("route", 0) >= 1
        route = judge.route("what do I bake?")
        assert all(0.0 <= p <= 1.0 for p in route.probabilities.values())
    finally:
        tree.close()


# -- recall levels ----------------------------------------------------------------------------


@pytest.mark.parametrize("levels", [[None], ["leaf", None], [3], [[]], "leaf"])
def test_recall_refuses_bad_levels(hparts: Any, registry: SchemaRegistry, levels: Any) -> None:
    tree = make_tree("memory://", hparts, registry)
    try:
        tree.observe("ana", "I bake sourdough bread every weekend.", at=T0)
        with pytest.raises(InputError):
            tree.recall("ana", "what do I bake?", levels=levels)
        assert tree.recall("ana", "what do I bake?", levels=["leaf", Level.MID]).text
    finally:
        tree.close()


# -- metadata ---------------------------------------------------------------------------------


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"end": 1}
    for _ in range(depth - 1):
        value = {"k": value}
    return value


@pytest.mark.parametrize("metadata", [
    nested(253), nested(65), {"x": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]},
    {"blob": "x" * 2_000_000}, {"n": float("nan")}, {"n": float("inf")}, {"n": [1.0, float("-inf")]},
    {"n": 2**70}, {1: "non-string key"}, {"set": {1, 2}},
])
def test_metadata_that_cannot_be_stored_and_read_back_is_refused(tmp_path: Path, hparts: Any,
                                                                  registry: SchemaRegistry, metadata: Any) -> None:
    tree = make_tree(tmp_path / "meta.db", hparts, registry)
    try:
        tree.observe("ana", "I bake sourdough bread every weekend.", at=T0)
        before = snapshot(tree)
        with pytest.raises(InputError, match="metadata"):
            tree.observe("ana", "I also bake rye bread.", at=T0 + timedelta(days=1), metadata=metadata)
        with pytest.raises(InputError, match="metadata"):
            tree.observe_many("ana", [{"messages": "I also bake rye bread.", "at": T0, "metadata": metadata}])
        assert snapshot(tree) == before
    finally:
        tree.close()


def test_metadata_within_the_limits_round_trips(tmp_path: Path, hparts: Any, registry: SchemaRegistry) -> None:
    meta = {"deep": nested(30), "blob": "y" * 60_000, "n": [1.5, -2, None, True, "ok"]}
    tree = make_tree(tmp_path / "meta.db", hparts, registry)
    try:
        tree.observe("ana", "I bake sourdough bread every weekend.", at=T0, metadata=meta)
        assert tree.store.observations("ana")[0].metadata == meta
        assert tree.store.checksum("ana")
        doc = orjson.loads(orjson.dumps(tree.export("ana")))
    finally:
        tree.close()
    target = make_tree("memory://", hparts, registry)
    try:
        import_export(target, doc)
        assert target.store.observations("ana")[0].metadata == meta
    finally:
        target.close()


# -- import: the journal ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def export_doc(hparts: Any, registry: SchemaRegistry) -> dict[str, Any]:
    tree = make_tree("memory://", hparts, registry)
    try:
        tree.observe_many("ana", [{"messages": t, "at": T0 + timedelta(days=i)} for i, t in enumerate(
            ["I love spicy food.", "I run every Sunday.", "I love spicy curry.", "I run every Sunday morning.",
             "I love spicy noodles.", "I run on Sunday mornings by the river."] * 2)])
        tree.consolidate("ana")
        leaf = tree.nodes("ana", "leaf")[0]
        tree.forget("ana", leaf.id)
        return orjson.loads(orjson.dumps(tree.export("ana")))
    finally:
        tree.close()


FORGED_EVENTS = {
    "forget without node_id": {"kind": "forget", "payload": {}},
    "forget with a numeric node_id": {"kind": "forget", "payload": {"node_id": 7, "cascade": False}},
    "forget with a non-boolean cascade": {"kind": "forget", "payload": {"node_id": "lf_x", "cascade": "yes"}},
    "forget with an unknown key": {"kind": "forget", "payload": {"node_id": "lf_x", "cascade": False, "x": 1}},
    "observe without observation_id": {"kind": "observe", "payload": {}},
    "observe with a list id": {"kind": "observe", "payload": {"observation_id": ["a"]}},
    "consolidate without now": {"kind": "consolidate", "payload": {"config": {}}},
    "consolidate with a bad now": {"kind": "consolidate", "payload": {"now": "soon"}},
    "consolidate with a naive now": {"kind": "consolidate", "payload": {"now": "2024-03-01T00:00:00"}},
    "consolidate with a bad config": {"kind": "consolidate",
                                      "payload": {"now": "2024-03-01T00:00:00+00:00", "config": {"n_min": -4}}},
    "consolidate with a config that is not an object": {
        "kind": "consolidate", "payload": {"now": "2024-03-01T00:00:00+00:00", "config": [1]}},
    "delete_observation without id": {"kind": "delete_observation", "payload": {"id": "obs_1"}},
    "an unknown kind": {"kind": "teleport", "payload": {}},
}


@pytest.mark.parametrize("case", sorted(FORGED_EVENTS))
def test_import_refuses_forged_journal_events(export_doc: dict[str, Any], hparts: Any, registry: SchemaRegistry,
                                             case: str) -> None:
    doc = json.loads(json.dumps(export_doc))
    last = doc["journal"][-1]
    doc["journal"].append({**FORGED_EVENTS[case], "seq": last["seq"] + 1, "at": last["at"]})
    target = make_tree("memory://", hparts, registry)
    try:
        with pytest.raises(InputError, match=r"journal\[\d+\]"):
            import_export(target, doc)
        assert target.store.counts()["users"] == 0
    finally:
        target.close()


def test_imported_journal_rebuilds(export_doc: dict[str, Any], hparts: Any, registry: SchemaRegistry) -> None:
    target = make_tree("memory://", hparts, registry)
    try:
        import_export(target, export_doc)
        assert target.rebuild("ana").equal
    finally:
        target.close()


@pytest.mark.parametrize("event", [("forget", {}), ("observe", {}), ("consolidate", {"now": "soon"})])
def test_rebuild_of_a_damaged_journal_is_a_typed_error(hparts: Any, registry: SchemaRegistry,
                                                       event: tuple[str, dict[str, Any]]) -> None:
    # A journal written before imports were validated may hold such an event.
    from personatree.errors import StoreError
    from personatree.ports import ChangeSet, JournalEvent

    tree = make_tree("memory://", hparts, registry)
    try:
        tree.observe("ana", "I bake sourdough bread every weekend.", at=T0)
        tree.store.commit(ChangeSet(user_id="ana", events=[JournalEvent(event[0], event[1], NOW)]))
        with pytest.raises(StoreError, match="journal event"):
            tree.rebuild("ana")
    finally:
        tree.close()


# -- delete_user with vacuum on a busy store --------------------------------------------------


def _delete_while_read(tree: PersonaTree, path: Path) -> None:
    """Delete ana with a vacuum while another connection reads: the delete commits and
    the vacuum is left pending."""
    reader = _reader(path)
    try:
        with pytest.raises(VacuumPendingError):
            tree.delete_user("ana", vacuum=True)
    finally:
        reader.close()


def _reader(path: Path) -> sqlite3.Connection:
    """Another connection in the middle of a read: it pins the WAL."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.execute("BEGIN")
    conn.execute("SELECT count(*) FROM observations").fetchone()
    return conn


def _has_secret(path: Path) -> bool:
    return any(p.exists() and SECRET.encode() in p.read_bytes()
               for p in (path, path.with_name(path.name + "-wal")))


@pytest.fixture
def busy_store(tmp_path: Path, hparts: Any, registry: SchemaRegistry) -> Iterator[tuple[PersonaTree, Path]]:
    path = tmp_path / "erase.db"
    # A short lock wait: the WAL truncation waits that long for the reader to finish.
    tree = make_tree(path, hparts, registry, busy_timeout_s=0.3)
    tree.observe("ana", f"My locker code is {SECRET}.", at=T0)
    tree.observe("bo", "I play the cello.", at=T0)
    yield tree, path
    tree.close()


def test_delete_user_vacuum_on_a_busy_store_reports_and_finishes_later(busy_store: tuple[PersonaTree, Path]) -> None:
    tree, path = busy_store
    reader = _reader(path)
    try:
        with pytest.raises(VacuumPendingError) as info:
            tree.delete_user("ana", vacuum=True)
        assert isinstance(info.value, StoreBusyError)
        assert "committed" in str(info.value) and "pending" in str(info.value)
        assert "ana" not in tree.users()
        # Calling again while the reader is still there says the same, not UnknownUserError.
        with pytest.raises(VacuumPendingError):
            tree.delete_user("ana", vacuum=True)
    finally:
        reader.close()
    tree.delete_user("ana", vacuum=True)  # the store is free: the pending vacuum runs now
    assert not _has_secret(path)
    assert tree.store.pending_vacuum() is False
    assert tree.users() == ["bo"]
    with pytest.raises(UnknownUserError):
        tree.delete_user("ana", vacuum=True)  # nothing pending any more: an unknown user again


def test_pending_vacuum_finishes_on_the_next_write(busy_store: tuple[PersonaTree, Path]) -> None:
    tree, path = busy_store
    _delete_while_read(tree, path)
    tree.observe("bo", "I play the cello on Tuesdays.", at=T0 + timedelta(days=1))
    assert tree.store.pending_vacuum() is False
    assert not _has_secret(path)


def test_pending_vacuum_finishes_on_the_next_open(busy_store: tuple[PersonaTree, Path], hparts: Any,
                                                  registry: SchemaRegistry) -> None:
    tree, path = busy_store
    _delete_while_read(tree, path)
    tree.close()
    again = make_tree(path, hparts, registry)
    try:
        assert again.store.pending_vacuum() is False
        assert not _has_secret(path)
        assert again.users() == ["bo"]
    finally:
        again.close()


def test_store_vacuum_completes_a_pending_vacuum(busy_store: tuple[PersonaTree, Path]) -> None:
    tree, path = busy_store
    reader = _reader(path)
    try:
        with pytest.raises(VacuumPendingError):
            tree.delete_user("ana", vacuum=True)
        with pytest.raises(StoreBusyError):
            tree.store.vacuum()
        assert tree.store.pending_vacuum() is True
    finally:
        reader.close()
    tree.store.vacuum()
    assert tree.store.pending_vacuum() is False
    assert not _has_secret(path)


# -- rebuild and recall counters --------------------------------------------------------------


def test_rebuild_keeps_recall_counters(tmp_path: Path, hparts: Any, registry: SchemaRegistry) -> None:
    tree = make_tree(tmp_path / "rb.db", hparts, registry)
    try:
        tree.observe_many("ana", [{"messages": t, "at": T0 + timedelta(days=i)} for i, t in enumerate(
            ["I love spicy food.", "I run every Sunday.", "I love spicy curry.", "I run every Sunday morning.",
             "I love spicy noodles.", "I run on Sunday mornings by the river."] * 2)])
        tree.consolidate("ana")
        for _ in range(40):
            tree.recall("ana", "what food do I love?")
        from personatree.retrieval.access import access_log

        access_log(tree, 32).flush()
        counts = {n.id: (n.recall_count, n.t_access) for n in tree.nodes("ana")}
        assert any(c for c, _ in counts.values())
        assert tree.rebuild("ana").equal
        assert {n.id: (n.recall_count, n.t_access) for n in tree.nodes("ana")} == counts

        # A tree that differs from its journal is rewritten, and keeps its access statistics.
        graph = tree.graph("ana")
        victim = max(graph.nodes(), key=lambda n: n.recall_count)
        from personatree.ports import ChangeSet

        changed = victim.copy()
        changed.logit = -changed.logit + 0.5
        tree.store.commit(ChangeSet(user_id="ana", upsert_nodes=[changed],
                                    expected_version=tree.store.version("ana")))
        tree._cache.pop("ana", None)
        assert not tree.rebuild("ana").equal
        assert {n.id: (n.recall_count, n.t_access) for n in tree.nodes("ana")} == counts
        assert tree.rebuild("ana").equal
    finally:
        tree.close()


# -- MCP --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mcp_server(hparts: Any, registry: SchemaRegistry) -> Iterator[tuple[Any, type[Exception], PersonaTree]]:
    server_mod = pytest.importorskip("personatree.mcp_server")
    _, tool_error = server_mod.server_class()
    tree = make_tree("memory://", hparts, registry)
    tree.observe("ana", "I love spicy food. I run every Sunday.", at=T0)
    yield server_mod.build_server(tree, default_user="ana", default_budget=500), tool_error, tree
    tree.close()


@pytest.mark.parametrize("tool,args,needle", [
    ("recall", {"query": "food", "budget": 0}, "budget"),
    ("recall", {"query": "food", "budget": -3}, "budget"),
    ("recall", {"query": "food", "bugdet": 200}, "bugdet"),
    ("remember", {"text": "I like tea.", "when": "2024-03-01"}, "when"),
    ("explain", {"node_id": "x", "verbose": True}, "verbose"),
    ("profile", {"limit": 0}, "limit"),
    ("profile", {"limit": -1}, "limit"),
    ("forget", {"node_id": "x", "recursive": True}, "recursive"),
])
def test_mcp_tools_check_arguments_like_the_api(mcp_server: Any, tool: str, args: dict[str, Any],
                                                needle: str) -> None:
    server, tool_error, tree = mcp_server
    before = snapshot(tree)
    with pytest.raises(tool_error, match=needle):
        asyncio.run(server.call_tool(tool, args))
    assert snapshot(tree) == before


def test_mcp_recall_without_budget_uses_the_server_default(mcp_server: Any) -> None:
    server, _, _ = mcp_server
    out = asyncio.run(server.call_tool("recall", {"query": "what food do I love?"}))
    assert out


# -- CLI --------------------------------------------------------------------------------------

runner = CliRunner()


@pytest.mark.parametrize("command", [["mcp"], ["observe", "ana", "-"], ["import", "ana", "-"]])
def test_cli_does_not_create_a_store_in_a_missing_folder(tmp_path: Path, command: list[str]) -> None:
    store = tmp_path / "typo" / "dir" / "x.db"
    stdin = '{"messages": [{"role": "user", "content": "I like tea."}]}\n'
    res = runner.invoke(app, [*command, "--store", str(store)], input=stdin)
    assert res.exit_code == 1, res.output
    assert "does not exist" in res.stderr and "--create" in res.stderr, res.stderr
    assert not (tmp_path / "typo").exists()


def test_cli_create_flag_makes_the_folders(tmp_path: Path) -> None:
    store = tmp_path / "new" / "dir" / "x.db"
    stdin = '{"messages": [{"role": "user", "content": "I like green tea."}]}\n'
    res = runner.invoke(app, ["observe", "ana", "-", "--store", str(store), "--create", "--json"], input=stdin)
    assert res.exit_code == 0, res.stderr
    assert store.exists()


@pytest.mark.parametrize("command", [["observe", "ana"], ["import", "ana"]])
def test_cli_reports_the_real_line_of_a_broken_jsonl_file(tmp_path: Path, command: list[str]) -> None:
    lines = [
        {"messages": [{"role": "user", "content": "I like green tea."}]},
        {"messages": [{"role": "user", "content": "I walk my dog at noon."}]},
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(x) for x in lines) + '\n{"messages": [{"role": "user", "content": "oops"\n'
                   + json.dumps(lines[0]) + "\n", encoding="utf-8")
    res = runner.invoke(app, [*command, str(src), "--store", str(tmp_path / "s.db")])
    assert res.exit_code == 1
    assert "line 3" in res.stderr, res.stderr
    assert "line 1" not in res.stderr, res.stderr


def test_every_error_here_is_a_persona_tree_error() -> None:
    assert issubclass(VacuumPendingError, PersonaTreeError)
