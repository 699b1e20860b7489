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

A node may *carry* companions: nodes that must come with it whenever it is shown
(a claim's latest contradiction, so that no claim reaches the context without the
evidence that reverses it). A step that shows such a node pays for its companions
too, and takes them with it. When a node and its companions do not fit together,
the node is not shown on its own: its companions are offered instead, as a step of
their own (a dated statement of the newer stance is safer for an agent to act on
than a claim it contradicts, shown without it).

A claim line names no evidence of its own, so the tokens of a step that shows a
claim (its line, what it carries, its header) may be priced at a higher rate than
λ: ``claim_rate``, the value per token of the evidence it would push out of a full
budget (:mod:`personatree.retrieval.margin`). A claim then takes budget only when
it is worth more, per token, than that evidence.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, replace
from typing import Callable, Mapping, MutableMapping, Sequence

__all__ = ["Companion", "Option", "Step", "PackResult", "pack"]


@dataclass(frozen=True, slots=True)
class Companion:
    """A node that comes with another whenever that one is shown.

    Attributes
    ----------
    node_id : str
        Must also be a key of the packer's options (it can be shown on its own).
    value : float
        Its value shown with its carrier.
    tokens : int
        Cost of its line shown with its carrier.
    """

    node_id: str
    value: float
    tokens: int


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
        Cost of its line when shown on its own (bullet and newline included).
    child_tokens : int
        Cost of its line when nested under its parent (indentation, inline date).
    groups : tuple of str
        Headers a node shown on its own needs (a section, a date); each header is
        paid once, by the first node that needs it.
    companions : tuple of Companion
        Nodes shown with it, in order (see the module docstring).
    """

    node_id: str
    rank: int
    value: float
    child_value: float
    tokens: int
    child_tokens: int = -1
    groups: tuple[str, ...] = ()
    companions: tuple[Companion, ...] = ()

    def cost(self, nested: bool) -> int:
        """Tokens of the line, nested or on its own."""
        return (
            (self.child_tokens if self.child_tokens >= 0 else self.tokens + 1)
            if nested
            else self.tokens
        )


@dataclass(frozen=True, slots=True)
class Step:
    """A set of nodes added together, with its utility at decision time.

    ``node_ids`` lists every node the step shows; ``carried`` the ones among them
    that came as companions of another.
    """

    node_ids: tuple[str, ...]
    kind: str
    utility: float
    tokens: int
    carried: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PackResult:
    """Steps taken in order, and steps left out for budget."""

    taken: tuple[Step, ...]
    left_out: tuple[Step, ...]

    @property
    def node_ids(self) -> list[str]:
        """Chosen node ids in pick order."""
        return [n for s in self.taken for n in s.node_ids]


def pack(
    options: MutableMapping[str, Option],
    children: Mapping[str, Sequence[str]] | Callable[[str], Sequence[Option]],
    budget: int,
    *,
    lam: float = 0.0005,
    expand_k: int = 2,
    seeds: Sequence[str] | None = None,
    group_tokens: Mapping[str, int] | None = None,
    max_left_out: int = 20,
    claim_rate: float = 0.0,
) -> PackResult:
    """Choose views under a token budget.

    Parameters
    ----------
    options : mutable mapping of node id to Option
        Every node that may be shown on its own.
    children : mapping of node id to sequence of node ids, or callable
        Real support children of each node, best first; ids missing from
        ``options`` are ignored. A callable ``children(parent) -> [Option, ...]`` is
        asked only when a parent is chosen (scoring every child of every candidate
        up front costs far more than the few expansions that happen); the options
        it returns are merged into ``options``.
    budget : int
        Tokens available.
    lam : float
        λ, utility cost per token.
    expand_k : int
        Children added by one expansion step.
    seeds : sequence of str, optional
        Nodes that may be shown on their own (default: every option).
    group_tokens : mapping, optional
        Header cost per group name (see :attr:`Option.groups`); unknown groups cost 0.
    max_left_out : int
        How many left-out steps to report.
    claim_rate : float
        Utility cost per token of a step that shows a claim (an option of rank > 0),
        when higher than ``lam``.

    Returns
    -------
    PackResult
    """
    packer = _Packer(options, children, lam, expand_k, dict(group_tokens or {}), max(lam, claim_rate))
    return packer.run(seeds if seeds is not None else list(options), budget, max_left_out)


_Entry = tuple[float, int, int, tuple[str, ...], str, str | None]
_Pending = tuple[tuple[str, ...], str, str | None]


class _Packer:
    """The greedy state of one :func:`pack`: the heap of steps and what is chosen."""

    def __init__(
        self,
        options: MutableMapping[str, Option],
        children: Mapping[str, Sequence[str]] | Callable[[str], Sequence[Option]],
        lam: float,
        expand_k: int,
        headers: dict[str, int],
        claim_rate: float,
    ) -> None:
        self.options = options
        self.children = children
        self.lam = lam
        self.claim_rate = claim_rate
        self.expand_k = expand_k
        self.headers = headers
        self.heap: list[_Entry] = []
        self.counter = 0
        self.chosen: set[str] = set()
        self.opened: set[str] = set()
        self.asked: dict[str, list[str]] = {}
        self.offered: set[str] = set()
        self.waiting: dict[str, list[_Pending]] = {}
        self.cheapest = 0

    def carried_by(self, ids: Sequence[str]) -> list[Companion]:
        """Companions of ``ids`` not yet chosen, each once, in order."""
        out: list[Companion] = []
        seen = set(ids)
        for i in ids:
            for c in self.options[i].companions:
                if c.node_id not in self.chosen and c.node_id not in seen and c.node_id in self.options:
                    seen.add(c.node_id)
                    out.append(c)
        return out

    def utility(self, ids: Sequence[str], kind: str) -> tuple[float, int]:
        """(utility, tokens) of showing ``ids`` as a step of ``kind`` now."""
        options, lam = self.options, self.lam
        nested = kind == "expand"
        extra_v, extra_t = 0.0, 0
        for c in self.carried_by(ids):
            extra_v += c.value
            extra_t += c.tokens
        if len(ids) == 1:  # most steps: skip the set arithmetic
            o = options[ids[0]]
            rate = self.claim_rate if o.rank > 0 else lam
            if nested:
                t = o.cost(True) + extra_t
                return o.child_value + extra_v - rate * t, t
            t = o.tokens + extra_t + sum(self.headers.get(g, 0) for g in o.groups if g not in self.opened)
            return o.value + extra_v - rate * t, t
        if any(options[i].rank > 0 for i in ids):
            lam = self.claim_rate
        v = extra_v + sum(options[i].child_value if nested else options[i].value for i in ids)
        t = extra_t + sum(options[i].cost(nested) for i in ids)
        if not nested:
            need = {g for i in ids for g in options[i].groups} - self.opened
            t += sum(self.headers.get(g, 0) for g in need)
        return v - lam * t, t

    def push(self, ids: tuple[str, ...], kind: str, parent: str | None) -> None:
        """Queue a step at its utility now."""
        u, _ = self.utility(ids, kind)
        options = self.options
        rank = options[ids[0]].rank if len(ids) == 1 else max(options[i].rank for i in ids)
        # Among equal utilities, shallower views (higher rank) come first.
        heapq.heappush(self.heap, (-u, -rank, self.counter, ids, kind, parent))
        self.counter += 1

    def kids_of(self, parent: str) -> Sequence[str]:
        """Support children of ``parent``, best first (asked of a callable once)."""
        children = self.children
        if not callable(children):
            return children.get(parent, ())
        if parent not in self.asked:
            got = list(children(parent))
            for o in got:
                self._merge(o)
            self.asked[parent] = [o.node_id for o in got]
        return self.asked[parent]

    def _merge(self, o: Option) -> None:
        # A child option joins the options; one already there keeps its own value and
        # takes the better value as evidence.
        old = self.options.get(o.node_id)
        if old is None:
            self.options[o.node_id] = o
            self.cheapest = min(self.cheapest, o.tokens, o.cost(True))
        elif o.child_value > old.child_value:
            new = self.options[o.node_id] = Option(
                old.node_id,
                old.rank,
                old.value,
                o.child_value,
                old.tokens,
                o.child_tokens,
                old.groups,
                old.companions or o.companions,
            )
            self.cheapest = min(self.cheapest, new.cost(True))

    def push_expansion(self, parent: str) -> None:
        """Queue the expansion of ``parent`` by its best children not yet chosen."""
        kids = [c for c in self.kids_of(parent) if c in self.options and c not in self.chosen]
        if kids:
            self.push(tuple(kids[: self.expand_k]), "expand", parent)

    def offer_instead(self, ids: tuple[str, ...], kind: str, parent: str | None) -> None:
        """Offer what a carrier that does not fit carries, on its own.

        At no less than the value it had with its carrier, once; once that is shown,
        the carrier costs only its own line and is offered again.
        """
        for c in self.carried_by(ids):
            self.waiting.setdefault(c.node_id, []).append((ids, kind, parent))
            if c.node_id in self.offered:
                continue
            self.offered.add(c.node_id)
            o = self.options[c.node_id]
            if c.value > o.value:
                self.options[c.node_id] = replace(o, value=c.value)
            self.push((c.node_id,), "alone", None)

    def take(self, fresh: tuple[str, ...], kind: str, u: float, t: int, parent: str | None) -> Step:
        """Show ``fresh`` (and what it carries), then queue what that opens up."""
        options = self.options
        if kind == "alone":
            self.opened.update(g for i in fresh for g in options[i].groups)
        extra = tuple(c.node_id for c in self.carried_by(fresh))
        self.chosen.update(fresh)
        self.chosen.update(extra)
        step = Step(fresh + extra, kind, u, t, extra)
        for n in fresh + extra:
            for again in self.waiting.pop(n, ()):
                self.push(*again)
        for n in fresh:
            if options[n].rank > 0:
                self.push_expansion(n)
        if kind == "expand" and parent is not None:
            self.push_expansion(parent)
        return step

    def run(self, seeds: Sequence[str], budget: int, max_left_out: int) -> PackResult:
        """Take the best step left until nothing more fits or is worth its tokens."""
        for sid in seeds:
            if sid in self.options:
                self.push((sid,), "alone", None)
        taken: list[Step] = []
        left: list[Step] = []
        room = budget
        # Once the room left is below every line's cost and enough left-out steps are on
        # record, nothing more can be taken: stop instead of draining the heap.
        self.cheapest = min((min(o.tokens, o.cost(True)) for o in self.options.values()), default=0)
        heap = self.heap
        while heap:
            if room < self.cheapest and len(left) >= max_left_out:
                break
            neg_u, _, _, ids, kind, parent = heapq.heappop(heap)
            fresh = tuple(i for i in ids if i not in self.chosen)
            if not fresh:
                if kind == "expand" and parent is not None:
                    self.push_expansion(parent)
                continue
            u, t = self.utility(fresh, kind)
            if u < -neg_u - 1e-12 and heap and u < -heap[0][0]:
                self.push(fresh, kind, parent)  # stale (lost nodes or headers got paid); re-queue
                continue
            while t > room and len(fresh) > 1:
                fresh = fresh[:-1]
                u, t = self.utility(fresh, kind)
            if u <= 0.0:
                break
            if t > room:
                if len(left) < max_left_out:
                    left.append(Step(fresh, kind, u, t))
                self.offer_instead(fresh, kind, parent)
                continue
            room -= t
            taken.append(self.take(fresh, kind, u, t, parent))
        # A carrier left out and taken later, once its companion was shown, is not "left out".
        left = [s for s in left if not set(s.node_ids) <= self.chosen]
        return PackResult(tuple(taken), tuple(left))
