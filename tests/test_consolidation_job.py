"""The scheduled job across users: watermark, locks, failures, process pool vs Dask,
and growth bounds on a 10k-leaf user."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path

import pytest

from personatree import PersonaTree, PersonaTreeConfig
from personatree.config import ConsolidationConfig
from personatree.cli.consolidate import job_main
from personatree.consolidation_job import changed_users, run_job
from personatree.consolidate.locks import FileLocks, default_lock_dir
from personatree.consolidate.synthetic import NOISE, planted_leaves
from personatree.ports import ChangeSet
from personatree.types import Level, Node

from .conftest import T0

NOW = T0 + timedelta(days=120)
# Bag-of-words hashing vectors are less cohesive than sentence embeddings: lower gates.
CFG = PersonaTreeConfig(embedder="hashing:256",
                        consolidation=ConsolidationConfig(min_cohesion=0.2, member_similarity=0.25))


def fill(path: Path, users: list[str], per_pattern: int = 8) -> None:
    with PersonaTree.open(path, CFG) as tree:
        for k, u in enumerate(users):
            leaves = planted_leaves(3, per_pattern, T0, seed=k)
            tree.observe_many(u, [{"messages": [{"role": "user", "content": s.content}], "at": s.at,
                                   "session_id": s.session_id} for s in leaves])


@pytest.fixture()
def store(tmp_path: Path) -> str:
    path = tmp_path / "m.db"
    fill(path, ["u0", "u1", "u2"])
    return str(path)


def test_job_consolidates_changed_users_once_and_keeps_a_watermark(store) -> None:
    first = run_job(store, workers=1, now=NOW, config=CFG)
    assert first.exit_code == 0
    assert {r.user_id: r.status for r in first.results} == {"u0": "consolidated", "u1": "consolidated",
                                                            "u2": "consolidated"}
    again = run_job(store, workers=1, now=NOW, config=CFG)
    assert all(r.status == "unchanged" for r in again.results)
    with PersonaTree.open(store, CFG) as tree:
        assert changed_users(tree.store) == []
        tree.observe("u1", "I repainted the kitchen door.", at=NOW, session_id="x")
        assert changed_users(tree.store) == ["u1"]
    third = run_job(store, workers=1, now=NOW, config=CFG)
    assert {r.user_id: r.status for r in third.results}["u1"] in ("consolidated", "up-to-date")
    assert [r.user_id for r in third.results if r.status != "unchanged"] == ["u1"]


def test_a_locked_user_is_skipped_and_picked_up_by_the_next_run(store) -> None:
    locks = FileLocks(default_lock_dir(store))  # type: ignore[arg-type]
    assert locks.acquire("u1")
    try:
        report = run_job(store, workers=1, now=NOW, config=CFG)
        status = {r.user_id: r.status for r in report.results}
        assert status == {"u0": "consolidated", "u1": "locked", "u2": "consolidated"}
        assert report.exit_code == 0
    finally:
        locks.release("u1")
    status = {r.user_id: r.status for r in run_job(store, workers=1, now=NOW, config=CFG).results}
    assert status["u1"] == "consolidated"


def test_one_failing_user_fails_the_run_but_the_others_finish(store, capsys) -> None:
    with PersonaTree.open(store, CFG) as tree:
        # A mid of a schema type later removed from the registry: planning that user fails.
        bad = Node("md_retired", "u1", Level.MID, "retired_type", "gone", {}, T0, T0, 0.0, 1)
        tree.store.commit(ChangeSet(user_id="u1", upsert_nodes=[bad]))
    code = job_main([store, "--workers", "1", "--now", NOW.isoformat(), "--json",
                     "--config", _config_file(store)])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["exit_code"] == 1
    status = {r["user_id"]: r["status"] for r in report["results"]}
    assert status == {"u0": "consolidated", "u1": "failed", "u2": "consolidated"}
    assert "retired_type" in next(r["error"] for r in report["results"] if r["user_id"] == "u1")
    status = {r.user_id: r.status for r in run_job(store, workers=1, now=NOW, config=CFG).results}
    assert status == {"u0": "unchanged", "u1": "failed", "u2": "unchanged"}


def _config_file(store: str) -> str:
    path = Path(store).with_suffix(".json")
    path.write_text(CFG.model_dump_json())
    return str(path)


def _checksums(path: str, users: list[str]) -> dict[str, str]:
    with PersonaTree.open(path, CFG) as tree:
        return {u: tree.store.checksum(u) for u in users}


def test_dask_local_cluster_gives_the_same_result_as_the_process_pool(tmp_path: Path) -> None:
    from dask.distributed import Client, LocalCluster

    users = [f"u{i}" for i in range(6)]
    a = tmp_path / "a.db"
    fill(a, users)
    b = tmp_path / "b.db"
    shutil.copy(a, b)
    pool = run_job(str(a), workers=2, now=NOW, config=CFG)
    with LocalCluster(n_workers=2, processes=False, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        dask = run_job(str(b), scheduler=client, now=NOW, config=CFG)
    assert pool.exit_code == dask.exit_code == 0
    assert [(r.user_id, r.status, r.counts) for r in pool.results] == \
        [(r.user_id, r.status, r.counts) for r in dask.results]
    assert _checksums(str(a), users) == _checksums(str(b), users)


@pytest.mark.slow
def test_ten_thousand_noisy_leaves_stay_within_the_growth_bounds(tmp_path: Path) -> None:
    cons = CFG.consolidation.model_copy(update={"k_leaves": 20, "t_orphan_days": 300, "max_exact": 2000})
    cfg = CFG.model_copy(update={"consolidation": cons})
    n = 10_000
    words = [w.strip(".,").lower() for s in NOISE for w in s.split()]
    items = []
    for i in range(n):
        if i % 4 == 0:  # a quarter repeats one of ten patterns
            text = f"I always drink green tea number {i % 10} with honey."
        else:
            text = " ".join(words[(i * 7 + j * 13) % len(words)] for j in range(6)) + f" {i}."
        items.append({"messages": [{"role": "user", "content": text}],
                      "at": T0 + timedelta(days=i * 400 / n), "session_id": f"s{i // 20}"})
    now = T0 + timedelta(days=401)
    with PersonaTree.open(tmp_path / "g.db", cfg) as tree:
        tree.observe_many("u", items, batch_size=1000)
        leaves_before = len(tree.nodes("u", "leaf"))
        plan = tree.consolidate("u", now=now)
        g = tree.graph("u")
        g.check()
        young = sum(1 for n_ in g.nodes(Level.LEAF) if g.parent(n_.id) is None)
        mids = list(g.nodes(Level.MID))
        assert plan.deletions and plan.method == "knn"
        # every orphan left is younger than T_orphan; every mid holds at most K leaves
        latest = max(n_.t_last for n_ in g.nodes(Level.LEAF))  # orphans age on the user's activity
        assert all((latest - n_.t_last).days <= 300 for n_ in g.nodes(Level.LEAF) if g.parent(n_.id) is None)
        assert all(len(g.children(m.id)) <= cons.k_leaves for m in mids)
        assert len(g) <= young + len(mids) * (cons.k_leaves + 1) + sum(1 for _ in g.nodes(Level.ROOT))
        assert sum(1 for _ in g.nodes(Level.LEAF)) < leaves_before
        assert len(tree.store.observations("u")) == n  # the log keeps every observation


def test_cli_consolidate_user_dry_run_then_apply(store) -> None:
    from typer.testing import CliRunner

    from personatree.cli import app

    runner = CliRunner()
    dry = runner.invoke(app, ["consolidate", "u0", "--dry-run", "--json", "--store", store,
                              "--now", NOW.isoformat()])
    assert dry.exit_code == 0, dry.output
    plan = json.loads(dry.stdout)
    assert plan["user_id"] == "u0" and plan["format"].startswith("personatree.consolidation-plan")
    with PersonaTree.open(store, CFG) as tree:
        assert not any(e.kind == "consolidate" for e in tree.store.events("u0"))
    default = runner.invoke(app, ["consolidate", "u0", "--store", store, "--now", NOW.isoformat()])
    assert default.exit_code == 0 and "dry run" in default.stdout
    with PersonaTree.open(store, CFG) as tree:
        assert not any(e.kind == "consolidate" for e in tree.store.events("u0"))
    done = runner.invoke(app, ["consolidate", "u0", "--apply", "--store", store, "--now", NOW.isoformat()])
    assert done.exit_code == 0 and "consolidation plan for u0" in done.stdout
    with PersonaTree.open(store, CFG) as tree:
        assert sum(e.kind == "consolidate" for e in tree.store.events("u0")) == 1
    both = runner.invoke(app, ["consolidate", "u0", "--all", "--store", store])
    assert both.exit_code == 2
