"""Answering LLM-judge requests: from the response cache, or from the model with retries.

A :class:`Job` is one request of one operation: the rendered prompt, the response
model, and the check that turns a validated answer into a result (raising
:class:`~personatree.judge.parsing.AnswerError` when it does not fit the request).
:class:`RequestRunner` answers a batch of jobs; a job that failed for good comes back
as a :class:`~personatree.judge.retry.Failure` value, never as an exception, so the
caller decides whether the offline judge takes over.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Generic, Mapping, Sequence, TypeVar

from pydantic import BaseModel

from .accounting import RobustnessCounters, UsageLedger, count_prompt_tokens, count_text_tokens
from .cache import ResponseCache, cache_key
from .parsing import AnswerError, Parsed, one_line, parse_answer
from .retry import Failure, RetryPolicy, retry_messages
from .transport import Transport, classify, response_text

__all__ = ["Job", "RequestRunner", "checked"]

# Logged under the judge's name, where users filter the LLM judge's messages.
_log = logging.getLogger("personatree.judge.llm")

A = TypeVar("A", bound=BaseModel)
R = TypeVar("R")


@dataclass(slots=True)
class Job(Generic[A, R]):
    """One request: the prompt, the response model and the check of its answer.

    Attributes
    ----------
    operation : str
    user_id : str or None
        Whom the request is accounted to (and whose cache scope holds the answer).
    messages : list of dict
        The rendered chat messages.
    schema : type of BaseModel
        The response model the answer must validate against.
    check : callable
        Validated answer → result; raises AnswerError when it does not fit the request.
    key : str
        The cache key, set by :meth:`RequestRunner.run`.
    wire : dict or None
        The output schema sent as structured output (:mod:`personatree.judge.wire`);
        ``None`` sends none.
    """

    operation: str
    user_id: str | None
    messages: list[dict[str, str]]
    schema: type[A]
    check: Callable[[A], R]
    key: str = ""
    wire: dict[str, Any] | None = None


def checked(text: str, job: Job[A, R]) -> tuple[Parsed[A], R]:
    """Parse and check one answer; any failure of either is an :class:`AnswerError`.

    The parser and the operation's check are pure functions of the model's text, so an
    exception other than AnswerError (a recursion limit, a value a check did not expect)
    is still a bad answer: it must become a retry or a fallback, never escape the judge.
    """
    try:
        parsed = parse_answer(text, job.schema)
        return parsed, job.check(parsed.value)
    except AnswerError:
        raise
    except (RecursionError, ArithmeticError, LookupError, TypeError, ValueError) as exc:
        raise AnswerError("invalid_schema", one_line(f"{type(exc).__name__}: {exc}", 200)) from None


class RequestRunner:
    """Answers jobs from the cache or the model, counting every request.

    Parameters
    ----------
    models : Mapping[str, str]
        The litellm model of each operation.
    prompt_ids : Mapping[str, str]
        The prompt id of each operation (part of the cache key).
    transport : Transport
    retry : RetryPolicy
    sleep : callable
        Used for backoff.
    cache : ResponseCache, optional
        ``None`` disables caching.
    ledger : UsageLedger
    counters : RobustnessCounters
    max_concurrency : int
        Fan-out of one batch of jobs.
    """

    def __init__(
        self,
        models: Mapping[str, str],
        prompt_ids: Mapping[str, str],
        transport: Transport,
        retry: RetryPolicy,
        sleep: Callable[[float], None],
        cache: ResponseCache | None,
        ledger: UsageLedger,
        counters: RobustnessCounters,
        max_concurrency: int,
    ) -> None:
        self._models = models
        self._prompt_ids = prompt_ids
        self._transport = transport
        self._retry = retry
        self._sleep = sleep
        self._cache = cache
        self._ledger = ledger
        self._counters = counters
        self._max_concurrency = max_concurrency

    def run(self, jobs: Sequence[Job[A, R]]) -> list[R | Failure]:
        """Answer jobs from the cache or the model; a failure is returned as a value.

        Cache reads and writes happen on the calling thread; only model requests fan
        out to worker threads (at most ``max_concurrency``).
        """
        results: list[R | Failure | None] = [None] * len(jobs)
        misses: list[int] = []
        for i, job in enumerate(jobs):
            job.key = cache_key(self._models[job.operation], self._prompt_ids[job.operation], job.messages,
                                {"temperature": self._transport.temperature})
            hit = self._cached(job)
            if hit is not None:
                results[i] = hit
            else:
                misses.append(i)
        for i, answer in zip(misses, self._fan_out([jobs[i] for i in misses])):
            if isinstance(answer, Failure):
                results[i] = answer
                continue
            value, results[i] = answer
            if self._cache is not None:
                self._cache.put(jobs[i].key, value, user_id=jobs[i].user_id)
        return [r for r in results if r is not None]

    def _fan_out(self, jobs: Sequence[Job[A, R]]) -> list[tuple[dict[str, Any], R] | Failure]:
        if len(jobs) <= 1:
            return [self._attempt(job) for job in jobs]
        with ThreadPoolExecutor(max_workers=min(len(jobs), self._max_concurrency)) as pool:
            return list(pool.map(self._attempt, jobs))

    def _cached(self, job: Job[A, R]) -> R | None:
        if self._cache is None:
            return None
        raw = self._cache.get(job.key, user_id=job.user_id)
        if raw is None:
            return None
        try:
            result = job.check(job.schema.model_validate(raw))
        except (AnswerError, ValueError, TypeError, RecursionError):
            return None  # an entry that no longer fits the request is a miss
        self._ledger.add(job.user_id, job.operation, cache_hits=1)
        return result

    def _attempt(self, job: Job[A, R]) -> tuple[dict[str, Any], R] | Failure:
        self._ledger.add(job.user_id, job.operation, calls=1)
        try:
            answer = self._request(job)
        except Failure as failure:
            return failure
        self._ledger.add(job.user_id, job.operation, answered=1)
        return answer

    def _request(self, job: Job[A, R]) -> tuple[dict[str, Any], R]:
        """Send one job with retries; returns (answer JSON, checked result).

        Raises
        ------
        Failure
            When every attempt failed.
        """
        op, model = job.operation, self._models[job.operation]
        send = self._transport.sender(model)
        messages = list(job.messages)
        last = Failure("provider", "no attempt made")
        transport_failures = 0
        for attempt in range(self._retry.attempts):
            if attempt:
                self._counters.retried(op)
            try:
                response = send(messages, job.wire, op)
            except Exception as exc:  # noqa: BLE001 - every provider error is classified
                last, retryable = self._transport_failure(job, exc)
                if not retryable:
                    break
                transport_failures += 1
                if attempt < self._retry.max_retries:
                    self._sleep(self._retry.backoff(transport_failures))
                continue
            text = response_text(response)
            self._ledger.record_request(
                job.user_id, op, model, count_prompt_tokens(model, messages), count_text_tokens(model, text)
            )
            try:
                parsed, result = checked(text, job)
            except AnswerError as err:
                self._ledger.add(job.user_id, op, rejected=1)
                last = Failure(err.kind, err.detail)
                _log.info("LLM judge %s answer rejected (%s): %s", op, err.kind, err.detail)
                # Show the model what was wrong; the cache key stays the original request's.
                messages = retry_messages(job.messages, text, err)
                continue
            if parsed.repaired:
                self._counters.repaired(op)
            return parsed.value.model_dump(mode="json"), result
        raise last

    def _transport_failure(self, job: Job[A, R], exc: Exception) -> tuple[Failure, bool]:
        """Account and log a completion call that raised; (failure, retryable)."""
        kind, retryable = classify(exc)
        self._ledger.add(job.user_id, job.operation, requests=1, failures=1)
        failure = Failure(kind, one_line(str(exc) or type(exc).__name__, 300))
        _log.info("LLM judge %s request failed (%s): %s", job.operation, kind, failure.detail)
        return failure, retryable
