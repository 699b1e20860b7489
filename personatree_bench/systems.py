"""The systems compared in one run, all with the same embedder and token counter.

- ``personatree``: the full engine through its public API (``observe_many`` per
  session, ``consolidate`` at session boundaries, ``recall`` per question);
- ``personatree-leaves``: the same tree, recalled with ``levels=["leaf"]`` (ablation);
- ``personatree-tiered``: the same tree, recalled through the HMO tiers (hot cache →
  buffer → whole tree); recall counts feed the tiers, and every personatree system
  of the run bumps them, as every recall of an agent would;
- ``dense``: flat cosine retrieval over raw turns, packed best first;
- ``dense+bm25``: dense and BM25 rankings fused by reciprocal rank, packed best first;
- ``recency``: the most recent turns, truncated to the budget.

A system is built for one conversation at a time from its turns only (never its
questions), answers ``retrieve`` (a context within a token budget) and ``ranked``
(the first ``k`` distinct turns it would show), and reports its *standing context*
(what it puts in every prompt whatever the query; see :mod:`personatree_bench.metrics`).
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol, Sequence

import numpy as np

from .packing import lexical_tokens, pack_best_first, pack_recent, rrf
from .types import Turn

__all__ = [
    "SYSTEMS",
    "parse_schedule",
    "consolidation_due",
    "Context",
    "System",
    "FlatIndex",
    "DenseSystem",
    "FusionSystem",
    "RecencySystem",
    "PersonaTreeEngine",
    "PersonaTreeSystem",
    "build_systems",
    "render_turn",
    "interaction",
]

SYSTEMS = ("personatree", "personatree-leaves", "personatree-tiered", "dense", "dense+bm25", "recency")


@dataclass(frozen=True, slots=True)
class Context:
    """What a system put in front of the model for one question.

    Attributes
    ----------
    text : str
        The rendered context.
    turn_ids : tuple of str
        Turns whose content reached the context, in order of first appearance.
    tokens : int
        Tokens of ``text`` by the shared counter.
    seconds : float
        Wall time of the retrieval call.
    """

    text: str
    turn_ids: tuple[str, ...]
    tokens: int
    seconds: float


class System(Protocol):
    """What the runner needs from a system."""

    name: str

    def ingest(self, conv_id: str, turns: Sequence[Turn]) -> float:
        """Build memory for ``conv_id`` from its turns; return the seconds it took."""
        ...

    def retrieve(self, conv_id: str, query: str, at: datetime | None, budget: int) -> Context:
        """A context of at most ``budget`` tokens for ``query``."""
        ...

    def ranked(self, conv_id: str, query: str, at: datetime | None, k: int) -> list[str]:
        """The first ``k`` distinct turn ids the system would show, best first."""
        ...

    def checkpoints(self, conv_id: str) -> list[tuple[int, int]]:
        """(turns ingested, standing-context tokens) measured after each session."""
        ...

    def drop(self, conv_id: str) -> None:
        """Forget a conversation (frees memory between cases)."""
        ...

    def close(self) -> None:
        """Release resources."""
        ...


def render_turn(turn: Turn) -> str:
    """One turn as a baseline renders it: ``"[2023-05-08] Corinne: text"``.

    The date is kept because temporal questions need it, as personatree's leaves keep theirs.
    """
    return f"[{turn.at:%Y-%m-%d}] {turn.speaker}: {turn.text}"


def interaction(conv_id: str, turn: Turn) -> dict[str, Any]:
    """The ``observe_many`` item for one turn (one observation per turn).

    Both LoCoMo speakers are people, so every non-assistant turn is a ``user``
    message carrying the speaker's name; the observation id names the turn so that
    provenance leads back to it.
    """
    msg: dict[str, Any] = {"role": "assistant" if turn.role == "assistant" else "user", "content": turn.text}
    if msg["role"] == "user" and turn.speaker and turn.speaker != "user":
        msg["name"] = turn.speaker
    return {
        "messages": [msg],
        "at": turn.at,
        "session_id": turn.session,
        "observation_id": f"{conv_id}:{turn.id}",
        "metadata": {"turn_id": turn.id},
    }


# -- flat baselines ---------------------------------------------------------------------


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

    def __init__(self, embedder: Any, counter: Any) -> None:
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
            from rank_bm25 import BM25Okapi

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

    def retrieve(self, conv_id: str, query: str, at: datetime | None, budget: int) -> Context:
        order, ranking_seconds = self._ranking(conv_id, query)
        t0 = time.perf_counter()
        chosen = pack_best_first(order, self.index.get(conv_id).costs, budget)
        return self.index.context(conv_id, chosen, ranking_seconds + time.perf_counter() - t0)

    def ranked(self, conv_id: str, query: str, at: datetime | None, k: int) -> list[str]:
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

    def retrieve(self, conv_id: str, query: str, at: datetime | None, budget: int) -> Context:
        t0 = time.perf_counter()
        chosen = pack_recent(self._recent(conv_id, at), self.index.get(conv_id).costs, budget)
        chosen.reverse()  # render oldest first, as a chat history reads
        return self.index.context(conv_id, chosen, time.perf_counter() - t0)

    def ranked(self, conv_id: str, query: str, at: datetime | None, k: int) -> list[str]:
        return list(reversed(self._recent(conv_id, at)))[:k]

    def checkpoints(self, conv_id: str) -> list[tuple[int, int]]:
        return [(n, 0) for n, _ in self.index.get(conv_id).checkpoints]


# -- personatree ------------------------------------------------------------------------


def item_node_ids(item: Any) -> list[str]:
    """Node ids rendered by one recall item, whatever shape the item has.

    Accepts ``node_ids`` (sequence), ``nodes`` (ids or objects with ``id``), ``path``
    or a single ``node_id``; the leaves listed with a mid or root are part of these.
    """
    for attr in ("node_ids", "nodes", "path", "ids"):
        value = getattr(item, attr, None)
        if value:
            return [v if isinstance(v, str) else str(getattr(v, "id")) for v in value]
    single = getattr(item, "node_id", None) or getattr(item, "id", None)
    return [str(single)] if single else []


def parse_schedule(text: str) -> tuple[str, int]:
    """A consolidation schedule as (kind, every): ``session``, ``every-N``, ``once``, ``none``.

    Parameters
    ----------
    text : str
        ``session`` (after every session), ``every-N`` (after every N sessions, and
        at the end), ``once`` or its older name ``end`` (once, after the last
        session: a history imported and consolidated in one pass), ``none``.

    Returns
    -------
    (str, int)
        ``("every", n)`` for the periodic schedules (``session`` is ``("every", 1)``),
        ``("once", 0)`` or ``("none", 0)``.

    Raises
    ------
    ValueError
        For anything else.
    """
    t = text.strip().lower()
    if t == "session":
        return "every", 1
    if t in ("once", "end"):
        return "once", 0
    if t == "none":
        return "none", 0
    head, sep, n = t.partition("-")
    if head == "every" and sep and n.isdigit() and int(n) >= 1:
        return "every", int(n)
    raise ValueError(f"consolidate must be session, every-N (N >= 1), once or none, got {text!r}")


def consolidation_due(schedule: tuple[str, int], sessions_since: int, turns_since: int, last: bool,
                      min_turns: int = 1) -> bool:
    """Whether to consolidate after a session.

    Parameters
    ----------
    schedule : (str, int)
        From :func:`parse_schedule`.
    sessions_since, turns_since : int
        Sessions and turns ingested since the last pass (this session included).
    last : bool
        Whether this is the stream's last session (every schedule but ``none``
        consolidates there, so questions always meet a consolidated tree).
    min_turns : int
        A periodic pass also waits for this many new turns.
    """
    kind, every = schedule
    if kind == "none":
        return False
    if last:
        return True
    return kind == "every" and sessions_since >= every and turns_since >= min_turns


class PersonaTreeEngine:
    """One PersonaTree store for a run; each conversation is one user, ingested once.

    Ingestion replays the stream through the public API only: ``observe_many`` per
    session, then ``consolidate`` at the session boundary (or once at the end),
    with a replay clock that follows the stream's own timestamps so confidence decay
    and recency behave as they would have live.

    Parameters
    ----------
    embedder : Embedder
        Shared with the baselines.
    counter : TokenCounter
        Shared with the baselines (installed as the tree's ``token_counter``).
    path : str or Path, optional
        SQLite file; default a file in a fresh temporary folder.
    config : PersonaTreeConfig, optional
    consolidate : str
        When to run the consolidation job (see :func:`parse_schedule`): ``session``,
        ``every-N``, ``once`` (``end``) or ``none``.
    consolidate_min_turns : int
        At a session boundary, consolidate only when at least this many turns arrived
        since the last pass (bounds the cost on streams with many tiny sessions).
    batch_size : int
        ``observe_many`` batch size.
    profile : callable, optional
        ``profile(tree, user_id) -> str``: the standing context; default
        :func:`standing_profile`.
    keep_users : bool
        Keep each user's memory in the store after its questions (to inspect it
        later with ``path``); by default users are deleted to keep the file small.
    """

    def __init__(
        self,
        embedder: Any,
        counter: Any,
        *,
        path: str | Path | None = None,
        config: Any = None,
        consolidate: str = "session",
        consolidate_min_turns: int = 1,
        batch_size: int = 256,
        profile: Callable[[Any, str], str] | None = None,
        keep_users: bool = False,
    ) -> None:
        from personatree.api import PersonaTree
        from personatree.clock import FixedClock

        self.schedule = parse_schedule(consolidate)
        self._tmp = None if path else tempfile.TemporaryDirectory(prefix="personatree-bench-")
        self.path = Path(path) if path else Path(self._tmp.name) / "bench.db"  # type: ignore[union-attr]
        self.clock = FixedClock(datetime(2000, 1, 1))
        self.tree = PersonaTree.open(self.path, config, embedder=embedder, clock=self.clock)
        # The tree counts its budget with the same counter as the baselines.
        self.tree.token_counter = counter
        self.counter = counter
        self.consolidate_mode = consolidate
        self.consolidate_min_turns = consolidate_min_turns
        self.batch_size = batch_size
        self.profile = profile or standing_profile
        self.keep_users = keep_users
        self.ingest_seconds: dict[str, float] = {}
        self.consolidate_seconds: dict[str, float] = {}
        self.consolidation_available: bool | None = None
        self.consolidation_error: str | None = None
        self._checkpoints: dict[str, list[tuple[int, int]]] = {}
        # Per conversation, after ingestion: turns, in-tree leaves, mids, roots, archived.
        self.tree_sizes: dict[str, dict[str, int]] = {}
        # (turns, tokens of every root and mid): the growth of the unbounded abstractions.
        self.abstraction_points: list[tuple[int, int]] = []
        self._turn_of: dict[str, dict[str, str]] = {}
        self._provenance: dict[str, dict[str, tuple[str, ...]]] = {}
        self._live: set[str] = set()
        self._closed = False

    def ingest(self, conv_id: str, turns: Sequence[Turn]) -> float:
        """Replay ``turns`` into the user ``conv_id`` (idempotent per run).

        Parameters
        ----------
        conv_id : str
        turns : sequence of Turn
            Only the stream: the engine never receives questions or evidence.

        Returns
        -------
        float
            Seconds spent in ``observe_many`` and ``consolidate``.
        """
        if conv_id in self.ingest_seconds:
            return self.ingest_seconds[conv_id]
        self._turn_of[conv_id] = {f"{conv_id}:{t.id}": t.id for t in turns}
        self._live.add(conv_id)
        runs = _sessions(turns)
        points: list[tuple[int, int]] = []
        unbounded: list[tuple[int, int]] = []
        seconds = consolidating = 0.0
        done = since = sessions = 0
        for i, run in enumerate(runs):
            self.clock.set(run[-1].at)
            t0 = time.perf_counter()
            self.tree.observe_many(conv_id, [interaction(conv_id, t) for t in run], batch_size=self.batch_size)
            seconds += time.perf_counter() - t0
            done += len(run)
            since += len(run)
            sessions += 1
            last = i + 1 == len(runs)
            if consolidation_due(self.schedule, sessions, since, last, self.consolidate_min_turns):
                t1 = time.perf_counter()
                self._consolidate(conv_id, run[-1].at)
                consolidating += time.perf_counter() - t1
                since = sessions = 0
            points.append((done, self.counter.count(self.profile(self.tree, conv_id))))
            unbounded.append((done, self.counter.count(all_abstractions(self.tree, conv_id))))
        self._checkpoints[conv_id] = points
        self.abstraction_points.extend(unbounded)
        self.tree_sizes[conv_id] = self._sizes(conv_id, done)
        self.ingest_seconds[conv_id] = seconds + consolidating
        self.consolidate_seconds[conv_id] = consolidating
        return seconds + consolidating

    def _sizes(self, user_id: str, turns: int) -> dict[str, int]:
        from personatree.types import Level

        g = self.tree.graph(user_id)
        archived = getattr(self.tree.store, "archive_ids", lambda _u: [])(user_id)
        return {"turns": turns, "leaves": sum(1 for _ in g.nodes(Level.LEAF)),
                "mids": sum(1 for _ in g.nodes(Level.MID)), "roots": sum(1 for _ in g.nodes(Level.ROOT)),
                "archived": len(archived), "profile_tokens": self.counter.count(self.profile(self.tree, user_id))}

    def _consolidate(self, user_id: str, now: datetime) -> None:
        if self.consolidation_available is False:
            return
        try:
            self.tree.consolidate(user_id, now=now)
        except (ImportError, NotImplementedError, AttributeError) as exc:
            # The consolidation component is not in this build: measure without it.
            self.consolidation_available = False
            self.consolidation_error = f"{type(exc).__name__}: {exc}"
            return
        self.consolidation_available = True

    def recall(
        self,
        conv_id: str,
        query: str,
        at: datetime | None,
        budget: int,
        levels: Sequence[str] | None,
        tiered: bool = False,
    ) -> tuple[Any, float]:
        """Recall at the question's time; return the Recall and the seconds.

        ``tiered`` searches through the HMO tiers (T1 → T2 → T3) with the default
        :class:`~personatree.tiering.config.TieringConfig`, whatever the tree's config
        says, so both modes run on one ingested tree.
        """
        if at is not None:
            self.clock.set(at)
        t0 = time.perf_counter()
        if tiered:
            from personatree.tiering.config import TieringConfig
            from personatree.tiering.search import tiered_recall
            from personatree.types import Level

            lv = [Level(x) for x in levels] if levels else None
            rec = tiered_recall(self.tree, conv_id, query, budget=budget, levels=lv,
                                config=TieringConfig(tiers=True)).recall
        else:
            rec = self.tree.recall(conv_id, query, budget=budget, levels=levels)
        return rec, time.perf_counter() - t0

    def turns_of(self, conv_id: str, rec: Any) -> list[str]:
        """Turn ids behind a Recall's items, in rendered order.

        Each item's node ids are looked up; a node's provenance names observations,
        and observation ids name turns. Mids and roots have no provenance of their
        own: only the leaves shown with them count.
        """
        turn_of = self._turn_of.get(conv_id, {})
        out: list[str] = []
        seen: set[str] = set()
        for item in getattr(rec, "items", ()) or ():
            sources = getattr(item, "sources", None)
            if sources is not None:
                # RecallItem carries its own node's provenance (empty for mids and roots,
                # so only leaves actually rendered count).
                obs_ids: list[str] = [str(src[0]) for src in sources]
            else:
                obs_ids = [o for nid in item_node_ids(item) for o in self._sources(conv_id, nid)]
            for obs in obs_ids:
                tid = turn_of.get(obs)
                if tid is not None and tid not in seen:
                    seen.add(tid)
                    out.append(tid)
        return out

    def _sources(self, conv_id: str, node_id: str) -> tuple[str, ...]:
        # Provenance never changes once ingestion (and consolidation) is over, so it is
        # read once per node instead of copying the user's nodes at every question.
        cache = self._provenance.setdefault(conv_id, {})
        hit = cache.get(node_id)
        if hit is None:
            try:
                node = self.tree.node(conv_id, node_id)
            except Exception:  # noqa: BLE001 - a node gone from the tree shows no turn
                return ()
            hit = cache[node_id] = tuple(p.observation_id for p in node.provenance)
        return hit

    def checkpoints(self, conv_id: str) -> list[tuple[int, int]]:
        """(turns ingested, standing tokens) after each session."""
        return list(self._checkpoints.get(conv_id, []))

    def drop(self, conv_id: str) -> None:
        """Delete the user from the store (keeps the run's SQLite file small)."""
        if conv_id in self._live and not self.keep_users:
            self._live.discard(conv_id)
            try:
                self.tree.delete_user(conv_id)
            except Exception:  # noqa: BLE001 - a user with nothing stored has nothing to drop
                pass
        self._turn_of.pop(conv_id, None)
        self._provenance.pop(conv_id, None)

    def close(self) -> None:
        """Close the tree and remove the temporary folder (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self.tree.close()
        if self._tmp is not None:
            self._tmp.cleanup()


def standing_profile(tree: Any, user_id: str) -> str:
    """The standing context of personatree: the profile block an agent puts in every prompt.

    Uses ``personatree.view.profile.profile_block`` (which itself prefers the retrieval
    component's tiered ``tree.profile``) when present; otherwise the user's roots and
    mids (see :func:`all_abstractions`).

    Parameters
    ----------
    tree : PersonaTree
    user_id : str

    Returns
    -------
    str
    """
    try:
        from personatree.view.profile import profile_block
    except ImportError:
        return all_abstractions(tree, user_id)
    return str(profile_block(tree, user_id).text)


def all_abstractions(tree: Any, user_id: str) -> str:
    """Every root and mid of the user, one line each (an unbounded profile)."""
    lines = [f"[{n.schema_type}] {n.content}" for lv in ("root", "mid") for n in tree.nodes(user_id, level=lv)]
    return "\n".join(lines)


def _sessions(turns: Sequence[Turn]) -> list[list[Turn]]:
    runs: list[list[Turn]] = []
    for t in turns:
        if runs and runs[-1][-1].session == t.session:
            runs[-1].append(t)
        else:
            runs.append([t])
    return runs


class PersonaTreeSystem:
    """A view of a :class:`PersonaTreeEngine`: full recall or one restricted to some levels.

    Parameters
    ----------
    engine : PersonaTreeEngine
        Shared by the full system and the leaves-only ablation (one ingestion).
    name : str
    levels : sequence of str, optional
        Passed to ``recall(levels=...)``; ``None`` for the full tree.
    topk_budget : int
        Budget of the recall whose first ``k`` distinct turns give the top-k ranking.
    """

    def __init__(self, engine: PersonaTreeEngine, name: str = "personatree",
                 levels: Sequence[str] | None = None, topk_budget: int = 2000,
                 tiered: bool = False) -> None:
        self.engine = engine
        self.name = name
        self.levels = list(levels) if levels is not None else None
        self.topk_budget = topk_budget
        self.tiered = tiered
        self._largest: tuple[tuple[str, str], int, Any] | None = None

    def ingest(self, conv_id: str, turns: Sequence[Turn]) -> float:
        return self.engine.ingest(conv_id, turns)

    def retrieve(self, conv_id: str, query: str, at: datetime | None, budget: int) -> Context:
        rec, seconds = self.engine.recall(conv_id, query, at, budget, self.levels, self.tiered)
        key = (conv_id, query)
        if self._largest is None or self._largest[0] != key or self._largest[1] < budget:
            self._largest = (key, budget, rec)
        text = str(getattr(rec, "text", ""))
        tokens = getattr(rec, "tokens", None)
        if not isinstance(tokens, int):
            tokens = self.engine.counter.count(text)
        return Context(text, tuple(self.engine.turns_of(conv_id, rec)), tokens, seconds)

    def ranked(self, conv_id: str, query: str, at: datetime | None, k: int) -> list[str]:
        """The first ``k`` distinct turns of the recall's items ranked by the packer's utility.

        The rendered order groups nodes by support path, not by rank, so items are
        re-ordered by their query ``relevance`` (then the packer's ``utility``) first,
        as the baselines rank turns by relevance. The recall at the largest budget
        already asked for this question is reused (at least ``topk_budget``).
        """
        key = (conv_id, query)
        if self._largest is not None and self._largest[0] == key and self._largest[1] >= self.topk_budget:
            rec = self._largest[2]
        else:
            rec, _ = self.engine.recall(conv_id, query, at, self.topk_budget, self.levels, self.tiered)
        items = list(getattr(rec, "items", ()) or ())
        if items and hasattr(items[0], "relevance"):
            order = sorted(range(len(items)), key=lambda i: (-float(items[i].relevance),
                                                             -float(getattr(items[i], "utility", 0.0)), i))
            items = [items[i] for i in order]
        return self.engine.turns_of(conv_id, _Ranked(tuple(items)))[:k]

    def checkpoints(self, conv_id: str) -> list[tuple[int, int]]:
        return self.engine.checkpoints(conv_id)

    def drop(self, conv_id: str) -> None:
        self.engine.drop(conv_id)

    def close(self) -> None:
        self.engine.close()


@dataclass(frozen=True, slots=True)
class _Ranked:
    items: tuple[Any, ...]


def build_systems(
    names: Iterable[str],
    embedder: Any,
    counter: Any,
    *,
    engine_options: dict[str, Any] | None = None,
) -> list[System]:
    """Instantiate the named systems, sharing one flat index and one personatree engine.

    Parameters
    ----------
    names : iterable of str
        Any of :data:`SYSTEMS`.
    embedder, counter
        Shared by every system.
    engine_options : dict, optional
        Keyword arguments of :class:`PersonaTreeEngine`.

    Returns
    -------
    list of System

    Raises
    ------
    ValueError
        For an unknown name.
    """
    names = list(names)
    unknown = [n for n in names if n not in SYSTEMS]
    if unknown:
        raise ValueError(f"unknown systems {unknown}; choose from {', '.join(SYSTEMS)}")
    index = FlatIndex(embedder, counter)
    engine: PersonaTreeEngine | None = None
    out: list[System] = []
    for name in names:
        if name.startswith("personatree"):
            if engine is None:
                engine = PersonaTreeEngine(embedder, counter, **(engine_options or {}))
            levels = ["leaf"] if name == "personatree-leaves" else None
            out.append(PersonaTreeSystem(engine, name, levels, tiered=name == "personatree-tiered"))
        elif name == "dense":
            out.append(DenseSystem(index))
        elif name == "dense+bm25":
            out.append(FusionSystem(index))
        else:
            out.append(RecencySystem(index))
    return out
