"""personatree under benchmark: one engine that replays each stream, and its views as systems.

- ``personatree``: the full engine through its public API (``observe_many`` per
  session, ``consolidate`` at session boundaries, ``recall`` per question);
- ``personatree-leaves``: the same tree, recalled with ``levels=["leaf"]`` (ablation);
- ``personatree-tiered``: the same tree, recalled through the HMO tiers (hot cache →
  buffer → whole tree); recall counts feed the tiers, and every personatree system
  of the run bumps them, as every recall of an agent would.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from .protocol import Context
from .schedule import consolidation_due, parse_schedule
from .types import Turn

if TYPE_CHECKING:
    from personatree import Embedder, PersonaTree, PersonaTreeConfig, TokenCounter
    from personatree.retrieval.result import Recall, RecallItem

__all__ = ["interaction", "item_node_ids", "PersonaTreeEngine", "PersonaTreeSystem", "standing_profile",
           "all_abstractions"]


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
    hot : bool
        Attach a local Redis hot tier.
    judge : Judge, optional
        The tree's judge (default: the config's).
    """

    def __init__(
        self,
        embedder: Embedder,
        counter: TokenCounter,
        *,
        path: str | Path | None = None,
        config: PersonaTreeConfig | None = None,
        consolidate: str = "session",
        consolidate_min_turns: int = 1,
        batch_size: int = 256,
        profile: Callable[[PersonaTree, str], str] | None = None,
        keep_users: bool = False,
        hot: bool = False,
        judge: Any = None,
    ) -> None:
        from personatree.api import PersonaTree
        from personatree.clock import FixedClock

        self.schedule = parse_schedule(consolidate)
        self._tmp = None if path else tempfile.TemporaryDirectory(prefix="personatree-bench-")
        self.path = Path(path) if path else Path(self._tmp.name) / "bench.db"  # type: ignore[union-attr]
        self.clock = FixedClock(datetime(2000, 1, 1))
        self.tree = PersonaTree.open(self.path, config, embedder=embedder, clock=self.clock, judge=judge)
        # The tree counts its budget with the same counter as the baselines.
        self.tree.token_counter = counter
        # With ``hot``: a local Redis hot tier, written through from the first observe;
        # only recalls asked with ``hot=True`` go through it (tree.recall stays plain).
        self.redis = None
        if hot:
            from personatree.tiering.shared import attach_hot

            from .hot import LocalRedis

            self.redis = LocalRedis()
            attach_hot(self.tree, self.redis.url)
        self.counter = counter
        self.consolidate_mode = consolidate
        self.consolidate_min_turns = consolidate_min_turns
        self.batch_size = batch_size
        self.profile = profile or standing_profile
        self.keep_users = keep_users
        self.ingest_seconds: dict[str, float] = {}
        self.consolidate_seconds: dict[str, float] = {}
        # Whether a consolidation pass has run (None until the first).
        self.consolidation_available: bool | None = None
        self._checkpoints: dict[str, list[tuple[int, int]]] = {}
        # Per conversation, after ingestion: turns, in-tree leaves, mids, roots, archived.
        self.tree_sizes: dict[str, dict[str, int]] = {}
        # (turns, tokens of every root and mid): the growth of the unbounded abstractions.
        self.abstraction_points: list[tuple[int, int]] = []
        self._turn_of: dict[str, dict[str, str]] = {}
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
        archived = self.tree.store.archive_ids(user_id)
        return {"turns": turns, "leaves": sum(1 for _ in g.nodes(Level.LEAF)),
                "mids": sum(1 for _ in g.nodes(Level.MID)), "roots": sum(1 for _ in g.nodes(Level.ROOT)),
                "archived": len(archived), "profile_tokens": self.counter.count(self.profile(self.tree, user_id))}

    def _consolidate(self, user_id: str, now: datetime) -> None:
        self.tree.consolidate(user_id, now=now)
        self.consolidation_available = True

    def recall(
        self,
        conv_id: str,
        query: str,
        at: datetime | None,
        budget: int,
        levels: Sequence[str] | None,
        tiered: bool = False,
        hot: bool = False,
        from_user: bool = False,
    ) -> tuple[Recall, float]:
        """Recall at the question's time; return the Recall and the seconds.

        ``tiered`` searches through the HMO tiers (T1 → T2 → T3) with the default
        :class:`~personatree.tiering.config.TieringConfig`, whatever the tree's config
        says, so both modes run on one ingested tree.
        """
        if at is not None:
            self.clock.set(at)
        t0 = time.perf_counter()
        if hot:
            from personatree.tiering.shared_read import shared_recall
            from personatree.types import Level

            lv = [Level(x) for x in levels] if levels else None
            rec = shared_recall(self.tree, conv_id, query, budget=budget, levels=lv, from_user=from_user).recall
        elif tiered:
            from personatree.tiering.config import TieringConfig
            from personatree.tiering.search import tiered_recall
            from personatree.types import Level

            lv = [Level(x) for x in levels] if levels else None
            rec = tiered_recall(self.tree, conv_id, query, budget=budget, levels=lv,
                                config=TieringConfig(tiers=True), from_user=from_user).recall
        else:
            rec = self.tree.recall(conv_id, query, budget=budget, levels=levels, from_user=from_user)
        return rec, time.perf_counter() - t0

    def turns_of(self, conv_id: str, rec: Recall | _Ranked) -> list[str]:
        """Turn ids behind a Recall's items, in rendered order.

        Each item's node ids are looked up; a node's provenance names observations,
        and observation ids name turns. Mids and roots have no provenance of their
        own: only the leaves shown with them count.
        """
        turn_of = self._turn_of.get(conv_id, {})
        out: list[str] = []
        seen: set[str] = set()
        for item in rec.items:
            # An item carries its own node's provenance (empty for mids and roots, so
            # only the leaves actually rendered count).
            for obs, _turn in item.sources:
                tid = turn_of.get(str(obs))
                if tid is not None and tid not in seen:
                    seen.add(tid)
                    out.append(tid)
        return out

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

    def close(self) -> None:
        """Close the tree and remove the temporary folder (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self.tree.close()
        if self.redis is not None:
            self.redis.close()
        if self._tmp is not None:
            self._tmp.cleanup()


def standing_profile(tree: PersonaTree, user_id: str) -> str:
    """The standing context of personatree: the profile block an agent puts in every prompt.

    The block of :func:`personatree.view.profile.profile_block`.

    Parameters
    ----------
    tree : PersonaTree
    user_id : str

    Returns
    -------
    str
    """
    from personatree.view.profile import profile_block

    return str(profile_block(tree, user_id).text)


def all_abstractions(tree: PersonaTree, user_id: str) -> str:
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
                 tiered: bool = False, hot: bool = False) -> None:
        self.engine = engine
        self.hot = hot
        self.name = name
        self.levels = list(levels) if levels is not None else None
        self.topk_budget = topk_budget
        self.tiered = tiered
        self._largest: tuple[tuple[str, str], int, Recall] | None = None

    def ingest(self, conv_id: str, turns: Sequence[Turn]) -> float:
        return self.engine.ingest(conv_id, turns)

    def retrieve(self, conv_id: str, query: str, at: datetime | None, budget: int, *,
                 from_user: bool = False) -> Context:
        rec, seconds = self.engine.recall(conv_id, query, at, budget, self.levels, self.tiered, self.hot,
                                          from_user)
        key = (conv_id, query)
        if self._largest is None or self._largest[0] != key or self._largest[1] < budget:
            self._largest = (key, budget, rec)
        return Context(rec.text, tuple(self.engine.turns_of(conv_id, rec)), rec.tokens, seconds)

    def ranked(self, conv_id: str, query: str, at: datetime | None, k: int, *,
               from_user: bool = False) -> list[str]:
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
            rec, _ = self.engine.recall(conv_id, query, at, self.topk_budget, self.levels, self.tiered,
                                        self.hot, from_user)
        items = rec.items
        order = sorted(range(len(items)), key=lambda i: (-float(items[i].relevance), -float(items[i].utility), i))
        return self.engine.turns_of(conv_id, _Ranked(tuple(items[i] for i in order)))[:k]

    def checkpoints(self, conv_id: str) -> list[tuple[int, int]]:
        return self.engine.checkpoints(conv_id)

    def drop(self, conv_id: str) -> None:
        self.engine.drop(conv_id)

    def close(self) -> None:
        self.engine.close()


@dataclass(frozen=True, slots=True)
class _Ranked:
    items: tuple[RecallItem, ...]
