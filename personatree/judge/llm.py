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

:class:`LLMJudge` composes the parts: :mod:`~personatree.judge.jobs` (what each
operation asks and how its answer is checked), :mod:`~personatree.judge.runner` (cache,
requests and retries, over :mod:`~personatree.judge.transport` and
:mod:`~personatree.judge.retry`) and :mod:`~personatree.judge.fallback`.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from dataclasses import replace
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from ..errors import ConfigError, InputError
# Importable from here as well as from personatree.judge and personatree.errors.
from ..errors import JudgeError, JudgeOutputError, JudgeTimeoutError, ProviderError, RateLimitError  # noqa: F401
from ..ports import Embedder, Judge, Store
from ..schema import SchemaRegistry
from ..text import is_informative, split_sentences, tokenize
from ..types import LeafDraft, Level, Node, Observation, Route, Summary, Verdict
from .accounting import FallbackEvent, JudgeStats, RobustnessCounters, UsageLedger, UsageReport  # noqa: F401
from .cache import ResponseCache
from .fallback import FallbackPolicy
from .jobs import (
    extract_batches, extract_job, route_job, sized_batches, summarize_job, type_lists, update_job, validate_chunks,
    validate_job,
)
from .operations import OPERATIONS, judge_name, models_of
from .prompts import load_prompt
from .retry import Failure, RetryPolicy
from .runner import RequestRunner
from .transport import Completion, Transport

__all__ = ["LLMJudge", "OPERATIONS"]

_current_user: contextvars.ContextVar[str | None] = contextvars.ContextVar("personatree_judge_user", default=None)


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
        Passed to every completion (``api_base``, ``mock_response``...). A
        ``response_format`` given here is sent as is, instead of the output schemas.
    structured_output : str
        How each request's output schema is sent to the server (see
        :mod:`personatree.judge.structured`): ``"auto"`` (default: OpenAI's
        ``json_schema`` form, stepping down per model to ``json_object`` with a schema,
        plain JSON mode, then none when the server refuses a form), one form by name
        (``"json_schema"``, ``"json_object_schema"``, ``"json_object"``), or ``"off"``.
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
    update_batch : int
        Later statements (each with its earlier ones) per update request.
    update_batch_chars : int
        Soft bound on the characters of one update request (a local model with a
        small context window wants less).
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
        completion: Completion | None = None,
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
        update_batch: int = 64,
        update_batch_chars: int = 60_000,
        max_summary_members: int = 24,
        context_chars: int = 400,
        prefilter: bool = True,
        cache: bool = True,
        fallback_log_size: int = 1000,
        structured_output: str = "auto",
    ) -> None:
        self._models = models_of(model)
        if max_retries < 0 or max_concurrency < 1 or min(extract_batch, validate_batch, update_batch) < 1:
            raise ConfigError("max_retries must be >= 0 and concurrency and batch sizes >= 1")
        self._embedder = embedder
        self._registry = registry
        if offline is None:
            from .offline import OfflineJudge

            offline = OfflineJudge(embedder, registry)
        self._offline = offline
        self._extract_batch = extract_batch
        self._extract_chars = extract_batch_chars
        self._validate_batch = validate_batch
        self._update_batch = update_batch
        self._update_chars = update_batch_chars
        self._max_members = max_summary_members
        self._context_chars = context_chars
        self._prefilter = prefilter
        self._ledger = UsageLedger()
        self._counters = RobustnessCounters(fallback_log_size)
        self._prompts = {op: load_prompt(op) for op in OPERATIONS}
        self._transport = Transport(completion, completion_kwargs, temperature=temperature, timeout_s=timeout_s,
                                    max_concurrency=max_concurrency, structured_output=structured_output)
        self._runner = RequestRunner(
            self._models,
            {op: p.id for op, p in self._prompts.items()},
            self._transport,
            RetryPolicy(max_retries, backoff_s, max_backoff_s),
            sleep,
            ResponseCache(store) if cache else None,
            self._ledger,
            self._counters,
            max_concurrency,
        )
        self._fallback = FallbackPolicy(offline, fallback, self._models, self._ledger, self._counters)
        self._leaf_types = tuple(t.name for t in registry.types_at(Level.LEAF))
        self._type_lists = type_lists(registry)

    # -- reports ------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """``"llm:<model>"``, or ``"llm:extract=…,validate=…"`` for per-operation models."""
        return judge_name(self._models)

    @property
    def models(self) -> Mapping[str, str]:
        """The model of each operation answered by an LLM."""
        return dict(self._models)

    def usage(self, user_id: str | None = None) -> UsageReport:
        """Requests, tokens and cost per user and operation (all users by default)."""
        return self._ledger.report(user_id)

    def output_forms(self) -> dict[str, str]:
        """The structured output form each model asked so far is sent (``"none"``: no
        ``response_format``); see :mod:`personatree.judge.structured`."""
        return self._transport.forms.forms()

    def stats(self) -> JudgeStats:
        """Fallback, retry and repair counters and the recent fallback log."""
        return self._counters.snapshot()

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
        batches = extract_batches(obs, todo, self._extract_batch, self._extract_chars)
        jobs = [
            extract_job(self._prompts["extract"], self._type_lists["leaf"], self._leaf_types, self._models["extract"],
                        obs, b, self._context_chars)
            for b in batches
        ]
        results = self._runner.run(jobs)
        failed: list[int] = []
        for batch, job, res in zip(batches, jobs, results):
            if isinstance(res, Failure):
                self._fallback.record("extract", res, job.user_id, len(batch))
                failed.extend(batch)
            else:
                for i, drafts in res.items():
                    out[i] = drafts
        self._fallback.extract_into(out, obs, failed)
        self._embed_missing(out)
        return out

    def _worth_extracting(self, o: Observation) -> bool:
        """Whether an observation needs a request: a non-empty user message and, with
        ``prefilter``, one informative user sentence (the offline judge's gate)."""
        users = [m.content for m in o.messages if m.role == "user" and m.content.strip()]
        if not users:
            return False
        if not self._prefilter:
            return True
        return any(is_informative(s, tokenize(s)) for text in users for s in split_sentences(text))

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
        chunks = validate_chunks(pairs, todo, self._validate_batch)
        jobs = [validate_job(self._prompts["validate"], pairs, c) for c in chunks]
        results = self._runner.run(jobs)
        leftover: list[tuple[int, Failure]] = []
        for chunk, job, res in zip(chunks, jobs, results):
            if isinstance(res, Failure):
                self._fallback.record("validate", res, job.user_id, len(chunk))
                leftover.extend((i, res) for i in chunk)
                continue
            missing = [i for k, i in enumerate(chunk) if k not in res]
            for k, i in enumerate(chunk):
                if k in res:
                    out[i] = res[k]
            if missing:
                incomplete = Failure("incomplete", f"{len(missing)} pair(s) without a usable verdict")
                self._fallback.record("validate", incomplete, job.user_id, len(missing))
                leftover.extend((i, Failure("incomplete", "")) for i in missing)
        self._fallback.validate_into(out, pairs, leftover)
        return [v for v in out if v is not None]

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
        job = route_job(self._prompts["route"], self._type_lists["all"], self._registry, query, _current_user.get())
        res = self._runner.run([job])[0]
        if isinstance(res, Failure):
            self._fallback.record("route", res, job.user_id, 1)
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
        job = summarize_job(self._prompts["summarize"], self._registry, members, shown, level, schema_type, base,
                            self._models["summarize"])
        res = self._runner.run([job])[0]
        if isinstance(res, Failure):
            self._fallback.record("summarize", res, job.user_id, 1)
            return base
        return res

    # -- updates ------------------------------------------------------------------------

    @property
    def judges_updates(self) -> bool:
        """Whether :meth:`updates` asks a model (``update`` is not answered offline)."""
        return "update" in self._models

    def updates(self, groups: Sequence[tuple[Node, Sequence[Node]]]) -> list[list[int]]:
        """Which earlier statements each later statement changes.

        A change of mind is often told without a word any rule reads as one ("sold
        the wheel and gave my studio spot away" ends a pottery habit): a model reads
        it. Groups are sent ``update_batch`` at a time (at most about
        ``update_batch_chars`` characters), one user per request. A
        group a request fails for, or an answer leaves out, gets no link (recall's
        own rules still apply to it; the fallback is recorded).

        Parameters
        ----------
        groups : sequence of (Node, sequence of Node)
            A later statement and earlier statements of the same person.

        Returns
        -------
        list of list of int
            Per group, the indices of the earlier statements the later one changes.
        """
        out: list[list[int]] = [[] for _ in groups]
        todo = [i for i, (_, earlier) in enumerate(groups) if earlier]
        if "update" not in self._models or not todo:
            return out
        sizes = [len(later.content) + sum(len(e.content) for e in earlier) for later, earlier in groups]
        chunks = sized_batches([later.user_id for later, _ in groups], sizes, todo, self._update_batch,
                               self._update_chars)
        jobs = [update_job(self._prompts["update"], groups, c) for c in chunks]
        results = self._runner.run(jobs)
        for chunk, job, res in zip(chunks, jobs, results):
            if isinstance(res, Failure):
                self._fallback.record("update", res, job.user_id, len(chunk))
                continue
            missing = [k for k in range(len(chunk)) if k not in res]
            for k, i in enumerate(chunk):
                out[i] = res.get(k, [])
            if missing:
                incomplete = Failure("incomplete", f"{len(missing)} group(s) without an entry")
                self._fallback.record("update", incomplete, job.user_id, len(missing))
        return out
