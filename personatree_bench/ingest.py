"""The ingestion-throughput benchmark: the engine's ``observe_many`` against bare embedding.

The engine must embed what it stores, so embedding is the floor of its cost. This
benchmark replays the LoCoMo dev turns through ``observe_many`` into a fresh SQLite
store and, in the same process, embeds the same turn texts with the bare embedder in
the same batch sizes. The ratio of the two rates says how much the engine adds on top
of embedding (goal: ratio ≥ 0.85, i.e. at most 15 % overhead).

The model is warmed up first, and the bare embedding runs both before and after the
engine (best of the runs is kept), so neither side gains from running second.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from .engine import interaction
from .types import Conversation

if TYPE_CHECKING:
    from personatree import Embedder

__all__ = ["IngestResult", "bare_embedding_rate", "engine_ingest_rate", "run_ingest_benchmark", "format_ingest"]

GOAL_RATIO = 0.85


@dataclass(frozen=True, slots=True)
class IngestResult:
    """Throughput of the engine and of the bare embedder on the same turns.

    Attributes
    ----------
    turns : int
    batch_size : int
    engine_seconds : float
    bare_seconds : float
        Best of the bare runs.
    bare_runs : tuple of float
        Every bare run's seconds (before and after the engine).
    engine_turns_per_s, bare_turns_per_s : float
    ratio : float
        ``engine_turns_per_s / bare_turns_per_s``.
    leaves : int
        Leaves the engine created (what it embedded besides the turns).
    """

    turns: int
    batch_size: int
    engine_seconds: float
    bare_seconds: float
    bare_runs: tuple[float, ...]
    engine_turns_per_s: float
    bare_turns_per_s: float
    ratio: float
    leaves: int

    @property
    def meets_goal(self) -> bool:
        """Whether the engine keeps at least 85 % of the bare embedding rate."""
        return self.ratio >= GOAL_RATIO

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        d = asdict(self)
        d["bare_runs"] = list(self.bare_runs)
        d["goal_ratio"] = GOAL_RATIO
        d["meets_goal"] = self.meets_goal
        return d


def bare_embedding_rate(embedder: Embedder, texts: Sequence[str], batch_size: int = 256) -> float:
    """Seconds to embed ``texts`` with ``embedder.embed`` in chunks of ``batch_size``.

    Parameters
    ----------
    embedder : Embedder
    texts : sequence of str
    batch_size : int
        The same chunking ``observe_many`` uses (interactions per batch).

    Returns
    -------
    float
        Wall seconds.
    """
    t0 = time.perf_counter()
    for start in range(0, len(texts), batch_size):
        embedder.embed(list(texts[start : start + batch_size]))
    return time.perf_counter() - t0


def engine_ingest_rate(
    embedder: Embedder, conversations: Sequence[Conversation], batch_size: int = 256, path: str | Path | None = None
) -> tuple[float, int]:
    """Seconds to ingest every conversation with ``observe_many`` into a fresh SQLite store.

    Parameters
    ----------
    embedder : Embedder
    conversations : sequence of Conversation
        Each becomes one user; all its turns go in one ``observe_many`` call.
    batch_size : int
    path : str or Path, optional
        SQLite file (default: in a temporary folder, removed afterwards).

    Returns
    -------
    seconds : float
    leaves : int
        Leaf nodes created.
    """
    from personatree.api import PersonaTree
    from personatree.clock import FixedClock

    with tempfile.TemporaryDirectory(prefix="personatree-ingest-") as tmp:
        db = Path(path) if path else Path(tmp) / "ingest.db"
        start = min((c.turns[0].at for c in conversations if c.turns), default=None)
        clock = FixedClock(start) if start else None
        tree = PersonaTree.open(db, embedder=embedder, clock=clock)
        try:
            # The judge is built on its first call (fitting its router embeds the schema
            # examples): a once-per-process cost, kept outside the timing like the warm-up.
            getattr(tree.engine.judge, "judge", None)
            t0 = time.perf_counter()
            for conv in conversations:
                tree.observe_many(conv.id, [interaction(conv.id, t) for t in conv.turns], batch_size=batch_size)
            seconds = time.perf_counter() - t0
            leaves = sum(tree.stats(c.id)["leaves"] for c in conversations if c.turns)
        finally:
            tree.close()
    return seconds, leaves


def run_ingest_benchmark(
    conversations: Sequence[Conversation],
    embedder: Embedder | None = None,
    *,
    batch_size: int = 256,
    bare_repeats: int = 1,
) -> IngestResult:
    """Measure the engine's ingestion rate against bare embedding of the same texts.

    Parameters
    ----------
    conversations : sequence of Conversation
        E.g. ``load_locomo(path).conversations`` (questions are ignored).
    embedder : Embedder, optional
        Default the packaged all-MiniLM-L6-v2.
    batch_size : int
        ``observe_many`` batch size, and the bare embedder's chunk size.
    bare_repeats : int
        Bare runs before the engine and again after it (best kept).

    Returns
    -------
    IngestResult
    """
    if embedder is None:
        from personatree.embedders import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder()
    texts = [t.text for c in conversations for t in c.turns]
    if not texts:
        raise ValueError("no turns to ingest")
    # Warm-up: model weights, kernels and the tokenizer's caches, outside every timing.
    bare_embedding_rate(embedder, texts[: min(len(texts), 2 * batch_size)], batch_size)
    runs = [bare_embedding_rate(embedder, texts, batch_size) for _ in range(bare_repeats)]
    engine_seconds, leaves = engine_ingest_rate(embedder, conversations, batch_size)
    runs += [bare_embedding_rate(embedder, texts, batch_size) for _ in range(bare_repeats)]
    bare = min(runs)
    n = len(texts)
    return IngestResult(
        turns=n, batch_size=batch_size, engine_seconds=engine_seconds, bare_seconds=bare,
        bare_runs=tuple(runs), engine_turns_per_s=n / engine_seconds, bare_turns_per_s=n / bare,
        ratio=(n / engine_seconds) / (n / bare), leaves=leaves,
    )


def format_ingest(result: IngestResult) -> str:
    """The ingest benchmark as a small markdown table."""
    verdict = "meets" if result.meets_goal else "misses"
    return (
        "| what | turns | seconds | turns/s |\n|---|---|---|---|\n"
        f"| bare embedder (best of {len(result.bare_runs)}) | {result.turns} | {result.bare_seconds:.2f} | "
        f"{result.bare_turns_per_s:.1f} |\n"
        f"| personatree observe_many | {result.turns} | {result.engine_seconds:.2f} | "
        f"{result.engine_turns_per_s:.1f} |\n\n"
        f"ratio engine/bare = {result.ratio:.3f} ({verdict} the goal ≥ {GOAL_RATIO}); "
        f"{result.leaves} leaves created; batch size {result.batch_size}\n"
    )


def format_ingest_comparison(results: dict[str, IngestResult]) -> str:
    """Engine throughput of several embedders measured in one run, against the first.

    Parameters
    ----------
    results : dict
        Embedder label → its result, the baseline first.

    Returns
    -------
    str
        A markdown table.
    """
    base = next(iter(results.values()))
    rows = ["| embedder | engine turns/s | bare embedder turns/s | engine / first embedder's engine |",
            "|---|---|---|---|"]
    for name, r in results.items():
        rows.append(f"| {name} | {r.engine_turns_per_s:,.1f} | {r.bare_turns_per_s:,.1f} | "
                    f"{r.engine_turns_per_s / base.engine_turns_per_s:.1f}x |")
    return "\n".join(rows) + "\n"
