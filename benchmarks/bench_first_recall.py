"""First recall in a fresh process against warm recalls, for one big user.

Run from the repository root::

    python3 benchmarks/bench_first_recall.py --sizes 10000 50000 --dir /tmp/first-recall

A store per size (and per embedder) is built once in ``--dir`` and reused: ``--sizes``
observations of one user (one or two templated first-person sentences each, in
sessions of 40, ``observe_many`` in batches of 1,000, then one consolidation). Each
measure runs in a new process: open the store (timed apart, it includes loading the
embedder and serving one recall of another, small user: the process's own start-up),
then the big user's first recall (timed), then ``--queries`` warm recalls (p50 / p95).
Query embedding is included in every recall. Three fresh processes per size: the first
finds neither stored turn documents nor a snapshot of the built state (both are
deleted first: a store from before they were kept, or the first recall ever); the
second finds the turn documents the first stored but no snapshot (deleted again: the
first restart after the user's data changed); the third finds the snapshot the second
one wrote (a restart with no change since the last build).

The text comes from the templates of ``bench_recall_latency.py``, written for these
benchmarks.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

USER = "big"
OTHER = "small"


def _open(url: str, embedder: str) -> Any:
    from personatree import PersonaTree
    from personatree.config import PersonaTreeConfig

    if embedder == "fast":
        cfg = PersonaTreeConfig.preset("fast", busy_timeout_s=120)  # type: ignore[arg-type]
    else:
        cfg = PersonaTreeConfig(embedder=embedder, busy_timeout_s=120)
    return PersonaTree.open(url, cfg)


def build(path: Path, n: int, embedder: str, batch: int = 1000) -> dict[str, Any]:
    """Write ``n`` observations of one user into ``path``, then consolidate once."""
    from bench_recall_latency import TEMPLATES, fill

    rng = random.Random(26)
    tree = _open(f"sqlite:///{path}", embedder)
    t = time.perf_counter()
    for start in range(0, n, batch):
        items = []
        for j in range(start, min(n, start + batch)):
            text = " ".join(fill(rng.choice(TEMPLATES), rng) for _ in range(rng.choice((1, 1, 2))))
            items.append({"messages": text, "observation_id": f"o{j}", "session_id": f"s{j // 40}"})
        tree.observe_many(USER, items, batch_size=batch)
        print(f"  built {min(n, start + batch)} / {n}", file=sys.stderr, flush=True)
    ingest = time.perf_counter() - t
    # A second, small user: a fresh process serves one recall of it first, so that what
    # the big user's first recall is timed for is its own state, not the process's
    # (the embedder's weights, the tokenizer behind the token counter).
    tree.observe(OTHER, "I keep a small herb garden on my balcony.")
    t = time.perf_counter()
    tree.consolidate(USER)
    stats = tree.stats(USER)
    tree.close()
    return {"ingest_s": ingest, "consolidate_s": time.perf_counter() - t, "stats": stats}


def child(url: str, embedder: str, queries: int) -> None:
    """One fresh process: open, first recall, warm recalls; prints one JSON line."""
    from bench_recall_latency import QUERY_T, fill

    rng = random.Random(7)
    qs = [fill(rng.choice(QUERY_T), rng) for _ in range(queries + 1)]
    t = time.perf_counter()
    tree = _open(url, embedder)
    tree.recall(OTHER, "What do I grow?", budget=1000)
    opened = time.perf_counter() - t

    def timed(q: str) -> tuple[float, float]:
        # Wall time, and the process's CPU time: on a shared machine the first is
        # mostly other jobs' load, the second what this recall itself costs.
        w, c = time.perf_counter(), time.process_time()
        tree.recall(USER, q, budget=1000)
        return time.perf_counter() - w, time.process_time() - c

    first, first_cpu = timed(qs[0])
    runs = [timed(q) for q in qs[1:]]
    tree.close()
    warm = sorted(r[0] for r in runs)
    print(json.dumps({"open_s": opened, "first_s": first, "warm_p50_s": statistics.median(warm),
                      "warm_p95_s": warm[int(0.95 * (len(warm) - 1))], "first_cpu_s": first_cpu,
                      "warm_p50_cpu_s": statistics.median(r[1] for r in runs)}), flush=True)


def fresh(url: str, embedder: str, queries: int) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, "--_child", "--url", url, "--embedder", embedder,
                          "--queries", str(queries)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000])
    ap.add_argument("--embedder", default="default", help="an embedder spec, or 'fast' for the fast preset")
    ap.add_argument("--dir", default="/tmp/personatree-first-recall")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--url")
    ap.add_argument("--_child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._child:
        child(args.url, args.embedder, args.queries)
        return
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in args.sizes:
        tag = args.embedder.replace("/", "_").replace(":", "-")
        path = folder / f"user-{n}-{tag}.db"
        if not path.exists():
            print(f"building {path}", file=sys.stderr)
            info = build(path, n, args.embedder)
            print(f"  {json.dumps(info)}", file=sys.stderr)
        url = f"sqlite:///{path}"
        from personatree.store import SQLiteStore

        SQLiteStore(path).close()  # a store built by an earlier release: migrated first
        runs = []
        for tables in (("turn_docs", "retrieval_snapshots"), ("retrieval_snapshots",), ()):
            raw = sqlite3.connect(path)
            for table in tables:
                raw.execute(f"DELETE FROM {table}")
            raw.commit()
            raw.close()
            runs.append(fresh(url, args.embedder, args.queries))
        rows.append((n, runs))
    print(f"\nFirst recall in a fresh process, embedder {args.embedder!r}, budget 1,000 tokens, "
          f"{args.queries} warm recalls (query embedding included)\n")
    print("| observations | process | open + other user s | first recall ms | warm p50 ms | warm p95 ms "
          "| first / warm p50 | CPU: first ms | CPU: warm p50 ms | CPU: first / warm p50 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n, runs in rows:
        for i, r in enumerate(runs):
            kind = ("nothing stored", "turn documents stored", "state snapshot stored")[i]
            print(f"| {n:,} | {kind} | {r['open_s']:.2f} | {1000 * r['first_s']:.1f} | "
                  f"{1000 * r['warm_p50_s']:.1f} | {1000 * r['warm_p95_s']:.1f} | {r['first_s'] / r['warm_p50_s']:.1f}x | "
                  f"{1000 * r['first_cpu_s']:.1f} | {1000 * r['warm_p50_cpu_s']:.1f} | "
                  f"{r['first_cpu_s'] / r['warm_p50_cpu_s']:.1f}x |")


if __name__ == "__main__":
    main()
