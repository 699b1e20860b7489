"""Budgeted selection of support-path views (pure).

Each candidate node has a *value* (relevance × reliability × level fit) and a line
cost in tokens. A step adds a view to the context: a node alone (root alone, mid
alone, leaf alone), or an expansion of a node already chosen by its best supporting
children (root → + mid, mid → + leaves), which turns a d=0 view into d=1, then d=2.
Expansions exist only once their parent is in the context, so the shallowest useful
view comes first and a deeper one is taken only when its added value beats every
other use of the same tokens. Greedy by utility = Σ value − λ·tokens, with lazy
re-evaluation (a step loses the nodes another step took), never repeating a node and
never exceeding the budget.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Callable, Mapping, MutableMapping, Sequence

__all__ = ["Option", "Step", "PackResult", "pack"]


@dataclass(frozen=True, slots=True)
class Option:
    """One node the packer may show.

    Attributes
    ----------
    node_id : str
    rank : int
        0 leaf, 1 mid, 2 root.
    value : float
        Value shown on its own (relevance × reliability × fit).
    child_value : float
        Value when shown under its chosen parent (evidence for a relevant claim is
        worth showing even when its wording does not match the query).
    tokens : int
        Cost of its line, including the newline and indentation.
    """

    node_id: str
    rank: int
    value: float
    child_value: float
    tokens: int


@dataclass(frozen=True, slots=True)
class Step:
    """A set of nodes added together, with its utility at decision time."""

    node_ids: tuple[str, ...]
    kind: str
    utility: float
    tokens: int


@dataclass(frozen=True, slots=True)
class PackResult:
    """Steps taken in order, and steps left out for budget."""

    taken: tuple[Step, ...]
    left_out: tuple[Step, ...]

    @property
    def node_ids(self) -> list[str]:
        """Chosen node ids in pick order."""
        return [n for s in self.taken for n in s.node_ids]


def _utility(ids: Sequence[str], options: Mapping[str, Option], as_child: bool, lam: float,
             header: int = 0) -> tuple[float, int]:
    v = sum(options[i].child_value if as_child else options[i].value for i in ids)
    # a nested line costs one more token of indentation; the first line of a section
    # also pays for the section header
    t = sum(options[i].tokens for i in ids) + (len(ids) if as_child else 0) + header
    return v - lam * t, t


def pack(
    options: MutableMapping[str, Option],
    children: Mapping[str, Sequence[str]] | Callable[[str], Sequence[Option]],
    budget: int,
    *,
    lam: float = 0.0005,
    expand_k: int = 2,
    seeds: Sequence[str] | None = None,
    section_tokens: Mapping[str, int] | None = None,
    max_left_out: int = 20,
) -> PackResult:
    """Choose views under a token budget.

    Parameters
    ----------
    options : mapping of node id to Option
        Every node that may be shown (seeds and the children expansions may add).
    children : mapping of node id to sequence of node ids, or callable
        Real support children of each node, best first; ids missing from
        ``options`` are ignored. A callable ``children(parent) -> [Option, ...]`` is
        asked only when a parent is chosen (scoring every child of every candidate
        up front costs far more than the few expansions that happen); the options
        it returns are added to ``options``.
    budget : int
        Tokens available for node lines.
    lam : float
        λ, utility cost per token.
    expand_k : int
        Children added by one expansion step.
    seeds : sequence of str, optional
        Nodes that may be shown on their own (default: every option).
    section_tokens : mapping, optional
        Header cost of the ``"claims"`` and ``"evidence"`` sections, paid by the first
        node shown on its own in each.
    max_left_out : int
        How many left-out steps to report.

    Returns
    -------
    PackResult
    """
    heap: list[tuple[float, int, int, tuple[str, ...], str, str | None]] = []
    counter = 0

    def push(ids: tuple[str, ...], kind: str, parent: str | None) -> None:
        nonlocal counter
        u, _ = _utility(ids, options, kind == "expand", lam)
        # Ties go to shallower views: the rank term orders root before mid before leaf
        # only among equal utilities.
        heapq.heappush(heap, (-u, -max(options[i].rank for i in ids), counter, ids, kind, parent))
        counter += 1

    for sid in (seeds if seeds is not None else list(options)):
        if sid in options:
            push((sid,), "alone", None)
    chosen: set[str] = set()
    headers = dict(section_tokens or {})

    def header_of(ids: tuple[str, ...], kind: str) -> int:
        if kind != "alone":
            return 0
        return headers.get("claims" if options[ids[0]].rank > 0 else "evidence", 0)
    taken: list[Step] = []
    left: list[Step] = []
    room = budget

    asked: dict[str, list[str]] = {}

    def kids_of(parent: str) -> Sequence[str]:
        if not callable(children):
            return children.get(parent, ())
        if parent not in asked:
            got = list(children(parent))
            for o in got:
                old = options.get(o.node_id)
                if old is None or o.child_value > old.child_value:
                    options[o.node_id] = o if old is None else Option(
                        old.node_id, old.rank, old.value, o.child_value, old.tokens)
            asked[parent] = [o.node_id for o in got]
        return asked[parent]

    def push_expansion(parent: str) -> None:
        kids = [c for c in kids_of(parent) if c in options and c not in chosen]
        if kids:
            push(tuple(kids[:expand_k]), "expand", parent)

    while heap:
        neg_u, _, _, ids, kind, parent = heapq.heappop(heap)
        fresh = tuple(i for i in ids if i not in chosen)
        if not fresh:
            if kind == "expand" and parent is not None:
                push_expansion(parent)
            continue
        u, t = _utility(fresh, options, kind == "expand", lam, header_of(fresh, kind))
        if fresh != ids and heap and u < -heap[0][0]:
            push(fresh, kind, parent)  # stale: lost nodes to another step; re-queue
            continue
        while t > room and len(fresh) > 1:
            fresh = fresh[:-1]
            u, t = _utility(fresh, options, kind == "expand", lam, header_of(fresh, kind))
        if u <= 0.0:
            break
        if t > room:
            if len(left) < max_left_out:
                left.append(Step(fresh, kind, u, t))
            continue
        room -= t
        if kind == "alone":
            headers["claims" if options[fresh[0]].rank > 0 else "evidence"] = 0
        chosen.update(fresh)
        taken.append(Step(fresh, kind, u, t))
        for n in fresh:
            if options[n].rank > 0:
                push_expansion(n)
        if kind == "expand" and parent is not None:
            push_expansion(parent)
    return PackResult(tuple(taken), tuple(left))
