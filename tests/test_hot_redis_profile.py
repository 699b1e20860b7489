"""The profile block from the Redis hot tier, in a process that never loaded the user.

Real redis-server and SQLite. The tree has a pivotal claim with more evidence than an
entry keeps under it (two children per claim here) and one contradiction, so the
block is right only if the claim's timeline over the whole tree travels with the
entry. Checked: the reader's block equals the in-process one without reading the
tree; a stale entry is rebuilt, Redis down falls back with a warning, same block.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

import pytest

from personatree.api import PersonaTree
from personatree.config import PersonaTreeConfig
from personatree.errors import UnknownUserError
from personatree.hot_redis import PROFILE_FIELDS, decode_entry
from personatree.retrieval.tokens import counter_of
from personatree.tiering import TieringConfig
from personatree.tiering.entries import entry_graph, entry_tiers
from personatree.tiering.profile import render_profile
from personatree.tiering.shared import HotTierWarning
from personatree.types import Edge, EdgeKind
from tests.helpers import seed_mid
from tests.redis_fixtures import RedisServer, redis_server  # noqa: F401 - fixture
from tests.test_tiering_api import TALK

TIERS = TieringConfig(S=1, K=1, H=1, top_roots=1, sufficient_fill=0.0, sufficient_cosine=0.5, hot_children=2)
CFG = PersonaTreeConfig(tiering=TIERS)
BUDGET = 200


def _open(db: Path, embedder: Any, hot: str | None) -> PersonaTree:
    return PersonaTree.open(db, CFG, embedder=embedder, hot=hot)


@pytest.fixture()
def stores(tmp_path: Path, embedder: Any, redis_server: RedisServer) -> Iterator[tuple[PersonaTree, PersonaTree]]:
    db = tmp_path / "p.db"
    writer = _open(db, embedder, redis_server.url)
    writer.observe_many("sam", [{"messages": text, "at": at, "session_id": s} for at, s, text in TALK])
    writer.observe("sam", "I stopped cycling to work in April.", at="2024-04-06T10:00:00", session_id="s6")
    now = datetime.now(timezone.utc)
    seed_mid(writer, "sam", "m-active", "Stays active outdoors and cycles to work", logit=3.0, n_support=5,
             t_first=now, t_last=now)
    g = writer.graph("sam")
    leaves = [n for n in g.nodes() if n.id != "m-active"]
    against = next(n.id for n in leaves if "stopped cycling" in n.content)
    edges = [Edge(n.id, "m-active", EdgeKind.SUPPORT, 0.8, 0.5, "", n.t_first) for n in leaves if n.id != against]
    edges.append(Edge(against, "m-active", EdgeKind.CONFLICT, -0.8, -0.5, "", now))

    def link(graph: Any) -> Any:
        from personatree.ports import ChangeSet

        for e in edges:
            graph.add_edge(e)
        return ChangeSet("sam", upsert_edges=edges), None

    writer._transact("sam", link)
    reader = _open(db, embedder, redis_server.url)
    yield writer, reader
    reader.close()
    writer.close()


def _in_process(db: Path, embedder: Any) -> Any:
    plain = _open(db, embedder, None)
    try:
        return plain.profile("sam", budget=BUDGET)
    finally:
        plain.close()


def _shown(p: Any) -> tuple:
    # What the block shows (confidence and S_m are read at the clock's now: the two
    # processes read them a few milliseconds apart).
    return p.text, p.tokens, [(i.node_id, i.section, i.line) for i in p.items]


def _db(tree: PersonaTree) -> Path:
    return Path(tree.store.path)  # type: ignore[attr-defined]


def test_reader_renders_the_in_process_profile_from_redis(stores, embedder) -> None:
    writer, reader = stores
    got = reader.profile("sam", budget=BUDGET)
    assert reader.engine.trees == {} and reader.hot.profiles == 1 and reader.hot.rebuilt == 0
    want = _in_process(_db(writer), embedder)
    assert _shown(got) == _shown(want)
    assert "m-active" in {i.node_id for i in got.items}  # the claim with the long timeline is shown
    # Without the whole-tree timelines the entry's few children would tell another story.
    entry = decode_entry("sam", writer.hot.client.get("sam", PROFILE_FIELDS) or {})
    partial = render_profile(entry_tiers(entry), entry_graph(entry), reader.engine.registry,
                             counter_of(reader.engine, reader.engine.config.recall.model), BUDGET,
                             reader.engine.clock.now())
    assert partial.text != got.text


def test_stale_or_unreachable_falls_back_to_the_same_profile(stores, embedder, redis_server) -> None:
    writer, reader = stores
    bare = _open(_db(writer), embedder, None)
    bare.observe("sam", "I'm allergic to shellfish as well.", at="2024-04-08T10:00:00", session_id="s7")
    bare.close()
    got = reader.profile("sam", budget=BUDGET)
    assert reader.hot.rebuilt == 1 and "shellfish" in got.text  # the stale entry was not served
    assert _shown(got) == _shown(_in_process(_db(writer), embedder))
    again = reader.profile("sam", budget=BUDGET)
    assert reader.hot.profiles == 1 and _shown(again) == _shown(got)  # served from the rebuilt entry
    redis_server.stop()
    with pytest.warns(HotTierWarning):
        down = reader.profile("sam", budget=BUDGET)
    assert _shown(down) == _shown(got) and reader.hot.fallbacks == 1


def test_deleted_user_has_no_profile(stores) -> None:
    writer, reader = stores
    writer.delete_user("sam")
    with pytest.raises(UnknownUserError):
        reader.profile("sam")
