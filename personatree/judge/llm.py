"""The LLM judge: extraction, validation (ψ), routing and summarization through litellm.

Every operation renders a versioned prompt (:mod:`personatree.judge.prompts`) whose
system message holds the instructions and the output format, and whose user message
holds only data between ``<data>`` delimiters. The answer is repaired, echo-checked
and validated by strict pydantic models (:mod:`personatree.judge.parsing`), then
checked against the request (ids in range, statements quoted from the interaction,
types from the registry, label consistent with ψ).

Failures are bounded and never lose data:

* transport errors (timeouts, rate limits, 5xx) are retried with exponential backoff;
  unusable answers are retried once more with a note saying what was wrong;
* when a call still fails, the offline judge answers **that call** (or the pairs an
  answer left out), the fallback is counted and logged (:meth:`LLMJudge.stats`);
* with ``fallback=False`` the failure is raised as a typed :class:`JudgeError`.

Answers are cached in the store (:mod:`personatree.judge.cache`) and every request is
counted per user and operation (:mod:`personatree.judge.accounting`).

The judge is thread-safe; a semaphore bounds the requests in flight across threads.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import math
import os
import re
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np
from pydantic import BaseModel

from ..errors import JudgeError, JudgeOutputError, JudgeTimeoutError, ProviderError, RateLimitError, ConfigError, InputError, PersonaTreeError
from ..ports import Embedder, Judge, Store
from ..schema import SchemaRegistry
from ..text import (
    format_month_span,
    is_informative,
    is_question,
    is_request,
    split_sentences,
    stance_label,
    strip_summary_suffix,
    tokenize,
)
from ..types import LeafDraft, Level, Node, Observation, Provenance, Route, Summary, Verdict
from .accounting import UsageLedger, UsageReport, count_prompt_tokens, count_text_tokens
from .cache import ResponseCache, cache_key
from .parsing import (
    AnswerError,
    ExtractAnswer,
    RouteAnswer,
    SummaryAnswer,
    ValidateAnswer,
    parse_answer,
)
from .prompts import PromptTemplate, data_block, load_prompt

__all__ = [
    "LLMJudge",
    "JudgeStats",
    "FallbackEvent",
    "JudgeError",
    "RateLimitError",
    "JudgeTimeoutError",
    "ProviderError",
    "JudgeOutputError",
    "OPERATIONS",
]

_log = logging.getLogger(__name__)

OPERATIONS: tuple[str, ...] = ("extract", "validate", "route", "summarize")

#: ``|ψ|`` an "unrelated" verdict may carry; more is an inconsistent answer.
UNRELATED_MAX_PSI = 0.3
_REASON_CHARS = 200

_current_user: contextvars.ContextVar[str | None] = contextvars.ContextVar("personatree_judge_user", default=None)


_ERROR_OF_KIND: Mapping[str, type[JudgeError]] = {
    "timeout": JudgeTimeoutError,
    "rate_limit": RateLimitError,
    "provider": ProviderError,
    "context_window": ProviderError,
}


# -- reports ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FallbackEvent:
    """One call (or part of one) answered by the offline judge.

    Attributes
    ----------
    operation : str
    kind : str
        Why (see :class:`JudgeError`), or ``"incomplete"`` when an answer left items out.
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
    """Robustness counters of an :class:`LLMJudge`.

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


# -- internals --------------------------------------------------------------------------------


class _Failure(Exception):
    """A request that failed for good (converted to a fallback or a JudgeError)."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


@dataclass(slots=True)
class _Job:
    """One request: the prompt, the response model and the check that turns a validated
    answer into a result (raising :class:`AnswerError` when it does not fit the request)."""

    operation: str
    user_id: str | None
    messages: list[dict[str, str]]
    schema: type[BaseModel]
    check: Callable[[Any], Any]
    key: str = ""


@dataclass(slots=True)
class _Counters:
    fallbacks: dict[str, int] = field(default_factory=dict)
    retries: dict[str, int] = field(default_factory=dict)
    repaired: dict[str, int] = field(default_factory=dict)

    def bump(self, table: str, op: str, n: int = 1) -> None:
        d = getattr(self, table)
        d[op] = d.get(op, 0) + n


def _litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    return litellm


def _classify(exc: BaseException) -> tuple[str, bool]:
    """(kind, retryable) of an exception raised by a completion call."""
    lt = _litellm()
    if isinstance(exc, (getattr(lt, "Timeout", ()), TimeoutError)):
        return "timeout", True
    if isinstance(exc, getattr(lt, "RateLimitError", ())):
        return "rate_limit", True
    if isinstance(exc, getattr(lt, "ContextWindowExceededError", ())):
        return "context_window", False
    transient = tuple(
        t for t in (getattr(lt, n, None) for n in (
            "APIConnectionError", "InternalServerError", "ServiceUnavailableError", "BadGatewayError",
        )) if isinstance(t, type)
    )
    if transient and isinstance(exc, transient):
        return "provider", True
    # Authentication, bad request, unknown model, or anything unexpected: retrying
    # the same request cannot help.
    return "provider", False


def _content(response: Any) -> str:
    """The text of a chat completion (litellm ``ModelResponse`` or a plain dict)."""
    try:
        choice = response["choices"][0] if isinstance(response, Mapping) else response.choices[0]
        msg = choice["message"] if isinstance(choice, Mapping) else choice.message
        text = msg["content"] if isinstance(msg, Mapping) else msg.content
    except (AttributeError, IndexError, KeyError, TypeError):
        return ""
    return text if isinstance(text, str) else ""


def _one_line(text: str, limit: int = _REASON_CHARS) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


_WORD_RE = re.compile(r"\w+", re.UNICODE)


def _locate(quote: str, message: str) -> tuple[int, int] | None:
    """Where ``quote`` occurs in ``message`` (ignoring case, spacing and punctuation)."""
    q = quote.strip().strip("\"'“”")
    if not q:
        return None
    i = message.find(q)
    if i >= 0:
        return i, i + len(q)
    words = _WORD_RE.findall(q)
    if not words:
        return None
    m = re.search(r"\W+".join(re.escape(w) for w in words), message, re.IGNORECASE)
    return (m.start(), m.end()) if m else None


# -- the judge --------------------------------------------------------------------------------


class LLMJudge:
    """A :class:`~personatree.ports.Judge` backed by any litellm model.

    Parameters
    ----------
    model : str or Mapping[str, str]
        A litellm model string for every operation (``"openai/gpt-4o-mini"``,
        ``"ollama/qwen3:8b"``), or one per operation, e.g. ``{"validate":
        "openai/gpt-4o-mini", "summarize": "anthropic/claude-sonnet-4-5"}``. An operation
        that is missing or mapped to ``"offline"`` is answered by the offline judge.
    embedder : Embedder
        Embeds extracted statements (one batch per ``extract`` call).
    registry : SchemaRegistry
        Schema types (names and descriptions go into the prompts) and κ.
    store : Store, optional
        Holds the response cache; ``None`` caches in process memory.
    offline : Judge, optional
        The fallback judge; default ``OfflineJudge(embedder, registry)``.
    fallback : bool
        Answer failed calls with ``offline`` (default). When False, failures raise
        :class:`JudgeError` subclasses.
    completion : callable, optional
        ``litellm.completion`` or anything with its signature (tests inject scripted
        completions here).
    completion_kwargs : Mapping, optional
        Passed to every completion (``api_base``, ``mock_response``, ``response_format``...).
    temperature : float
    timeout_s : float
        Per-request timeout passed to litellm as ``timeout=``.
    max_retries : int
        Extra attempts after the first, for transport errors and unusable answers.
    backoff_s, max_backoff_s : float
        Backoff before retry k (k = 1, 2...) after a transport error:
        ``min(max_backoff_s, backoff_s · 2^(k-1))``.
    sleep : callable
        Used for backoff (tests pass a recorder).
    max_concurrency : int
        Requests in flight at once (across threads), and the fan-out of one call.
    extract_batch : int
        Observations per extraction request.
    extract_batch_chars : int
        Soft bound on the characters of one extraction request.
    validate_batch : int
        (leaf, candidate) pairs per validation request.
    max_summary_members : int
        Most evidence items shown in a summary prompt (the most recent ones).
    context_chars : int
        Non-user messages are shown to the extractor as context, cut to this length.
    prefilter : bool
        Skip the extraction request for observations without one informative user
        sentence (greetings, thanks, questions back): the offline judge's gate.
    cache : bool
        Use the response cache.
    fallback_log_size : int
        How many fallback events :meth:`stats` keeps.
    """

    def __init__(
        self,
        model: str | Mapping[str, str],
        *,
        embedder: Embedder,
        registry: SchemaRegistry,
        store: Store | None = None,
        offline: Judge | None = None,
        fallback: bool = True,
        completion: Callable[..., Any] | None = None,
        completion_kwargs: Mapping[str, Any] | None = None,
        temperature: float = 0.0,
        timeout_s: float = 30.0,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
        sleep: Callable[[float], None] = time.sleep,
        max_concurrency: int = 4,
        extract_batch: int = 8,
        extract_batch_chars: int = 12_000,
        validate_batch: int = 16,
        max_summary_members: int = 24,
        context_chars: int = 400,
        prefilter: bool = True,
        cache: bool = True,
        fallback_log_size: int = 1000,
    ) -> None:
        self._models = _models_of(model)
        if max_retries < 0 or max_concurrency < 1 or extract_batch < 1 or validate_batch < 1:
            raise ConfigError("max_retries must be >= 0 and concurrency and batch sizes >= 1")
        self._embedder = embedder
        self._registry = registry
        if offline is None:
            from .offline import OfflineJudge

            offline = OfflineJudge(embedder, registry)
        self._offline = offline
        self._fallback = fallback
        self._completion = completion
        self._kwargs = dict(completion_kwargs or {})
        self._temperature = temperature
        self._timeout = timeout_s
        self._max_retries = max_retries
        self._backoff = backoff_s
        self._max_backoff = max_backoff_s
        self._sleep = sleep
        self._max_concurrency = max_concurrency
        self._slots = threading.BoundedSemaphore(max_concurrency)
        self._extract_batch = extract_batch
        self._extract_chars = extract_batch_chars
        self._validate_batch = validate_batch
        self._max_members = max_summary_members
        self._context_chars = context_chars
        self._prefilter = prefilter
        self._cache = ResponseCache(store) if cache else None
        self._ledger = UsageLedger()
        self._counters = _Counters()
        self._log: deque[FallbackEvent] = deque(maxlen=fallback_log_size)
        self._lock = threading.Lock()
        self._prompts = {op: load_prompt(op) for op in OPERATIONS}
        self._leaf_types = tuple(t.name for t in registry.types_at(Level.LEAF))
        self._type_lists = {
            "leaf": "\n".join(f"- {t.name}: {t.description}" for t in registry.types_at(Level.LEAF)),
            "all": "\n".join(
                f"- {t.name} ({', '.join(lv.value for lv in t.levels)}): {t.description}" for t in registry
            ),
        }

    # -- reports ------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """``"llm:<model>"``, or ``"llm:extract=…,validate=…"`` for per-operation models."""
        models = {op: m for op, m in self._models.items()}
        distinct = set(models.values())
        if len(distinct) == 1 and len(models) == len(OPERATIONS):
            return f"llm:{distinct.pop()}"
        return "llm:" + ",".join(f"{op}={models.get(op, 'offline')}" for op in OPERATIONS)

    @property
    def models(self) -> Mapping[str, str]:
        """The model of each operation answered by an LLM."""
        return dict(self._models)

    def usage(self, user_id: str | None = None) -> UsageReport:
        """Requests, tokens and cost per user and operation (all users by default)."""
        return self._ledger.report(user_id)

    def stats(self) -> JudgeStats:
        """Fallback, retry and repair counters and the recent fallback log."""
        with self._lock:
            c = self._counters
            return JudgeStats(dict(c.fallbacks), dict(c.retries), dict(c.repaired), tuple(self._log))

    @contextlib.contextmanager
    def scope(self, user_id: str) -> Iterator[None]:
        """Attribute calls without nodes (``route``) to ``user_id`` inside the block."""
        token = _current_user.set(user_id)
        try:
            yield
        finally:
            _current_user.reset(token)

    # -- extraction ---------------------------------------------------------------------

    def extract(self, observations: Sequence[Observation]) -> list[list[LeafDraft]]:
        """Typed leaf drafts for each observation (one list per observation, same order).

        Observations are sent in batches (``extract_batch`` per request, one user per
        request). The model quotes each statement verbatim; a quote that cannot be found
        in the named user message is dropped (the model invented it). ``provenance.turn``
        is the message index; ``provenance.sentence`` numbers the statements of a message
        in reading order. A batch whose request fails is extracted by the offline judge.

        Parameters
        ----------
        observations : sequence of Observation

        Returns
        -------
        list of list of LeafDraft
        """
        obs = list(observations)
        out: list[list[LeafDraft]] = [[] for _ in obs]
        if "extract" not in self._models:
            return self._offline.extract(obs)
        todo = [i for i, o in enumerate(obs) if self._worth_extracting(o)]
        batches = self._extract_batches(obs, todo)
        jobs = [self._extract_job(obs, b) for b in batches]
        results = self._run(jobs)
        failed: list[int] = []
        for batch, job, res in zip(batches, jobs, results):
            if isinstance(res, _Failure):
                self._record_fallback("extract", res, job.user_id, len(batch))
                failed.extend(batch)
            else:
                for i, drafts in res.items():
                    out[i] = drafts
        if failed:
            for i, drafts in zip(failed, self._offline.extract([obs[i] for i in failed])):
                out[i] = list(drafts)
        self._embed_missing(out)
        return out

    def _worth_extracting(self, o: Observation) -> bool:
        users = [m.content for m in o.messages if m.role == "user" and m.content.strip()]
        if not users:
            return False
        if not self._prefilter:
            return True
        return any(is_informative(s, tokenize(s)) for text in users for s in split_sentences(text))

    def _extract_batches(self, obs: Sequence[Observation], todo: Sequence[int]) -> list[list[int]]:
        batches: list[list[int]] = []
        cur: list[int] = []
        chars = 0
        for i in todo:
            size = sum(len(m.content) for m in obs[i].messages)
            if cur and (
                len(cur) >= self._extract_batch or chars + size > self._extract_chars
                or obs[cur[0]].user_id != obs[i].user_id
            ):
                batches.append(cur)
                cur, chars = [], 0
            cur.append(i)
            chars += size
        if cur:
            batches.append(cur)
        return batches

    def _extract_job(self, obs: Sequence[Observation], batch: Sequence[int]) -> _Job:
        payload = []
        for k, i in enumerate(batch):
            msgs = []
            for t, m in enumerate(obs[i].messages):
                text = m.content if m.role == "user" else m.content[: self._context_chars]
                entry: dict[str, Any] = {"index": t, "role": m.role, "text": text}
                if m.name:
                    entry["speaker"] = m.name
                msgs.append(entry)
            payload.append({"id": k, "date": obs[i].at.date().isoformat(), "messages": msgs})
        messages = self._prompts["extract"].render(types=self._type_lists["leaf"], data=data_block(payload))

        def check(answer: ExtractAnswer) -> dict[int, list[LeafDraft]]:
            return self._drafts_of(answer, obs, batch)

        return _Job("extract", obs[batch[0]].user_id, messages, ExtractAnswer, check)

    def _drafts_of(
        self, answer: ExtractAnswer, obs: Sequence[Observation], batch: Sequence[int]
    ) -> dict[int, list[LeafDraft]]:
        model = self._models["extract"]
        found: dict[int, dict[tuple[int, int, int], Any]] = {i: {} for i in batch}
        asked = False  # a quoted question or request: grounded, but no evidence
        for leaf in answer.leaves:
            kind = leaf.type.strip().lower()
            if kind not in self._leaf_types:
                raise AnswerError(
                    "invalid_schema", f"type {leaf.type!r} is not one of {', '.join(self._leaf_types)}"
                )
            if leaf.interaction >= len(batch):
                continue
            o = obs[batch[leaf.interaction]]
            if leaf.message >= len(o.messages) or o.messages[leaf.message].role != "user":
                continue
            span = _locate(leaf.text, o.messages[leaf.message].content)
            if span is None:
                continue  # not a quote: the model made it up
            quote = o.messages[leaf.message].content[span[0]:span[1]]
            if is_question(quote) or is_request(tokenize(quote), quote):
                # A question or a task for the assistant is not evidence about the user,
                # whichever judge reads it. It still counts as grounded.
                asked = True
                continue
            found[batch[leaf.interaction]][(leaf.message, *span)] = (kind, leaf)
        if answer.leaves and not any(found.values()) and not asked:
            raise AnswerError("ungrounded", "no statement was quoted verbatim from a user message")
        out: dict[int, list[LeafDraft]] = {}
        for i, spans in found.items():
            o = obs[i]
            drafts: list[LeafDraft] = []
            per_turn: dict[int, int] = {}
            for (turn, a, b), (kind, leaf) in sorted(spans.items()):
                msg = o.messages[turn]
                k = per_turn.get(turn, 0)
                per_turn[turn] = k + 1
                text = msg.content[a:b]
                attrs: dict[str, Any] = {
                    "polarity": int(leaf.polarity),
                    "negated": bool(leaf.negated),
                    "cessation": False,
                    # The model's stance when it gives one, else the offline reading.
                    "stance": leaf.stance or stance_label(text),
                    "topic": _one_line(leaf.topic, 80).lower(),
                    "time": leaf.time,
                    "entities": [_one_line(e, 80) for e in leaf.entities if e.strip()],
                    "speaker": msg.name,
                    "role": "user",
                    "judge": model,
                }
                if leaf.polarity < 0 and not leaf.negated:
                    # The offline fallback validator reads cessation from the text; keep the
                    # attribute present with the same meaning ("stopped", "no longer").
                    attrs["cessation"] = bool(re.search(r"\b(stopped|quit|no longer|anymore|used to)\b",
                                                        msg.content[a:b], re.IGNORECASE))
                if attrs["stance"] == "stopped":
                    attrs["cessation"] = True
                drafts.append(LeafDraft(
                    content=msg.content[a:b].strip(),
                    schema_type=kind,
                    attributes=attrs,
                    provenance=Provenance(o.id, turn, k, o.at, o.session_id),
                ))
            out[i] = drafts
        return out

    def _embed_missing(self, out: list[list[LeafDraft]]) -> None:
        where = [(i, j) for i, ds in enumerate(out) for j, d in enumerate(ds) if d.embedding is None]
        if not where:
            return
        vecs = np.ascontiguousarray(self._embedder.embed([out[i][j].content for i, j in where]), dtype=np.float32)
        for (i, j), v in zip(where, vecs):
            out[i][j] = replace(out[i][j], embedding=v)

    # -- validation ---------------------------------------------------------------------

    def validate(self, pairs: Sequence[tuple[Node, Node, float]]) -> list[Verdict]:
        """Label each (child, candidate parent, cosine similarity) pair.

        Pairs failing κ are ``unrelated`` without a request. The others are sent
        ``validate_batch`` at a time. An answer must give each pair one verdict whose
        label agrees with the sign of ψ (``unrelated`` needs ``|ψ| ≤ 0.3``); pairs it
        leaves out or gets inconsistent are labelled by the offline judge (recorded as
        an ``"incomplete"`` fallback), and a failed request falls back as a whole.

        Parameters
        ----------
        pairs : sequence of (Node, Node, float)

        Returns
        -------
        list of Verdict
            One per pair, same order.
        """
        out: list[Verdict | None] = [None] * len(pairs)
        todo: list[int] = []
        for i, (child, parent, _sim) in enumerate(pairs):
            if not self._registry.kappa(child.schema_type, child.level, parent.schema_type):
                out[i] = Verdict("unrelated", 0.0, f"schema: {child.level.value} {child.schema_type!r} "
                                 f"cannot support {parent.schema_type!r}")
            else:
                todo.append(i)
        if "validate" not in self._models:
            for i, v in zip(todo, self._offline.validate([pairs[i] for i in todo]) if todo else []):
                out[i] = v
            return [v for v in out if v is not None]
        chunks: list[list[int]] = []
        for i in todo:
            if chunks and len(chunks[-1]) < self._validate_batch and pairs[chunks[-1][0]][0].user_id == pairs[i][0].user_id:
                chunks[-1].append(i)
            else:
                chunks.append([i])
        jobs = [self._validate_job(pairs, c) for c in chunks]
        leftover: list[tuple[int, _Failure]] = []
        for chunk, job, res in zip(chunks, jobs, self._run(jobs)):
            if isinstance(res, _Failure):
                self._record_fallback("validate", res, job.user_id, len(chunk))
                leftover.extend((i, res) for i in chunk)
                continue
            missing = [i for k, i in enumerate(chunk) if k not in res]
            for k, i in enumerate(chunk):
                if k in res:
                    out[i] = res[k]
            if missing:
                self._record_fallback("validate", _Failure("incomplete", f"{len(missing)} pair(s) without a usable verdict"),
                                      job.user_id, len(missing))
                leftover.extend((i, _Failure("incomplete", "")) for i in missing)
        if leftover:
            idx = [i for i, _ in leftover]
            kinds = {i: f.kind for i, f in leftover}
            verdicts = self._offline.validate([pairs[i] for i in idx])
            for i, v in zip(idx, verdicts):
                out[i] = Verdict(v.label, v.psi, _one_line(f"offline fallback ({kinds[i]}): {v.reason}", 300))
        return [v for v in out if v is not None]

    def _validate_job(self, pairs: Sequence[tuple[Node, Node, float]], chunk: Sequence[int]) -> _Job:
        payload = []
        for k, i in enumerate(chunk):
            child, parent, _sim = pairs[i]
            payload.append({
                "pair": k,
                "evidence": {"type": child.schema_type, "text": strip_summary_suffix(child.content)},
                "pattern": {"type": parent.schema_type, "level": parent.level.value,
                            "text": strip_summary_suffix(parent.content)},
            })
        messages = self._prompts["validate"].render(data=data_block(payload))

        def check(answer: ValidateAnswer) -> dict[int, Verdict]:
            got: dict[int, Verdict] = {}
            for v in answer.verdicts:
                if v.pair >= len(chunk) or v.pair in got:
                    continue
                consistent = (
                    (v.label == "support" and v.psi > 0)
                    or (v.label == "conflict" and v.psi < 0)
                    or (v.label == "unrelated" and abs(v.psi) <= UNRELATED_MAX_PSI)
                )
                if consistent:
                    got[v.pair] = Verdict(v.label, float(v.psi), _one_line(f"{v.label}: {v.reason or 'no reason given'}"))
            if chunk and not got:
                raise AnswerError("invalid_schema", "no verdict named a pair id with a label matching the sign of psi")
            return got

        return _Job("validate", pairs[chunk[0]][0].user_id, messages, ValidateAnswer, check)

    # -- routing ------------------------------------------------------------------------

    def route(self, query: str) -> Route:
        """Predict the abstraction level and schema constraints a query needs.

        The model gives level probabilities (normalized here; the level is the argmax)
        and schema types (unknown names are dropped). A failed request is routed by the
        offline judge. Usage is attributed to the user of :meth:`scope`, if any.

        Parameters
        ----------
        query : str

        Returns
        -------
        Route
        """
        if "route" not in self._models:
            return self._offline.route(query)
        messages = self._prompts["route"].render(types=self._type_lists["all"], data=data_block({"question": query}))

        def check(answer: RouteAnswer) -> Route:
            probs = {Level(k): max(0.0, float(v)) for k, v in answer.probabilities.items()}
            total = sum(probs.values())
            if not math.isfinite(total) or total <= 0.0:
                raise AnswerError("invalid_schema", "probabilities must be positive and sum to 1")
            full = {lv: probs.get(lv, 0.0) / total for lv in Level}
            level = max(Level, key=lambda lv: (full[lv], -lv.rank))
            types = tuple(dict.fromkeys(t for t in answer.schema_types if t in self._registry))
            return Route(level=level, probabilities=full, schema_types=types)

        job = _Job("route", _current_user.get(), messages, RouteAnswer, check)
        res = self._run([job])[0]
        if isinstance(res, _Failure):
            self._record_fallback("route", res, job.user_id, 1)
            return self._offline.route(query)
        return res

    # -- summarization ------------------------------------------------------------------

    def summarize(self, members: Sequence[Node], level: Level, schema_type: str) -> Summary:
        """Summarize ``members`` into a claim of ``schema_type`` at ``level``.

        The prompt shows the most recent ``max_summary_members`` members and asks for a
        claim grounded in them, citing the ids it rests on (ids must be in range). A MID
        claim gets the same "(N mentions, span)" suffix as the offline judge's, computed
        here from all members, so counts and dates never come from the model. The other
        attributes (medoid, mentions, members, span) are the offline judge's; ``polarity``
        and ``topic`` are the model's, ``evidence`` lists the cited node ids.

        Parameters
        ----------
        members : sequence of Node
            At least one node.
        level : Level
        schema_type : str

        Returns
        -------
        Summary

        Raises
        ------
        InputError
            If ``members`` is empty.
        """
        if not members:
            raise InputError("summarize needs at least one member")
        base = self._offline.summarize(members, level, schema_type)
        if "summarize" not in self._models:
            return base
        shown = sorted(members, key=lambda n: (n.t_first, n.id))[-self._max_members :]
        payload = [
            {"id": k, "type": n.schema_type, "date": n.t_first.date().isoformat(),
             "text": strip_summary_suffix(n.content)}
            for k, n in enumerate(shown)
        ]
        st = self._registry[schema_type] if schema_type in self._registry else None
        messages = self._prompts["summarize"].render(
            level=level.value, type=schema_type, description=st.description if st else schema_type,
            data=data_block(payload),
        )
        model = self._models["summarize"]

        def check(answer: SummaryAnswer) -> Summary:
            cited = [k for k in dict.fromkeys(answer.evidence) if k < len(shown)]
            if not cited:
                raise AnswerError("ungrounded", "evidence must cite at least one given id")
            claim = _one_line(answer.claim, 300).rstrip(" .")
            if not claim:
                raise AnswerError("invalid_schema", "claim is empty")
            attrs = dict(base.attributes)
            if level is Level.MID:
                mentions = sum(max(1, n.n_support) for n in members)
                span = format_month_span(min(n.t_first for n in members), max(n.t_last for n in members))
                content = f"{claim} ({mentions} mention{'s' if mentions != 1 else ''}, {span})"
            else:
                content = claim
            attrs.update({
                "polarity": int(answer.polarity),
                "topic": _one_line(answer.topic, 80).lower() or attrs.get("topic", ""),
                "evidence": [shown[k].id for k in cited],
                "judge": model,
            })
            return Summary(content=content, schema_type=schema_type, attributes=attrs)

        job = _Job("summarize", members[0].user_id, messages, SummaryAnswer, check)
        res = self._run([job])[0]
        if isinstance(res, _Failure):
            self._record_fallback("summarize", res, job.user_id, 1)
            return base
        return res

    # -- requests -----------------------------------------------------------------------

    def _run(self, jobs: Sequence[_Job]) -> list[Any]:
        """Answer jobs from the cache or the model; a failure is returned as a value.

        Cache reads and writes happen on the calling thread; only model requests fan
        out to worker threads (at most ``max_concurrency``).
        """
        results: list[Any] = [None] * len(jobs)
        misses: list[int] = []
        for i, job in enumerate(jobs):
            model = self._models[job.operation]
            job.key = cache_key(model, self._prompts[job.operation].id, job.messages,
                                {"temperature": self._temperature})
            hit = self._cached(job)
            if hit is not None:
                results[i] = hit
            else:
                misses.append(i)
        if len(misses) == 1:
            results[misses[0]] = self._attempt(jobs[misses[0]])
        elif misses:
            with ThreadPoolExecutor(max_workers=min(len(misses), self._max_concurrency)) as pool:
                for i, res in zip(misses, pool.map(lambda k: self._attempt(jobs[k]), misses)):
                    results[i] = res
        for i in misses:
            res = results[i]
            if not isinstance(res, _Failure) and self._cache is not None:
                value, results[i] = res
                self._cache.put(jobs[i].key, value, user_id=jobs[i].user_id)
            elif not isinstance(res, _Failure):
                results[i] = res[1]
        return results

    def _cached(self, job: _Job) -> Any | None:
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

    def _attempt(self, job: _Job) -> Any:
        try:
            return self._request(job)
        except _Failure as failure:
            return failure

    def _request(self, job: _Job) -> tuple[Any, Any]:
        """Send one job with retries; returns (answer JSON, checked result).

        Raises
        ------
        _Failure
            When every attempt failed.
        """
        op, model = job.operation, self._models[job.operation]
        completion = self._completion or _litellm().completion
        messages = list(job.messages)
        last = _Failure("provider", "no attempt made")
        transport_failures = 0
        for attempt in range(self._max_retries + 1):
            if attempt:
                with self._lock:
                    self._counters.bump("retries", op)
            try:
                with self._slots:
                    response = completion(
                        model=model, messages=messages, timeout=self._timeout,
                        temperature=self._temperature, **self._kwargs,
                    )
            except Exception as exc:  # noqa: BLE001 - every provider error is classified
                kind, retryable = _classify(exc)
                self._ledger.add(job.user_id, op, requests=1, failures=1)
                last = _Failure(kind, _one_line(str(exc) or type(exc).__name__, 300))
                _log.info("LLM judge %s request failed (%s): %s", op, kind, last.detail)
                if not retryable:
                    break
                transport_failures += 1
                if attempt < self._max_retries:
                    self._sleep(min(self._max_backoff, self._backoff * 2 ** (transport_failures - 1)))
                continue
            text = _content(response)
            self._ledger.record_request(
                job.user_id, op, model, count_prompt_tokens(model, messages), count_text_tokens(model, text)
            )
            try:
                parsed = _checked(text, job)
            except AnswerError as err:
                self._ledger.add(job.user_id, op, rejected=1)
                last = _Failure(err.kind, err.detail)
                _log.info("LLM judge %s answer rejected (%s): %s", op, err.kind, err.detail)
                # Show the model what was wrong; the cache key stays the original request's.
                messages = [*job.messages, {"role": "assistant", "content": text[:4000]}, {
                    "role": "user",
                    "content": f"Your answer could not be used ({err.kind}: {err.detail}). Answer again with "
                               "only the JSON object, in exactly the shape the instructions give.",
                }]
                continue
            parsed, result = parsed
            if parsed.repaired:
                with self._lock:
                    self._counters.bump("repaired", op)
            return parsed.value.model_dump(mode="json"), result
        raise last

    def _record_fallback(self, op: str, failure: _Failure, user_id: str | None, items: int) -> None:
        model = self._models.get(op, "offline")
        if not self._fallback:
            cls = _ERROR_OF_KIND.get(failure.kind, JudgeOutputError)
            raise cls(f"LLM judge {op} with {model} failed ({failure.kind}): {failure.detail}",
                      operation=op, kind=failure.kind, model=model)
        event = FallbackEvent(op, failure.kind, failure.detail, model, user_id or "", items, time.time())
        with self._lock:
            self._counters.bump("fallbacks", op)
            self._log.append(event)
        self._ledger.add(user_id, op, fallbacks=items)
        _log.warning("LLM judge %s fell back to the offline judge for %d item(s): %s: %s",
                     op, items, failure.kind, failure.detail)


def _checked(text: str, job: _Job) -> tuple[Any, Any]:
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
        raise AnswerError("invalid_schema", _one_line(f"{type(exc).__name__}: {exc}", 200)) from None


def _models_of(spec: str | Mapping[str, str]) -> dict[str, str]:
    """The litellm model of each LLM-answered operation (``"offline"`` ones left out)."""
    if isinstance(spec, str):
        if not spec.strip():
            raise ConfigError("the judge model must be a non-empty litellm model string")
        return {} if spec == "offline" else {op: spec for op in OPERATIONS}
    if not isinstance(spec, Mapping):
        raise ConfigError(f"judge model must be a string or a mapping, got {type(spec).__name__}")
    unknown = set(spec) - set(OPERATIONS)
    if unknown:
        raise ConfigError(f"unknown judge operations {sorted(map(str, unknown))}; use {', '.join(OPERATIONS)}")
    out: dict[str, str] = {}
    for op, m in spec.items():
        if not isinstance(m, str) or not m.strip():
            raise ConfigError(f"judge model for {op!r} must be a non-empty string")
        if m != "offline":
            out[op] = m
    return out
