"""The flat baselines: raw turns embedded once, ranked densely, by BM25 or by recency.

- ``dense``: flat cosine retrieval over raw turns, packed best first;
- ``dense+bm25``: dense and BM25 rankings fused by reciprocal rank, packed best first;
- ``recency``: the most recent turns, truncated to the budget.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from .packing import lexical_tokens, pack_best_first, pack_recent, rrf
from .protocol import Context
from .types import Turn

if TYPE_CHECKING:
    from personatree import Embedder, TokenCounter

__all__ = ["render_turn", "FlatIndex", "DenseSystem", "FusionSystem", "RecencySystem"]


def render_turn(turn: Turn) -> str:
    """One turn as a baseline renders it: ``"[2023-05-08] Corinne: text"``.

    The date is kept because temporal questions need it, as personatree's leaves keep theirs.
    """
    return f"[{turn.at:%Y-%m-%d}] {turn.speaker}: {turn.text}"


@dataclass
class _Flat:
    turns: list[Turn]
    lines: dict[str, str]
    costs: dict[str, int]
    vectors: np.ndarray
    bm25: Any = None
    checkpoints: list[tuple[int, int]] = field(default_factory=list)


class FlatIndex:
    """Raw turns of each conversation, embedded once and shared by the flat baselines.

    Parameters
    ----------
    embedder : Embedder
    counter : TokenCounter
    """

    def __init__(self, embedder: Embedder, counter: TokenCounter) -> None:
        self.embedder = embedder
        self.counter = counter
        self._convs: dict[str, _Flat] = {}
        self.embed_seconds: dict[str, float] = {}
        self.bm25_seconds: dict[str, float] = {}

    def build(self, conv_id: str, turns: Sequence[Turn]) -> _Flat:
        """Embed and index ``turns`` (once per conversation)."""
        if conv_id in self._convs:
            return self._convs[conv_id]
        t0 = time.perf_counter()
        # Embed what the speaker said with their name, so "What did Corinne ..." can match.
        vectors = self.embedder.embed([f"{t.speaker}: {t.text}" for t in turns])
        self.embed_seconds[conv_id] = time.perf_counter() - t0
        lines = {t.id: render_turn(t) for t in turns}
        costs = {tid: self.counter.count(line + "\n") for tid, line in lines.items()}
        flat = _Flat(list(turns), lines, costs, np.asarray(vectors, dtype=np.float32))
        # Standing context of a memory-less system: the whole raw history it would need.
        total = 0
        for i, t in enumerate(turns):
            total += costs[t.id]
            if i + 1 == len(turns) or turns[i + 1].session != t.session:
                flat.checkpoints.append((i + 1, total))
        self._convs[conv_id] = flat
        return flat

    def bm25(self, conv_id: str) -> Any:
        """The BM25 index of a built conversation (built on first use)."""
        flat = self._convs[conv_id]
        if flat.bm25 is None:
            from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]

            t0 = time.perf_counter()
            docs = [lexical_tokens(f"{t.speaker} {t.text}") or ["_"] for t in flat.turns]
            flat.bm25 = BM25Okapi(docs)
            self.bm25_seconds[conv_id] = time.perf_counter() - t0
        return flat.bm25

    def get(self, conv_id: str) -> _Flat:
        """A built conversation."""
        return self._convs[conv_id]

    def dense_order(self, conv_id: str, query: str) -> list[str]:
        """Turn ids by cosine similarity to the query, best first (ties by turn order)."""
        flat = self._convs[conv_id]
        q = self.embedder.embed([query])[0]
        scores = flat.vectors @ q
        order = np.argsort(-scores, kind="stable")
        return [flat.turns[i].id for i in order]

    def bm25_order(self, conv_id: str, query: str) -> list[str]:
        """Turn ids by BM25 score, best first; turns scoring 0 are left out."""
        flat = self._convs[conv_id]
        scores = np.asarray(self.bm25(conv_id).get_scores(lexical_tokens(query) or ["_"]))
        order = np.argsort(-scores, kind="stable")
        return [flat.turns[i].id for i in order if scores[i] > 0]

    def context(self, conv_id: str, chosen: Sequence[str], seconds: float) -> Context:
        """Render chosen turns (in the given order) and count them."""
        flat = self._convs[conv_id]
        text = "".join(flat.lines[t] + "\n" for t in chosen)
        return Context(text, tuple(chosen), sum(flat.costs[t] for t in chosen), seconds)

    def drop(self, conv_id: str) -> None:
        """Forget one conversation."""
        self._convs.pop(conv_id, None)


class _FlatSystem:
    name = "flat"

    def __init__(self, index: FlatIndex) -> None:
        self.index = index
        self._memo: tuple[tuple[str, str], list[str], float] | None = None

    def ingest(self, conv_id: str, turns: Sequence[Turn]) -> float:
        self.index.build(conv_id, turns)
        return self.index.embed_seconds.get(conv_id, 0.0)

    def order(self, conv_id: str, query: str) -> list[str]:
        raise NotImplementedError

    def _ranking(self, conv_id: str, query: str) -> tuple[list[str], float]:
        # The same question is asked at several budgets: rank once, but report the
        # ranking's full cost with every call so latency stays what a fresh call costs.
        key = (conv_id, query)
        if self._memo is None or self._memo[0] != key:
            t0 = time.perf_counter()
            order = self.order(conv_id, query)
            self._memo = (key, order, time.perf_counter() - t0)
        return self._memo[1], self._memo[2]

    def retrieve(self, conv_id: str, query: str, at: datetime | None, budget: int, *,
                 from_user: bool = False) -> Context:
        order, ranking_seconds = self._ranking(conv_id, query)
        t0 = time.perf_counter()
        chosen = pack_best_first(order, self.index.get(conv_id).costs, budget)
        return self.index.context(conv_id, chosen, ranking_seconds + time.perf_counter() - t0)

    def ranked(self, conv_id: str, query: str, at: datetime | None, k: int, *,
               from_user: bool = False) -> list[str]:
        return self._ranking(conv_id, query)[0][:k]

    def checkpoints(self, conv_id: str) -> list[tuple[int, int]]:
        return list(self.index.get(conv_id).checkpoints)

    def drop(self, conv_id: str) -> None:
        self.index.drop(conv_id)
        self._memo = None

    def close(self) -> None:
        pass


class DenseSystem(_FlatSystem):
    """Flat dense retrieval over raw turns, packed best first into the budget."""

    name = "dense"

    def order(self, conv_id: str, query: str) -> list[str]:
        return self.index.dense_order(conv_id, query)


class FusionSystem(_FlatSystem):
    """Dense + BM25 rankings fused by reciprocal rank, packed best first."""

    name = "dense+bm25"

    def __init__(self, index: FlatIndex, rrf_k: int = 60) -> None:
        super().__init__(index)
        self.rrf_k = rrf_k

    def ingest(self, conv_id: str, turns: Sequence[Turn]) -> float:
        seconds = super().ingest(conv_id, turns)
        self.index.bm25(conv_id)
        return seconds + self.index.bm25_seconds.get(conv_id, 0.0)

    def order(self, conv_id: str, query: str) -> list[str]:
        dense = self.index.dense_order(conv_id, query)
        return rrf([dense, self.index.bm25_order(conv_id, query)], self.rrf_k)


class RecencySystem(_FlatSystem):
    """The most recent history, truncated to the budget (no retrieval at all)."""

    name = "recency"

    def ingest(self, conv_id: str, turns: Sequence[Turn]) -> float:
        t0 = time.perf_counter()
        flat = self.index.build(conv_id, turns)
        del flat
        # Recency needs no embeddings; report only its own (token counting) time.
        return max(0.0, time.perf_counter() - t0 - self.index.embed_seconds.get(conv_id, 0.0))

    def _recent(self, conv_id: str, at: datetime | None) -> list[str]:
        turns = self.index.get(conv_id).turns
        return [t.id for t in turns if at is None or t.at <= at]

    def retrieve(self, conv_id: str, query: str, at: datetime | None, budget: int, *,
                 from_user: bool = False) -> Context:
        t0 = time.perf_counter()
        chosen = pack_recent(self._recent(conv_id, at), self.index.get(conv_id).costs, budget)
        chosen.reverse()  # render oldest first, as a chat history reads
        return self.index.context(conv_id, chosen, time.perf_counter() - t0)

    def ranked(self, conv_id: str, query: str, at: datetime | None, k: int, *,
               from_user: bool = False) -> list[str]:
        return list(reversed(self._recent(conv_id, at)))[:k]

    def checkpoints(self, conv_id: str) -> list[tuple[int, int]]:
        return [(n, 0) for n, _ in self.index.get(conv_id).checkpoints]
