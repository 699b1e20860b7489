"""The harness end to end through the real API (tiny synthetic data, the real embedder):
the memory build never sees questions, a quick run scores every system, the reports
and the CLI work, and the ingest benchmark runs on a tiny file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from personatree.api import PersonaTree
from personatree_bench import (
    SYSTEMS,
    load_locomo,
    markdown,
    plot_recall,
    run_benchmark,
    run_ingest_benchmark,
    strip_questions,
)
from personatree_bench.types import Dataset

from .test_bench_data import write_locomo

_VOLATILE_NODE = {"recall_count", "t_access"}


def _memory(export: dict[str, Any]) -> dict[str, Any]:
    """An export without what reading the memory changes (access counts, version, access events)."""
    return {
        "observations": export["observations"],
        "nodes": sorted(({k: v for k, v in n.items() if k not in _VOLATILE_NODE} for n in export["nodes"]),
                        key=lambda n: n["id"]),
        "edges": sorted(export["edges"], key=lambda e: (e["src"], e["dst"])),
        "journal": [{k: v for k, v in e.items() if k != "seq"} for e in export["journal"]
                    if e["kind"] in ("observe", "forget", "consolidate")],
    }


def _run_and_export(dataset: Dataset, db: Path, embedder: Any) -> dict[str, Any]:
    run_benchmark(dataset, ["personatree"], budgets=[200], topk=[], embedder=embedder,
                  engine_options={"path": db, "keep_users": True})
    with PersonaTree.open(db, embedder=embedder) as tree:
        return _memory(tree.export(dataset.conversations[0].id))


def test_memory_build_cannot_see_questions(tmp_path: Path, embedder: Any) -> None:
    full = load_locomo(write_locomo(tmp_path))
    stripped = Dataset(full.name, tuple(strip_questions(c) for c in full.conversations), full.meta)
    assert full.n_questions > 0 and stripped.n_questions == 0
    with_qa = _run_and_export(full, tmp_path / "with_qa.db", embedder)
    without_qa = _run_and_export(stripped, tmp_path / "without_qa.db", embedder)
    assert with_qa["nodes"], "the memory should not be empty"
    assert with_qa == without_qa


def test_quick_run_scores_every_system(tmp_path: Path, embedder: Any) -> None:
    ds = load_locomo(write_locomo(tmp_path))
    result = run_benchmark(ds, SYSTEMS, budgets=[40, 400], topk=[1, 3], embedder=embedder)
    assert result.systems == list(SYSTEMS)
    n_q = ds.n_questions
    assert len(result.records) == len(SYSTEMS) * n_q * 4
    for r in result.records:
        if r.mode == "budget":
            assert r.tokens <= r.value  # the budget is never exceeded
            assert set(r.shown) <= {t.id for t in ds.conversations[0].turns}
    # with room for everything, every system that retrieves finds every gold turn
    for system in ("personatree-leaves", "dense", "dense+bm25", "recency"):
        assert result.recall(system, 400) == pytest.approx(1.0), system
    # a tight budget separates retrieval from recency
    assert result.recall("dense", 40) > result.recall("recency", 40)
    s = result.summary["personatree"]["budget"][400]
    assert {"4", "1", "2", "7", "3", "5"} <= set(s["categories"])
    assert s["adversarial"]["n"] == 1 and s["overall"]["n"] == n_q - 1
    assert result.ingest["personatree"]["seconds"] > 0
    assert result.ingest["personatree"]["seconds"] == result.ingest["personatree-leaves"]["seconds"]
    assert result.ingest["personatree"]["seconds"] == result.ingest["personatree-tiered"]["seconds"]
    assert result.recall("personatree-tiered", 400) > result.recall("recency", 40)
    assert result.growth["recency"]["tokens_per_100_turns"] == 0
    assert result.growth["dense"]["tokens_per_100_turns"] > 0

    text = markdown(result)
    assert "| personatree |" in text and "4 single-hop" in text and "adversarial [1], apart" in text
    png = plot_recall(result, tmp_path / "recall.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    saved = json.loads(result.save(tmp_path / "r.json").read_text())
    assert saved["dataset"] == "locomo" and len(saved["records"]) == len(result.records)
    assert saved["summary"]["dense"]["budget"]["400"]["overall"]["recall"] == pytest.approx(1.0)


def test_cli_bench_locomo_and_ingest(tmp_path: Path) -> None:
    from personatree.cli import app

    path = write_locomo(tmp_path)
    runner = CliRunner()
    res = runner.invoke(app, ["bench", "locomo", str(path), "--systems", "dense,recency", "--budgets", "50,400",
                              "--topk", "2", "--out", str(tmp_path / "o.json"), "--plot", str(tmp_path / "p.png"),
                              "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "| dense |" in res.output and (tmp_path / "o.json").exists() and (tmp_path / "p.png").exists()
    bad = runner.invoke(app, ["bench", "locomo", str(tmp_path / "missing.json")])
    assert bad.exit_code == 1 and "does not exist" in bad.output
    bad = runner.invoke(app, ["bench", "locomo", str(path), "--budgets", "x"])
    assert bad.exit_code != 0
    res = runner.invoke(app, ["bench", "ingest", str(path), "--batch-size", "4", "--out", str(tmp_path / "i.json")])
    assert res.exit_code == 0, res.output
    assert "ratio engine/bare" in res.output
    assert json.loads((tmp_path / "i.json").read_text())["turns"] == 7


def test_ingest_benchmark_on_a_tiny_file(tmp_path: Path, embedder: Any) -> None:
    convs = load_locomo(write_locomo(tmp_path)).conversations
    res = run_ingest_benchmark(convs, embedder, batch_size=4)
    assert res.turns == 7 and len(res.bare_runs) == 2
    assert res.engine_seconds > 0 and res.bare_seconds > 0
    assert res.ratio == pytest.approx(res.bare_seconds / res.engine_seconds)
    assert res.leaves > 0
    assert res.to_dict()["goal_ratio"] == 0.85


def test_cli_bench_ingest_compares_embedders_in_one_run(tmp_path: Path) -> None:
    from personatree.cli import app

    path = write_locomo(tmp_path)
    res = CliRunner().invoke(app, ["bench", "ingest", str(path), "--batch-size", "4", "--embedders",
                                   "hashing:64,hashing:32", "--out", str(tmp_path / "i.json")])
    assert res.exit_code == 0, res.output
    assert "| hashing:32 |" in res.output and "engine / first embedder's engine" in res.output
    both = json.loads((tmp_path / "i.json").read_text())
    assert set(both) == {"hashing:64", "hashing:32"} and both["hashing:32"]["turns"] == 7
