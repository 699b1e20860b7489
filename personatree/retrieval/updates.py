"""Which later statement of the person updates a statement recall is about to show.

A change of mind is often never clustered into a pattern: three mentions of a habit
over weeks and the one message that ends it stay separate leaves, and a question
that depends on the change shares few words with it ("Should I sign them up for the
fun run?" against "a bad sprain put my ankle in a brace, so the towpath evenings have
had to stop"). Recall then finds the old statements and not the change. This module
links, at recall time, a candidate leaf to the latest later statement about the same
thing that changes it, and recall values the update at ``recall.update_share`` of
what it updates, so that it comes right after it.

A later leaf ``u`` *updates* an earlier leaf ``x`` when

- ``u`` tells a change in the speaker's life or habits
  (:func:`~personatree.text.is_change`: a stop, a start, a move, a job or
  relationship begun or ended, a diagnosis), at cosine ≥ ``recall.update_floor``
  with ``x``; or ``u`` takes the opposite side to ``x``'s at cosine ≥
  ``recall.update_flip_floor``, sides counted as patterns count them
  (:func:`~personatree.stance.group_of`: a neutral mention of doing a thing is on
  the positive side, so "I can't run at the moment" reverses "I go for a run
  before my shift"); or ``u`` tells a change whose kind reaches what ``x`` names
  (:mod:`personatree.text.reach`: a knee in a brace reaches running, giving up
  alcohol reaches the wine club), whatever their cosine;
  or, whatever its words, ``u`` is at cosine ≥ ``recall.update_restate_floor``
  with ``x``: the person's latest word on a thing is worth showing with an older
  one even when no rule reads it as a change, and most ways of telling a change
  are not in any word list;
- ``u`` was said in a later session than ``x`` (within one session the person is
  telling one scene in order, and its starts and stops are events of the scene),
  by the same speaker (one memory may hold a conversation of several people);
- and, unless the change reaches ``x`` by its kind, the two are about the same thing:
  ``x`` is among the ``recall.update_k`` statements said before ``u`` that are
  closest to it in meaning. This mutual test keeps a change
  from updating every earlier line that happens to share its register: "I sold
  my old bike" is close to many lines at cosine 0.3, and closest to the ones about
  the bike. For a ``u`` read as a change or an opposite side, closest means closest
  once what all the person's statements share is taken out
  (``recall.update_specific``, :mod:`personatree.specific`): by plain cosine their
  small talk is close to everything they say, and a change of routine ("evenings are
  audiobooks in a dim room now") ranks the pleasantries ahead of the habit it ends.

A later leaf that a judge read as changing ``x`` when it was inserted
(:mod:`personatree.change_links`) updates it whatever their cosine, before any of
the rules above.

Among the updates of ``x`` the newest wins (one that changes ``x`` by its words before
one that only reaches it by its kind, before an opposite side that names nothing of
``x``, before a mere later mention), and an update is followed through its own update
(``recall.update_rounds`` steps): "no pets for us" → "maybe a cat one day" → "we
adopted a kitten"; never through a link made by a kind alone, which would hide the
statement that changes ``x`` in its own words. Pure apart from two caches kept with
the state's version: per-row arrays of time, stance side, session and change flag with
the rows each word is reached from, and each updater's neighbourhood among the
statements said before it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np

from ..config import RecallConfig
from ..specific import centred_cosines
from ..text import share_a_topic
from ..text.reach import named_words, words_of
from ..types import Level
from .state import LevelArrays, RetrievalState

__all__ = [
    "LeafFacts", "judged_links", "kth_largest", "leaf_facts", "later_statements", "reach_rows", "tried_first",
    "update_chains",
]

# Qualifying later statements tried per candidate, newest first: the first try of an
# updater costs one pass over the user's leaves, and the newest few decide in practice.
_TRIES = 4


@dataclass(frozen=True, slots=True)
class LeafFacts:
    """Per row of the leaf matrix: what the update test reads, as arrays.

    Attributes
    ----------
    at : ndarray of float
        When the leaf was said (POSIX seconds).
    side : ndarray of int8
        The side of its stance (+1, 0, −1).
    change : ndarray of bool
        It tells a change (:func:`~personatree.text.is_change`).
    gone : ndarray of bool
        The row has no node in the state (never an update, never counted).
    session : ndarray of int
        A code of the leaf's session (equal codes: one session; a leaf without one
        gets a code of its own).
    updaters : ndarray of int
        The rows that can update another (a change, or a stance with a side), present.
    present : ndarray of int
        The rows with a node in the state (any of them may restate another).
    judged : dict
        Row → the rows of the later statements a judge read as changing it
        (:mod:`personatree.change_links`), present ones only.
    kth : dict
        ``(k, row, centred)`` → the k-th highest cosine of that row with a leaf said
        before it (−inf when fewer were), plain or with what the rows share taken
        out, filled as recalls ask: it does not depend on the query, so one state
        version computes it once per updater.
    reach : dict
        Word → the change rows (sorted) whose kind of change reaches what the word
        names (:mod:`personatree.text.reach`), present ones only.
    """

    at: np.ndarray
    side: np.ndarray
    change: np.ndarray
    gone: np.ndarray
    session: np.ndarray
    judged: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    reach: Mapping[str, np.ndarray] = field(default_factory=dict)
    updaters: np.ndarray = field(init=False)
    present: np.ndarray = field(init=False)
    kth: dict[tuple[int, int, bool], float] = field(init=False)

    def __post_init__(self) -> None:
        rows = np.flatnonzero((self.change | (self.side != 0)) & ~self.gone)
        object.__setattr__(self, "updaters", rows)
        object.__setattr__(self, "present", np.flatnonzero(~self.gone))
        object.__setattr__(self, "kth", {})


#: What the leaf rows share and each row's product with it
#: (:meth:`~personatree.retrieval.state.RetrievalState.leaf_centre`).
Centre = tuple[np.ndarray, np.ndarray]


def _centred(sims: np.ndarray, centre: Centre, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    # The cosines of ``rows`` × ``cols`` with what every leaf shares taken out.
    mean, row_mean = centre
    return centred_cosines(sims, row_mean[rows], row_mean[cols], float(mean @ mean))


def _kth_before(
    matrix: np.ndarray, facts: LeafFacts, rows: np.ndarray, k: int, centre: Centre | None = None
) -> tuple[np.ndarray, np.ndarray | None]:
    """For each of ``rows``: its k-th highest cosine with a present leaf said before it.

    A candidate is among the ``k`` statements said before an update closest to it
    exactly when its cosine with the update reaches this value. With ``centre``, the
    same for the cosines with what the rows share taken out, from the same product.

    Returns
    -------
    plain : ndarray
    centred : ndarray or None
        ``None`` without ``centre``.
    """
    kinds = (False, True) if centre is not None else (False,)
    missing = [int(r) for r in rows if any((k, int(r), c) not in facts.kth for c in kinds)]
    if missing:
        sims = matrix @ matrix[missing].T  # leaves × missing
        # Rows not said before the update, or gone, never count.
        excluded = ~((facts.at[:, None] < facts.at[missing][None, :]) & ~facts.gone[:, None])
        # The centred copy is taken first: the plain values are masked in place.
        versions = []
        if centre is not None:
            versions.append((True, _centred(sims, centre, np.arange(len(matrix)), np.asarray(missing))))
        versions.append((False, sims))
        for centred, values in versions:
            values[excluded] = -np.inf
            kth = kth_largest(values, k, overwrite=True)
            for r, v in zip(missing, kth.tolist()):
                facts.kth[(k, r, centred)] = v
    plain, *centred_bar = (np.array([facts.kth[(k, int(r), c)] for r in rows]) for c in kinds)
    return plain, (centred_bar[0] if centred_bar else None)


def kth_largest(values: np.ndarray, k: int, overwrite: bool = False) -> np.ndarray:
    """The ``k``-th largest value of each column, repeats counted (pure).

    What ``np.partition(values, n - k, axis=0)[n - k]`` gives, for a small ``k``: at
    most ``k`` passes of a column maximum. A partition slows down a hundredfold on
    the columns of cosines a user's repeated sentences give (thousands of equal
    values around the one it selects).

    Parameters
    ----------
    values : ndarray
        Rows × columns, no NaN.
    k : int
        At least 1.
    overwrite : bool
        ``values`` may be overwritten (saves a copy of a large array).

    Returns
    -------
    ndarray
        One value per column; −inf for a column of fewer than ``k`` rows.
    """
    n, cols = values.shape
    out = np.full(cols, -np.inf, dtype=values.dtype)
    if n < k or cols == 0:
        return out
    work = values if overwrite else np.array(values, copy=True)
    left = np.full(cols, k, dtype=np.int64)  # how many of the largest are still to pass
    open_ = np.ones(cols, dtype=bool)
    for _ in range(k):
        top = work.max(axis=0)
        at_top = work == top
        count = at_top.sum(axis=0)
        done = open_ & (count >= left)
        out[done] = top[done]
        open_ &= ~done
        if not open_.any():
            break
        left -= count
        work[at_top] = -np.inf
    return out


def _group(side: np.ndarray) -> np.ndarray:
    # −1 for a negative side, +1 otherwise (neutral joins the positive side).
    return np.where(side < 0, -1, 1).astype(np.int8)


def leaf_facts(state: RetrievalState) -> LeafFacts:
    """The :class:`LeafFacts` of the state's leaf rows, built once per row layout."""
    arr = state.arrays[Level.LEAF]
    memo = state.updates_memo
    if memo is not None and memo[0] is arr:
        return memo[1]  # type: ignore[no-any-return]
    said = state.leaf_said
    n = len(arr.ids)
    at = np.full(n, np.inf)
    side = np.zeros(n, np.int8)
    gone = np.ones(n, bool)
    session = np.full(n, -1, np.int64)
    codes: dict[str, int] = {}
    for i, x in enumerate(arr.ids):
        hit = said.get(x)
        if hit is not None:
            at[i], side[i], gone[i] = hit[0], hit[1], False
            session[i] = codes.setdefault(hit[2], len(codes)) if hit[2] else -2 - i
    change = np.zeros(n, bool)
    change[state.change_rows] = True
    judged, reach = judged_links(arr, state.judged, gone), reach_rows(arr, state.reach, gone)
    facts = LeafFacts(at, side, change, gone, session, judged, reach)
    state.updates_memo = (arr, facts)
    return facts


def judged_links(
    arr: LevelArrays, judged: Mapping[str, Sequence[str]], gone: np.ndarray
) -> dict[int, tuple[int, ...]]:
    """Row → rows of the later statements a judge read as changing it (pure).

    Parameters
    ----------
    arr : LevelArrays
        The leaf rows.
    judged : mapping of str to sequence of str
        Leaf id → the ids of the statements a judge read it as changing
        (``RetrievalState.judged``).
    gone : ndarray of bool
        Rows without a node in the state: never an update.

    Returns
    -------
    dict of int to tuple of int
    """
    out: dict[int, list[int]] = {}
    for leaf, targets in judged.items():
        u = arr.row.get(leaf)
        if u is None or gone[u]:
            continue
        for x in targets:
            r = arr.row.get(x)
            if r is not None and r != u:
                out.setdefault(r, []).append(u)
    return {r: tuple(us) for r, us in out.items()}


def reach_rows(
    arr: LevelArrays, reach: Mapping[str, Sequence[str]], gone: np.ndarray
) -> dict[str, np.ndarray]:
    """Word → the rows of the changes whose kind reaches it (pure).

    Parameters
    ----------
    arr : LevelArrays
        The leaf rows.
    reach : mapping of str to sequence of str
        Change leaf id → the kinds of change it names (``RetrievalState.reach``).
    gone : ndarray of bool
        Rows without a node in the state: never an update.

    Returns
    -------
    dict of str to ndarray of int
        Sorted rows per word.
    """
    by_kinds: dict[tuple[str, ...], list[int]] = {}
    for leaf, kinds in reach.items():
        r = arr.row.get(leaf)
        if r is not None and not gone[r]:
            by_kinds.setdefault(tuple(kinds), []).append(r)
    out: dict[str, list[int]] = {}
    for kinds, rows in by_kinds.items():
        for word in words_of(kinds):
            out.setdefault(word, []).extend(rows)
    return {w: np.unique(np.asarray(rows, dtype=np.int64)) for w, rows in out.items()}


def later_statements(
    state: RetrievalState, leaves: Sequence[str], cfg: RecallConfig, top: int | None = None
) -> dict[str, list[str]]:
    """The latest update of each of the first candidate leaves, as update → leaves.

    Parameters
    ----------
    state : RetrievalState
    leaves : sequence of str
        Candidate leaf ids, best first; the first ``top`` are followed.
    cfg : RecallConfig
        ``update_floor``, ``update_flip_floor``, ``update_restate_floor``,
        ``update_k``, ``update_top`` and ``update_rounds``.
    top : int, optional
        How many candidates are followed (default ``cfg.update_top``).

    Returns
    -------
    dict of str to list of str
        Each update (the end of a chain of updates) → the leaves it updates.
    """
    arr = state.arrays.get(Level.LEAF)
    if arr is None or not arr.ids or (cfg.update_top if top is None else top) <= 0:
        return {}
    nodes = state.nodes

    def speaker(x: str) -> object:
        return nodes[x].attributes.get("speaker")

    def texts(xs: Sequence[str]) -> list[str]:
        return [nodes[x].content for x in xs]

    centre = state.leaf_centre(arr) if cfg.update_specific else None
    return update_chains(arr, leaf_facts(state), leaves, cfg, top, speaker, centre, texts)


def update_chains(
    arr: LevelArrays,
    facts: LeafFacts,
    leaves: Sequence[str],
    cfg: RecallConfig,
    top: int | None = None,
    speaker: Callable[[str], object] | None = None,
    centre: Centre | None = None,
    texts: Callable[[Sequence[str]], list[str]] | None = None,
) -> dict[str, list[str]]:
    """:func:`later_statements` over a leaf matrix and its facts (pure).

    Parameters
    ----------
    arr : LevelArrays
        Leaf ids, unit embedding rows and the row of each id.
    facts : LeafFacts
        Aligned with ``arr``'s rows.
    leaves : sequence of str
        Candidate leaf ids, best first.
    cfg : RecallConfig
    top : int, optional
        How many candidates are followed (default ``cfg.update_top``).
    speaker : callable, optional
        Leaf id → its speaker; an update is said by the speaker of what it updates
        (default: every leaf one speaker's).
    centre : (ndarray, ndarray), optional
        What the rows share and each row's product with it: for an update read as a
        change or an opposite side, the closest statements of the mutual test are
        then the closest once that is taken out (the floors stay on the plain
        cosine). Default: plain cosines throughout.
    texts : callable, optional
        Leaf ids → their texts: a change then also updates the candidates that name
        what its kind reaches (``facts.reach``; a chain is not followed through such
        a link). Default: by cosine alone.

    Returns
    -------
    dict of str to list of str
        Each update → the leaves it updates, in id order.
    """
    if _updaters(facts, cfg).size == 0 and not facts.judged:
        return {}
    frontier = [x for x in leaves[: cfg.update_top if top is None else top] if x in arr.row]
    nxt: dict[str, str] = {}
    by_kind: set[str] = set()  # the leaves whose update only reaches them by its kind
    done: set[str] = set()
    for _ in range(cfg.update_rounds):
        frontier = [x for x in frontier if x not in done]
        if not frontier:
            break
        done.update(frontier)
        step, reached = _updates_once(arr, facts, frontier, cfg, speaker, centre, texts)
        nxt.update(step)
        by_kind |= reached
        frontier = sorted(set(step.values()))
    out: dict[str, list[str]] = {}
    for x in sorted(nxt):
        u, seen = nxt[x], {x}
        # Follow the chain to its newest end, but not through a link made by a kind of
        # change alone: "I can't run at the moment" is the latest word on the runs even
        # when a later knee injury reaches running too, and would hide it.
        while u in nxt and u not in seen and u not in by_kind:
            seen.add(u)
            u = nxt[u]
        if u != x:
            out.setdefault(u, []).append(x)
    return out


def _updates_once(
    arr: LevelArrays,
    facts: LeafFacts,
    xs: list[str],
    cfg: RecallConfig,
    speaker: Callable[[str], object] | None,
    centre: Centre | None = None,
    texts: Callable[[Sequence[str]], list[str]] | None = None,
) -> tuple[dict[str, str], set[str]]:
    """One step: each leaf of ``xs`` → its newest update, where it has one, and the
    leaves whose update reaches them by its kind of change alone."""
    matrix, ids = arr.matrix, arr.ids
    out: dict[str, str] = {}
    by_kind: set[str] = set()
    if facts.judged:
        # A statement a judge read as changing the candidate comes first, whatever
        # their cosine: the newest of them.
        for x in xs:
            row = arr.row[x]
            later = [u for u in facts.judged.get(row, ()) if facts.at[u] > facts.at[row]]
            if later:
                out[x] = ids[max(later, key=lambda u: (facts.at[u], ids[u]))]
        xs = [x for x in xs if x not in out]
        if not xs:
            return out, by_kind
    restate = cfg.update_restate_floor
    cand = _updaters(facts, cfg)
    if cand.size == 0:
        return out, by_kind
    rx = np.fromiter((arr.row[x] for x in xs), np.int64, len(xs))
    # Every leaf's cosines, then the updaters' rows of them (updaters × candidates):
    # the same products as the updaters' rows times the candidates, without copying
    # the updaters' rows of the matrix (half of all rows) on every recall.
    sims = (matrix @ matrix[rx].T)[cand]
    at = facts.at[cand]
    ok = at[:, None] > facts.at[rx][None, :]
    # Sides as patterns count them (stance.group_of): a neutral mention of doing a
    # thing ("I go for a run before my shift") is on the side a later "I can't run at
    # the moment" reverses.
    opposite = (_group(facts.side[cand])[:, None] * _group(facts.side[rx])[None, :]) < 0
    changed = facts.change[cand][:, None] & (sims >= cfg.update_floor)
    flips = opposite & (sims >= cfg.update_flip_floor)
    reads = changed | flips
    # A change reaches what its kind rules out, however far apart in meaning: the
    # knee in a brace and the evening runs.
    said = texts(xs) if texts is not None and facts.reach else None
    reach = _reaches(facts, cand, said) if said is not None else None
    # The order updates are tried in: a statement read as changing the candidate, then
    # one whose kind reaches it ("I can't run at the moment" before the later "I
    # stopped hiking after my knee injury", for the runs), then an opposite side that
    # names nothing the candidate names, then any later mention.
    tier = np.where(reads, 0, 3).astype(np.int8)
    if reach is not None and said is not None and texts is not None:
        tier[reach & ~reads] = 1
        # An opposite side is weaker evidence than a kind of change when it names
        # nothing of the candidate: "a rough week, the boiler packed in" can be on the
        # other side of "spent the weekend digging beds" past the flip floor, and the
        # later slipped disc is what ends the digging. "I can't run at the moment"
        # names the runs.
        tier[_unnamed(flips & ~changed & ~reach, reach, cand, said, arr.ids, texts)] = 2
        reads |= reach
    ok &= reads if restate is None else reads | (sims >= restate)
    # What a person says within one session is one scene told in order ("we stopped
    # for coffee", "then started the drive home"); an update comes later.
    ok &= facts.session[cand][:, None] != facts.session[rx][None, :]
    # The newest few qualifying statements of each candidate are tried, newest first
    # (then closest): the first among its nearest earlier statements wins. A statement
    # read as a change goes before a mere later mention, however new: "back home
    # after the hike" says less about the habit than the broken ankle before it.
    tries: dict[int, np.ndarray] = {}
    for j in range(len(xs)):
        idx = np.flatnonzero(ok[:, j])
        if not idx.size:
            continue
        col, rank = sims[:, j], tier[:, j]
        if speaker is None:
            picks = tried_first(idx, rank, at, col, _TRIES)
        else:
            # The speaker is read node by node: a prefix of the order usually holds
            # the speaker's newest few (the whole order only when it does not).
            who = speaker(xs[j])
            order = tried_first(idx, rank, at, col, 4 * _TRIES)
            picks = _said_by(order, cand, ids, speaker, who)
            if picks.size < _TRIES and order.size < idx.size:
                picks = _said_by(tried_first(idx, rank, at, col), cand, ids, speaker, who)
        if picks.size:
            tries[j] = picks[:_TRIES]
    if not tries:
        return out, by_kind
    us = np.unique(np.concatenate(list(tries.values())))
    # A statement read as a change is tested by what is specific to the person (with
    # ``centre``): by plain cosine the habit it ends ranks behind their small talk. A
    # restatement keeps the plain test: it is any later line close to the candidate.
    if centre is not None and not reads[us].any():
        centre = None
    plain, centred = _kth_before(matrix, facts, cand[us], cfg.update_k, centre)
    kth = dict(zip(us.tolist(), plain.tolist()))
    kth_c: dict[int, float] = {}
    close: dict[int, np.ndarray] = {}
    if centre is not None and centred is not None:
        kth_c = dict(zip(us.tolist(), centred.tolist()))
        close = dict(zip(us.tolist(), _centred(sims[us], centre, cand[us], rx)))
    for j, picks in tries.items():
        for u in picks.tolist():
            if reads[u, j] and u in kth_c:
                value, bar = close[u][j], kth_c[u]
            else:
                value, bar = sims[u, j], kth[u]
            # A change that reaches the candidate by its kind needs no mutual test; else
            # the candidate is among the update's nearest (its cosine reaches the bar,
            # the same cosine computed in another product).
            if (reach is not None and reach[u, j]) or value >= bar - 1e-6:
                out[xs[j]] = ids[int(cand[u])]
                if tier[u, j] == 1:
                    by_kind.add(xs[j])
                break
    return out, by_kind


def _reaches(facts: LeafFacts, cand: np.ndarray, texts: Sequence[str]) -> np.ndarray | None:
    """Updaters × candidates: the updater is a change whose kind reaches the candidate.

    ``None`` when none does. ``cand`` is sorted (rows of the leaf matrix); ``texts``
    holds what each candidate says.
    """
    out: np.ndarray | None = None
    for j, said in enumerate(texts):
        hits = [facts.reach[w] for w in named_words(said) if w in facts.reach]
        if not hits:
            continue
        rows = np.unique(np.concatenate(hits))
        pos = np.minimum(np.searchsorted(cand, rows), cand.size - 1)
        pos = pos[cand[pos] == rows]
        if pos.size:
            if out is None:
                out = np.zeros((cand.size, len(texts)), dtype=bool)
            out[pos, j] = True
    return out


def _unnamed(
    flips: np.ndarray,
    reach: np.ndarray,
    cand: np.ndarray,
    said: Sequence[str],
    ids: Sequence[str],
    texts: Callable[[Sequence[str]], list[str]],
) -> np.ndarray:
    """Updaters × candidates: an opposite side that shares no content word with the
    candidate, in the columns where a change reaches the candidate by its kind (the
    only ones where it matters which of the two goes first)."""
    out = np.zeros_like(flips)
    cols = np.flatnonzero(reach.any(axis=0) & flips.any(axis=0))
    if not cols.size:
        return out
    rows = np.flatnonzero(flips[:, cols].any(axis=1))
    said_by = dict(zip(rows.tolist(), texts([ids[int(cand[r])] for r in rows])))
    for j in cols.tolist():
        for r in np.flatnonzero(flips[:, j]).tolist():
            out[r, j] = not share_a_topic(said[j], said_by[r])
    return out


def tried_first(
    idx: np.ndarray, tier: np.ndarray, at: np.ndarray, sims: np.ndarray, n: int | None = None
) -> np.ndarray:
    """The first ``n`` of ``idx`` in the order an update is tried (pure).

    The lowest tier first (a statement read as changing the candidate, then one that
    reaches it by its kind of change, then an opposite side naming nothing of it, then
    any later mention), then the newest, then the closest: the order of
    ``idx[np.lexsort((-sims[idx], -at[idx], tier[idx]))]``, ties included. With the
    restate floor thousands of a user's statements may qualify for a candidate and
    only the first few are tried, so the rest is not sorted.

    Parameters
    ----------
    idx : ndarray of int
        Rows that qualify.
    tier, at, sims : ndarray
        Per row: its tier (small non-negative ints), when said, cosine with the
        candidate.
    n : int, optional
        How many (default: all of them).

    Returns
    -------
    ndarray of int
    """
    if n is None or idx.size <= n:
        return idx[np.lexsort((-sims[idx], -at[idx], tier[idx]))]
    tiers = tier[idx]
    parts: list[np.ndarray] = []
    left = n
    for group in (idx[tiers == t] for t in np.unique(tiers)):
        if left <= 0 or not group.size:
            continue
        if group.size > left:
            # Every row at least as new as the left-th newest (ties kept): the first
            # ``left`` of the group are among them.
            when = at[group]
            group = group[when >= np.partition(when, group.size - left)[group.size - left]]
        ordered = group[np.lexsort((-sims[group], -at[group]))][:left]
        parts.append(ordered)
        left -= ordered.size
    return np.concatenate(parts) if parts else idx[:0]


def _updaters(facts: LeafFacts, cfg: RecallConfig) -> np.ndarray:
    """The rows that may update another: every present one when restatements count."""
    return facts.updaters if cfg.update_restate_floor is None else facts.present


def _said_by(
    idx: np.ndarray, cand: np.ndarray, ids: Sequence[str], speaker: Callable[[str], object], who: object
) -> np.ndarray:
    """The first ``_TRIES`` of ``idx`` (rows of ``cand``, in order) said by ``who``.

    Stops at the ``_TRIES``-th: a speaker is read from the node, and the newest few
    decide.
    """
    keep: list[int] = []
    for u in idx.tolist():
        if speaker(ids[int(cand[u])]) == who:
            keep.append(u)
            if len(keep) == _TRIES:
                break
    return np.asarray(keep, dtype=np.int64)
