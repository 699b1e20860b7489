"""The shared Redis hot tier against loading from PostgreSQL, for stateless workers.

Many users, each with a tree of --nodes nodes, in one PostgreSQL (pgserver); one
redis-server on 127.0.0.1. Trees are written through the real API: each user's
observations, leaves, mids, roots and support edges go in as one ``ChangeSet``
through ``Engine.transact`` of a tree opened with ``hot=``, so the write-through
hook builds each user's Redis entry exactly as an observe would. Texts come from a
pool of --pool distinct templated sentences embedded once with the packaged
all-MiniLM-L6-v2 and reused across users (embedding millions of texts on two CPU
cores is out of reach); within one user no sentence repeats while the pool lasts.

Then --workers spawned worker processes split the users; each opens two trees on
the same PostgreSQL: ``hot`` (``hot=`` the Redis URL) and ``store`` (no hot tier:
every recall loads the tree from PostgreSQL and indexes it, which is what a
stateless server does without one). Each request asks about a user the tree holds
nothing of (each user once per tree, and the tree forgets the user after the
request). The requests cycle through three kinds: about a leaf of the user's last
five sessions, about a leaf of any time, and a generic templated question. The two kinds alternate request by request, so both see the same
machine. Timed: the whole ``PersonaTree.recall`` call, access flushes included; the queries
are embedded with the real model before timing (:class:`KnownQueries`), the same
for both kinds. Printed: p50 / p95 / max per kind, the share of hot
requests answered from tier 1 / tier 2 / tier 3, rebuilt entries, and Redis
memory per user (``MEMORY USAGE`` of each entry, and ``used_memory`` over users).

Run::

    python3 benchmarks/bench_hot_redis.py --users 1000 --nodes 2000 --workers 4
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_tiering import MID_T, QUERY_T, ROOT_T, TEMPLATES, fill  # noqa: E402

from personatree.api import PersonaTree  # noqa: E402
from personatree.embedders import SentenceTransformerEmbedder  # noqa: E402
from personatree.graph import MemoryGraph  # noqa: E402
from personatree.ports import ChangeSet  # noqa: E402
from personatree.retrieval.prelude import user_state  # noqa: E402
from personatree.types import Edge, EdgeKind, Level, Message, Node, Observation, Provenance  # noqa: E402

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
WARM_USER = "warmup"


def pool(n: int, seed: int = 0) -> dict[str, list[str]]:
    """Distinct leaf, mid and root sentences (about 90 / 8 / 2 %)."""
    rng = random.Random(seed)
    out: dict[str, list[str]] = {}
    for kind, temps, share in (("leaf", TEMPLATES, 0.90), ("mid", MID_T, 0.08), ("root", ROOT_T, 0.02)):
        seen: dict[str, None] = {}
        for _ in range(int(n * share) * 20):
            if len(seen) >= max(4, int(n * share)):
                break
            seen[fill(rng.choice(temps), rng) + ("" if kind != "leaf" else rng.choice(["", " Really.", " Again!"]))] = None
        out[kind] = list(seen)
    return out


def user_change(uid: str, n: int, texts: dict[str, list[str]], vecs: dict[str, np.ndarray], seed: int) -> ChangeSet:
    """One user's tree of ``n`` nodes over a year, sessions of 20 leaves, as a ChangeSet."""
    rng = random.Random(seed)
    n_roots, n_mids = max(3, n // 80), max(8, n * 78 // 1000)
    n_leaves = n - n_roots - n_mids
    nodes: list[Node] = []
    edges: list[Edge] = []
    obs: list[Observation] = []

    def pick(kind: str, k: int) -> list[str]:
        src = texts[kind]
        return rng.sample(src, k) if k <= len(src) else [rng.choice(src) for _ in range(k)]

    for i, c in enumerate(pick("root", n_roots)):
        nodes.append(Node(f"r{i}", uid, Level.ROOT, rng.choice(["personality", "value", "identity"]), c, {},
                          T0, T0 + timedelta(days=rng.randint(30, 365)), rng.uniform(1.0, 3.0),
                          n_support=rng.randint(5, 20), embedding=vecs[c]))
    for i, c in enumerate(pick("mid", n_mids)):
        nodes.append(Node(f"m{i}", uid, Level.MID, rng.choice(["preference", "routine", "state"]), c, {},
                          T0, T0 + timedelta(days=rng.randint(10, 365)), rng.uniform(0.5, 2.0),
                          n_support=rng.randint(3, 12), embedding=vecs[c]))
        if rng.random() < 0.8:
            edges.append(Edge(f"m{i}", f"r{rng.randrange(n_roots)}", EdgeKind.SUPPORT, 0.8, 0.5, "", T0))
    leaves = pick("leaf", n_leaves)
    for j in range(0, n_leaves, 2):
        at = T0 + timedelta(days=j * 365 / n_leaves)
        pair = leaves[j:j + 2]
        sess = f"s{j // 20}"
        obs.append(Observation(f"o{j // 2}", uid, sess, at, (Message("user", " ".join(pair)),)))
        for k, c in enumerate(pair):
            i = j + k
            nodes.append(Node(f"l{i}", uid, Level.LEAF, rng.choice(["event", "preference", "state"]), c,
                              {"speaker": uid}, at, at, 0.4, embedding=vecs[c],
                              provenance=(Provenance(f"o{j // 2}", 0, k, at, sess),)))
            if rng.random() < 0.7:
                edges.append(Edge(f"l{i}", f"m{rng.randrange(n_mids)}", EdgeKind.SUPPORT, 0.8, 0.5, "", at))
    return ChangeSet(user_id=uid, observations=obs, upsert_nodes=nodes, upsert_edges=edges)


def apply(graph: MemoryGraph, change: ChangeSet) -> tuple[ChangeSet, None]:
    """A unit of work as the services write one: the graph changed, and its change set."""
    for n in change.upsert_nodes:
        graph.add_node(n)
    for e in change.upsert_edges:
        graph.add_edge(e)
    return change, None


class KnownQueries:
    """The packaged embedder, with the benchmark's queries embedded before timing.

    Both kinds of request embed the same query the same way; on a shared two-core
    machine one query embedding took up to a second, which would hide what differs.
    """

    def __init__(self, inner: Any, queries: list[str]) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.known = dict(zip(queries, inner.embed(queries)))

    def embed(self, texts: list[str]) -> np.ndarray:
        if all(t in self.known for t in texts):
            return np.stack([self.known[t] for t in texts])
        return self.inner.embed(texts)


def question(change: ChangeSet, kind: int, rng: random.Random) -> str:
    """A request about the user: kind 0 asks about a leaf of the last five sessions
    (what the hot tiers hold), 1 about a leaf of any time, 2 a generic templated
    question (see bench_tiering.QUERY_T)."""
    leaves = [n for n in change.upsert_nodes if n.level is Level.LEAF]
    if kind == 2 or not leaves:
        return fill(rng.choice(QUERY_T), rng)
    pick = rng.choice(leaves[-100:] if kind == 0 else leaves)
    return f"What did I tell you about this: {pick.content.rstrip('.!')}?"


def setup(pg: str, redis_url: str, users: int, nodes: int, pool_n: int, emb: Any,
          turn_docs: bool = True) -> tuple[float, dict[str, str]]:
    """Write every user's tree through a hot-tier tree; the seconds it took and one
    question per user. With ``turn_docs``, each user's full retrieval state is built
    once, which stores recall's turn documents (what any process keeps in the store
    after a user's first full recall), so neither kind of request pays for computing
    them: without it, whichever kind loads a user's tree first pays and the other
    reads them."""
    texts = pool(pool_n)
    every = [t for ts in texts.values() for t in ts]
    t = time.perf_counter()
    vecs = dict(zip(every, emb.embed(every)))
    print(f"embedded {len(every)} distinct sentences in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    tree = PersonaTree.open(pg, embedder=emb, hot=redis_url)
    t = time.perf_counter()
    rng = random.Random(3)
    asks: dict[str, str] = {}
    for u in range(-1, users):
        uid = f"user{u:04d}" if u >= 0 else WARM_USER
        change = user_change(uid, nodes, texts, vecs, seed=u)
        asks[uid] = question(change, u % 3, rng)
        tree.engine.transact(uid, lambda g, c=change: apply(g, c))
        if turn_docs:
            with tree.engine.lock:
                user_state(tree.engine, uid, tree.engine.existing_state(uid))
            forget(tree, uid)
        tree.engine.drop(uid)
        if u % 50 == 49:
            print(f"wrote {u + 1} users ({time.perf_counter() - t:.0f} s)", file=sys.stderr)
    took = time.perf_counter() - t
    tree.close()
    return took, asks


def forget(tree: PersonaTree, uid: str) -> None:
    """The tree holds nothing of ``uid`` afterwards (as a process that never met the user)."""
    tree.engine.evict(uid)


def worker(pg: str, redis_url: str, uids: list[str], queries: list[str], out: Any,
           switch_interval: float | None = None) -> None:
    """Answer one request per user with each tree, alternating; report the timings."""
    if switch_interval is not None:
        sys.setswitchinterval(switch_interval)
    try:
        warm = "What kind of person am I?"
        emb = KnownQueries(SentenceTransformerEmbedder(), queries + [warm])
        hot = PersonaTree.open(pg, embedder=emb, hot=redis_url)
        store = PersonaTree.open(pg, embedder=emb)
        for tree in (hot, store):  # load the tokenizer, router and models once
            tree.recall(WARM_USER, warm)
            forget(tree, WARM_USER)
        assert hot.hot is not None
        h = hot.hot
        h.answered = {1: 0, 2: 0, 3: 0}
        h.direct, h.writer.done = 0, 0
        lat: dict[str, list[float]] = {"hot": [], "store": []}
        for i, (uid, q) in enumerate(zip(uids, queries)):
            order = [("hot", hot), ("store", store)] if i % 2 == 0 else [("store", store), ("hot", hot)]
            for name, tree in order:
                before = (dict(h.answered), h.direct)
                t = time.perf_counter()
                tree.recall(uid, q)
                took = time.perf_counter() - t
                lat[name].append(took)
                if name == "hot":  # which kind of hot request it was
                    tier = next(k for k in h.answered if h.answered[k] != before[0][k])
                    kind = "3, entry skipped" if h.direct != before[1] else str(tier)
                    lat.setdefault(f"tier {kind}", []).append(took)
                forget(tree, uid)
        hot.close()  # waits for the entry writes still owed
        store.close()
        out.put(("ok", lat, dict(h.answered), h.rebuilt, h.fallbacks, h.direct, h.writer.done))
    except BaseException as exc:  # noqa: BLE001 - report to the parent
        import traceback

        out.put(("error", traceback.format_exc(), {}, 0, 0, 0, 0))
        raise SystemExit(1) from exc


def start_redis() -> tuple[subprocess.Popen[bytes], str, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    folder = tempfile.mkdtemp(prefix="personatree-bench-redis-")
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", folder], stdout=subprocess.DEVNULL)
    import redis

    for _ in range(200):
        try:
            redis.Redis(port=port).ping()
            break
        except redis.RedisError:
            time.sleep(0.05)
    return proc, f"redis://127.0.0.1:{port}/0", folder


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return 1000 * xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def redis_memory(url: str) -> tuple[float, float, int]:
    """(mean MEMORY USAGE per entry, used_memory over entries, entries), in bytes."""
    import redis

    r = redis.Redis.from_url(url)
    keys = [k for k in r.scan_iter(match="personatree:hot:u:*", count=500) if not k.endswith(WARM_USER.encode())]
    sizes = [int(r.memory_usage(k, samples=0) or 0) for k in keys]
    used = int(r.info("memory")["used_memory"])
    return statistics.mean(sizes) if sizes else 0.0, used / max(1, len(keys)), len(keys)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=1000)
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--pool", type=int, default=6000, help="distinct sentences embedded (default 6000)")
    ap.add_argument("--pg", default=None, help="a PostgreSQL URL (default: a fresh pgserver)")
    ap.add_argument("--switch-interval", type=float, default=None,
                    help="the workers' sys.setswitchinterval (how soon a request thread gets the "
                         "interpreter back from the background entry writer; default Python's 5 ms)")
    ap.add_argument("--cold-turn-docs", action="store_true",
                    help="do not store recall's turn documents in setup (users never recalled before)")
    args = ap.parse_args()
    from bench_stores import _start_postgres

    pg, pg_folder = (args.pg, None) if args.pg else _start_postgres()
    proc, url, folder = start_redis()
    try:
        emb = SentenceTransformerEmbedder()
        took, asks = setup(pg, url, args.users, args.nodes, args.pool, emb, turn_docs=not args.cold_turn_docs)
        mem_key, mem_used, n_keys = redis_memory(url)
        uids = [f"user{u:04d}" for u in range(args.users)]
        random.Random(1).shuffle(uids)
        ctx = mp.get_context("spawn")
        out = ctx.Queue()
        parts = [uids[w::args.workers] for w in range(args.workers)]
        procs = [ctx.Process(target=worker, args=(pg, url, part, [asks[u] for u in part], out, args.switch_interval)) for part in parts]
        for p in procs:
            p.start()
        results = [out.get(timeout=7200) for _ in procs]
        for p in procs:
            p.join(60)
        errors = [r[1] for r in results if r[0] != "ok"]
        if errors:
            raise SystemExit(errors[0])
        report(args, took, results, mem_key, mem_used, n_keys)
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(folder, ignore_errors=True)
        if pg_folder:
            shutil.rmtree(pg_folder, ignore_errors=True)


def report(args: argparse.Namespace, took: float, results: list[Any], mem_key: float, mem_used: float,
           n_keys: int) -> None:
    lat: dict[str, list[float]] = {}
    answered = {1: 0, 2: 0, 3: 0}
    rebuilt = fallbacks = direct = written = 0
    for _, la, ans, rb, fb, dr, wr in results:
        for k, v in la.items():
            lat.setdefault(k, []).extend(v)
        for t, c in ans.items():
            answered[int(t)] += c
        rebuilt += rb
        fallbacks += fb
        direct += dr
        written += wr
    total = sum(answered.values())
    print(f"\n{args.users} users x {args.nodes} nodes on PostgreSQL, {args.workers} workers; "
          f"trees written in {took:.0f} s; {total} hot requests; turn documents "
          f"{'not stored' if args.cold_turn_docs else 'stored'} in setup")
    print("| recall | p50 ms | p95 ms | max ms |")
    print("|---|---|---|---|")
    for name, label in (("hot", "Redis hot tier"), ("store", "load from PostgreSQL")):
        print(f"| {label} | {pct(lat[name], 50):.0f} | {pct(lat[name], 95):.0f} | {1000 * max(lat[name]):.0f} |")
    print(f"speed-up p50 {pct(lat['store'], 50) / pct(lat['hot'], 50):.1f}x, "
          f"p95 {pct(lat['store'], 95) / pct(lat['hot'], 95):.1f}x")
    print(f"answered from tier 1 / 2 / 3: " + " / ".join(f"{100 * answered[t] / max(1, total):.0f}%" for t in (1, 2, 3))
          + f"; entries rebuilt {rebuilt}; fallbacks {fallbacks}")
    print(f"tier 3 sent to the store without decoding the entry: {direct} of {answered[3]}; "
          f"entry writes after the answer: {written}")
    for name, label in (("hot", "Redis hot tier"), ("store", "load from PostgreSQL")):
        xs = lat[name]
        print(f"{label}: mean {1000 * statistics.mean(xs):.0f} ms over {len(xs)} requests")
    print("| Redis hot tier, by the tier that answered | requests | p50 ms | p95 ms |")
    print("|---|---|---|---|")
    for name in sorted(k for k in lat if k.startswith("tier ")):
        xs = lat[name]
        print(f"| {name} | {len(xs)} | {pct(xs, 50):.0f} | {pct(xs, 95):.0f} |")
    print(f"Redis memory per user: {mem_key / 1e6:.2f} MB (MEMORY USAGE), {mem_used / 1e6:.2f} MB "
          f"(used_memory / {n_keys} entries)")


if __name__ == "__main__":
    main()
