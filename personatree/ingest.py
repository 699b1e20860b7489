"""Observing: validate interactions, extract leaves with the judge, insert them.

Each batch of interactions is one transaction. Extraction and embedding happen
before the transaction (they are the slow part and touch no state); the insertion
plan is made and applied inside it, on the tree the commit lands on.
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from .change_links import archived_block, link_changes
from .collector import paused_gc
from .engine.core import Engine
from .errors import InputError
from .graph import MemoryGraph
from .inputs import build_observation, ensure_iterable
from .insertion import Touched, apply_decision, leaf_embedding_or_none, plan_insertions
from .ports import ChangeSet, JournalEvent, judges_updates
from .types import InsertReport, LeafDecision, LeafDraft, Level, Node, Observation

__all__ = ["leaf_id", "observe_many", "extract", "insert_many"]

_FIELDS = {"messages", "at", "session_id", "observation_id", "metadata"}


def leaf_id(user_id: str, observation_id: str, turn: int, sentence: int) -> str:
    """Deterministic leaf id from its provenance, so replays recreate the same ids."""
    h = hashlib.sha256(f"{user_id}\x1f{observation_id}\x1f{turn}\x1f{sentence}".encode()).hexdigest()
    return "lf_" + h[:20]


def _observations(engine: Engine, user_id: str, items: list[Any]) -> list[Observation]:
    """Every interaction checked and built into an observation; the first bad one raises."""
    observations: list[Observation] = []
    now = engine.clock.now()
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise InputError(f"interaction {i} must be a mapping with 'messages', got {type(item).__name__}")
        extra = set(item) - _FIELDS
        if extra:
            raise InputError(f"interaction {i} has unknown fields {sorted(map(str, extra))}")
        if "messages" not in item:
            raise InputError(f"interaction {i} has no 'messages'")
        try:
            observations.append(build_observation(
                user_id, item["messages"],
                at=item.get("at") if item.get("at") is not None else now,
                session_id=item.get("session_id"),
                observation_id=item.get("observation_id"),
                metadata=item.get("metadata"),
                limits=engine.config.limits,
                redactor=engine.redactor,
            ))
        except InputError as exc:
            raise type(exc)(f"interaction {i}: {exc}") from None
    return observations


def observe_many(
    engine: Engine,
    user_id: str,
    interactions: Iterable[Mapping[str, Any]],
    *,
    batch_size: int = 256,
    progress: Callable[[int], None] | None = None,
) -> list[InsertReport]:
    """Record many interactions of one (validated) user, embedding them in batches.

    See :meth:`personatree.api.PersonaTree.observe_many`.

    Raises
    ------
    InputError
        If any interaction is invalid; then nothing of this call is stored.
    """
    if not isinstance(batch_size, int) or batch_size < 1:
        raise InputError("batch_size must be a positive integer")
    # Checking the input and each chunk make tens of thousands of objects
    # (observations, drafts, leaves, rows) that reference counting frees or the tree
    # keeps: the collections their count would start (some of them over the whole
    # heap) find almost nothing to free. The young generation is collected after each
    # step, so a long import still collects.
    with paused_gc(collect_after=True):
        items = list(ensure_iterable(interactions, "interactions"))
        observations = _observations(engine, user_id, items)
    reports: list[InsertReport] = []
    done = 0
    for start in range(0, len(observations), batch_size):
        chunk = observations[start : start + batch_size]
        with paused_gc(collect_after=True):
            reports.extend(_observe_chunk(engine, user_id, chunk))
        done += len(chunk)
        if progress is not None:
            progress(done)
    return reports


def _observe_chunk(engine: Engine, user_id: str, chunk: list[Observation]) -> list[InsertReport]:
    existing = engine.store.existing_observations(user_id, [o.id for o in chunk])
    fresh: list[Observation] = []
    seen: set[str] = set()
    for o in chunk:
        if o.id not in existing and o.id not in seen:
            fresh.append(o)
            seen.add(o.id)
    leaves_per_obs = extract(engine, fresh)

    def work(graph: MemoryGraph) -> tuple[ChangeSet, dict[str, InsertReport]]:
        # Re-check inside the guarded transaction: a concurrent redelivery of the same
        # observation may have committed since the check above.
        stored = engine.store.existing_observations(user_id, [o.id for o in fresh])
        change = ChangeSet(user_id=user_id)
        out: dict[str, InsertReport] = {}
        todo = [(o, [n.copy() for n in ls]) for o, ls in zip(fresh, leaves_per_obs) if o.id not in stored]
        decided = insert_many(engine, graph, [ls for _, ls in todo], change)
        for (obs, _), decisions in zip(todo, decided):
            change.observations.append(obs)
            change.events.append(JournalEvent("observe", {"observation_id": obs.id}, obs.at))
            out[obs.id] = InsertReport(user_id, obs.id, False, tuple(decisions))
        return change, out

    made = engine.transact(user_id, work) if fresh else {}
    reports: list[InsertReport] = []
    for o in chunk:
        # Only the first occurrence of an id in this call reports what was inserted.
        report = made.pop(o.id, None)
        reports.append(report or InsertReport(user_id, o.id, True, ()))
    return reports


def extract(engine: Engine, observations: Sequence[Observation]) -> list[list[Node]]:
    """Extract leaf drafts with the judge and turn them into leaf nodes."""
    if not observations:
        return []
    drafts = engine.judge.extract(observations)
    missing = [d.content for ds in drafts for d in ds if d.embedding is None]
    vectors = iter(engine.embedder.embed(missing)) if missing else iter(())
    out: list[list[Node]] = []
    for obs, ds in zip(observations, drafts):
        leaves = []
        for d in ds:
            emb = d.embedding if d.embedding is not None else next(vectors)
            leaves.append(_leaf(engine, obs, d, emb))
        out.append(leaves)
    return out


def _leaf(engine: Engine, obs: Observation, draft: LeafDraft, embedding: np.ndarray) -> Node:
    p = draft.provenance
    st = engine.registry[draft.schema_type]
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


def _new_leaves(graph: MemoryGraph, batches: list[list[Node]]) -> list[list[Node]]:
    """Each batch without the leaves that are already recorded evidence.

    A statement already recorded in the same session (the user repeating themself, a
    client re-sending a message under a new id) is the same evidence: it adds no leaf
    and no support.
    """
    keep: list[list[Node]] = []
    seen: set[tuple[str, str]] = set()
    for leaves in batches:
        mine = []
        for leaf in leaves:
            key = (leaf.provenance[0].session_id, " ".join(leaf.content.lower().split()).rstrip(".!?…"))
            if leaf.id in graph or key in seen or graph.find_statement(*key) is not None:
                continue
            seen.add(key)
            mine.append(leaf)
        keep.append(mine)
    return keep


def insert_many(
    engine: Engine, graph: MemoryGraph, batches: list[list[Node]], change: ChangeSet
) -> list[list[LeafDecision]]:
    """Insert the leaves of several observations, validating them in one judge call.

    Planning once for the whole batch gives the same decisions as planning per
    observation (only consolidation creates mids, and insertion never changes a
    mid's content or embedding), while an LLM judge can batch the pairs. The
    decisions are then applied observation by observation, in order, so evidence
    reaches each mid in time order.
    """
    cfg = engine.config
    keep = _new_leaves(graph, batches)
    flat = [leaf for leaves in keep for leaf in leaves]
    if flat and judges_updates(engine.judge):
        # A change may end a habit whose statements the tree's bounds archived.
        link_changes(graph, flat, engine.judge, cfg.insertion, archived_block(engine, graph.user_id, graph))
    planned = iter(plan_insertions(graph, flat, engine.judge, engine.registry, cfg.insertion))
    touched = Touched()
    out: list[list[LeafDecision]] = []
    for leaves in keep:
        decisions = [next(planned) for _ in leaves]
        for leaf, decision in zip(leaves, decisions):
            apply_decision(graph, leaf, decision, engine.registry, cfg.insertion, cfg.confidence, touched)
        out.append(decisions)
    change.upsert_nodes.extend(touched.nodes.values())
    change.upsert_edges.extend(touched.edges)
    return out
