"""``profile_user``: tier 1 on its own, as a text block for an agent's system prompt.

Durable claims first (roots, then pivotal mids by priority), then the most recent
evidence (leaves of the last sessions, newest kept first when the budget binds,
shown in time order). Lines use the same compact format as recall. A claim whose
evidence contradicts it quotes its latest contradiction in its own line; a changed
one (its latest evidence reverses or ends it) leads with the current state
(``now: "..." (date); before: ...``) and shows the confidence that it still holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Mapping

from ..config import TieringConfig
from ..engine.core import EngineLike, engine_of
from ..graph import MemoryGraph
from ..ports import TokenCounter
from ..render import shown_confidence
from ..retrieval.prelude import check_budget
from ..retrieval.render import leaf_date, node_line
from ..retrieval.tokens import counter_of
from ..schema import SchemaRegistry
from ..timeline import Timeline, node_timeline
from ..types import Level
from .search import tiers_of
from .tiers import TierState

__all__ = ["Profile", "ProfileItem", "PROFILE_HEADER", "RECENT_HEADER", "render_profile", "profile_user"]

PROFILE_HEADER = "About the user (durable claims and patterns):"
RECENT_HEADER = "Recently (verbatim, dated):"


@dataclass(frozen=True, slots=True)
class ProfileItem:
    """One node shown in the profile.

    Attributes
    ----------
    node_id : str
    level : Level
    schema_type : str
    confidence : float
    priority : float
        S_m when the tiers were last scored.
    section : str
        ``"claims"`` or ``"recent"``.
    line : str
        The rendered line.
    """

    node_id: str
    level: Level
    schema_type: str
    confidence: float
    priority: float
    section: str
    line: str


@dataclass(frozen=True, slots=True)
class Profile:
    """The tier-1 block.

    Attributes
    ----------
    user_id : str
    text : str
        Ready to put in a system prompt (empty for an empty tier 1).
    items : tuple of ProfileItem
        Nodes shown, in render order.
    tokens : int
        Tokens of ``text`` (≤ ``budget``).
    budget : int
    """

    user_id: str
    text: str
    items: tuple[ProfileItem, ...]
    tokens: int
    budget: int


def _text(claims: list[ProfileItem], recent: list[ProfileItem], graph: MemoryGraph) -> str:
    out: list[str] = []
    if claims:
        out.append(PROFILE_HEADER)
        out.extend("- " + c.line for c in claims)
    if recent:
        out.append(RECENT_HEADER)
        day = None
        for r in sorted(recent, key=lambda r: (graph.node(r.node_id).t_first, r.node_id)):
            d = leaf_date(graph.node(r.node_id))
            if d != day:
                out.append(f"{d}:")
                day = d
            out.append("- " + r.line)
    return "\n".join(out)


def render_profile(state: TierState, graph: MemoryGraph, registry: SchemaRegistry, counter: TokenCounter,
                   budget: int, now: datetime, timelines: Mapping[str, Timeline] | None = None) -> Profile:
    """Render tier 1 within ``budget`` tokens (pure apart from the counter's cache).

    Parameters
    ----------
    state : TierState
    graph : MemoryGraph
    registry : SchemaRegistry
    counter : TokenCounter
    budget : int
    now : datetime
        When confidences are read.
    timelines : mapping, optional
        Claim id → its timeline, computed over the whole tree when ``graph`` holds
        only part of it (a shared hot tier's entry); default: from ``graph``.

    Returns
    -------
    Profile
    """
    def item(nid: str, section: str) -> ProfileItem:
        n = graph.node(nid)
        tl = None
        if n.level is not Level.LEAF:
            tl = timelines.get(nid) if timelines is not None else None
            tl = node_timeline(graph, nid) if tl is None else tl
        c = shown_confidence(n, registry, now, tl)
        latest = None
        if tl is not None and tl.latest_conflict is not None and tl.latest_conflict in graph:
            latest = graph.node(tl.latest_conflict)
            if latest.id in quoted:
                latest = None  # a claim above already quotes it: say it once
            else:
                quoted.add(latest.id)
        line = node_line(n, c, tl, latest)
        return ProfileItem(nid, n.level, n.schema_type, c, state.scores.get(nid, 0.0), section, line)

    quoted: set[str] = set()
    # Priority order decides what survives a tight budget: roots, pivotal claims,
    # then pivotal leaves and recent leaves newest first.
    order: list[tuple[str, str]] = [(x, "claims") for x in state.roots if x in graph]
    order += [(x, "claims") for x in state.pivotal if x in graph and graph.node(x).level is not Level.LEAF]
    recent = [x for x in state.pivotal if x in graph and graph.node(x).level is Level.LEAF]
    recent += sorted((x for x in state.recent if x in graph), key=lambda x: graph.node(x).t_first, reverse=True)
    order += [(x, "recent") for x in dict.fromkeys(recent)]
    claims: list[ProfileItem] = []
    recents: list[ProfileItem] = []
    used = 0
    for nid, section in order:
        if section == "recent" and nid in quoted:
            continue  # a claim above already quotes this statement: say it once
        before = set(quoted)
        it = item(nid, section)
        cost = counter.count(it.line) + 2
        if used + cost + 12 > budget:  # ~12 tokens of section and date headers
            quoted.intersection_update(before)  # not shown: its quote is still owed
            continue
        (claims if section == "claims" else recents).append(it)
        used += cost
    text = _text(claims, recents, graph)
    tokens = counter.count(text)
    while tokens > budget and (claims or recents):
        (recents or claims).pop()  # the per-line sum under-counted: drop the least important
        text = _text(claims, recents, graph)
        tokens = counter.count(text)
    by_id = {i.node_id: i for i in claims + recents}
    shown = [by_id[i.node_id] for i in claims]
    shown += sorted((by_id[i.node_id] for i in recents), key=lambda r: (graph.node(r.node_id).t_first, r.node_id))
    return Profile(graph.user_id, text, tuple(shown), tokens, budget)


def profile_user(tree: EngineLike, user_id: str, *, budget: int | None = None,
                 config: TieringConfig | None = None) -> Profile:
    """The tier-1 profile block of a user, for an agent's system prompt.

    Parameters
    ----------
    tree : Engine or PersonaTree
    user_id : str
        A validated user id.
    budget : int, optional
        Token budget (default ``config.tiering.profile_budget``).
    config : TieringConfig, optional
        Overrides ``config.tiering``.

    Returns
    -------
    Profile

    Raises
    ------
    UnknownUserError, InputError
    """
    engine = engine_of(tree)
    tcfg = config or engine.config.tiering
    b = check_budget(tcfg.profile_budget if budget is None else budget)
    counter = counter_of(engine, engine.config.recall.model)
    now = engine.clock.now()
    with engine.lock:
        state = tiers_of(engine, user_id, now, tcfg)
        return render_profile(state, engine.live_graph(user_id), engine.registry, counter, b, now)
