"""Run every system over a dataset: ingest each stream, ask its questions, keep the records.

The runner hands a system only a conversation's turns while it builds memory; the
questions are asked afterwards, so no system can peek at questions or evidence.
"""

from __future__ import annotations

import platform
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

import orjson

from .metrics import QueryRecord, growth_per_100_turns, summarize
from .output import write_json
from .protocol import System
from .resources import CachedEmbedder, default_embedder, make_token_counter
from .systems import SYSTEMS, build_systems
from .types import Conversation, Dataset

if TYPE_CHECKING:
    from personatree import Embedder

__all__ = ["BenchResult", "run_benchmark", "DEFAULT_BUDGETS", "DEFAULT_TOPK"]

DEFAULT_BUDGETS = (500, 1000, 2000)
DEFAULT_TOPK = (5, 10)


@dataclass
class BenchResult:
    """Everything one run measured.

    Attributes
    ----------
    dataset : str
    systems : list of str
    budgets : list of int
    topk : list of int
    records : list of QueryRecord
        One per (system, question, budget or k).
    summary : dict
        :func:`personatree_bench.metrics.summarize` of the records.
    ingest : dict
        Per system: ``seconds``, ``turns``, ``turns_per_s``, ``per_conversation``.
    growth : dict
        Per system: context growth per 100 turns (see :mod:`~personatree_bench.metrics`).
    meta : dict
        Dataset notes, options, versions, timings.
    """

    dataset: str
    systems: list[str]
    budgets: list[int]
    topk: list[int]
    records: list[QueryRecord] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    ingest: dict[str, Any] = field(default_factory=dict)
    growth: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def recall(self, system: str, budget: int, category: str | None = None) -> float | None:
        """Headline recall of ``system`` at ``budget`` (optionally one category)."""
        entry = self.summary.get(system, {}).get("budget", {}).get(budget)
        if entry is None:
            return None
        agg = entry["overall"] if category is None else entry["categories"].get(category, {})
        return agg.get("recall")

    def to_dict(self, *, with_records: bool = True) -> dict[str, Any]:
        """JSON-ready form (records included unless ``with_records`` is false)."""
        out: dict[str, Any] = {
            "format": "personatree.bench/1",
            "dataset": self.dataset,
            "systems": self.systems,
            "budgets": self.budgets,
            "topk": self.topk,
            "summary": self.summary,
            "ingest": self.ingest,
            "context_growth_per_100_turns": self.growth,
            "meta": self.meta,
        }
        if with_records:
            out["records"] = [
                {
                    "system": r.system, "conv": r.conv_id, "question": r.question_id,
                    "category": r.category, "adversarial": r.adversarial, "mode": r.mode,
                    "value": r.value, "gold": list(r.gold), "shown": list(r.shown),
                    "tokens": r.tokens, "seconds": round(r.seconds, 6),
                }
                for r in self.records
            ]
        return out

    def save(self, path: str | Path, *, with_records: bool = True) -> Path:
        """Write :meth:`to_dict` as JSON to ``path``."""
        return write_json(path, self.to_dict(with_records=with_records))


def _ask(system: System, conv: Conversation, budgets: Sequence[int], topk: Sequence[int]) -> list[QueryRecord]:
    out: list[QueryRecord] = []
    for q in conv.questions:
        base = dict(system=system.name, conv_id=conv.id, question_id=q.id, category=q.category,
                    adversarial=q.adversarial, gold=q.evidence)
        for b in budgets:
            ctx = system.retrieve(conv.id, q.text, q.at, b, from_user=q.from_user)
            out.append(QueryRecord(mode="budget", value=b, shown=ctx.turn_ids, tokens=ctx.tokens,
                                   seconds=ctx.seconds, **base))  # type: ignore[arg-type]
        if topk:
            t0 = time.perf_counter()
            ranked = system.ranked(conv.id, q.text, q.at, max(topk), from_user=q.from_user)
            seconds = time.perf_counter() - t0
            for k in topk:
                out.append(QueryRecord(mode="topk", value=k, shown=tuple(ranked[:k]), tokens=0,
                                       seconds=seconds, **base))  # type: ignore[arg-type]
    return out


def run_benchmark(
    dataset: Dataset,
    systems: Sequence[str] = SYSTEMS,
    *,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    topk: Sequence[int] = DEFAULT_TOPK,
    embedder: Embedder | None = None,
    model: str = "gpt-4o-mini",
    cache_embeddings: bool | None = None,
    engine_options: dict[str, Any] | None = None,
    progress: bool | Callable[[str, int], None] = False,
) -> BenchResult:
    """Ingest every conversation into every system, then ask its questions.

    Parameters
    ----------
    dataset : Dataset
        From one of the loaders.
    systems : sequence of str
        Names from :data:`personatree_bench.systems.SYSTEMS`.
    budgets : sequence of int
        Token budgets for evidence recall.
    topk : sequence of int
        ``k`` values for recall at top-k (empty to skip).
    embedder : Embedder, optional
        Shared by all systems; default the packaged all-MiniLM-L6-v2.
    model : str
        Model whose tokenizer counts every context.
    cache_embeddings : bool, optional
        Memoize embeddings by text across cases (default: on for PrefEval and
        LoCoMo-Plus, whose cases repeat the same texts). Vectors are unchanged; only
        ingest times shrink, for every system alike.
    engine_options : dict, optional
        Passed to :class:`~personatree_bench.engine.PersonaTreeEngine`
        (``consolidate``, ``config``, ``batch_size``...).
    progress : bool or callable
        ``True`` shows a rich progress bar on stderr; a callable gets
        ``(description, units done)``.

    Returns
    -------
    BenchResult
    """
    started = time.perf_counter()
    base = embedder if embedder is not None else default_embedder()
    if cache_embeddings is None:
        cache_embeddings = dataset.name in ("prefeval", "locomo_plus")
    emb = CachedEmbedder(base) if cache_embeddings else base
    counter = make_token_counter(model)
    emb.embed(["warm up"])  # load the model before anything is timed
    counter.count("warm up")
    built = build_systems(systems, emb, counter, engine_options=engine_options)
    result = BenchResult(dataset.name, [s.name for s in built], list(budgets), list(topk))
    ingest: dict[str, dict[str, float]] = {s.name: {} for s in built}
    points: dict[str, list[tuple[int, int]]] = {s.name: [] for s in built}
    total = sum(len(built) * (1 + len(c.questions)) for c in dataset.conversations)
    bar, tick = _progress(progress, total)
    try:
        for conv in dataset.conversations:
            _run_conversation(conv, built, budgets, topk, result, ingest, points, tick)
    finally:
        if bar is not None:
            bar.stop()
        engine_meta = _engine_meta(built)
        for system in built:
            system.close()
    result.summary = summarize(result.records)
    result.ingest = {name: _ingest_rate(dataset.n_turns, per) for name, per in ingest.items()}
    result.growth = {name: _growth(name, pts) for name, pts in points.items()}
    result.meta = {
        **_dataset_meta(dataset),
        "embedder": getattr(base, "name", type(base).__name__),
        "token_model": model,
        "cache_embeddings": cache_embeddings,
        "engine": engine_meta,
        "seconds": time.perf_counter() - started,
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
    }
    return result


def _run_conversation(conv: Conversation, built: Sequence[System], budgets: Sequence[int], topk: Sequence[int],
                      result: BenchResult, ingest: dict[str, dict[str, float]],
                      points: dict[str, list[tuple[int, int]]], tick: Callable[[str, int], None]) -> None:
    # Every system ingests the conversation before any is asked, then each forgets it.
    for system in built:
        tick(f"{conv.id}: ingest {system.name}", 0)
        # Only the stream goes in: questions and evidence stay with the runner.
        ingest[system.name][conv.id] = system.ingest(conv.id, conv.turns)
        points[system.name].extend(system.checkpoints(conv.id))
        tick(f"{conv.id}: ingest {system.name}", 1)
    for system in built:
        tick(f"{conv.id}: recall {system.name}", 0)
        result.records.extend(_ask(system, conv, budgets, topk))
        tick(f"{conv.id}: recall {system.name}", len(conv.questions))
    for system in built:
        system.drop(conv.id)


def _ingest_rate(turns: int, per: dict[str, float]) -> dict[str, Any]:
    seconds = sum(per.values())
    return {"seconds": seconds, "turns": turns, "turns_per_s": (turns / seconds) if seconds > 0 else None,
            "per_conversation": per}


def _dataset_meta(dataset: Dataset) -> dict[str, Any]:
    return {
        "dataset": {k: v for k, v in dict(dataset.meta).items() if k != "dropped_evidence"},
        "dropped_evidence": list(dataset.meta.get("dropped_evidence", [])),
        "conversations": len(dataset.conversations),
        "turns": dataset.n_turns,
        "questions": dataset.n_questions,
    }


def _growth(name: str, pts: list[tuple[int, int]]) -> dict[str, Any]:
    # Points from different conversations share one fit: each conversation restarts at
    # turn 0, which the least-squares line handles as repeated x values.
    what = {
        "personatree": "profile block tokens (top claims and patterns kept in every prompt)",
        "personatree-leaves": "profile block tokens (same tree)",
        "personatree-tiered": "profile block tokens (same tree)",
        "recency": "nothing beyond the budget",
    }.get(name, "raw history tokens (no standing memory; what it must keep in view)")
    return {"tokens_per_100_turns": growth_per_100_turns(pts), "measures": what, "points": len(pts)}


def tree_size(sizes: Iterable[Mapping[str, int]]) -> dict[str, float]:
    """Nodes per 100 ingested turns (in-tree leaves, mids, roots, archived leaves) and the
    mean profile block, over every conversation's tree after its ingestion.

    Parameters
    ----------
    sizes : iterable of mapping
        ``PersonaTreeEngine.tree_sizes`` values.

    Returns
    -------
    dict
        ``{"conversations", "turns", "<kind>_per_100_turns"..., "profile_tokens_mean"}``
        (empty when there is nothing).
    """
    rows = list(sizes)
    turns = sum(r["turns"] for r in rows)
    if not rows or turns == 0:
        return {}
    out: dict[str, float] = {"conversations": len(rows), "turns": turns}
    for k in ("leaves", "mids", "roots", "archived"):
        out[f"{k}_per_100_turns"] = round(100.0 * sum(r[k] for r in rows) / turns, 2)
    out["tree_nodes_per_100_turns"] = round(
        sum(out[f"{k}_per_100_turns"] for k in ("leaves", "mids", "roots")), 2)
    out["profile_tokens_mean"] = round(sum(r["profile_tokens"] for r in rows) / len(rows), 1)
    return out


def _engine_meta(built: Sequence[System]) -> dict[str, Any]:
    for s in built:
        engine = getattr(s, "engine", None)
        if engine is not None:
            return {
                "all_roots_and_mids_tokens_per_100_turns": growth_per_100_turns(engine.abstraction_points),
                "consolidate": engine.consolidate_mode,
                "consolidation_available": engine.consolidation_available,
                # A failing pass raises; the key stays in the results format.
                "consolidation_error": None,
                "consolidate_seconds": sum(engine.consolidate_seconds.values()),
                "tree_size": tree_size(engine.tree_sizes.values()),
            }
    return {}


def _progress(progress: bool | Callable[[str, int], None], total: int) -> tuple[Any, Callable[[str, int], None]]:
    if callable(progress):
        return None, progress
    if not progress:
        return None, lambda _d, _n: None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    if not console.is_terminal:
        # Redirected to a log: a bar would never show, so print one line per phase instead.
        t0 = time.perf_counter()
        done = 0
        last = ""

        def log(desc: str, n: int) -> None:
            nonlocal done, last
            done += n
            if n == 0 and desc != last:
                last = desc
                console.print(f"[{time.perf_counter() - t0:7.0f}s] {done}/{total} {desc}",
                              highlight=False, markup=False)

        return None, log
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=console, transient=True)
    bar.start()
    task = bar.add_task("bench", total=total)

    def tick(desc: str, n: int) -> None:
        bar.update(task, description=desc, advance=n)

    return bar, tick
