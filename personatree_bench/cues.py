"""Associative recall of the person: cue/trigger pairs, measured on the cue speaker's own words.

A LoCoMo-Plus item is a short cue dialogue (the person states a cause, goal, value or
state; the other party replies) and, weeks later, a trigger the person says whose
meaning depends on the cue while sharing few words with it. The headline measure
here is explicit about whose words count: **the cue speaker's own statement** reached
the context (``speaker``). The listener's reply is no evidence about the speaker, so
it is not gold; the figure over every cue turn (``any cue turn``) is reported beside
it, for comparison with the upstream protocol.

Both splits of a file (``tune``, ``heldout``) are run and reported apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from .metrics import evidence_recall, hit, summarize
from .output import fmt, write_json
from .runner import BenchResult, run_benchmark
from .types import Dataset

if TYPE_CHECKING:
    from personatree import Embedder

__all__ = ["CueRecallResult", "run_cue_recall", "cue_measures", "format_cue_recall", "SPLITS"]

SPLITS = ("tune", "heldout")
_SPLIT_NAMES = {"tune": "tuning", "heldout": "held out"}


def cue_measures(result: BenchResult, cue_turns: dict[str, Sequence[str]]) -> dict[str, Any]:
    """Per system and budget: the cue speaker's statement and any cue turn, over the cases.

    Parameters
    ----------
    result : BenchResult
        A run whose gold evidence is the cue speaker's own turns.
    cue_turns : dict
        ``{conversation id: every cue turn id}``.

    Returns
    -------
    dict
        ``{system: {budget: {"n", "speaker_recall", "speaker_hit", "any_cue_hit"}}}``.
    """
    out: dict[str, Any] = {}
    for r in result.records:
        if r.mode != "budget":
            continue
        slot = out.setdefault(r.system, {}).setdefault(r.value, {"speaker_recall": [], "speaker_hit": [],
                                                                  "any_cue_hit": []})
        rec = evidence_recall(r.gold, r.shown)
        if rec is not None:
            slot["speaker_recall"].append(rec)
            slot["speaker_hit"].append(hit(r.gold, r.shown))
        any_hit = hit(cue_turns.get(r.conv_id, ()), r.shown)
        if any_hit is not None:
            slot["any_cue_hit"].append(any_hit)
    for per in out.values():
        for b, slot in per.items():
            per[b] = {"n": len(slot["speaker_recall"]),
                      **{k: (sum(v) / len(v) if v else None) for k, v in slot.items()}}
    return out


@dataclass
class CueRecallResult:
    """Per split: the measures and the underlying benchmark run."""

    budgets: list[int]
    systems: list[str]
    measures: dict[str, Any] = field(default_factory=dict)
    runs: dict[str, BenchResult] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, *, with_records: bool = True) -> dict[str, Any]:
        """JSON-ready form (each split's run included)."""
        return {
            "format": "personatree.bench.cue_recall/1",
            "budgets": self.budgets,
            "systems": self.systems,
            "measures": self.measures,
            "meta": self.meta,
            "runs": {s: r.to_dict(with_records=with_records) for s, r in self.runs.items()},
        }

    def save(self, path: str | Path, *, with_records: bool = True) -> Path:
        """Write :meth:`to_dict` as JSON."""
        return write_json(path, self.to_dict(with_records=with_records))


def run_cue_recall(
    path: str | Path,
    *,
    host: str | Path | None = None,
    splits: Sequence[str] = SPLITS,
    systems: Sequence[str] = ("personatree", "dense"),
    budgets: Sequence[int] = (1000,),
    seed: int = 0,
    limit: int | None = None,
    engine_options: dict[str, Any] | None = None,
    model: str = "gpt-4o-mini",
    embedder: Embedder | None = None,
    progress: Callable[[str], None] | None = None,
) -> CueRecallResult:
    """Run the cue/trigger cases of each split and measure the cue speaker's own statement.

    Parameters
    ----------
    path : str or Path
        Cue/trigger items in the LoCoMo-Plus format with a ``split`` field.
    host : str or Path, optional
        LoCoMo file of the host conversations (see
        :func:`~personatree_bench.datasets.load_locomo_plus`).
    splits : sequence of str
        Which splits to run.
    systems, budgets, model, embedder, engine_options
        As :func:`~personatree_bench.runner.run_benchmark`.
    progress : callable, optional
        Receives one line per finished case (whether each system found the statement
        at each budget).
    seed : int
        Seeds the insertion points.
    limit : int, optional
        Only the first ``limit`` items of each split.

    Returns
    -------
    CueRecallResult
    """
    from .datasets import load_locomo_plus
    from .resources import CachedEmbedder, default_embedder

    # One memo across the splits: both stitch their cues into the same host turns.
    shared = CachedEmbedder(embedder if embedder is not None else default_embedder())
    result = CueRecallResult(list(budgets), list(systems))
    say = progress or (lambda _line: None)
    for split in splits:
        data = load_locomo_plus(path, host=host, seed=seed, limit=limit, split=split, gold="speaker")
        merged = BenchResult(data.name, list(systems), list(budgets), [])
        seconds = 0.0
        for i, conv in enumerate(data.conversations):
            # One case at a time, so that every finished case is reported as it ends
            # (a long run cut short still says what it measured).
            run = run_benchmark(Dataset(data.name, (conv,), data.meta), systems, budgets=budgets, topk=[],
                                model=model, embedder=shared, engine_options=engine_options)
            merged.records.extend(run.records)
            seconds += float(run.meta.get("seconds") or 0.0)
            say(f"[{split} {i + 1}/{len(data.conversations)}] {conv.meta.get('item')} ({run.records[0].category}): "
                + " ".join(f"{r.system}={'hit' if hit(r.gold, r.shown) else 'miss'}@{r.value}"
                           for r in run.records if r.mode == "budget"))
        merged.summary = summarize(merged.records)
        merged.meta = {"dataset": {k: v for k, v in dict(data.meta).items()}, "conversations": len(data.conversations),
                       "turns": data.n_turns, "questions": data.n_questions, "seconds": seconds}
        cue_turns: dict[str, Sequence[str]] = {c.id: list(c.meta["cue_turns"]) for c in data.conversations}
        result.runs[split] = merged
        result.measures[split] = cue_measures(merged, cue_turns)
        result.meta[split] = {"cases": len(data.conversations), "turns": data.n_turns, "seconds": seconds}
    result.meta.update({"path": str(path), "seed": seed, "gold": "the cue speaker's own cue turns"})
    return result


def format_cue_recall(result: CueRecallResult) -> str:
    """The measures as a markdown table (one row per split and system)."""
    head = ["split", "system", "n"] + [f"{name}@{b}" for b in result.budgets
                                       for name in ("cue speaker's statement", "any cue turn")]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for split, per in result.measures.items():
        for system in result.systems:
            m = per.get(system, {})
            n = next((v["n"] for v in m.values()), 0)
            cells = [_SPLIT_NAMES.get(split, split), system, str(n)]
            for b in result.budgets:
                e = m.get(b, {})
                cells += [fmt(e.get("speaker_recall")), fmt(e.get("any_cue_hit"))]
            lines.append("| " + " | ".join(cells) + " |")
    note = ("\ncue speaker's statement: recall of the cue turns said by the person who later says the trigger "
            "(the listener's reply is not evidence about them); any cue turn: some cue turn, reply included, "
            "reached the context.\n")
    return "\n".join(lines) + "\n" + note

