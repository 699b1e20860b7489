"""Recall latency at 1k / 10k / 50k nodes, against flat numpy top-k in the same run.

Synthetic but realistic first-person text (templated sentences about people, places,
activities and dates) in a tree of ~91% leaves, ~8% mids, ~1% roots, built directly as
a MemoryGraph. Embeddings: the real packaged all-MiniLM-L6-v2 embeds every *distinct*
sentence up to --unique (default 3,000); further nodes reuse one of those vectors plus
Gaussian noise (σ=0.02 per dimension, renormalised), because embedding 50k sentences
on a CPU takes minutes and does not change what is being timed. Queries are embedded
with the real model.

Timed per query (after warm-up, steady state, per-user caches hot):

* recall (no embedding): route from the query vector, hybrid scoring (dense + BM25,
  RRF), path packing, rendering and the final real-tokenizer count — everything
  ``PersonaTree.recall`` does except embedding the query and the store's version check.
* recall (+ embedding): the same plus embedding the query with the real model.
* flat top-k: one matrix product over all nodes and ``argpartition`` top-k (k=50).
* flat context: flat top-k, then best-first packing of node texts into the same budget
  with the same cached token counter and the final count: what a flat retriever must do
  to hand an LLM a budgeted context.

Run::

    python3 benchmarks/bench_recall_latency.py [--sizes 1000 10000 50000] [--queries 200] [--embedders default fast]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from datetime import datetime, timedelta, timezone

import numpy as np

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from personatree.config import RecallConfig  # noqa: E402
from personatree.embedders import make_embedder  # noqa: E402
from personatree.graph import MemoryGraph  # noqa: E402
from personatree.index import top_k  # noqa: E402
from personatree.retrieval.engine import recall_state  # noqa: E402
from personatree.retrieval.router import default_router  # noqa: E402
from personatree.retrieval.state import RetrievalState  # noqa: E402
from personatree.retrieval.tokens import shared_counter  # noqa: E402
from personatree.schema import SchemaRegistry  # noqa: E402
from personatree.types import Edge, EdgeKind, Level, Node, Provenance  # noqa: E402

NAMES = [
    "Anna",
    "Tom",
    "Priya",
    "Jon",
    "Maria",
    "Kenji",
    "Caroline",
    "Melanie",
    "Omar",
    "Lena",
    "Sven",
    "Aisha",
]
PLACES = [
    "Lisbon",
    "Berlin",
    "the lake",
    "Mount Tam",
    "the farmers market",
    "the library",
    "Kyoto",
    "the gym",
    "the beach",
    "Oslo",
    "the park",
    "my parents' house",
    "the office",
    "Nairobi",
]
ACTS = [
    "hiking",
    "running",
    "painting",
    "swimming",
    "cooking",
    "reading",
    "cycling",
    "yoga",
    "pottery",
    "camping",
    "gardening",
    "climbing",
    "baking",
    "chess",
    "guitar practice",
]
FEEL = ["happy", "exhausted", "anxious", "proud", "relaxed", "frustrated", "lonely", "grateful"]
TEMPLATES = [
    "I went {act} with {name} at {place} on Saturday.",
    "{name} and I tried {act} near {place} yesterday.",
    "I felt {feel} after {act} this morning.",
    "My friend {name} moved to {place} last month.",
    "I spent {n} hours on {act} this week.",
    "We had dinner with {name} at {place} and talked about {act}.",
    "I signed up for a {act} class at {place}.",
    "{name} gave me a book about {act} for my birthday.",
    "I'm {feel} because {name} cancelled our plans at {place}.",
    "I bought new gear for {act} at {place} for {n}0 euros.",
    "I ran into {name} at {place} and we caught up for {n} hours.",
    "Doing {act} always makes me feel {feel}.",
]
MID_T = [
    "Enjoys {act} ({n} mentions, {m1}–{m2} 2024)",
    "Often sees {name} at {place} ({n} mentions)",
    "Feels {feel} around {act} lately ({n} mentions)",
    "Regular {act} routine, mostly at {place}",
]
ROOT_T = [
    "Is an active, outdoorsy person who loves {act}",
    "Values close friendships, especially with {name}",
    "Tends to feel {feel} under pressure",
    "Cares about staying healthy through {act}",
]
QUERY_T = [
    "When did I go {act} with {name}?",
    "What did {name} give me for my birthday?",
    "How often do I do {act}?",
    "What kind of person am I?",
    "Where does {name} live now?",
    "Have I been feeling {feel} lately?",
    "What matters most to me?",
    "Would I enjoy a {act} trip to {place}?",
]
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun"]


def fill(t: str, rng: random.Random) -> str:
    return t.format(
        act=rng.choice(ACTS),
        name=rng.choice(NAMES),
        place=rng.choice(PLACES),
        feel=rng.choice(FEEL),
        n=rng.randint(2, 9),
        m1=rng.choice(MONTHS[:3]),
        m2=rng.choice(MONTHS[3:]),
    )


def vectors_for(
    texts: list[str], base: dict[str, np.ndarray], rng: np.random.Generator
) -> np.ndarray:
    keys = list(base)
    out = np.empty((len(texts), len(next(iter(base.values())))), dtype=np.float32)
    for i, t in enumerate(texts):
        v = base.get(t)
        if v is None:  # reuse a real vector of a random distinct sentence, with noise
            v = base[keys[int(rng.integers(len(keys)))]] + rng.normal(0, 0.02, out.shape[1]).astype(
                np.float32
            )
        out[i] = v / np.linalg.norm(v)
    return out


def build(n: int, emb, unique: int, seed: int = 0) -> MemoryGraph:
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
        g.add_node(
            Node(
                f"r{i}",
                "u",
                Level.ROOT,
                rng.choice(["personality", "value", "identity"]),
                c,
                {},
                t0,
                t0 + timedelta(days=150),
                2.0,
                n_support=5,
                embedding=v,
            )
        )
    for i, (c, v) in enumerate(zip(mids, vectors_for(mids, base, nrng))):
        g.add_node(
            Node(
                f"m{i}",
                "u",
                Level.MID,
                rng.choice(["preference", "routine", "state"]),
                c,
                {},
                t0,
                t0 + timedelta(days=90),
                1.5,
                n_support=8,
                embedding=v,
            )
        )
        if rng.random() < 0.8:
            g.add_edge(
                Edge(f"m{i}", f"r{rng.randrange(n_roots)}", EdgeKind.SUPPORT, 0.8, 0.5, "", t0)
            )
    for i, (c, v) in enumerate(zip(leaves, vectors_for(leaves, base, nrng))):
        at = t0 + timedelta(days=i * 180 / n_leaves)
        g.add_node(
            Node(
                f"l{i}",
                "u",
                Level.LEAF,
                rng.choice(["event", "preference", "state"]),
                c,
                {"speaker": rng.choice(NAMES[:2])},
                at,
                at,
                0.4,
                embedding=v,
                provenance=(Provenance(f"o{i // 2}", 0, i % 2, at, "s"),),
            )
        )
        if rng.random() < 0.7:
            g.add_edge(
                Edge(f"l{i}", f"m{rng.randrange(n_mids)}", EdgeKind.SUPPORT, 0.8, 0.5, "", at)
            )
    return g


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def flat_context(matrix: np.ndarray, texts: list[str], q: np.ndarray, counter, budget: int) -> int:
    idx = top_k(matrix @ q, 100)
    out, used = [], 0
    for i in idx:
        t = counter.count(texts[i]) + 2
        if used + t <= budget:
            out.append(texts[i])
            used += t
    return counter.count("\n".join(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 50000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument("--unique", type=int, default=3000)
    ap.add_argument("--embedders", nargs="+", default=["default"],
                    help="embedder specs, each measured in turn ('fast' = the fast preset's static embedder)")
    args = ap.parse_args()
    for spec in args.embedders:
        print(f"\nembedder {spec!r}")
        measure(args, make_embedder("static" if spec == "fast" else spec))


def measure(args: argparse.Namespace, emb) -> None:
    """Every size with one embedder; prints its table."""
    router = default_router(emb)
    counter = shared_counter("gpt-4o-mini")
    registry = SchemaRegistry.load()
    cfg = RecallConfig(budget=args.budget)
    # The same recall without following later statements that update a candidate:
    # what that step costs, side by side in the same process.
    cfg_off = cfg.model_copy(update={"update_top": 0})
    qrng = random.Random(7)
    queries = [fill(qrng.choice(QUERY_T), qrng) for _ in range(args.queries)]
    qvecs = emb.embed(queries)
    now = datetime(2024, 7, 1, tzinfo=timezone.utc)
    rows = []
    for n in args.sizes:
        t = time.perf_counter()
        g = build(n, emb, args.unique)
        t_build = time.perf_counter() - t
        t = time.perf_counter()
        state = RetrievalState(g).refresh(g, 1)
        t_state = time.perf_counter() - t
        ids = [x.id for x in g.nodes() if x.embedding is not None]
        matrix = np.stack([g.node(x).embedding for x in ids]).astype(np.float32)
        texts = [g.node(x).content for x in ids]

        def run(i: int, c: RecallConfig = cfg) -> None:
            q, v = queries[i], qvecs[i]
            recall_state(
                state,
                q,
                v,
                router.route_vector(q, v),
                registry=registry,
                counter=counter,
                budget=args.budget,
                now=now,
                cfg=c,
            )

        for i in range(min(20, len(queries))):  # warm-up: token cache, BM25 postings arrays
            run(i)
            flat_context(matrix, texts, qvecs[i], counter, args.budget)
        # One pass per measure: interleaving them lets the embedder's thread pool
        # (still spinning after a call) slow down whatever is timed next.
        rec, rec_off, rec_e, flat, flat_c = [], [], [], [], []
        # With and without updates alternate query by query (in turn first), so a
        # change of load on the machine weighs on both alike.
        for i in range(len(queries)):
            pair = ((cfg, rec), (cfg_off, rec_off))
            for c, acc in pair if i % 2 == 0 else pair[::-1]:
                t = time.perf_counter()
                run(i, c)
                acc.append(time.perf_counter() - t)
        for i in range(len(queries)):
            t = time.perf_counter()
            top_k(matrix @ qvecs[i], 50)
            flat.append(time.perf_counter() - t)
        for i in range(len(queries)):
            t = time.perf_counter()
            flat_context(matrix, texts, qvecs[i], counter, args.budget)
            flat_c.append(time.perf_counter() - t)
        for i in range(len(queries)):
            t = time.perf_counter()
            v = emb.embed([queries[i]])[0]
            qv = queries[i]
            recall_state(
                state,
                qv,
                v,
                router.route_vector(qv, v),
                registry=registry,
                counter=counter,
                budget=args.budget,
                now=now,
                cfg=cfg,
            )
            rec_e.append(time.perf_counter() - t)
        ms = lambda xs, p: 1000 * pct(xs, p)  # noqa: E731
        rows.append(
            (
                n,
                len(g),
                t_build,
                t_state,
                ms(rec, 50),
                ms(rec, 95),
                ms(rec_e, 50),
                ms(rec_e, 95),
                ms(flat, 50),
                ms(flat, 95),
                ms(flat_c, 50),
                ms(flat_c, 95),
                ms(rec_off, 50),
                ms(rec_off, 95),
            )
        )
        print(f"done {n}", file=sys.stderr)
    print(
        f"\nRecall latency, budget {args.budget} tokens, {args.queries} queries, gpt-4o-mini tokenizer "
        f"(ms; p50 / p95)\n"
    )
    print(
        "| nodes | state build s | recall (no emb) | recall without updates (no emb) | recall (+ emb) | "
        "flat top-k | flat context | recall p95 / flat top-k p95 | recall p95 / flat context p95 |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r[1]:,} | {r[3]:.2f} | {r[4]:.2f} / {r[5]:.2f} | {r[12]:.2f} / {r[13]:.2f} | "
            f"{r[6]:.1f} / {r[7]:.1f} | {r[8]:.2f} / {r[9]:.2f} | "
            f"{r[10]:.2f} / {r[11]:.2f} | {r[5] / r[9]:.1f}x | {r[5] / r[11]:.1f}x |"
        )


if __name__ == "__main__":
    main()
