"""The benchmark harness: evidence recall on real data, personatree against baselines.

>>> from personatree_bench import load_locomo, run_benchmark, markdown   # doctest: +SKIP
>>> result = run_benchmark(load_locomo("locomo_dev.json"), budgets=[500, 1000, 2000])  # doctest: +SKIP
>>> print(markdown(result))                                               # doctest: +SKIP
"""

from __future__ import annotations

from .datasets import (
    DATASETS,
    load_dataset,
    load_knowme,
    load_locomo,
    load_locomo_plus,
    load_prefeval,
    parse_evidence,
    parse_knowme_evidence,
    parse_locomo_date,
    parse_time_gap,
)
from .engine import PersonaTreeEngine
from .ingest import IngestResult, bare_embedding_rate, engine_ingest_rate, run_ingest_benchmark
from .metrics import QueryRecord, aggregate, evidence_recall, growth_per_100_turns, hit, percentile, summarize
from .protocol import Context
from .report import markdown, plot_recall
from .runner import DEFAULT_BUDGETS, DEFAULT_TOPK, BenchResult, run_benchmark
from .systems import SYSTEMS, build_systems
from .types import Conversation, Dataset, Question, Turn, strip_questions

__all__ = [
    "run_benchmark",
    "BenchResult",
    "DEFAULT_BUDGETS",
    "DEFAULT_TOPK",
    "SYSTEMS",
    "build_systems",
    "Context",
    "PersonaTreeEngine",
    "DATASETS",
    "load_dataset",
    "load_locomo",
    "load_knowme",
    "load_prefeval",
    "load_locomo_plus",
    "parse_evidence",
    "parse_knowme_evidence",
    "parse_locomo_date",
    "parse_time_gap",
    "Turn",
    "Question",
    "Conversation",
    "Dataset",
    "strip_questions",
    "QueryRecord",
    "evidence_recall",
    "hit",
    "percentile",
    "growth_per_100_turns",
    "aggregate",
    "summarize",
    "markdown",
    "plot_recall",
    "run_ingest_benchmark",
    "engine_ingest_rate",
    "bare_embedding_rate",
    "IngestResult",
]
