"""Pure parts of retrieval: tokenizer, BM25, RRF, packing, rendering, token counting."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from personatree.retrieval.fusion import rrf, rrf_normalised
from personatree.retrieval.lexical import BM25Index, tokenize
from personatree.retrieval.packing import Option, pack
from personatree.retrieval.render import compact_span
from personatree.retrieval.tokens import CachedCounter, LiteLLMTokenCounter


def test_tokenize_keeps_names_dates_numbers() -> None:
    toks = tokenize("On August 15, 1969, Corinne's bus left at 3:30pm after a 10k run in Tromøy.")
    assert {
        "corinne",
        "bus",
        "3:30pm",
        "10k",
        "tromøy",
        "@1969-08-15",
        "@1969-08",
        "@1969",
    } <= set(toks)
    assert "the" not in toks and "on" not in toks
    assert tokenize("hiking") == tokenize("hikes") == tokenize("hiked")
    assert "@2023-05-08" in tokenize("8 May 2023") and "@2023-05-08" in tokenize("2023-05-08")


def _docs() -> dict[str, str]:
    return {
        "a": "Corinne went to the NAMI support group",
        "b": "Marisol painted a sunrise over the lake",
        "c": "Corinne is comparing language schools",
        "d": "We went camping near the lake with the kids",
        "e": "The support group meets every Tuesday",
    }


def test_bm25_ranks_and_agrees_with_rank_bm25_on_the_top_hit() -> None:
    rank_bm25 = pytest.importorskip("rank_bm25")
    docs = _docs()
    ix = BM25Index()
    for k, v in docs.items():
        ix.add(k, tokenize(v))
    ids = list(docs)
    ref = rank_bm25.BM25Okapi([tokenize(docs[k]) for k in ids])
    for q in ("Corinne support group", "lake camping", "language"):
        ours = ix.search(tokenize(q), 5)
        theirs = ref.get_scores(tokenize(q))
        assert ours[0][0] == ids[max(range(len(ids)), key=lambda i: theirs[i])]


@given(st.lists(st.tuples(st.sampled_from(list(_docs())), st.booleans()), max_size=30))
@settings(max_examples=60, deadline=None)
def test_bm25_incremental_equals_rebuilt(ops: list[tuple[str, bool]]) -> None:
    docs = _docs()
    ix = BM25Index()
    live: set[str] = set()
    for key, add in ops:
        if add:
            ix.add(key, tokenize(docs[key]))
            live.add(key)
        else:
            ix.remove(key)
            live.discard(key)
    fresh = BM25Index()
    for key in sorted(live):
        fresh.add(key, tokenize(docs[key]))
    for q in ("Corinne support group", "lake", "Tuesday kids"):
        a = dict(ix.search(tokenize(q), 10))
        b = dict(fresh.search(tokenize(q), 10))
        assert a.keys() == b.keys()
        assert all(abs(a[k] - b[k]) < 1e-4 for k in a)


def test_rrf() -> None:
    fused = rrf([["a", "b", "c"], ["b", "c", "a"]], k=60)
    assert list(fused) == ["b", "a", "c"]
    norm = rrf_normalised([["x"], ["x"]], k=60)
    assert norm["x"] == pytest.approx(1.0)
    assert rrf([["a", "a", "b"]])["a"] == pytest.approx(1 / 61)
    with pytest.raises(ValueError):
        rrf([["a"]], weights=[1.0, 2.0])


_OPTS = {
    "r": Option("r", 2, 0.9, 0.9, 10),
    "m": Option("m", 1, 0.3, 0.6, 10),
    "l1": Option("l1", 0, 0.2, 0.5, 8),
    "l2": Option("l2", 0, 0.1, 0.4, 8),
    "x": Option("x", 0, 0.8, 0.8, 8),
}
_KIDS = {"r": ["m"], "m": ["l1", "l2"]}


def test_pack_takes_shallow_view_first_then_deepens() -> None:
    res = pack(_OPTS, _KIDS, budget=100, lam=0.0, seeds=["r", "x", "l1"])
    kinds = [(s.node_ids, s.kind) for s in res.taken]
    assert kinds[0] == (("r",), "alone")
    assert (("m",), "expand") in kinds and kinds.index((("m",), "expand")) > 0
    assert len(res.node_ids) == len(set(res.node_ids))


@given(st.integers(min_value=0, max_value=80), st.floats(min_value=0.0, max_value=0.05))
@settings(max_examples=80, deadline=None)
def test_pack_respects_budget_and_never_repeats(budget: int, lam: float) -> None:
    opts = {
        k: Option(
            o.node_id,
            o.rank,
            o.value,
            o.child_value,
            o.tokens,
            o.tokens + 2,
            ("claims",) if o.rank else ("evidence", f"d{k}"),
        )
        for k, o in _OPTS.items()
    }
    res = pack(
        opts, _KIDS, budget=budget, lam=lam, group_tokens={"claims": 3, "evidence": 2, "dl1": 4}
    )
    ids = res.node_ids
    assert len(ids) == len(set(ids))
    assert sum(s.tokens for s in res.taken) <= budget
    # an expansion only ever follows its parent
    for i, s in enumerate(res.taken):
        if s.kind == "expand":
            parent = {"m": "r", "l1": "m", "l2": "m"}[s.node_ids[0]]
            assert parent in [n for t in res.taken[:i] for n in t.node_ids]


def test_compact_span() -> None:
    d = lambda y, m, dd: datetime(y, m, dd, tzinfo=timezone.utc)  # noqa: E731
    assert compact_span(d(2024, 3, 2), d(2024, 3, 2)) == "2024-03-02"
    assert compact_span(d(2024, 3, 2), d(2024, 3, 9)) == "Mar 2024"
    assert compact_span(d(2024, 3, 2), d(2024, 6, 9)) == "Mar–Jun 2024"
    assert compact_span(d(2023, 11, 2), d(2024, 2, 9)) == "Nov 2023–Feb 2024"


@pytest.mark.parametrize("model", ["gpt-4o-mini", "gpt-3.5-turbo", "claude-3-5-sonnet"])
def test_litellm_counter_agrees_with_litellm(model: str) -> None:
    # The counter resolves litellm's count function once; its counts must be the ones
    # litellm.token_counter gives, on text unlike the probes it was checked on.
    import litellm

    c = LiteLLMTokenCounter(model)
    texts = [
        "- [Mar 2024] Prefers window seats on long flights (conf 0.74)\n",
        "  - 2024-03-02 We drove to the coast; it rained all day.\n",
        "Ça coûte 12,50 € — très cher!  🚗💨",
        "x" * 40_000,
        "\n\n\t  ",
    ]
    assert [c.count(t) for t in texts] == [litellm.token_counter(model=model, text=t) for t in texts]


def test_litellm_counter_counts_offline_and_caches() -> None:
    c = LiteLLMTokenCounter("gpt-4o-mini")
    n = c.count("Corinne went to the NAMI support group on 2023-05-07.")
    assert 8 <= n <= 30
    misses = c.misses
    assert c.count("Corinne went to the NAMI support group on 2023-05-07.") == n
    assert c.misses == misses and c.hits >= 1
    assert c.count("") == 0
    calls: list[str] = []
    cc = CachedCounter(lambda t: calls.append(t) or len(t), max_entries=2)
    for t in ("a", "b", "a", "c", "a"):
        cc.count(t)
    assert calls == ["a", "b", "c"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=60), st.integers(1, 70))
def test_top_k_matches_a_stable_full_sort(scores: list[int], k: int) -> None:
    # Heavy ties on purpose: the partition must not change which tied rows make the cut.
    import numpy as np

    from personatree.index import top_k

    s = np.asarray(scores, dtype=np.float32)
    assert top_k(s, k).tolist() == np.argsort(-s, kind="stable")[:k].tolist()


def test_long_queries_weigh_the_lexical_ranking_more() -> None:
    from personatree.config import RecallConfig
    from personatree.retrieval.scoring import lexical_weight

    cfg = RecallConfig(lexical_weight=1.0, long_query_tokens=20, long_query_lexical_weight=3.0)
    assert lexical_weight(4, cfg) == lexical_weight(10, cfg) == 1.0
    assert lexical_weight(15, cfg) == pytest.approx(2.0)
    assert lexical_weight(20, cfg) == lexical_weight(60, cfg) == 3.0
    flat = RecallConfig(long_query_lexical_weight=1.0)
    assert {lexical_weight(n, flat) for n in range(60)} == {1.0}


@given(st.floats(0.0, 1.0), st.floats(-1.0, 1.0), st.floats(0.0, 1.0))
def test_claim_relevance_is_zero_without_meaning_and_bounded(fused: float, cos: float, w: float) -> None:
    from personatree.retrieval.scoring import calibrated, claim_relevance

    rel = claim_relevance(fused, cos, w)
    assert 0.0 <= rel <= 1.0 + 1e-12
    if cos <= 0.15 and w < 1.0:
        assert rel == 0.0  # first among few claims, but unrelated in meaning
    assert claim_relevance(fused, cos, 1.0) == pytest.approx(fused)
    assert claim_relevance(1.0, cos, 0.0) == pytest.approx(calibrated(cos))


def test_disposition_bonus_is_the_weight_at_the_head_and_decays_with_rank() -> None:
    from personatree.config import RecallConfig
    from personatree.retrieval.scoring import disposition_bonus

    ids = ["a", "b", "c", "d"]
    steep = disposition_bonus(ids, RecallConfig(disposition_weight=0.8, disposition_k=2))
    assert list(steep) == ids
    assert steep["a"] == pytest.approx(0.8)
    assert steep["b"] == pytest.approx(0.8 * 3 / 4) and steep["d"] == pytest.approx(0.8 * 3 / 6)
    flat = disposition_bonus(ids, RecallConfig(disposition_weight=0.8, disposition_k=60))
    assert flat["a"] == pytest.approx(0.8) and flat["d"] > steep["d"]
    assert set(disposition_bonus(ids, RecallConfig(disposition_weight=0.0)).values()) == {0.0}
