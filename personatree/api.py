"""The Python API: :class:`PersonaTree`, one object per store, many users.

A ``PersonaTree`` keeps each user's tree in memory as a :class:`MemoryGraph`
(with its embedding matrix) and writes every public call's changes to the store
in one transaction. The in-memory copy is checked against the store's per-user
version counter before use, so writes from other processes are noticed; when a
commit finds the tree changed underneath it, the call is redone on the fresh tree.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from .clock import SystemClock
from .config import PersonaTreeConfig
from .errors import (
    ConfigError,
    InputError,
    PersonaTreeError,
    StaleStateError,
    StoreError,
    UnknownUserError,
    VacuumPendingError,
)
from .forgetting import forget_node
from .graph import MemoryGraph
from .explanation import ExplainStep, Explanation
from .index import top_k
from .inputs import build_observation, check_id, check_query, ensure_iterable, parse_time
from .insertion import Touched, apply_decision, leaf_embedding_or_none, plan_insertions
from .ports import ChangeSet, Clock, Embedder, JournalEvent, Judge, Store
from .render import node_confidence, shown_confidence, tree_text
from .timeline import node_timeline
from .schema import SchemaRegistry
from .types import (
    Edge,
    EdgeKind,
    InsertReport,
    LeafDraft,
    Level,
    Node,
    Observation,
    SearchHit,
)

__all__ = ["PersonaTree", "RebuildReport", "ForgetReport", "register_replayer"]

# Stale retries are not given up before this many tries, nor before busy_timeout_s.
_MAX_RETRIES = 8

Replayer = Callable[["PersonaTree", MemoryGraph, JournalEvent], None]
_REPLAYERS: dict[str, Replayer] = {}


def register_replayer(kind: str, fn: Replayer) -> None:
    """Teach :meth:`PersonaTree.rebuild` to replay journal events of ``kind``.

    Components that write their own journal events (consolidation, for one)
    register how to redo them on a graph being rebuilt.
    """
    _REPLAYERS[kind] = fn


@dataclass(frozen=True, slots=True)
class RebuildReport:
    """Result of :meth:`PersonaTree.rebuild`."""

    user_id: str
    events: int
    nodes: int
    edges: int
    equal: bool


@dataclass(frozen=True, slots=True)
class ForgetReport:
    """Result of :meth:`PersonaTree.forget`: the node ids removed and those changed."""

    user_id: str
    removed: tuple[str, ...]
    changed: tuple[str, ...]


@dataclass(slots=True)
class _Cached:
    graph: MemoryGraph
    version: int


def leaf_id(user_id: str, observation_id: str, turn: int, sentence: int) -> str:
    """Deterministic leaf id from its provenance, so replays recreate the same ids."""
    h = hashlib.sha256(f"{user_id}\x1f{observation_id}\x1f{turn}\x1f{sentence}".encode()).hexdigest()
    return "lf_" + h[:20]


EMBEDDER_META_KEY = "personatree.embedder"


def _embedder_meta(embedder: Embedder) -> dict[str, Any]:
    return {"name": embedder.name, "dim": int(embedder.dim)}


def recorded_embedder(store: Store) -> dict[str, Any] | None:
    """The embedder a store records (``{"name": ..., "dim": ...}``), or ``None``.

    Raises
    ------
    ConfigError
        The record is not what personatree writes (a JSON object with a name).
    """
    raw = store.get_meta(EMBEDDER_META_KEY)
    if raw is None:
        return None
    try:
        meta = json.loads(raw)
    except ValueError:
        meta = None
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        raise ConfigError(f"this store's embedder record is unreadable: {raw[:80]!r}")
    return meta


def _check_embedder(store: Store, embedder: Embedder) -> bool:
    """Refuse an embedder other than the one the store was built with.

    Vectors of two models live in different spaces, so a tree embedded with one model
    and searched with another would rank nonsense (or fail on a dimension mismatch).
    The embedder is recorded with the first write (so a command that fails writes
    nothing); stores from before that record are checked per user when loaded.

    Returns
    -------
    bool
        Whether the store already records this embedder.

    Raises
    ------
    ConfigError
        The store was built with another embedder (name or dimension).
    """
    mine = _embedder_meta(embedder)
    theirs = recorded_embedder(store)
    if theirs is None:
        return False
    if theirs != mine:
        raise ConfigError(
            f"this store was built with the embedder {theirs.get('name')!r} "
            f"({theirs.get('dim', '?')} dimensions); it was opened with {mine['name']!r} "
            f"({mine['dim']}): open it with the embedder it was built with"
        )
    return True


class PersonaTree:
    """An evidence-tree memory over one store.

    Use :meth:`open` rather than the constructor unless you inject every part.

    Parameters
    ----------
    store : Store
        Durable storage.
    config : PersonaTreeConfig
        Frozen configuration.
    registry : SchemaRegistry
        Schema types.
    embedder : Embedder
        Text embedder.
    judge : Judge
        Extraction, validation, routing and summarization.
    clock : Clock
        Source of "now".
    """

    def __init__(
        self,
        store: Store,
        *,
        config: PersonaTreeConfig,
        registry: SchemaRegistry,
        embedder: Embedder,
        judge: Judge,
        clock: Clock,
        redactor: Callable[[str], str] | None = None,
    ) -> None:
        self.store = store
        self.redactor = redactor
        self.config = config
        self.registry = registry
        self.embedder = embedder
        self.judge = judge
        self.clock = clock
        self._cache: dict[str, _Cached] = {}
        self._lock = threading.RLock()
        # Users whose write turn this tree holds (see _turn), with the nesting depth.
        self._turns: dict[str, int] = {}
        # Components with write-behind state (recall access counts) flush here on close.
        self._close_hooks: list[Callable[[], None]] = []
        # Set by open(): whether the store records this embedder yet (see _check_embedder).
        self._embedder_recorded = True

    # -- construction -----------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | Path = "personatree.db",
        config: PersonaTreeConfig | None = None,
        *,
        embedder: Embedder | None = None,
        judge: Judge | None = None,
        clock: Clock | None = None,
        store: Store | None = None,
        redactor: Callable[[str], str] | None = None,
    ) -> "PersonaTree":
        """Open (or create) a memory at ``path``.

        Parameters
        ----------
        path : str or Path
            A SQLite file path, ``sqlite:///file.db``, a ``postgresql://`` URL (needs
            the ``postgres`` extra), or ``memory://``; ignored when ``store`` is given.
        config : PersonaTreeConfig, optional
            Defaults to ``PersonaTreeConfig()``.
        embedder, judge, clock, store : optional
            Injected parts; defaults are the packaged embedder, the offline judge,
            the system clock and the store named by ``path``.
        redactor : callable, optional
            Applied to every message before it is stored (e.g. a
            :class:`~personatree.redact.Redactor` with a custom scrubber); default: the
            built-in patterns named in ``config.redact``, if any.

        Returns
        -------
        PersonaTree

        Raises
        ------
        ConfigError, SchemaError, StoreError, EmbedderError
        """
        from .embedders import make_embedder
        from .judge import OfflineJudge
        from .store import open_store

        cfg = config or PersonaTreeConfig()
        registry = SchemaRegistry.load(cfg.schema_path)
        emb = embedder or make_embedder(cfg.embedder, cfg.embed_batch_size)
        st = store or open_store(str(path), busy_timeout_s=cfg.busy_timeout_s)
        if judge is not None:
            jdg = judge
        else:
            offline = OfflineJudge(emb, registry, router=_default_router(emb))
            if cfg.judge == "offline":
                jdg = offline
            else:
                from .judge.factory import make_judge

                jdg = make_judge(cfg.judge, embedder=emb, registry=registry, store=st, offline=offline,
                                 **dict(cfg.judge_options))
        if redactor is None and cfg.redact:
            from .redact import Redactor

            redactor = Redactor(patterns=cfg.redact)
        try:
            recorded = _check_embedder(st, emb)
        except BaseException:
            if store is None:
                st.close()
            raise
        tree = cls(st, config=cfg, registry=registry, embedder=emb, judge=jdg,
                   clock=clock or SystemClock(), redactor=redactor)
        tree._embedder_recorded = recorded
        return tree

    def close(self) -> None:
        """Flush pending write-behind state and close the store."""
        for hook in self._close_hooks:
            hook()
        self.store.close()

    def __enter__(self) -> "PersonaTree":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internal state ---------------------------------------------------------------

    def _uid(self, user_id: object) -> str:
        return check_id(user_id, "user_id", self.config.limits)

    def _load(self, user_id: str) -> _Cached:
        # One snapshot for rows and version: a cache can never be newer than its version.
        nodes, edges, version = self.store.load_graph_with_version(user_id)
        dim = self.embedder.dim
        g = MemoryGraph(user_id)
        for n in nodes:
            if n.embedding is not None and n.embedding.shape[-1] != dim:
                # A store written before the embedder was recorded in it (see open()).
                raise ConfigError(
                    f"user {user_id!r} was embedded with {n.embedding.shape[-1]}-dimensional vectors; "
                    f"the embedder {self.embedder.name!r} gives {dim}: open the store with the "
                    "embedder it was built with"
                )
            g.add_node(n)
        for e in edges:
            g.add_edge(e)
        return _Cached(g, version)

    def _state(self, user_id: str) -> _Cached:
        """The cached tree of a user, reloaded when the store's version moved on."""
        version = self.store.version(user_id)
        cached = self._cache.get(user_id)
        if cached is None or cached.version != version:
            cached = self._load(user_id)
            self._cache[user_id] = cached
        return cached

    def _graph(self, user_id: str, *, must_exist: bool = True) -> MemoryGraph:
        """The live in-memory tree of a user (read it; mutate only inside a commit)."""
        state = self._state(user_id)
        if must_exist and state.version == 0:
            raise UnknownUserError(f"no data stored for user {user_id!r}")
        return state.graph

    def graph(self, user_id: str) -> MemoryGraph:
        """A copy of a user's tree, safe to explore and modify (e.g. in a notebook).

        Raises
        ------
        UnknownUserError
        """
        with self._lock:
            return self._graph(self._uid(user_id)).copy()

    def _transact(self, user_id: str, work: Callable[[MemoryGraph], tuple[ChangeSet, Any]]) -> Any:
        """Run ``work`` on the user's tree and commit its change set atomically.

        ``work`` mutates the graph it is given and returns the change set to store.
        Writers of one user take turns (the store's ``hold_user``, when it has one:
        a lock beside a SQLite file, an advisory lock in PostgreSQL), so the tree read
        here is the one the commit lands on, and a busy user makes callers wait, not
        fail. A stale version (a writer that does not take turns) reloads the tree and
        runs ``work`` again, with a jittered backoff, until ``busy_timeout_s`` has
        passed. On any failure the cache is dropped, so memory never runs ahead of
        the store.

        Raises
        ------
        StoreBusyError
            If the user's turn did not come within ``busy_timeout_s``.
        StaleStateError
            If the user kept changing under non-waiting writers past ``busy_timeout_s``.
        """
        with self._lock, self._turn(user_id):
            deadline = time.monotonic() + self.config.busy_timeout_s
            attempt = 0
            while True:
                state = self._state(user_id)
                try:
                    change, result = work(state.graph)
                    if change.is_empty():
                        return result
                    change.expected_version = state.version
                    if not self._embedder_recorded:
                        # Before the first write, not after it: a failure here loses
                        # nothing, and a stored change is never reported as failed.
                        self.store.set_meta(EMBEDDER_META_KEY, json.dumps(_embedder_meta(self.embedder), sort_keys=True))
                        self._embedder_recorded = True
                    state.version = self.store.commit(change)
                    return result
                except StaleStateError:
                    self._cache.pop(user_id, None)
                    attempt += 1
                    if attempt >= _MAX_RETRIES and time.monotonic() >= deadline:
                        raise StaleStateError(
                            f"user {user_id!r} kept changing for {self.config.busy_timeout_s:g} s "
                            f"(busy_timeout_s); gave up after {attempt} tries") from None
                    # Another instance writes this user without taking turns: a jittered
                    # backoff stops lock-step re-collisions between processes.
                    time.sleep(random.uniform(0.0, min(0.002 * 2 ** min(attempt, 10), 0.05)))
                except BaseException:
                    self._cache.pop(user_id, None)
                    raise

    @contextmanager
    def _turn(self, user_id: str) -> Iterator[None]:
        """This tree's turn to write ``user_id`` (re-entrant: nested transactions of one
        call take the turn once). A no-op for stores without ``hold_user``."""
        hold = getattr(self.store, "hold_user", None)
        if hold is None or self._turns.get(user_id):
            self._turns[user_id] = self._turns.get(user_id, 0) + 1
            try:
                yield
            finally:
                self._turns[user_id] -= 1
            return
        with hold(user_id, timeout_s=self.config.busy_timeout_s):
            self._turns[user_id] = 1
            try:
                yield
            finally:
                self._turns.pop(user_id, None)

    # -- ingestion --------------------------------------------------------------------

    def observe(
        self,
        user_id: str,
        messages: Sequence[Mapping[str, Any]] | str,
        at: datetime | str | None = None,
        session_id: str | None = None,
        *,
        observation_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> InsertReport:
        """Record one interaction and insert what it says about the user.

        Parameters
        ----------
        user_id : str
            Whose memory.
        messages : list of {"role", "content"[, "name"]} or str
            The interaction; a bare string is one user message.
        at : datetime or ISO string, optional
            When it happened; default now.
        session_id : str, optional
            Session of the interaction; default the UTC date.
        observation_id : str, optional
            Stable id; default derived from the content, so a repeat is a no-op.
        metadata : mapping, optional
            JSON-serializable data stored verbatim with the observation.

        Returns
        -------
        InsertReport

        Raises
        ------
        InputError
            For bad input; nothing is stored.
        """
        item = {
            "messages": messages, "at": at, "session_id": session_id,
            "observation_id": observation_id, "metadata": metadata,
        }
        return self.observe_many(user_id, [item])[0]

    def observe_many(
        self,
        user_id: str,
        interactions: Iterable[Mapping[str, Any]],
        *,
        batch_size: int = 256,
        progress: Callable[[int], None] | None = None,
    ) -> list[InsertReport]:
        """Record many interactions of one user, embedding them in batches.

        Parameters
        ----------
        user_id : str
        interactions : iterable of mappings
            Each with ``messages`` and optionally ``at``, ``session_id``,
            ``observation_id``, ``metadata`` (as in :meth:`observe`).
        batch_size : int
            Interactions per embedding batch and per transaction.
        progress : callable, optional
            Called with the number of interactions done after each batch.

        Returns
        -------
        list of InsertReport
            One per interaction, in order.

        Raises
        ------
        InputError
            If any interaction is invalid; then nothing of this call is stored.
        """
        uid = self._uid(user_id)
        if not isinstance(batch_size, int) or batch_size < 1:
            raise InputError("batch_size must be a positive integer")
        items = list(ensure_iterable(interactions, "interactions"))
        observations: list[Observation] = []
        now = self.clock.now()
        for i, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise InputError(f"interaction {i} must be a mapping with 'messages', got {type(item).__name__}")
            extra = set(item) - {"messages", "at", "session_id", "observation_id", "metadata"}
            if extra:
                raise InputError(f"interaction {i} has unknown fields {sorted(map(str, extra))}")
            if "messages" not in item:
                raise InputError(f"interaction {i} has no 'messages'")
            try:
                observations.append(build_observation(
                    uid, item["messages"],
                    at=item.get("at") if item.get("at") is not None else now,
                    session_id=item.get("session_id"),
                    observation_id=item.get("observation_id"),
                    metadata=item.get("metadata"),
                    limits=self.config.limits,
                    redactor=self.redactor,
                ))
            except InputError as exc:
                raise type(exc)(f"interaction {i}: {exc}") from None
        reports: list[InsertReport] = []
        done = 0
        for start in range(0, len(observations), batch_size):
            chunk = observations[start : start + batch_size]
            reports.extend(self._observe_chunk(uid, chunk))
            done += len(chunk)
            if progress is not None:
                progress(done)
        return reports

    def _observe_chunk(self, user_id: str, chunk: list[Observation]) -> list[InsertReport]:
        existing = self.store.existing_observations(user_id, [o.id for o in chunk])
        fresh: list[Observation] = []
        seen: set[str] = set()
        for o in chunk:
            if o.id not in existing and o.id not in seen:
                fresh.append(o)
                seen.add(o.id)
        leaves_per_obs = self._extract(fresh)

        def work(graph: MemoryGraph) -> tuple[ChangeSet, dict[str, InsertReport]]:
            # Re-check inside the guarded transaction: a concurrent redelivery of the same
            # observation may have committed since the check above.
            stored = self.store.existing_observations(user_id, [o.id for o in fresh])
            change = ChangeSet(user_id=user_id)
            out: dict[str, InsertReport] = {}
            todo = [(o, [n.copy() for n in ls]) for o, ls in zip(fresh, leaves_per_obs) if o.id not in stored]
            decided = self._insert_many(graph, [ls for _, ls in todo], change)
            for (obs, _), decisions in zip(todo, decided):
                change.observations.append(obs)
                change.events.append(JournalEvent("observe", {"observation_id": obs.id}, obs.at))
                out[obs.id] = InsertReport(user_id, obs.id, False, tuple(decisions))
            return change, out

        made = self._transact(user_id, work) if fresh else {}
        reports: list[InsertReport] = []
        for o in chunk:
            # Only the first occurrence of an id in this call reports what was inserted.
            report = made.pop(o.id, None)
            reports.append(report or InsertReport(user_id, o.id, True, ()))
        return reports

    def _extract(self, observations: Sequence[Observation]) -> list[list[Node]]:
        """Extract leaf drafts with the judge and turn them into leaf nodes."""
        if not observations:
            return []
        drafts = self.judge.extract(observations)
        missing = [d.content for ds in drafts for d in ds if d.embedding is None]
        vectors = iter(self.embedder.embed(missing)) if missing else iter(())
        out: list[list[Node]] = []
        for obs, ds in zip(observations, drafts):
            leaves = []
            for d in ds:
                emb = d.embedding if d.embedding is not None else next(vectors)
                leaves.append(self._leaf(obs, d, emb))
            out.append(leaves)
        return out

    def _leaf(self, obs: Observation, draft: LeafDraft, embedding: np.ndarray) -> Node:
        p = draft.provenance
        st = self.registry[draft.schema_type]
        return Node(
            id=leaf_id(obs.user_id, obs.id, p.turn, p.sentence),
            user_id=obs.user_id,
            level=Level.LEAF,
            schema_type=draft.schema_type,
            content=draft.content,
            attributes=dict(draft.attributes),
            t_first=obs.at,
            t_last=obs.at,
            logit=st.prior_logit,
            embedding=leaf_embedding_or_none(embedding),
            provenance=(p,),
        )

    def _insert_many(self, graph: MemoryGraph, batches: list[list[Node]], change: ChangeSet) -> list[list[Any]]:
        """Insert the leaves of several observations, validating them in one judge call.

        Planning once for the whole batch gives the same decisions as planning per
        observation (only consolidation creates mids, and insertion never changes a
        mid's content or embedding), while an LLM judge can batch the pairs. The
        decisions are then applied observation by observation, in order, so evidence
        reaches each mid in time order.
        """
        cfg = self.config
        keep: list[list[Node]] = []
        seen: set[tuple[str, str]] = set()
        for leaves in batches:
            mine = []
            for leaf in leaves:
                # A statement already recorded in the same session (the user repeating
                # themself, a client re-sending a message under a new id) is the same
                # evidence: it adds no leaf and no support.
                key = (leaf.provenance[0].session_id, " ".join(leaf.content.lower().split()).rstrip(".!?…"))
                if leaf.id in graph or key in seen or graph.find_statement(*key) is not None:
                    continue
                seen.add(key)
                mine.append(leaf)
            keep.append(mine)
        flat = [leaf for leaves in keep for leaf in leaves]
        planned = iter(plan_insertions(graph, flat, self.judge, self.registry, cfg.insertion))
        touched = Touched()
        out: list[list[Any]] = []
        for leaves in keep:
            decisions = [next(planned) for _ in leaves]
            for leaf, decision in zip(leaves, decisions):
                apply_decision(graph, leaf, decision, self.registry, cfg.insertion, cfg.confidence, touched)
            out.append(decisions)
        change.upsert_nodes.extend(touched.nodes.values())
        change.upsert_edges.extend(touched.edges)
        return out

    # -- reading ----------------------------------------------------------------------

    def profile(self, user_id: str, budget: int | None = None) -> Any:
        """The tier-1 profile block (top claims, pivotal patterns, recent evidence) for a
        system prompt, within ``budget`` tokens. See :mod:`personatree.tiering`.

        Raises
        ------
        UnknownUserError
        """
        from .tiering.profile import profile_user

        if budget is not None and (not isinstance(budget, int) or isinstance(budget, bool) or budget < 1):
            raise InputError("budget must be a positive integer")
        return profile_user(self, self._uid(user_id), budget=budget)

    def judge_usage(self, user_id: str | None = None) -> Any:
        """LLM token and cost accounting per user and operation (``None`` for the offline judge)."""
        usage = getattr(self.judge, "usage", None)
        return usage(user_id) if callable(usage) else None

    def users(self) -> list[str]:
        """Ids of every user with stored data."""
        return self.store.users()

    def node(self, user_id: str, node_id: str) -> Node:
        """A copy of one node of the tree, or of an archived leaf.

        An archived leaf (one the tree's bounds took out of it, see :meth:`explain`)
        is still the user's evidence: recall shows it by this id, so it is found here
        too.

        Raises
        ------
        UnknownUserError, UnknownNodeError
        """
        uid, nid = self._uid(user_id), self._nid(node_id)
        with self._lock:
            g = self._graph(uid)
            if nid in g:
                return g.node(nid).copy()
            found = self.store.archive(uid, [nid])
            if found:
                return found[0]
            return g.node(nid)  # raises UnknownNodeError

    def _nid(self, node_id: object) -> str:
        return check_id(node_id, "node_id", self.config.limits)

    def nodes(
        self, user_id: str, level: Level | str | None = None, schema_type: str | None = None
    ) -> list[Node]:
        """Copies of a user's nodes, optionally of one level and/or schema type.

        Raises
        ------
        UnknownUserError
        InputError
            For an unknown level.
        """
        lv = _level(level)
        with self._lock:
            g = self._graph(self._uid(user_id))
            return [
                n.copy() for n in g.nodes(lv) if schema_type is None or n.schema_type == schema_type
            ]

    def confidence(self, user_id: str, node_id: str, at: datetime | str | None = None) -> float:
        """Confidence of a node read at ``at`` (default now), with lazy decay."""
        when = self.clock.now() if at is None else parse_time(at)
        n = self.node(user_id, node_id)
        return node_confidence(n, self.registry, when)

    def search(
        self, user_id: str, query: str, k: int = 10, level: Level | str | None = None
    ) -> list[SearchHit]:
        """Plain cosine-similarity search over a user's nodes.

        Parameters
        ----------
        user_id : str
        query : str
        k : int
            How many hits.
        level : Level or str, optional
            Restrict to one level.

        Returns
        -------
        list of SearchHit
            Best first.

        Raises
        ------
        UnknownUserError, QueryError, InputError
        """
        q = check_query(query, self.config.limits)
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise InputError("k must be a positive integer")
        lv = _level(level)
        uid = self._uid(user_id)
        vec = self.embedder.embed([q])[0]
        now = self.clock.now()
        with self._lock:
            g = self._graph(uid)
            hits: list[tuple[str, float]] = []
            for level_ in [lv] if lv else list(Level):
                hits.extend(g.index(level_).search(vec, k))
            archived = {n.id: n for n in self._archived_leaves(uid, g)} if lv in (None, Level.LEAF) else {}
            hits.extend(_archive_hits(archived.values(), vec, k))
            hits.sort(key=lambda h: (-h[1], h[0]))
            out = []
            for nid, score in hits[:k]:
                n = archived[nid] if nid in archived else g.node(nid)
                out.append(SearchHit(nid, n.level, n.schema_type, n.content, score,
                                     node_confidence(n, self.registry, now), archived=nid in archived))
            return out

    def _archived_leaves(self, user_id: str, graph: MemoryGraph) -> list[Node]:
        # An id both archived and in the tree (a rebuild in between) is the tree's.
        return [n for n in self.store.archive(user_id) if n.id not in graph]

    def explain(self, user_id: str, node_id: str, *, max_observations: int = 20) -> Explanation:
        """Why a node is believed: its support path, its evidence and the observations behind it.

        Raises
        ------
        UnknownUserError, UnknownNodeError
        """
        uid, nid = self._uid(user_id), self._nid(node_id)
        if not isinstance(max_observations, int) or isinstance(max_observations, bool) or max_observations < 0:
            raise InputError("max_observations must be a non-negative integer")
        now = self.clock.now()
        with self._lock:
            g = self._graph(uid)
            if nid not in g:
                return self._explain_archived(uid, nid, g, now, max_observations)
            path = g.support_path(nid)

            def step(x: str, edge_to: str | None) -> ExplainStep:
                n = g.node(x)
                e = g.edge(x, edge_to) if edge_to else None
                return ExplainStep(
                    n.id, n.level, n.schema_type, n.content, shown_confidence(n, self.registry, now, node_timeline(g, x)),
                    n.n_support, n.n_conflict, n.t_first, n.t_last,
                    e.psi if e else None, e.reason if e else None,
                )

            steps = tuple(step(x, path[i + 1] if i + 1 < len(path) else None) for i, x in enumerate(path))
            support = tuple(step(c, nid) for c in g.children(nid))
            conflicts = tuple(step(c, nid) for c in g.conflicts_of(nid))
            obs_ids: list[str] = []
            for x in g.subtree(nid) + [c.node_id for c in conflicts]:
                for p in g.node(x).provenance:
                    if p.observation_id not in obs_ids:
                        obs_ids.append(p.observation_id)
            observations = tuple(self.store.observations(uid, obs_ids[:max_observations])) if obs_ids else ()
            return Explanation(uid, nid, steps, support, conflicts, observations)

    def _explain_archived(
        self, uid: str, nid: str, graph: MemoryGraph, now: datetime, max_observations: int,
    ) -> Explanation:
        found = self.store.archive(uid, [nid])
        if not found:
            graph.node(nid)  # raises UnknownNodeError
        n = found[0]
        # Outside the tree it has no support path and no timeline: its own stored belief.
        step = ExplainStep(
            n.id, n.level, n.schema_type, n.content, node_confidence(n, self.registry, now),
            n.n_support, n.n_conflict, n.t_first, n.t_last, None, None,
        )
        obs_ids = list(dict.fromkeys(p.observation_id for p in n.provenance))[:max_observations]
        observations = tuple(self.store.observations(uid, obs_ids)) if obs_ids else ()
        return Explanation(uid, nid, (step,), (), (), observations, archived=True)

    def render(self, user_id: str, **kwargs: Any) -> str:
        """The user's tree as readable indented text (see :func:`personatree.render.tree_text`)."""
        with self._lock:
            return tree_text(self._graph(self._uid(user_id)), self.registry, self.clock.now(), **kwargs)

    def stats(self, user_id: str) -> dict[str, Any]:
        """Counts of nodes per level, edges per kind, orphans, observations and archived
        leaves."""
        uid = self._uid(user_id)
        with self._lock:
            g = self._graph(uid)
            counts = self.store.counts(uid)
            return {
                "user_id": uid,
                "leaves": sum(1 for _ in g.nodes(Level.LEAF)),
                "mids": sum(1 for _ in g.nodes(Level.MID)),
                "roots": sum(1 for _ in g.nodes(Level.ROOT)),
                "orphans": len(g.orphans()),
                "support_edges": sum(1 for _ in g.edges(EdgeKind.SUPPORT)),
                "conflict_edges": sum(1 for _ in g.edges(EdgeKind.CONFLICT)),
                "observations": int(counts["observations"]),
                "archived_leaves": int(counts.get("archive", 0)),
                "version": self._state(uid).version,
            }

    # -- changing ---------------------------------------------------------------------

    def forget(self, user_id: str, node_id: str, *, cascade: bool = False) -> ForgetReport:
        """Remove a node, withdraw its evidence, and drop summaries derived only from it.

        Parameters
        ----------
        user_id, node_id : str
        cascade : bool
            Also remove the node's whole support subtree.

        Returns
        -------
        ForgetReport

        Raises
        ------
        UnknownUserError, UnknownNodeError
        """
        uid, nid = self._uid(user_id), self._nid(node_id)
        now = self.clock.now()
        from .governance import archive_cascade, forget_archived

        archived = forget_archived(self, uid, nid)  # a leaf recall showed from the archive
        if archived is not None:
            return archived

        def work(graph: MemoryGraph) -> tuple[ChangeSet, ForgetReport]:
            graph.node(nid)
            res = forget_node(graph, nid, self.config.confidence, cascade=cascade)
            change = ChangeSet(
                user_id=uid,
                upsert_nodes=list(res.changed.values()),
                delete_nodes=list(res.removed),
                delete_edges=list(res.removed_edges),
                events=[JournalEvent("forget", {"node_id": nid, "cascade": cascade}, now)],
                unarchive=archive_cascade(self.store, uid, res.removed) if cascade else [],
            )
            return change, ForgetReport(uid, tuple(res.removed), tuple(res.changed))

        self._graph(uid)
        report: ForgetReport = self._transact(uid, work)
        from .governance import purge_node_caches

        # Cached derivations (LLM answers about the node) go after the commit; a crash in
        # between leaves orphaned entries that delete_user and the next forget remove.
        purge_node_caches(self.store, uid, report.removed)
        return report

    def delete_observation(self, user_id: str, observation_id: str) -> Any:
        """Remove an observation from the log together with everything extracted from it.

        See :func:`personatree.governance.delete_observation`.

        Raises
        ------
        UnknownUserError, NotFoundError
        """
        from .governance import delete_observation

        return delete_observation(self, self._uid(user_id), check_id(observation_id, "observation_id",
                                                                      self.config.limits))

    def delete_user(self, user_id: str, *, vacuum: bool = False) -> None:
        """Delete every stored row of a user.

        Parameters
        ----------
        user_id : str
        vacuum : bool
            Also compact the store so that the deleted bytes leave the file (slower).

        Raises
        ------
        UnknownUserError
            If no data is stored for the user (and no vacuum of its deletion is pending).
        VacuumPendingError
            With ``vacuum``, if other connections were reading: the delete is committed
            and the vacuum is pending; it completes on the next open of or write to the
            store, or when this call is repeated once the store is free.
        """
        uid = self._uid(user_id)
        marks_pending = hasattr(self.store, "vacuum_pending_for")
        with self._lock:
            if self.store.version(uid) == 0:
                if vacuum and marks_pending and self.store.vacuum_pending_for(uid):
                    # The rows went in an earlier call whose vacuum could not finish:
                    # calling again finishes it instead of calling the user unknown.
                    self._vacuum_after_delete(uid, lambda: self.store.vacuum())
                    return
                raise UnknownUserError(f"no data stored for user {uid!r}")
            if vacuum and marks_pending:
                # Delete and "vacuum pending" commit together, so a vacuum that cannot
                # run now is finished by the next open or write of the store.
                self._vacuum_after_delete(uid, lambda: self.store.delete_user(uid, vacuum=True))
                return
            self.store.delete_user(uid)
            self._cache.pop(uid, None)
            if vacuum and hasattr(self.store, "vacuum"):
                self.store.vacuum()

    def _vacuum_after_delete(self, uid: str, run: Callable[[], None]) -> None:
        try:
            run()
        except VacuumPendingError:
            raise VacuumPendingError(
                f"user {uid!r} is deleted (the delete is committed), but the vacuum that removes the "
                "deleted text from the file and its write-ahead log is pending: other connections are "
                "reading the store. It finishes by itself on the next open of or write to the store; "
                f"or call delete_user({uid!r}, vacuum=True) or store.vacuum() again when they are done",
                user_id=uid,
            ) from None
        finally:
            self._cache.pop(uid, None)

    def rebuild(self, user_id: str) -> RebuildReport:
        """Replay the user's journal (observations, forgets, consolidations) into a fresh tree.

        The rebuilt tree replaces the stored one in one transaction; ``equal`` says
        whether it matched the tree that was there.

        Raises
        ------
        UnknownUserError
        """
        uid = self._uid(user_id)
        with self._lock:
            self._graph(uid)
            events = self.store.events(uid)
            observations = {o.id: o for o in self.store.observations(uid)}
            fresh = self._replay(uid, events, observations)
            from .consolidate.bounds import archived_leaves

            def work(graph: MemoryGraph) -> tuple[ChangeSet, RebuildReport]:
                # Recall counters are access statistics, not tree state: the journal does
                # not hold them, so a replay cannot produce them. They are carried over to
                # the nodes that survive (same_as does not compare them either).
                for n in fresh.nodes():
                    if n.id in graph:
                        old = graph.node(n.id)
                        n.recall_count, n.t_access = old.recall_count, old.t_access
                equal = graph.same_as(fresh)
                new_edges = {(e.src, e.dst) for e in fresh.edges()}
                change = ChangeSet(
                    user_id=uid,
                    upsert_nodes=list(fresh.nodes()),
                    delete_nodes=[n.id for n in graph.nodes() if n.id not in fresh],
                    delete_edges=[(e.src, e.dst) for e in graph.edges() if (e.src, e.dst) not in new_edges],
                    upsert_edges=list(fresh.edges()),
                    # Leaves the replay left out of the tree stay in the memory.
                    archive_nodes=archived_leaves(graph, [n.id for n in graph.nodes(Level.LEAF) if n.id not in fresh]),
                )
                report = RebuildReport(uid, len(events), len(fresh), sum(1 for _ in fresh.edges()), equal)
                if equal:
                    change = ChangeSet(user_id=uid)
                return change, report

            report = self._transact(uid, work)
            self._cache.pop(uid, None)
            return report

    def _replay(self, user_id: str, events: Sequence[JournalEvent], observations: Mapping[str, Observation]) -> MemoryGraph:
        from . import consolidate as _consolidate  # noqa: F401  (registers the "consolidate" replayer)

        graph = MemoryGraph(user_id)
        i = 0
        while i < len(events):
            ev = events[i]
            if ev.kind == "observe":
                # Extract a run of consecutive observations in one batch, then insert in order.
                j = i
                run: list[Observation] = []
                while j < len(events) and events[j].kind == "observe":
                    o = observations.get(str(_journal_value(user_id, events[j], "observation_id")))
                    if o is not None:
                        run.append(o)
                    j += 1
                self._insert_many(graph, self._extract(run), ChangeSet(user_id=user_id))
                i = j
                continue
            if ev.kind == "forget":
                nid = str(_journal_value(user_id, ev, "node_id"))
                if nid in graph:
                    forget_node(graph, nid, self.config.confidence, cascade=bool(ev.payload.get("cascade")))
            elif ev.kind in _REPLAYERS:
                try:
                    _REPLAYERS[ev.kind](self, graph, ev)
                except PersonaTreeError:
                    raise
                except (KeyError, TypeError, ValueError) as exc:
                    # A damaged event (imports validate journals, older stores may not
                    # have): a typed error that names it, not a bare KeyError.
                    raise StoreError(f"journal event {ev.seq} ({ev.kind}) of user {user_id!r} cannot be "
                                     f"replayed: {type(exc).__name__}: {exc}"[:400]) from None
            i += 1
        return graph

    # -- export -----------------------------------------------------------------------

    def export(self, user_id: str) -> dict[str, Any]:
        """Everything stored about a user as JSON-ready data.

        Returns
        -------
        dict
            ``{"format", "user_id", "version", "embedder", "observations", "nodes",
            "edges", "journal"}``; embeddings are base64 float32 (little-endian).

        Raises
        ------
        UnknownUserError
        """
        uid = self._uid(user_id)
        with self._lock:
            g = self._graph(uid)
            return {
                "format": "personatree.export/1",
                "user_id": uid,
                "version": self._state(uid).version,
                "embedder": self.embedder.name,
                "observations": [_obs_json(o) for o in self.store.observations(uid)],
                "nodes": [_node_json(n) for n in g.nodes()],
                "edges": [_edge_json(e) for e in g.edges()],
                "journal": [
                    {"seq": e.seq, "kind": e.kind, "payload": dict(e.payload), "at": e.at.isoformat()}
                    for e in self.store.events(uid)
                ],
                "archive": [_node_json(n) for n in getattr(self.store, "archive", lambda _u: [])(uid)],
            }

    # -- extension points filled by other components ----------------------------------

    def consolidate(self, user_id: str, *, dry_run: bool = False, now: datetime | None = None) -> Any:
        """Plan (and unless ``dry_run``, apply) one consolidation pass for a user.

        See :mod:`personatree.consolidate`.
        """
        from .consolidate import consolidate_user

        when = None if now is None else parse_time(now, "now")
        return consolidate_user(self, self._uid(user_id), dry_run=bool(dry_run), now=when)

    def recall(
        self,
        user_id: str,
        query: str,
        budget: int | None = None,
        model: str | None = None,
        *,
        levels: Sequence[Level | str] | None = None,
    ) -> Any:
        """Query-conditioned, token-budgeted context for an LLM.

        See :mod:`personatree.retrieval`.
        """
        from .retrieval import recall_user

        if model is not None and not (isinstance(model, str) and model.strip()):
            raise InputError("model must be a model name such as 'gpt-4o-mini'")
        if budget is not None and (not isinstance(budget, int) or isinstance(budget, bool) or budget < 1):
            raise InputError("budget must be a positive integer")
        lv = None if levels is None else _levels(levels)
        if self.config.tiering.tiers:
            from .tiering.search import tiered_recall

            return tiered_recall(self, self._uid(user_id), query, budget=budget, model=model, levels=lv).recall
        return recall_user(self, self._uid(user_id), query, budget=budget, model=model, levels=lv)


def _default_router(embedder: Embedder) -> Any:
    try:
        from .retrieval.router import default_router
    except ImportError:
        return None
    return default_router(embedder)


def _archive_hits(nodes: Iterable[Node], query: np.ndarray, k: int) -> list[tuple[str, float]]:
    """The ``k`` archived leaves most similar to ``query`` (cosine; rows are unit vectors
    like the tree's index rows). Leaves embedded with another dimension are skipped."""
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    keep = [n for n in nodes if n.embedding is not None and np.shape(n.embedding) == q.shape]
    if not keep:
        return []
    scores = np.stack([np.asarray(n.embedding, dtype=np.float32) for n in keep]) @ q
    return [(keep[i].id, float(scores[i])) for i in top_k(scores, k)]


def _level(level: Level | str | None) -> Level | None:
    if level is None or isinstance(level, Level):
        return level
    try:
        return Level(level)
    except ValueError:
        raise InputError(f"unknown level {level!r}; use leaf, mid or root") from None


def _journal_value(user_id: str, event: JournalEvent, key: str) -> Any:
    """A payload value the replay needs; a damaged event is a typed error naming it."""
    if key not in event.payload:
        raise StoreError(f"journal event {event.seq} ({event.kind}) of user {user_id!r} has no {key!r}: "
                         "the journal is damaged and rebuild cannot replay it")
    return event.payload[key]


def _levels(levels: object) -> list[Level]:
    """The levels a recall may draw from: a non-empty list of leaf/mid/root, no ``None``."""
    out: list[Level] = []
    for x in ensure_iterable(levels, "levels"):
        if not isinstance(x, (str, Level)):
            raise InputError(f"levels must hold leaf, mid or root, got {type(x).__name__}")
        lv = _level(x)
        assert lv is not None  # a str or Level never maps to None
        out.append(lv)
    if not out:
        raise InputError("levels is empty; give at least one of leaf, mid or root, or leave it out")
    return out


def _obs_json(o: Observation) -> dict[str, Any]:
    return {
        "id": o.id, "seq": o.seq, "session_id": o.session_id, "at": o.at.isoformat(),
        "messages": [{"role": m.role, "content": m.content, **({"name": m.name} if m.name else {})} for m in o.messages],
        "metadata": dict(o.metadata),
    }


def _node_json(n: Node) -> dict[str, Any]:
    return {
        "id": n.id, "level": n.level.value, "schema_type": n.schema_type, "content": n.content,
        "attributes": n.attributes, "t_first": n.t_first.isoformat(), "t_last": n.t_last.isoformat(),
        "logit": n.logit, "n_support": n.n_support, "n_conflict": n.n_conflict,
        "provenance": [p.to_dict() for p in n.provenance],
        "recall_count": n.recall_count, "t_access": n.t_access.isoformat() if n.t_access else None,
        "embedding": None if n.embedding is None else base64.b64encode(
            np.asarray(n.embedding, dtype="<f4").tobytes()).decode("ascii"),
    }


def _edge_json(e: Edge) -> dict[str, Any]:
    return {"src": e.src, "dst": e.dst, "kind": e.kind.value, "psi": e.psi, "weight": e.weight,
            "reason": e.reason, "at": e.at.isoformat()}
