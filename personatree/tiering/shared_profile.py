"""The profile block through the shared hot tier, for a process that never loaded the user.

The block :func:`~personatree.tiering.profile.profile_user` renders, from the user's
current Redis entry: tier 1's nodes, and each tier-1 claim's timeline over the whole
tree with the statements it quotes (:mod:`~personatree.tiering.entry_profile`), so
the lines, counts and quotes are the in-process ones. The same freshness rules as
recall (:mod:`~personatree.tiering.shared`): a stale entry is never served.
"""

from __future__ import annotations

from ..engine.core import EngineLike, engine_of
from ..errors import StoreError, UnknownUserError
from ..retrieval.prelude import check_budget
from ..retrieval.tokens import counter_of
from .entries import entry_graph, entry_tiers, fingerprint
from .entry_profile import decode_timeline
from .profile import Profile, profile_user, render_profile
from .shared import _publish, _rank, _warn, attached_tier, versions

__all__ = ["shared_profile"]


def shared_profile(tree: EngineLike, user_id: str, *, budget: int | None = None) -> Profile:
    """The tier-1 profile block through the shared hot tier: the block
    :func:`~personatree.tiering.profile.profile_user` renders, from the user's
    current Redis entry without reading the tree.

    A missing or stale entry is rebuilt from the store (and the block rendered from
    the tree); Redis unreachable: the in-process profile, with a
    :class:`HotTierWarning`.

    Raises
    ------
    UnknownUserError, InputError, ConfigError
        ConfigError if no hot tier is attached.
    """
    from ..hot_redis import PROFILE_FIELDS, HotTierUnavailable, decode_entry  # noqa: PLC0415

    engine = engine_of(tree)
    tier = attached_tier(engine)
    tcfg = tier.tiering(engine)
    b = check_budget(tcfg.profile_budget if budget is None else budget)
    counter = counter_of(engine, engine.config.recall.model)
    now = engine.clock.now()
    tier.writer.wait(user_id, engine.lock)  # this process's last recall of the user is in Redis first
    version, content = versions(engine, user_id)
    if version == 0:
        raise UnknownUserError(f"no data stored for user {user_id!r}")
    try:
        fields = tier.client.get(user_id, PROFILE_FIELDS)
    except HotTierUnavailable as exc:
        _warn(user_id, exc)
        tier.fallbacks += 1
        return profile_user(engine, user_id, budget=b, config=tcfg)
    entry = held = None
    if fields:
        try:
            held = decode_entry(user_id, fields)
            timelines = {x: decode_timeline(t) for x, t in held.prof["timelines"].items()}
        except (StoreError, KeyError, TypeError, ValueError, IndexError, AttributeError):
            held = None
        ok = held is not None and held.content_version == content
        entry = held if ok and held is not None and held.gate.get("fingerprint") == fingerprint(engine, tcfg) else None
    if entry is not None:
        g = entry_graph(entry)
        for q in entry.quotes:
            if q.id not in g:
                g.add_node(q)
        tier.profiles += 1
        return render_profile(entry_tiers(entry), g, engine.registry, counter, b, now, timelines)
    with engine.lock:
        st = engine.existing_state(user_id)
        tier.rebuilt += 1
        tstate = _rank(engine, st.graph, st.version, now, tcfg, held.gate if held else {},
                       held.anchor if held else None)
        now_v, content = versions(engine, user_id)
        if now_v == st.version:
            _publish(engine, tier, st.graph, tstate, st.version, content,
                     replace_newer=held is not None and held.version > st.version)
        return render_profile(tstate, st.graph, engine.registry, counter, b, now)
