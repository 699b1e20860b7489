"""HMO tiering: recall latency against archive size, and LoCoMo-dev evidence recall,
tiers on versus tiers off in the same run.

Part 1, scaling (synthetic, one user, 1k / 10k / 100k nodes): first-person templated
sentences about people, places, activities and feelings in a tree of ~91% leaves,
~8% mids, ~1% roots, in sessions of 20 leaves. Embeddings: the real packaged
all-MiniLM-L6-v2 embeds up to --unique distinct sentences; every further node reuses
one of those vectors plus Gaussian noise (σ=0.02 per dimension, renormalised) —
embedding 100k sentences on a CPU takes many minutes and does not change what is
timed. Queries are embedded with the real model, outside the timed region. Timed per
query (steady state, caches hot): tiers off = ``recall_state`` over the whole tree
(what ``PersonaTree.recall`` does after embedding); tiers on = ``search_tiers``
(T1 → T1+T2 → whole tree, with promotion). The tier state is built before timing.

Part 2, LoCoMo dev evidence recall at --budget tokens: every conversation ingested
through the API by the harness's ``PersonaTreeEngine`` (one observation per turn,
observation id ``f"{sample_id}:{dia_id}"``, consolidation at session boundaries);
then every question with gold evidence is recalled with tiers off (``recall_user``)
and on (``tiered_recall``), and the share of gold turns whose leaves are shown is
averaged (``personatree_bench.metrics.evidence_recall``).

Run::

    python3 benchmarks/bench_tiering.py [--sizes 1000 10000 100000] [--queries 200] [--locomo PATH]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from personatree.config import RecallConfig  # noqa: E402
from personatree.embedders import SentenceTransformerEmbedder  # noqa: E402
from personatree.graph import MemoryGraph  # noqa: E402
from personatree.retrieval.engine import recall_state  # noqa: E402
from personatree.retrieval.router import default_router  # noqa: E402
from personatree.retrieval.state import RetrievalState  # noqa: E402
from personatree.retrieval.tokens import shared_counter  # noqa: E402
from personatree.schema import SchemaRegistry  # noqa: E402
from personatree.tiering import TieringConfig, search_tiers, tier_state  # noqa: E402
from personatree.types import Edge, EdgeKind, Level, Node, Provenance  # noqa: E402

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo_dev.json"
NAMES = ["Anna", "Tom", "Priya", "Jon", "Maria", "Kenji", "Caroline", "Melanie", "Omar", "Lena", "Sven", "Aisha"]
PLACES = ["Lisbon", "Berlin", "the lake", "Mount Tam", "the farmers market", "the library", "Kyoto",
          "the gym", "the beach", "Oslo", "the park", "my parents' house", "the office", "Nairobi"]
ACTS = ["hiking", "running", "painting", "swimming", "cooking", "reading", "cycling", "yoga", "pottery",
        "camping", "gardening", "climbing", "baking", "chess", "guitar practice"]
FEEL = ["happy", "exhausted", "anxious", "proud", "relaxed", "frustrated", "lonely", "grateful"]
TEMPLATES = [
    "I went {act} with {name} at {place} on Saturday.", "{name} and I tried {act} near {place} yesterday.",
    "I felt {feel} after {act} this morning.", "My friend {name} moved to {place} last month.",
    "I spent {n} hours on {act} this week.", "We had dinner with {name} at {place} and talked about {act}.",
    "I signed up for a {act} class at {place}.", "{name} gave me a book about {act} for my birthday.",
    "I'm {feel} because {name} cancelled our plans at {place}.", "I bought new gear for {act} at {place}.",
    "I ran into {name} at {place} and we caught up for {n} hours.", "Doing {act} always makes me feel {feel}.",
]
MID_T = ["Enjoys {act} ({n} mentions)", "Often sees {name} at {place}", "Feels {feel} around {act} lately",
         "Regular {act} routine, mostly at {place}"]
ROOT_T = ["Is an active, outdoorsy person who loves {act}", "Values close friendships, especially with {name}",
          "Tends to feel {feel} under pressure", "Cares about staying healthy through {act}"]
QUERY_T = ["When did I go {act} with {name}?", "What did {name} give me for my birthday?",
           "How often do I do {act}?", "What kind of person am I?", "Where does {name} live now?",
           "Have I been feeling {feel} lately?", "What matters most to me?", "Would I enjoy a {act} trip to {place}?"]


def fill(t: str, rng: random.Random) -> str:
    return t.format(act=rng.choice(ACTS), name=rng.choice(NAMES), place=rng.choice(PLACES),
                    feel=rng.choice(FEEL), n=rng.randint(2, 9))


def vectors_for(texts: list[str], base: dict[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
    keys = list(base)
    out = np.empty((len(texts), len(next(iter(base.values())))), dtype=np.float32)
    for i, t in enumerate(texts):
        v = base.get(t)
        if v is None:  # reuse a real vector of a random distinct sentence, with noise
            v = base[keys[int(rng.integers(len(keys)))]] + rng.normal(0, 0.02, out.shape[1]).astype(np.float32)
        out[i] = v / np.linalg.norm(v)
    return out


def build(n: int, emb: SentenceTransformerEmbedder, unique: int, seed: int = 0) -> MemoryGraph:
    """One user's synthetic tree of ``n`` nodes over 365 days, sessions of 20 leaves."""
    rng, nrng = random.Random(seed), np.random.default_rng(seed)
    n_roots, n_mids = max(3, n // 80), max(8, n * 78 // 1000)
    n_leaves = n - n_roots - n_mids
    leaves = [fill(rng.choice(TEMPLATES), rng) for _ in range(n_leaves)]
    mids = [fill(rng.choice(MID_T), rng) for _ in range(n_mids)]
    roots = [fill(rng.choice(ROOT_T), rng) for _ in range(n_roots)]
    distinct = list(dict.fromkeys(roots + mids + leaves))[:unique]
    base = dict(zip(distinct, emb.embed(distinct)))
    t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
    g = MemoryGraph("u")
    for i, (c, v) in enumerate(zip(roots, vectors_for(roots, base, nrng))):
        g.add_node(Node(f"r{i}", "u", Level.ROOT, rng.choice(["personality", "value", "identity"]), c, {},
                        t0, t0 + timedelta(days=rng.randint(30, 365)), rng.uniform(1.0, 3.0),
                        n_support=rng.randint(5, 20), embedding=v))
    for i, (c, v) in enumerate(zip(mids, vectors_for(mids, base, nrng))):
        g.add_node(Node(f"m{i}", "u", Level.MID, rng.choice(["preference", "routine", "state"]), c, {},
                        t0, t0 + timedelta(days=rng.randint(10, 365)), rng.uniform(0.5, 2.0),
                        n_support=rng.randint(3, 12), embedding=v))
        if rng.random() < 0.8:
            g.add_edge(Edge(f"m{i}", f"r{rng.randrange(n_roots)}", EdgeKind.SUPPORT, 0.8, 0.5, "", t0))
    for i, (c, v) in enumerate(zip(leaves, vectors_for(leaves, base, nrng))):
        at = t0 + timedelta(days=i * 365 / n_leaves)
        g.add_node(Node(f"l{i}", "u", Level.LEAF, rng.choice(["event", "preference", "state"]), c,
                        {"speaker": rng.choice(NAMES[:2])}, at, at, 0.4, embedding=v,
                        recall_count=rng.choice([0, 0, 0, 1, 2]),
                        provenance=(Provenance(f"o{i // 2}", 0, i % 2, at, f"s{i // 20}"),)))
        if rng.random() < 0.7:
            g.add_edge(Edge(f"l{i}", f"m{rng.randrange(n_mids)}", EdgeKind.SUPPORT, 0.8, 0.5, "", at))
    return g


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def scaling(args: argparse.Namespace, emb: SentenceTransformerEmbedder) -> list[tuple]:
    router = default_router(emb)
    counter = shared_counter("gpt-4o-mini")
    registry = SchemaRegistry.load()
    cfg, tcfg = RecallConfig(budget=args.budget), TieringConfig(archive_k=args.archive_k)
    qrng = random.Random(7)
    queries = [fill(qrng.choice(QUERY_T), qrng) for _ in range(args.queries)]
    qvecs = emb.embed(queries)
    routes = [router.route_vector(q, v) for q, v in zip(queries, qvecs)]
    now = datetime(2025, 1, 2, tzinfo=timezone.utc)
    rows = []
    for n in args.sizes:
        g = build(n, emb, args.unique)
        full = RetrievalState(g).refresh(g, 1)
        t = time.perf_counter()
        ts = tier_state(g, registry, now, tcfg, 1)
        t_tiers = time.perf_counter() - t
        kw = dict(registry=registry, counter=counter, budget=args.budget, now=now, cfg=cfg)

        def off(i: int) -> None:
            recall_state(full, queries[i], qvecs[i], routes[i], **kw)

        def on(i: int) -> int:
            return search_tiers(ts, g, full, queries[i], qvecs[i], routes[i], tcfg=tcfg, **kw).tier

        for i in range(min(20, len(queries))):  # warm-up: token cache, hot states, BM25 arrays
            off(i)
            on(i)
        lat_off, lat_on, tiers = [], [], Counter()
        for i in range(len(queries)):
            t = time.perf_counter(); off(i); lat_off.append(time.perf_counter() - t)  # noqa: E702
            t = time.perf_counter(); tiers[on(i)] += 1; lat_on.append(time.perf_counter() - t)  # noqa: E702
        rows.append((len(g), t_tiers, len(ts.tier1), len(ts.tier2), 1000 * pct(lat_off, 50), 1000 * pct(lat_off, 95),
                     1000 * pct(lat_on, 50), 1000 * pct(lat_on, 95), tiers, ts.promotions))
        print(f"done {n}", file=sys.stderr)
    return rows


def locomo(args: argparse.Namespace, emb: SentenceTransformerEmbedder) -> dict:
    from personatree_bench import PersonaTreeEngine, evidence_recall, load_locomo
    from personatree_bench.resources import make_token_counter
    from personatree.retrieval import recall_user
    from personatree.tiering import tiered_recall

    data = load_locomo(args.locomo, limit=args.limit)
    counter = make_token_counter("gpt-4o-mini")
    eng = PersonaTreeEngine(emb, counter)
    tcfg = TieringConfig(archive_k=args.archive_k)
    res: dict = {"off": [], "on": [], "tiers": Counter(), "lat_off": [], "lat_on": [], "turns": 0, "ingest_s": 0.0}
    try:
        for conv in data.conversations:
            res["ingest_s"] += eng.ingest(conv.id, conv.turns)
            res["turns"] += len(conv.turns)
            uid = eng.tree._uid(conv.id)
            for q in conv.questions:
                if not q.evidence:
                    continue
                if q.at is not None:
                    eng.clock.set(q.at)
                t = time.perf_counter()
                rec = recall_user(eng.tree, uid, q.text, budget=args.budget)
                res["lat_off"].append(time.perf_counter() - t)
                t = time.perf_counter()
                tr = tiered_recall(eng.tree, uid, q.text, budget=args.budget, config=tcfg)
                res["lat_on"].append(time.perf_counter() - t)
                res["tiers"][tr.tier] += 1
                res["off"].append(evidence_recall(q.evidence, eng.turns_of(conv.id, rec)))
                res["on"].append(evidence_recall(q.evidence, eng.turns_of(conv.id, tr.recall)))
            off = [x for x in res["off"] if x is not None]
            on = [x for x in res["on"] if x is not None]
            # running totals, so a long run that is stopped still says something
            print(f"done {conv.id}: {len(off)} questions, evidence recall off {100 * statistics.fmean(off):.1f} "
                  f"on {100 * statistics.fmean(on):.1f}, tiers {dict(res['tiers'])}", file=sys.stderr)
    finally:
        eng.close()
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000, 100000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument("--unique", type=int, default=3000)
    ap.add_argument("--locomo", default=str(LOCOMO))
    ap.add_argument("--limit", type=int, default=None, help="LoCoMo conversations (default: all)")
    ap.add_argument("--skip-locomo", action="store_true")
    ap.add_argument("--archive-k", type=int, default=0,
                    help="TieringConfig.archive_k: check the archive's closest nodes before trusting a hot answer")
    args = ap.parse_args()
    emb = SentenceTransformerEmbedder()
    rows = scaling(args, emb) if args.sizes else []
    print(f"\n## Tiering: recall latency vs archive size (budget {args.budget}, {args.queries} queries, "
          "no query embedding; ms p50 / p95)\n")
    print("| nodes | tier build s | T1 / T2 size | tiers off | tiers on | answered at T1/T2/T3 | promotions |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        tiers = "/".join(str(r[8].get(k, 0)) for k in (1, 2, 3))
        print(f"| {r[0]:,} | {r[1]:.2f} | {r[2]} / {r[3]} | {r[4]:.1f} / {r[5]:.1f} | {r[6]:.1f} / {r[7]:.1f} | "
              f"{tiers} | {r[9]} |")
    if len(rows) > 1:
        print(f"\np95 ratio largest/smallest: tiers on {rows[-1][7] / rows[0][7]:.2f}x, "
              f"tiers off {rows[-1][5] / rows[0][5]:.2f}x")
    if args.skip_locomo:
        return
    res = locomo(args, emb)
    off = [x for x in res["off"] if x is not None]
    on = [x for x in res["on"] if x is not None]
    print(f"\n## Tiering: LoCoMo dev evidence recall at {args.budget} tokens ({len(off)} questions with gold, "
          f"{res['turns']} turns, ingest {res['ingest_s']:.0f} s)\n")
    print("| | evidence recall | p50 / p95 ms (incl. query embedding) |")
    print("|---|---|---|")
    for name, xs, lat in (("tiers off", off, res["lat_off"]), ("tiers on", on, res["lat_on"])):
        print(f"| {name} | {100 * statistics.fmean(xs):.1f} | {1000 * pct(lat, 50):.1f} / {1000 * pct(lat, 95):.1f} |")
    t = res["tiers"]
    print(f"\ntiers on answered at T1/T2/T3: {t.get(1, 0)}/{t.get(2, 0)}/{t.get(3, 0)}; "
          f"difference {100 * (statistics.fmean(on) - statistics.fmean(off)):+.1f} points")


if __name__ == "__main__":
    main()
