"""The Python API: :class:`PersonaTree`, one object per store, many users.

``PersonaTree`` is a facade: it checks what a caller passes and hands each call to
the :class:`~personatree.engine.Engine` it owns or to the service that does the
work (insertion, consolidation, recall, tiering, governance, export). Every public
call's changes are written in one transaction; when a commit finds the tree
changed underneath it, the call is redone on the fresh tree (see
:mod:`personatree.engine.transact`).
"""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Generic, Iterable, Mapping, Sequence, TypeVar, overload

from . import governance
from .api_reads import TreeReads
from .clock import SystemClock
from .config import PersonaTreeConfig
from . import ingest
from .engine.core import Engine, Replayer, TreeState
from .engine.lazy_judge import LazyJudge
from .engine.embedder_record import EMBEDDER_META_KEY, check_embedder, recorded_embedder
from .ingest import leaf_id
from .replay import rebuild_user
from .engine.reports import ForgetReport, RebuildReport
from .engine.transact import Work
from .graph import MemoryGraph
from .governance import ObservationDeletion
from .inputs import check_id, parse_time
from .ports import Clock, Embedder, JournalEvent, Judge, Store, TokenCounter
from .schema import SchemaRegistry
from .types import InsertReport

if TYPE_CHECKING:  # pragma: no cover
    from .consolidate.plan import ConsolidationPlan
    from .hot_redis import RedisHot
    from .portability.chats import ChatImportReport

__all__ = ["PersonaTree", "RebuildReport", "ForgetReport", "recorded_embedder", "EMBEDDER_META_KEY", "leaf_id"]

T = TypeVar("T")
R = TypeVar("R")


def _replay_consolidation(engine: Engine, graph: MemoryGraph, event: JournalEvent) -> None:
    # Imported on the first replayed pass: consolidation pulls in the clustering stack
    # (scipy, hdbscan), which opening a tree should not load.
    from .consolidate.apply import replay_consolidation  # noqa: PLC0415

    replay_consolidation(engine, graph, event)


#: The journal replayers every PersonaTree gives its engine.
REPLAYERS: Mapping[str, Replayer] = {
    "consolidate": _replay_consolidation,
    "delete_observation": governance.replay_delete_observation,
}


class _Part(Generic[T]):
    """An attribute of the facade that is the engine's attribute of the same name."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type) -> "_Part[T]": ...

    @overload
    def __get__(self, obj: "PersonaTree", owner: type) -> T: ...

    def __get__(self, obj: "PersonaTree | None", owner: type) -> "T | _Part[T]":
        if obj is None:
            return self
        value: T = getattr(obj.engine, self.name)
        return value

    def __set__(self, obj: "PersonaTree", value: T) -> None:
        setattr(obj.engine, self.name, value)


def _configured_judge(cfg: PersonaTreeConfig, emb: Embedder, registry: SchemaRegistry, st: Store) -> Judge:
    """The judge ``cfg`` names, with the offline judge as its fallback."""
    from .judge import OfflineJudge
    from .retrieval.router import default_router

    # Built on its first call: fitting it embeds the schema examples, which loads the
    # model, and a memory opened only to be read never calls it.
    offline: Judge = LazyJudge(lambda: OfflineJudge(emb, registry, router=default_router(emb)), "offline")
    if cfg.judge == "offline":
        return offline
    from .judge.factory import make_judge

    return make_judge(cfg.judge, embedder=emb, registry=registry, store=st, offline=offline,
                      **dict(cfg.judge_options))


class PersonaTree(TreeReads):
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
    redactor : callable, optional
        Applied to every message before it is stored.
    token_counter : TokenCounter, optional
        Counts recall and profile budgets; default the tokenizer of
        ``config.recall.model``. Assigning the attribute later works too.
    hot : str or RedisHot, optional
        A shared hot tier (``redis://host:port/db``, the ``redis`` extra): recall
        answers from each user's tiers 1 and 2 in Redis and reads the tree from the
        store only when they do not suffice; every commit writes the tier through.
        See :mod:`personatree.tiering.shared`.
    """

    store: _Part[Store] = _Part()
    config: _Part[PersonaTreeConfig] = _Part()
    registry: _Part[SchemaRegistry] = _Part()
    embedder: _Part[Embedder] = _Part()
    judge: _Part[Judge] = _Part()
    clock: _Part[Clock] = _Part()
    redactor: _Part["Callable[[str], str] | None"] = _Part()
    token_counter: _Part["TokenCounter | None"] = _Part()

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
        token_counter: TokenCounter | None = None,
        hot: "str | RedisHot | None" = None,
    ) -> None:
        self.engine = Engine(store, config=config, registry=registry, embedder=embedder, judge=judge,
                             clock=clock, redactor=redactor, token_counter=token_counter, replayers=REPLAYERS)
        if hot is not None:
            from .tiering.shared import attach_hot

            self.hot = attach_hot(self.engine, hot)

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
        token_counter: TokenCounter | None = None,
        hot: "str | RedisHot | None" = None,
    ) -> "PersonaTree":
        """Open (or create) a memory at ``path``.

        Parameters
        ----------
        path : str or Path
            A SQLite file path, ``sqlite:///file.db``, a ``postgresql://`` URL (needs
            the ``postgres`` extra), or ``memory://``; ignored when ``store`` is given.
        config : PersonaTreeConfig, optional
            Defaults to ``PersonaTreeConfig()``.
        embedder, judge, clock, store, token_counter : optional
            Injected parts; defaults are the packaged embedder, the offline judge,
            the system clock, the store named by ``path`` and the tokenizer of
            ``config.recall.model``.
        redactor : callable, optional
            Applied to every message before it is stored (e.g. a
            :class:`~personatree.redact.Redactor` with a custom scrubber); default: the
            built-in patterns named in ``config.redact``, if any.
        hot : str or RedisHot, optional
            A shared Redis hot tier for recall, e.g. ``"redis://127.0.0.1:6379/0"``
            (see the class).

        Returns
        -------
        PersonaTree

        Raises
        ------
        ConfigError, SchemaError, StoreError, EmbedderError
        """
        from .embedders import make_embedder
        from .store import open_store

        cfg = config or PersonaTreeConfig()
        registry = SchemaRegistry.load(cfg.schema_path)
        emb = embedder or make_embedder(cfg.embedder, cfg.embed_batch_size)
        st = store or open_store(str(path), busy_timeout_s=cfg.busy_timeout_s)
        jdg = judge if judge is not None else _configured_judge(cfg, emb, registry, st)
        if redactor is None and cfg.redact:
            from .redact import Redactor

            redactor = Redactor(patterns=cfg.redact)
        try:
            recorded = check_embedder(st, emb)
        except BaseException:
            if store is None:
                st.close()
            raise
        try:
            tree = cls(st, config=cfg, registry=registry, embedder=emb, judge=jdg, clock=clock or SystemClock(),
                       redactor=redactor, token_counter=token_counter, hot=hot)
        except BaseException:
            if store is None:
                st.close()
            raise
        # Whether the first commit must record the embedder (see check_embedder).
        tree.engine.embedder_recorded = recorded
        return tree

    def close(self) -> None:
        """Flush pending write-behind state and close the store."""
        self.engine.close()

    def __enter__(self) -> "PersonaTree":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the engine's state, for tests and notebooks that look inside ------------------

    @property
    def _lock(self) -> "threading.RLock":
        return self.engine.lock

    @property
    def _cache(self) -> dict[str, TreeState]:
        return self.engine.trees

    def _state(self, user_id: str) -> TreeState:
        return self.engine.state(user_id)

    def _graph(self, user_id: str, *, must_exist: bool = True) -> MemoryGraph:
        return self.engine.live_graph(user_id, must_exist=must_exist)

    def _transact(self, user_id: str, work: Work[R]) -> R:
        return self.engine.transact(user_id, work)

    def _uid(self, user_id: object) -> str:
        return self.engine.check_user(user_id)

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
        uid = self.engine.check_user(user_id)
        return ingest.observe_many(self.engine, uid, interactions, batch_size=batch_size, progress=progress)

    def import_chat(
        self,
        user_id: str,
        export: str | bytes | Sequence[Any] | Mapping[str, Any],
        *,
        source: str = "input",
        batch_size: int = 256,
        progress: Callable[[int], None] | None = None,
    ) -> "ChatImportReport":
        """Import a chat export as the user's interactions (one per turn).

        Reads ChatGPT and Claude data exports (``conversations.json``), OpenAI-style
        message lists (content as text or content parts) and LangChain roles; see
        :mod:`personatree.portability.chat_formats`. Importing the same export again
        stores nothing new.

        Parameters
        ----------
        user_id : str
        export : str, bytes, list or dict
            The export's text (JSON or JSONL) or its parsed JSON.
        source : str
            Named in errors.
        batch_size, progress
            As in :meth:`observe_many`.

        Returns
        -------
        ChatImportReport

        Raises
        ------
        ChatFormatError
            For an export, conversation, message or part of no known format, or one
            without a user message; nothing is stored.
        InputError
            For an interaction that fails the usual checks; nothing is stored.
        """
        from .errors import ChatFormatError
        from .portability.chats import ChatImportReport, read_chat_export

        uid = self.engine.check_user(user_id)
        read = read_chat_export(export, source)
        if not read.interactions:
            raise ChatFormatError(f"{source} has no user messages to import")
        reports = self.observe_many(uid, read.interactions, batch_size=batch_size, progress=progress)
        return ChatImportReport(uid, read.counts(), tuple(reports))

    # -- changing ---------------------------------------------------------------------

    def consolidate(
        self, user_id: str, *, dry_run: bool = False, now: datetime | None = None
    ) -> "ConsolidationPlan":
        """Plan (and unless ``dry_run``, apply) one consolidation pass for a user.

        See :mod:`personatree.consolidate`.
        """
        from .consolidate import consolidate_user

        when = None if now is None else parse_time(now, "now")
        return consolidate_user(self.engine, self.engine.check_user(user_id), dry_run=bool(dry_run), now=when)

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
        uid, nid = self.engine.check_user(user_id), self.engine.check_node(node_id)
        return governance.forget_node_of_user(self.engine, uid, nid, cascade=cascade)

    def delete_observation(self, user_id: str, observation_id: str) -> ObservationDeletion:
        """Remove an observation from the log together with everything extracted from it.

        See :func:`personatree.governance.delete_observation`.

        Raises
        ------
        UnknownUserError, NotFoundError
        """
        uid = self.engine.check_user(user_id)
        return governance.delete_observation(self.engine, uid, check_id(observation_id, "observation_id",
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
        governance.delete_user_data(self.engine, self.engine.check_user(user_id), vacuum=vacuum)

    def rebuild(self, user_id: str) -> RebuildReport:
        """Replay the user's journal (observations, forgets, consolidations) into a fresh tree.

        The rebuilt tree replaces the stored one in one transaction; ``equal`` says
        whether it matched the tree that was there.

        Raises
        ------
        UnknownUserError
        """
        return rebuild_user(self.engine, self.engine.check_user(user_id))
