"""The faithfulness benchmark: does recall tell the person's *current* state?

Each case is a change-of-mind scenario (:mod:`~personatree_bench.scenarios`) stitched
into one LoCoMo speaker's stream (:mod:`~personatree_bench.stitch`). The stream is
replayed into personatree on two paths, and into flat dense retrieval over the same
turns:

- ``live``: ``observe_many`` per session and ``consolidate`` at every session end;
- ``bulk``: the whole history observed, then consolidated once (an import).

Measures, per case (means over cases are reported per split):

update@B
    The change turn (the person's latest statement on the topic) reached the context
    of B tokens for the scenario's question.
stale@B
    An earlier statement reached that context and the change did not: the context
    tells the old state as if it were current.
mixed (stance)
    Some pattern (mid or root) is supported by scenario leaves of opposite stances, as
    the tree itself records them: a leaf's ``attributes["stance"]`` when present, else
    ``cessation`` (stopped) and ``polarity`` (positive, negative). Only the scenario's
    own leaves are read: host leaves are about other topics.
mixed (labels)
    Some pattern is supported both by leaves of an earlier statement and by a leaf of
    the change, by the scenario's labels (independent of how the judge read them).
conflict registered
    A conflict edge goes from a leaf of the change to a pattern.
pattern formed
    Some pattern is supported by a leaf of an earlier statement (without one, there is
    nothing for the change to conflict with).

Goals on both paths: update@300 ≥ 0.95, stale@300 ≤ 0.05, mixed = 0.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence


from .output import fmt, write_json
from .protocol import System
from .stitch import Case

if TYPE_CHECKING:
    from personatree import Embedder, PersonaTreeConfig, TokenCounter

    from .engine import PersonaTreeSystem
    from .flat import DenseSystem

__all__ = [
    "PATHS",
    "DEFAULT_BUDGETS",
    "GOALS",
    "ContextRecord",
    "GraphRecord",
    "FaithResult",
    "context_measures",
    "leaf_stance",
    "stance_side",
    "graph_measures",
    "summarize_faithfulness",
    "run_faithfulness",
    "format_faithfulness",
]

PATHS = ("live", "bulk")
DEFAULT_BUDGETS = (300, 1000)
GOALS = {"update@300": (">=", 0.95), "stale@300": ("<=", 0.05), "mixed": ("==", 0)}
_SIDES = {"positive": "+", "started": "+", "negative": "-", "stopped": "-", "changed": "~"}


@dataclass(frozen=True, slots=True)
class ContextRecord:
    """What one system's context held for one case at one budget."""

    system: str
    case: str
    scenario: str
    split: str
    kind: str
    budget: int
    update: bool
    stale: bool
    shown_scenario: tuple[str, ...]
    tokens: int
    seconds: float


@dataclass(frozen=True, slots=True)
class GraphRecord:
    """What one tree held for one case after ingestion (budget-independent).

    Attributes
    ----------
    mixed_stance, mixed_labels : bool
        See the module docstring.
    conflict : bool
        A conflict edge from a leaf of the change.
    pattern_formed : bool
        A pattern supported by an earlier statement.
    mixed_patterns : tuple of str
        Contents of the patterns found mixed (either way), for reading.
    change_leaves : int
        Leaves made from the change turn (0: the change never became evidence).
    """

    system: str
    case: str
    scenario: str
    split: str
    kind: str
    mixed_stance: bool
    mixed_labels: bool
    conflict: bool
    pattern_formed: bool
    mixed_patterns: tuple[str, ...]
    change_leaves: int


def context_measures(shown: Iterable[str], statement_ids: Iterable[str], change_id: str) -> tuple[bool, bool]:
    """``(update, stale)`` for one context.

    Parameters
    ----------
    shown : iterable of str
        Turn ids whose content reached the context.
    statement_ids : iterable of str
        The earlier statements' turn ids.
    change_id : str
        The change's turn id.

    Returns
    -------
    (bool, bool)
        ``update``: the change is shown; ``stale``: an earlier statement is shown and
        the change is not.

    Examples
    --------
    >>> context_measures(["S1", "h4"], ["S1", "S2"], "CHANGE")
    (False, True)
    >>> context_measures(["S1", "CHANGE"], ["S1", "S2"], "CHANGE")
    (True, False)
    """
    seen = set(shown)
    update = change_id in seen
    return update, (not update) and bool(seen & set(statement_ids))


def leaf_stance(attributes: Mapping[str, Any]) -> str | None:
    """The stance a leaf records toward its topic, or ``None`` when it records none.

    ``attributes["stance"]`` when the judge wrote one; otherwise ``cessation`` gives
    ``"stopped"`` and the sign of ``polarity`` gives ``"positive"`` / ``"negative"``.

    Examples
    --------
    >>> leaf_stance({"polarity": 1})
    'positive'
    >>> leaf_stance({"polarity": -1, "cessation": True})
    'stopped'
    >>> leaf_stance({"stance": "changed", "polarity": 1})
    'changed'
    >>> leaf_stance({"polarity": 0}) is None
    True
    """
    stance = attributes.get("stance")
    if isinstance(stance, str) and stance.strip():
        s = stance.strip().lower()
        return None if s in ("neutral", "none") else s
    if attributes.get("cessation"):
        return "stopped"
    try:
        pol = float(attributes.get("polarity") or 0)
    except (TypeError, ValueError):
        return None
    return "positive" if pol > 0 else "negative" if pol < 0 else None


def stance_side(stance: str | None) -> str | None:
    """Which side of a topic a stance is on: ``"+"``, ``"-"``, ``"~"`` (changed) or ``None``.

    Positive and started agree; negative and stopped agree; a change of state (a move,
    a new job) opposes both; an unknown stance takes no side.
    """
    return _SIDES.get(stance) if stance else None


def graph_measures(graph: Any, labels: Mapping[str, str]) -> dict[str, Any]:
    """Mixing and conflicts of one user's tree around a scenario.

    Parameters
    ----------
    graph : MemoryGraph
        The user's tree (``PersonaTree.graph``).
    labels : mapping
        ``{observation id: "old" | "new"}`` for the scenario's turns; a leaf belongs
        to the scenario when one of its provenance entries names such an observation.

    Returns
    -------
    dict
        ``mixed_stance``, ``mixed_labels``, ``conflict``, ``pattern_formed`` (bool),
        ``mixed_patterns`` (tuple of pattern contents), ``change_leaves`` (int).
    """
    from personatree.types import EdgeKind, Level

    label_of: dict[str, str] = {}
    for leaf in graph.nodes(Level.LEAF):
        for p in leaf.provenance:
            lab = labels.get(p.observation_id)
            if lab is not None:
                label_of[leaf.id] = lab
                break
    mixed_stance = mixed_labels = formed = False
    mixed: list[str] = []
    for level in (Level.MID, Level.ROOT):
        for pattern in graph.nodes(level):
            leaves = [n for n in graph.subtree(pattern.id) if n in label_of]
            if not leaves:
                continue
            labs = {label_of[n] for n in leaves}
            formed = formed or "old" in labs
            sides = {stance_side(leaf_stance(graph.node(n).attributes)) for n in leaves} - {None}
            by_stance, by_label = len(sides) > 1, labs == {"old", "new"}
            mixed_stance = mixed_stance or by_stance
            mixed_labels = mixed_labels or by_label
            if by_stance or by_label:
                mixed.append(pattern.content)
    conflict = any(label_of.get(e.src) == "new" for e in graph.edges(EdgeKind.CONFLICT))
    return {
        "mixed_stance": mixed_stance,
        "mixed_labels": mixed_labels,
        "conflict": conflict,
        "pattern_formed": formed,
        "mixed_patterns": tuple(mixed),
        "change_leaves": sum(1 for lab in label_of.values() if lab == "new"),
    }


def _rate(values: Sequence[bool]) -> float | None:
    return (sum(values) / len(values)) if values else None


def summarize_faithfulness(contexts: Sequence[ContextRecord], graphs: Sequence[GraphRecord]) -> dict[str, Any]:
    """Means per system and split (``"all"`` too).

    Returns
    -------
    dict
        ``{system: {split: {"n", "update@B", "stale@B", ..., and for trees
        "mixed_stance", "mixed_labels", "mixed", "conflict", "pattern_formed"}}}``;
        ``mixed`` counts cases mixed either way, and ``mixed_*`` are counts too (the
        goal is a count of 0), the other graph figures are rates.
    """
    out: dict[str, Any] = {}
    systems = list(dict.fromkeys([r.system for r in contexts] + [g.system for g in graphs]))
    for system in systems:
        rows = [r for r in contexts if r.system == system]
        grs = [g for g in graphs if g.system == system]
        found = {r.split for r in rows} | {g.split for g in grs}
        splits = [x for x in ("tune", "heldout") if x in found] + sorted(found - {"tune", "heldout"})
        per: dict[str, Any] = {}
        for split in [*splits, "all"]:
            rs = [r for r in rows if split in ("all", r.split)]
            gs = [g for g in grs if split in ("all", g.split)]
            entry: dict[str, Any] = {"n": len({r.case for r in rs} | {g.case for g in gs})}
            for b in sorted({r.budget for r in rs}):
                at_b = [r for r in rs if r.budget == b]
                entry[f"update@{b}"] = _rate([r.update for r in at_b])
                entry[f"stale@{b}"] = _rate([r.stale for r in at_b])
            if gs:
                entry["mixed_stance"] = sum(g.mixed_stance for g in gs)
                entry["mixed_labels"] = sum(g.mixed_labels for g in gs)
                entry["mixed"] = sum(g.mixed_stance or g.mixed_labels for g in gs)
                entry["conflict"] = _rate([g.conflict for g in gs])
                entry["pattern_formed"] = _rate([g.pattern_formed for g in gs])
                entry["change_became_leaf"] = _rate([g.change_leaves > 0 for g in gs])
            per[split] = entry
        out[system] = per
    return out


@dataclass
class FaithResult:
    """Everything one faithfulness run measured."""

    budgets: list[int]
    systems: list[str]
    contexts: list[ContextRecord] = field(default_factory=list)
    graphs: list[GraphRecord] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, *, with_records: bool = True) -> dict[str, Any]:
        """JSON-ready form."""
        out: dict[str, Any] = {
            "format": "personatree.bench.faithfulness/1",
            "budgets": self.budgets,
            "systems": self.systems,
            "goals": {k: list(v) for k, v in GOALS.items()},
            "summary": self.summary,
            "meta": self.meta,
        }
        if with_records:
            out["contexts"] = [asdict(r) for r in self.contexts]
            out["graphs"] = [asdict(g) for g in self.graphs]
        return out

    def save(self, path: str | Path, *, with_records: bool = True) -> Path:
        """Write :meth:`to_dict` as JSON."""
        return write_json(path, self.to_dict(with_records=with_records))


def _records(system: System, case: Case, budgets: Sequence[int]) -> list[ContextRecord]:
    conv = case.conversation
    q = conv.questions[0]
    scen = set(case.labels)
    out: list[ContextRecord] = []
    for b in budgets:
        ctx = system.retrieve(conv.id, q.text, q.at, b)
        update, stale = context_measures(ctx.turn_ids, case.statement_ids, case.change_id)
        out.append(ContextRecord(
            system.name, conv.id, case.scenario.id, case.scenario.split, case.scenario.kind, b, update, stale,
            tuple(t for t in ctx.turn_ids if t in scen), ctx.tokens, ctx.seconds,
        ))
    return out


def _line(recs: Sequence[ContextRecord]) -> str:
    # One case's measures on a progress line, so a run cut short still says what it found.
    return " ".join(f"update@{r.budget}={int(r.update)} stale@{r.budget}={int(r.stale)}" for r in recs)


def run_faithfulness(
    cases: Sequence[Case],
    *,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    paths: Sequence[str] = PATHS,
    dense: bool = True,
    embedder: Embedder | None = None,
    model: str = "gpt-4o-mini",
    counter: TokenCounter | None = None,
    config: PersonaTreeConfig | None = None,
    progress: Callable[[str], None] | None = None,
    labelled_changes: bool = False,
) -> FaithResult:
    """Replay every case on each path and into flat dense; measure every context and tree.

    Parameters
    ----------
    cases : sequence of Case
        From :func:`~personatree_bench.stitch.stitch_all`.
    budgets : sequence of int
        Token budgets of the question's context.
    paths : sequence of str
        Any of :data:`PATHS`.
    dense : bool
        Also run flat dense retrieval over the same turns.
    embedder : Embedder, optional
        Shared by every system; default the packaged all-MiniLM-L6-v2 (memoized by
        text, since cases share their host turns).
    model : str
        Tokenizer model of every budget.
    counter : TokenCounter, optional
        Counts every budget instead of ``model``'s tokenizer.
    config : PersonaTreeConfig, optional
        Passed to the engine.
    progress : callable, optional
        Receives one line per case and system.
    labelled_changes : bool
        The trees' judge reads each change from the labels
        (:class:`~personatree_bench.labelled_changes.LabelledChanges`): an upper bound
        for a judge that reads changes, reported as such.

    Returns
    -------
    FaithResult
    """
    from .engine import PersonaTreeEngine, PersonaTreeSystem
    from .flat import DenseSystem, FlatIndex
    from .resources import CachedEmbedder, default_embedder, make_token_counter

    unknown = [p for p in paths if p not in PATHS]
    if unknown:
        raise ValueError(f"unknown paths {unknown}; choose from {', '.join(PATHS)}")
    started = time.perf_counter()
    embedder = embedder if embedder is not None else default_embedder()
    emb = CachedEmbedder(embedder)
    counter = counter if counter is not None else make_token_counter(model)
    emb.embed(["warm up"])
    say = progress or (lambda _line: None)
    trees: list[tuple[str, PersonaTreeSystem]] = []
    judge = _labelled_judge(emb, cases) if labelled_changes else None
    for path in paths:
        engine = PersonaTreeEngine(emb, counter, config=config, consolidate="session" if path == "live" else "end",
                                   judge=judge)
        trees.append((path, PersonaTreeSystem(engine, f"personatree-{path}")))
    flat = DenseSystem(FlatIndex(emb, counter)) if dense else None
    result = FaithResult(list(budgets), [s.name for _, s in trees] + ([flat.name] if flat else []))
    seconds: dict[str, float] = {name: 0.0 for name in result.systems}
    try:
        for i, case in enumerate(cases):
            where = f"[{i + 1}/{len(cases)}] {case.scenario.id} ({case.scenario.split})"
            for _, system in trees:
                _run_tree(system, case, budgets, result, seconds, say, where)
            if flat is not None:
                _run_flat(flat, case, budgets, result, seconds, say, where)
    finally:
        # A failing pass raises; the key stays in the results format.
        engine_meta = {path: {"consolidation_available": s.engine.consolidation_available,
                              "consolidation_error": None} for path, s in trees}
        for _, system in trees:
            system.close()
    result.summary = summarize_faithfulness(result.contexts, result.graphs)
    result.meta = {**_cases_meta(cases), "engine": engine_meta, "labelled_changes": labelled_changes,
                   "embedder": getattr(embedder, "name", type(embedder).__name__), "token_model": model,
                   "system_seconds": seconds, "seconds": time.perf_counter() - started,
                   "when": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    return result


def _labelled_judge(embedder: Embedder, cases: Sequence[Case]) -> Any:
    # The offline judge as PersonaTree.open builds it, with changes read from labels.
    from personatree.retrieval.router import default_router
    from personatree.schema import SchemaRegistry

    from .labelled_changes import LabelledChanges

    changes = {f"{c.conversation.id}:{c.change_id}": frozenset(f"{c.conversation.id}:{t}" for t in c.statement_ids)
               for c in cases}
    return LabelledChanges(changes, embedder, SchemaRegistry.load(), router=default_router(embedder))


def _cases_meta(cases: Sequence[Case]) -> dict[str, Any]:
    return {
        "cases": len(cases),
        "splits": {s: sum(c.scenario.split == s for c in cases) for s in ("tune", "heldout")},
        "turns": sum(len(c.conversation.turns) for c in cases),
        "hosts": sorted({c.host for c in cases}),
    }


def _run_tree(system: PersonaTreeSystem, case: Case, budgets: Sequence[int], result: FaithResult,
              seconds: dict[str, float], say: Callable[[str], None], where: str) -> None:
    # One case on one personatree path: ingest, measure the tree, then the contexts.
    conv = case.conversation
    obs_labels = {f"{conv.id}:{tid}": lab for tid, lab in case.labels.items()}
    t0 = time.perf_counter()
    system.ingest(conv.id, conv.turns)
    seconds[system.name] += time.perf_counter() - t0
    g = graph_measures(system.engine.tree.graph(conv.id), obs_labels)
    result.graphs.append(GraphRecord(system.name, conv.id, case.scenario.id, case.scenario.split,
                                     case.scenario.kind, **g))
    recs = _records(system, case, budgets)
    result.contexts.extend(recs)
    system.drop(conv.id)
    say(f"{where} {system.name}: {len(conv.turns)} turns, {time.perf_counter() - t0:.1f}s; {_line(recs)} "
        f"mixed={int(g['mixed_stance'])}/{int(g['mixed_labels'])} conflict={int(g['conflict'])}")


def _run_flat(flat: DenseSystem, case: Case, budgets: Sequence[int], result: FaithResult,
              seconds: dict[str, float], say: Callable[[str], None], where: str) -> None:
    conv = case.conversation
    t0 = time.perf_counter()
    flat.ingest(conv.id, conv.turns)
    recs = _records(flat, case, budgets)
    result.contexts.extend(recs)
    flat.drop(conv.id)
    seconds[flat.name] += time.perf_counter() - t0
    say(f"{where} {flat.name}: {_line(recs)}")


_NAMES = {"personatree-live": "personatree, live (consolidate every session)",
          "personatree-bulk": "personatree, bulk import (consolidate once)",
          "dense": "flat dense"}
_SPLIT_NAMES = {"tune": "tuning", "heldout": "held out", "all": "all"}


def format_faithfulness(result: FaithResult) -> str:
    """The run as a markdown table (one row per system and split) and the goals."""
    budgets = result.budgets
    head = ["system", "split", "n"] + [f"{m}@{b}" for b in budgets for m in ("update", "stale")] + [
        "mixed (stance)", "mixed (labels)", "conflict", "pattern formed", "change is a leaf"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for system, per in result.summary.items():
        for split, e in per.items():
            cells = [_NAMES.get(system, system), _SPLIT_NAMES.get(split, split), str(e["n"])]
            cells += [fmt(e.get(f"{m}@{b}")) for b in budgets for m in ("update", "stale")]
            cells += [fmt(e.get(k)) for k in ("mixed_stance", "mixed_labels", "conflict", "pattern_formed",
                                               "change_became_leaf")]
            lines.append("| " + " | ".join(cells) + " |")
    notes = ["", "mixed: cases with a pattern supported by both stances (counts); the other figures are "
             "rates over cases. Goals on both paths: update@300 ≥ 0.95, stale@300 ≤ 0.05, mixed = 0."]
    for system, per in result.summary.items():
        if not system.startswith("personatree"):
            continue
        for split in ("tune", "heldout"):
            e = per.get(split)
            if not e or "update@300" not in e:
                continue
            ok = (e["update@300"] >= 0.95, e["stale@300"] <= 0.05, e.get("mixed", 0) == 0)
            notes.append(f"- {_NAMES.get(system, system)}, {_SPLIT_NAMES[split]}: "
                         f"update@300 {'meets' if ok[0] else 'misses'}, stale@300 {'meets' if ok[1] else 'misses'}, "
                         f"mixed {'meets' if ok[2] else 'misses'}")
    return "\n".join(lines + notes) + "\n"
