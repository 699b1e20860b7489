"""The ``personatree`` command line, driven by Typer's own ``CliRunner``.

Every command is run for real (real SQLite in ``tmp_path``, the real packaged
embedder), including bad arguments and a missing store: each failure must be one
clean line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from personatree import PersonaTree
from personatree.cli import _register_components, app, chat_export_interactions
from personatree.demo import sample_interactions
from personatree.ports import ChangeSet
from personatree.types import Edge, EdgeKind, Level, Node

runner = CliRunner()

CORE = ["demo", "observe", "import", "show", "explain", "search", "stats", "users", "export", "forget",
        "delete-user", "rebuild", "profile", "view", "mcp"]
COMPONENT = ["consolidate", "recall", "bench"]


def registered() -> set[str]:
    """Names of the commands and command groups on the app (components add either)."""
    names = {c.name or c.callback.__name__ for c in app.registered_commands if c.callback is not None}
    return names | {g.name for g in app.registered_groups if g.name}


def run(*args: str, env: dict[str, str] | None = None, input: str | None = None) -> Any:
    return runner.invoke(app, list(args), env=env, input=input, catch_exceptions=False)


def assert_clean_failure(res: Any, *needles: str, code: int = 1) -> None:
    """One clean error line, the expected exit code, and no traceback anywhere."""
    assert res.exit_code == code, (res.exit_code, res.stdout, res.stderr)
    text = res.stdout + res.stderr
    assert "Traceback" not in text
    for needle in needles:
        assert needle in res.stderr, res.stderr


def sample_jsonl(path: Path) -> Path:
    _, items = sample_interactions()
    with path.open("w", encoding="utf-8") as fh:
        for it in items:
            fh.write(json.dumps({**it, "at": it["at"].isoformat()}) + "\n")
    return path


def seed_claims(store: str, user: str) -> str:
    """Give the user two patterns, one claim and one conflict, written through the Store port.

    Consolidation is tested in its own suite; the CLI only needs a tree with every
    level present, built deterministically here. Returns the root id.
    """
    tree = PersonaTree.open(store)
    try:
        g = tree.graph(user)
        leaves = sorted(g.nodes(Level.LEAF), key=lambda n: n.t_first)
        hike = [n for n in leaves if "hik" in n.content.lower() and "stopped" not in n.content.lower()]
        quiet = [n for n in leaves if "quiet" in n.content.lower()]
        stop = [n for n in leaves if "stopped hiking" in n.content.lower()]
        assert hike and quiet and stop
        at = max(n.t_last for n in leaves)

        def node(nid: str, level: Level, kind: str, text: str, members: list[Node], logit: float) -> Node:
            emb = np.mean([m.embedding for m in members], axis=0).astype("float32")
            return Node(nid, user, level, kind, text, {}, min(m.t_first for m in members),
                        max(m.t_last for m in members), logit, len(members), 0, emb / np.linalg.norm(emb))

        m1 = node("mid_hike", Level.MID, "preference", "Loves hiking and being out in nature", hike, 2.2)
        m2 = node("mid_quiet", Level.MID, "preference", "Prefers small, quiet places to stay", quiet, 1.6)
        root = node("root_calm", Level.ROOT, "value", "Values calm, nature and simple pleasures", [m1, m2], 1.8)
        m1.n_conflict = len(stop)
        edges = [Edge(n.id, m1.id, EdgeKind.SUPPORT, 0.8, 0.8, "same activity", at) for n in hike]
        edges += [Edge(n.id, m2.id, EdgeKind.SUPPORT, 0.7, 0.7, "same preference", at) for n in quiet]
        edges += [Edge(n.id, m1.id, EdgeKind.CONFLICT, -0.7, -0.7, "stopped hiking", at) for n in stop]
        edges += [Edge(m.id, root.id, EdgeKind.SUPPORT, 0.8, 0.8, "calm outdoor life", at) for m in (m1, m2)]
        tree.store.commit(ChangeSet(user_id=user, upsert_nodes=[m1, m2, root], upsert_edges=edges,
                                    expected_version=tree.store.version(user)))
        return root.id
    finally:
        tree.close()


@pytest.fixture(scope="module")
def sample_store(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> tuple[str, str]:
    """A store holding the shipped sample user, observed through the CLI, plus seeded claims."""
    d = tmp_path_factory.mktemp("cli")
    store = str(d / "sample.db")
    user, _ = sample_interactions()
    res = run("observe", user, str(sample_jsonl(d / "sample.jsonl")), "--store", store, "--json")
    assert res.exit_code == 0, res.stderr
    rows = json.loads(res.stdout)
    assert len(rows) == 23 and all(not r["duplicate"] for r in rows)
    seed_claims(store, user)
    return store, user


# -- the command set -----------------------------------------------------------------------


def test_every_command_is_registered() -> None:
    names = registered()
    assert set(CORE) <= names
    res = run("--help")
    assert res.exit_code == 0
    for name in CORE:
        assert name in res.stdout


def test_component_registration_skips_only_missing_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A component that is not part of this build is skipped ...
    assert _register_components(("pt_not_installed_component.command",)) == []
    # ... but a component whose own imports fail is a bug, and must not be hidden.
    pkg = tmp_path / "pt_broken_component"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "command.py").write_text("import pt_dependency_that_does_not_exist_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="pt_dependency_that_does_not_exist_xyz"):
        _register_components(("pt_broken_component.command",))
    (pkg / "command2.py").write_text("raise RuntimeError('component bug')\n")
    with pytest.raises(RuntimeError, match="component bug"):
        _register_components(("pt_broken_component.command2",))
    sys.modules.pop("pt_broken_component", None)


# -- writing -------------------------------------------------------------------------------


def test_observe_stdin_messages_and_json(tmp_path: Path, embedder: Any) -> None:
    store = str(tmp_path / "m.db")
    lines = "\n".join(json.dumps({"messages": [{"role": "user", "content": c}], "at": "2024-03-01T10:00:00Z"})
                      for c in ["I am allergic to peanuts.", "I run every morning before work."])
    res = run("observe", "ana", "-", "--store", store, "--json", input=lines)
    assert res.exit_code == 0, res.stderr
    rows = json.loads(res.stdout)
    assert [r["leaves"] for r in rows] == [1, 1]
    # The same input again is a no-op: observation ids derive from the content and time.
    again = json.loads(run("observe", "ana", "-", "--store", store, "--json", input=lines).stdout)
    assert all(r["duplicate"] for r in again)
    table = run("observe", "ana", "-", "--store", store, input=json.dumps({"role": "user", "content": "I love tea."}))
    assert table.exit_code == 0 and "observation" in table.stdout


def test_observe_bad_input_is_one_clean_line(tmp_path: Path) -> None:
    store = str(tmp_path / "m.db")
    assert_clean_failure(run("observe", "ana", "-", "--store", store, input="{not json"), "error: InputError")
    assert_clean_failure(run("observe", "ana", "-", "--store", store, input=""), "no input")
    assert_clean_failure(run("observe", "ana", str(tmp_path / "missing.jsonl"), "--store", store), "cannot read")
    assert_clean_failure(run("observe", "ana", "-", "--store", store, input='[{"foo": 1}]'), "item 0")


def test_import_chat_export_groups_turns_and_is_idempotent(tmp_path: Path, embedder: Any) -> None:
    export = tmp_path / "export.jsonl"
    conversations = [
        {"id": "c1", "title": "moving", "create_time": 1709370000, "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "I just moved to Lisbon to work as a nurse.",
             "timestamp": "2024-03-02T10:00:00Z"},
            {"role": "assistant", "content": "Congratulations on the move!"},
            {"role": "user", "content": [{"type": "text", "text": "I love hiking on weekends."}],
             "timestamp": 1709460000},
            {"role": "assistant", "content": "Sintra has great trails."},
        ]},
        {"id": "c2", "messages": [{"role": "user", "content": "I'm allergic to peanuts."},
                                  {"role": "assistant", "content": "Noted."}]},
    ]
    export.write_text("\n".join(json.dumps(c) for c in conversations) + "\n")
    items, counts = chat_export_interactions(export.read_text())
    assert counts == {"conversations": 2, "interactions": 3, "skipped": 0, "formats": {"messages": 2},
                      "left_out": {"system": 1}}
    assert [len(i["messages"]) for i in items] == [2, 2, 2]
    assert items[0]["messages"][0] == {"role": "user", "content": "I just moved to Lisbon to work as a nurse."}
    assert items[1]["at"] == datetime.fromtimestamp(1709460000, tz=UTC)
    assert items[0]["session_id"] == "c1" and items[0]["metadata"]["title"] == "moving"

    store = str(tmp_path / "imp.db")
    first = json.loads(run("import", "ana", str(export), "--store", store, "--json").stdout)
    assert first["new"] == 3 and first["leaves"] >= 3 and first["duplicates"] == 0
    second = json.loads(run("import", "ana", str(export), "--store", store, "--json").stdout)
    assert second["new"] == 0 and second["duplicates"] == 3
    shown = run("show", "ana", "--store", store)
    assert shown.exit_code == 0 and "I love hiking on weekends." in shown.stdout
    assert "[fact" in shown.stdout or "[preference" in shown.stdout  # brackets survive rich markup


def test_import_bad_export(tmp_path: Path) -> None:
    store = str(tmp_path / "imp.db")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": [{"role": "user", "content": "hi"}]}\n{"title": "no messages"}\n')
    assert_clean_failure(run("import", "ana", str(bad), "--store", store), "line 2", "messages")
    only_assistant = tmp_path / "a.jsonl"
    only_assistant.write_text('{"messages": [{"role": "assistant", "content": "Hello!"}]}\n')
    assert_clean_failure(run("import", "ana", str(only_assistant), "--store", store), "no user messages")
    assert_clean_failure(run("import", "ana", "-", "--store", store, input="[1, 2"), "not JSONL")
    assert_clean_failure(run("import", "ana", "--store", store), "Missing argument", code=2)


# -- reading -------------------------------------------------------------------------------


def test_show_stats_users_search(sample_store: tuple[str, str]) -> None:
    store, user = sample_store
    shown = run("show", user, "--store", store)
    assert shown.exit_code == 0
    assert "Values calm, nature and simple pleasures" in shown.stdout and "[value" in shown.stdout
    stats = json.loads(run("stats", user, "--store", store, "--json").stdout)
    assert stats["roots"] == 1 and stats["mids"] == 2 and stats["observations"] == 23
    assert json.loads(run("users", "--store", store, "--json").stdout) == [user]
    hits = json.loads(run("search", user, "peanut allergy", "-k", "3", "--store", store, "--json").stdout)
    assert len(hits) == 3 and "peanut" in hits[0]["content"].lower()


def test_explain_profile_view_export(sample_store: tuple[str, str], tmp_path: Path) -> None:
    store, user = sample_store
    ex = json.loads(run("explain", user, "root_calm", "--store", store, "--json").stdout)
    assert [s["node_id"] for s in ex["path"]] == ["root_calm"]
    assert {s["node_id"] for s in ex["support"]} == {"mid_hike", "mid_quiet"}
    text = run("explain", user, "mid_hike", "--store", store).stdout
    assert "contradicted by" in text and "stopped hiking" in text

    prof = run("profile", user, "--store", store, "--json")
    block = json.loads(prof.stdout)
    assert block["lines"][0]["node_id"] == "root_calm" and "Values calm" in block["text"]

    out = tmp_path / "tree.html"
    res = run("view", user, "--out", str(out), "--store", store)
    assert res.exit_code == 0 and out.exists()
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and 'id="pt-data"' in page and "Values calm" in page
    assert "<script src" not in page and "<link" not in page  # self-contained

    dump = tmp_path / "export.json"
    assert run("export", user, "-o", str(dump), "--store", store).exit_code == 0
    data = json.loads(dump.read_text())
    assert data["user_id"] == user and len(data["observations"]) == 23
    assert data["format"] == "personatree.export/1"


def test_the_profile_lists_what_the_block_says_a_changed_claim_included(sample_store: tuple[str, str]) -> None:
    store, user = sample_store
    two = json.loads(run("profile", user, "--store", store, "--json", "--limit", "2").stdout)["lines"]
    assert [x["section"] for x in two].count("claims") == 2  # as many claims as asked
    block = json.loads(run("profile", user, "--store", store, "--json", "--limit", "3").stdout)
    lines = block["lines"]
    sections = [x["section"] for x in lines]
    assert sections == sorted(sections) and sections.count("claims") == 3  # claims first
    # Every line is the block's own, so the hiking pattern reads as changed (its stored
    # text alone says she loves hiking), with the confidence the block shows, and the
    # statement that changed it is quoted among the claims.
    assert all(x["content"] in block["text"] for x in lines)
    hike = next(x for x in lines if x["node_id"] == "mid_hike")
    assert "changed 2024-06-22" in hike["content"] and f"{hike['confidence']:.2f}" in hike["content"]
    assert any("stopped hiking" in x["content"] for x in lines if x["section"] == "claims")
    # The recent statements are all listed, the latest included, whatever --limit says.
    recent = [x for x in lines if x["section"] == "recent"]
    assert recent and any("guesthouse in Porto" in x["content"] for x in recent)
    table = run("profile", user, "--store", store, "--limit", "3").stdout
    assert "changed" in table and "guesthouse in" in table


@pytest.mark.slow  # the first recall loads the tokenizer; consolidation runs a full pass
def test_recall_and_consolidate_commands(sample_store: tuple[str, str]) -> None:
    store, user = sample_store
    names = registered()
    if "recall" not in names and "consolidate" not in names:
        pytest.skip("neither the retrieval nor the consolidation component is in this build")
    if "recall" in names:
        rec = json.loads(run("recall", user, "What should I cook for her?", "--budget", "200",
                             "--store", store, "--json").stdout)
        assert 0 < rec["tokens"] <= 200 and rec["text"]
        own = json.loads(run("recall", user, "Friends are coming over tonight.", "--from-user", "--budget", "200",
                             "--store", store, "--json").stdout)
        assert 0 < own["tokens"] <= 200
        assert_clean_failure(run("recall", user, "   ", "--store", store), "error:")
    if "consolidate" in names:
        res = run("consolidate", user, "--dry-run", "--json", "--store", store, "--now", "2024-07-01T00:00:00+00:00")
        assert res.exit_code == 0, res.stderr


def test_bench_command_if_present() -> None:
    if "bench" not in registered():
        pytest.skip("the bench component is not in this build")
    assert run("bench", "--help").exit_code == 0


# -- changing ------------------------------------------------------------------------------


def test_forget_rebuild_delete_user(tmp_path: Path, embedder: Any) -> None:
    store = str(tmp_path / "f.db")
    lines = "\n".join(json.dumps({"messages": [{"role": "user", "content": c}], "at": "2024-03-01T10:00:00Z"})
                      for c in ["I am allergic to peanuts.", "I run every morning before work."])
    assert run("observe", "ana", "-", "--store", store, input=lines).exit_code == 0
    nodes = json.loads(run("export", "ana", "--store", store).stdout)["nodes"]
    victim = next(n["id"] for n in nodes if "peanuts" in n["content"])
    rep = json.loads(run("forget", "ana", victim, "--store", store, "--json").stdout)
    assert rep["removed"] == [victim]
    assert_clean_failure(run("forget", "ana", victim, "--store", store), "UnknownNodeError")
    rebuilt = json.loads(run("rebuild", "ana", "--store", store, "--json").stdout)
    assert rebuilt["nodes"] == 1
    assert_clean_failure(run("delete-user", "ana", "--store", store), "--yes", code=2)
    assert run("delete-user", "ana", "--yes", "--store", store).exit_code == 0
    assert_clean_failure(run("stats", "ana", "--store", store), "UnknownUserError")


# -- failures ------------------------------------------------------------------------------

READERS = [
    ["show", "ana"], ["explain", "ana", "n1"], ["search", "ana", "q"], ["stats", "ana"], ["users"],
    ["export", "ana"], ["forget", "ana", "n1"], ["delete-user", "ana", "--yes"], ["rebuild", "ana"],
    ["profile", "ana"], ["view", "ana"],
]


@pytest.mark.parametrize("args", READERS, ids=lambda a: a[0])
def test_missing_store_is_refused_and_not_created(args: list[str], tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "memory.db"
    assert_clean_failure(run(*args, "--store", str(missing)), "no store at")
    assert not missing.exists()
    # The environment variable names the store too.
    res = run(*args, env={"PERSONATREE_STORE": f"sqlite:///{missing}"})
    assert_clean_failure(res, "no store at")


def test_component_readers_refuse_a_missing_store(tmp_path: Path) -> None:
    missing = str(tmp_path / "none.db")
    if "recall" in registered():
        assert_clean_failure(run("recall", "ana", "q", "--store", missing), "no store at")
    if "consolidate" in registered():
        res = run("consolidate", "ana", "--store", missing)
        assert res.exit_code != 0 and "Traceback" not in res.stdout + res.stderr


@pytest.mark.parametrize("args,needle", [
    (["search", "ana", "q", "-k", "0"], "Invalid value"),
    (["profile", "ana", "--limit", "0"], "Invalid value"),
    (["mcp", "--port", "0"], "Invalid value"),
    (["no-such-command"], "No such command"),
    (["show"], "Missing argument"),
    (["explain", "ana"], "Missing argument"),
])
def test_bad_arguments_are_usage_errors(args: list[str], needle: str) -> None:
    assert_clean_failure(run(*args), needle, code=2)


def test_bad_values_are_clean_errors(sample_store: tuple[str, str], tmp_path: Path) -> None:
    store, user = sample_store
    assert_clean_failure(run("search", user, "q", "--level", "banana", "--store", store), "unknown level")
    assert_clean_failure(run("profile", "nobody", "--store", store), "UnknownUserError")
    assert_clean_failure(run("view", user, "-o", str(tmp_path / "no" / "dir" / "x.html"), "--store", store),
                         "FileNotFoundError")
    assert_clean_failure(run("show", user, "--store", "postgresql://localhost/db"), "error:")
    assert_clean_failure(run("show", user, "--store", str(tmp_path)), "error: StoreError")  # a directory
    assert_clean_failure(run("show", user, "--store", "ftp://x"), "unknown store URL scheme")
    assert_clean_failure(run("mcp", "--transport", "carrier-pigeon", "--store", store), "unknown transport")
    assert_clean_failure(run("mcp", "--lock-user", "--store", store), "--lock-user needs --user")
