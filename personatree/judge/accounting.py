"""Accounting of the LLM judge: tokens and cost per user and operation, and the
robustness counters (retries, repaired answers, fallbacks) per operation.

Tokens are counted with the model's real tokenizer through ``litellm.token_counter``
(the prompt as chat messages, the answer as text), not taken from the provider's
``usage`` field: mocked responses report made-up usage, and counting the same way
everywhere keeps offline cost models and live runs comparable. Prices come from
``litellm.cost_per_token`` with litellm's local cost map; a model litellm does not
price (a local Ollama model) costs 0.
"""

from __future__ import annotations

import threading
from collections import defaultdict, deque
from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping, Sequence

from ..offline_litellm import import_litellm

__all__ = [
    "OperationUsage",
    "UsageReport",
    "UsageLedger",
    "count_prompt_tokens",
    "count_text_tokens",
    "price",
    "FallbackEvent",
    "JudgeStats",
    "RobustnessCounters",
]

#: The key used for calls that belong to no user (e.g. a route outside a user scope).
NO_USER = ""


def count_prompt_tokens(model: str, messages: Sequence[Mapping[str, str]]) -> int:
    """Tokens of a chat prompt with ``model``'s tokenizer (chat-format overhead included).

    Falls back to ``ceil(chars / 4)`` if litellm cannot count for this model.
    """
    try:
        return int(import_litellm().token_counter(model=model, messages=[dict(m) for m in messages]))
    except Exception:  # noqa: BLE001 - counting must never break a judge call
        return sum(len(m.get("content", "")) for m in messages) // 4 + 4 * len(messages)


def count_text_tokens(model: str, text: str) -> int:
    """Tokens of a plain text (an answer) with ``model``'s tokenizer."""
    if not text:
        return 0
    try:
        return int(import_litellm().token_counter(model=model, text=text))
    except Exception:  # noqa: BLE001
        return (len(text) + 3) // 4


def price(model: str, prompt_tokens: int, completion_tokens: int) -> float:
    """Cost in USD from litellm's local cost map; 0.0 for models it does not price."""
    try:
        p, c = import_litellm().cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )
        return float(p) + float(c)
    except Exception:  # noqa: BLE001 - unknown models are free (local) as far as we know
        return 0.0


@dataclass(frozen=True, slots=True)
class OperationUsage:
    """Counters of one (user, operation) cell.

    Attributes
    ----------
    requests : int
        Requests sent to the model (retries included).
    failures : int
        Requests that raised (timeouts, rate limits, provider errors).
    rejected : int
        Answers that could not be used (bad JSON, schema echo, invalid schema).
    cache_hits : int
        Calls answered from the response cache (no request sent).
    fallbacks : int
        Calls (or items) answered by the offline judge instead.
    prompt_tokens, completion_tokens : int
        Tokens of every answered request, with the model's tokenizer.
    cost_usd : float
    calls : int
        Calls sent to the model (one per call, however many requests its retries took;
        cache hits are not calls).
    answered : int
        Calls the model answered itself with a usable answer (the others fell back to
        the offline judge, or raised with the fallback off).
    """

    requests: int = 0
    failures: int = 0
    rejected: int = 0
    cache_hits: int = 0
    fallbacks: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0
    answered: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    @property
    def answered_share(self) -> float | None:
        """The share of calls the model answered itself (``None`` before any call)."""
        return self.answered / self.calls if self.calls else None

    def __add__(self, other: "OperationUsage") -> "OperationUsage":
        return OperationUsage(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (with ``total_tokens`` and ``answered_share``)."""
        d = asdict(self)
        d["total_tokens"] = self.total_tokens
        d["answered_share"] = self.answered_share
        return d


@dataclass(frozen=True, slots=True)
class UsageReport:
    """A snapshot of the ledger.

    Attributes
    ----------
    by_user : Mapping[str, Mapping[str, OperationUsage]]
        user id → operation → usage (``""`` collects calls outside a user scope).
    """

    by_user: Mapping[str, Mapping[str, OperationUsage]]

    def by_operation(self) -> dict[str, OperationUsage]:
        """Usage per operation summed over users."""
        out: dict[str, OperationUsage] = {}
        for ops in self.by_user.values():
            for op, u in ops.items():
                out[op] = out.get(op, OperationUsage()) + u
        return out

    def total(self) -> OperationUsage:
        """Everything summed."""
        tot = OperationUsage()
        for u in self.by_operation().values():
            tot = tot + u
        return tot

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: ``{"users": {...}, "operations": {...}, "total": {...}}``."""
        return {
            "users": {u: {op: x.to_dict() for op, x in ops.items()} for u, ops in self.by_user.items()},
            "operations": {op: x.to_dict() for op, x in self.by_operation().items()},
            "total": self.total().to_dict(),
        }


class UsageLedger:
    """Thread-safe counters per (user, operation)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cells: dict[tuple[str, str], dict[str, float]] = defaultdict(
            lambda: {f.name: 0 for f in fields(OperationUsage)}
        )

    def add(self, user_id: str | None, operation: str, **counts: float) -> None:
        """Add to the counters of one cell (names as in :class:`OperationUsage`)."""
        with self._lock:
            cell = self._cells[(user_id or NO_USER, operation)]
            for k, v in counts.items():
                cell[k] += v

    def record_request(
        self, user_id: str | None, operation: str, model: str, prompt_tokens: int, completion_tokens: int
    ) -> None:
        """Record one answered request with its tokens and cost."""
        self.add(
            user_id, operation, requests=1, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
            cost_usd=price(model, prompt_tokens, completion_tokens),
        )

    def report(self, user_id: str | None = None) -> UsageReport:
        """A snapshot, for one user or all."""
        with self._lock:
            items = list(self._cells.items())
        by_user: dict[str, dict[str, OperationUsage]] = {}
        for (u, op), cell in sorted(items):
            if user_id is not None and u != user_id:
                continue
            by_user.setdefault(u, {})[op] = _usage_of(cell)
        return UsageReport(by_user)


def _usage_of(cell: Mapping[str, float]) -> OperationUsage:
    """A ledger cell as usage: every counter an int, the cost a float."""
    counts = {k: int(v) for k, v in cell.items() if k != "cost_usd"}
    return OperationUsage(cost_usd=float(cell["cost_usd"]), **counts)


# -- robustness -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FallbackEvent:
    """One call (or part of one) answered by the offline judge.

    Attributes
    ----------
    operation : str
    kind : str
        Why (see :class:`~personatree.errors.JudgeError`), or ``"incomplete"`` when an
        answer left items out.
    detail : str
        The last error message, shortened.
    model : str
    user_id : str
        ``""`` when the call belongs to no user.
    items : int
        Observations, pairs, queries or summaries answered by the fallback.
    at : float
        Unix time.
    """

    operation: str
    kind: str
    detail: str
    model: str
    user_id: str
    items: int
    at: float


@dataclass(frozen=True, slots=True)
class JudgeStats:
    """Robustness counters of an :class:`~personatree.judge.llm.LLMJudge`.

    Attributes
    ----------
    fallbacks : Mapping[str, int]
        Fallback events per operation.
    retries : Mapping[str, int]
        Requests repeated after an error or an unusable answer, per operation.
    repaired : Mapping[str, int]
        Answers that needed JSON repair (fences, prose, trailing commas), per operation.
    fallback_log : tuple of FallbackEvent
        The most recent fallbacks, oldest first.
    """

    fallbacks: Mapping[str, int]
    retries: Mapping[str, int]
    repaired: Mapping[str, int]
    fallback_log: tuple[FallbackEvent, ...]

    @property
    def total_fallbacks(self) -> int:
        """Fallback events over all operations."""
        return sum(self.fallbacks.values())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "fallbacks": dict(self.fallbacks),
            "retries": dict(self.retries),
            "repaired": dict(self.repaired),
            "fallback_log": [
                {"operation": e.operation, "kind": e.kind, "detail": e.detail, "model": e.model,
                 "user_id": e.user_id, "items": e.items, "at": e.at}
                for e in self.fallback_log
            ],
        }


class RobustnessCounters:
    """Thread-safe fallback, retry and repair counters per operation, and the most recent
    fallback events (the source of :class:`JudgeStats`).

    Parameters
    ----------
    log_size : int
        How many fallback events are kept.
    """

    def __init__(self, log_size: int) -> None:
        self._lock = threading.Lock()
        self._fallbacks: dict[str, int] = {}
        self._retries: dict[str, int] = {}
        self._repaired: dict[str, int] = {}
        self._log: deque[FallbackEvent] = deque(maxlen=log_size)

    def retried(self, operation: str) -> None:
        """Count one repeated request."""
        with self._lock:
            self._retries[operation] = self._retries.get(operation, 0) + 1

    def repaired(self, operation: str) -> None:
        """Count one answer that needed JSON repair."""
        with self._lock:
            self._repaired[operation] = self._repaired.get(operation, 0) + 1

    def fell_back(self, event: FallbackEvent) -> None:
        """Count one fallback event and keep it in the log."""
        with self._lock:
            self._fallbacks[event.operation] = self._fallbacks.get(event.operation, 0) + 1
            self._log.append(event)

    def snapshot(self) -> JudgeStats:
        """The counters and the log as they are now."""
        with self._lock:
            return JudgeStats(dict(self._fallbacks), dict(self._retries), dict(self._repaired), tuple(self._log))
