"""First recall from a stored snapshot: two checkouts of the code side by side.

Run from the repository root, with another checkout (e.g. ``git archive <commit> | tar
-x -C /tmp/base``) and a copy of the stores of ``bench_first_recall.py`` for each::

    python3 benchmarks/bench_first_recall_ab.py --base /tmp/base --base-dir /tmp/stores-base \\
        --dir /tmp/stores --sizes 10000 50000 --rounds 3

Each checkout first runs one fresh process per store (so the store holds the snapshot
its own code writes), then the two alternate, ``--rounds`` fresh processes each: open,
one recall of the small user, the big user's first recall, ``--queries`` warm recalls.
Every figure is taken in wall time and in the process's CPU time: on a shared machine
the first is mostly the other jobs' load, the second what the recall itself costs.
Full collections of the cyclic garbage collector are counted with their CPU time, in
the first recall and in the warm ones: where one falls is part of what a restart costs.
The stores of the two checkouts must be separate files (each writes its own snapshot).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def child(root: str, url: str, queries: int) -> None:
    """One fresh process of the checkout at ``root``; prints one JSON line."""
    sys.path.insert(0, root)
    sys.path.insert(0, str(Path(root) / "benchmarks"))
    from bench_first_recall import OTHER, USER, _open
    from bench_recall_latency import QUERY_T, fill

    rng = random.Random(7)
    qs = [fill(rng.choice(QUERY_T), rng) for _ in range(queries + 1)]
    tree = _open(url, "fast")
    tree.recall(OTHER, "What do I grow?", budget=1000)

    # Full collections of the cyclic garbage collector, with their CPU time: where one
    # falls (the first recall, or a later one) is part of what a restart costs.
    fulls: list[float] = []
    started = [0.0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if info["generation"] == 2:
            if phase == "start":
                started[0] = time.process_time()
            else:
                fulls.append(time.process_time() - started[0])

    gc.callbacks.append(on_gc)

    def timed(q: str) -> tuple[float, float]:
        w, c = time.perf_counter(), time.process_time()
        tree.recall(USER, q, budget=1000)
        return time.perf_counter() - w, time.process_time() - c

    fulls.clear()
    first = timed(qs[0])
    first_fulls = list(fulls)
    fulls.clear()
    warm = [timed(q) for q in qs[1:]]
    tree.close()
    gc.callbacks.remove(on_gc)
    cpus = sorted(w[1] for w in warm)
    print(json.dumps({"first_s": first[0], "first_cpu": first[1],
                      "warm_s": statistics.median(w[0] for w in warm),
                      "warm_cpu": statistics.median(cpus), "warm_cpu_max": cpus[-1],
                      "first_full_cpu": sum(first_fulls), "warm_fulls": len(fulls),
                      "warm_full_cpu": sum(fulls)}), flush=True)


def fresh(root: str, url: str, queries: int) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=root)
    out = subprocess.run([sys.executable, __file__, "--_child", root, url, "--queries", str(queries)],
                         capture_output=True, text=True, env=env, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _ms(runs: list[dict[str, Any]], key: str, digits: int) -> str:
    return " / ".join(f"{1000 * r[key]:.{digits}f}" for r in runs)


def _fulls(runs: list[dict[str, Any]]) -> str:
    return " / ".join(f"{r['warm_fulls']}, {1000 * r['warm_full_cpu']:.0f}" for r in runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", help="the other checkout's root")
    ap.add_argument("--base-dir", help="its copy of the stores")
    ap.add_argument("--dir", default="/tmp/personatree-first-recall", help="this checkout's stores")
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--_child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._child:
        child(args._child[0], args._child[1], args.queries)
        return
    setups = [("base", args.base, args.base_dir), ("this", str(ROOT), args.dir)]
    print(f"load {open('/proc/loadavg').read().split()[:3]}" if os.path.exists("/proc/loadavg") else "")
    print("| observations | code | first ms | warm p50 ms | first / warm | CPU: first ms | CPU: warm p50 ms "
          "| CPU: first / warm (median) | CPU: warm max ms | full collections: CPU ms in the first recall "
          "| full collections in the warm recalls (count, CPU ms) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        urls = {label: f"sqlite:///{Path(d) / f'user-{n}-fast.db'}" for label, _, d in setups}
        for label, root, _ in setups:
            fresh(root, urls[label], args.queries)  # the store now holds this code's snapshot
        got: dict[str, list[dict[str, Any]]] = {label: [] for label, _, _ in setups}
        for _ in range(args.rounds):
            for label, root, _ in setups:
                got[label].append(fresh(root, urls[label], args.queries))
        for label, _, _ in setups:
            rs = got[label]
            wall = statistics.median(r["first_s"] / r["warm_s"] for r in rs)
            cpu = statistics.median(r["first_cpu"] / r["warm_cpu"] for r in rs)
            print(f"| {n:,} | {label} | {_ms(rs, 'first_s', 0)} | {_ms(rs, 'warm_s', 1)} | {wall:.1f}x | "
                  f"{_ms(rs, 'first_cpu', 0)} | {_ms(rs, 'warm_cpu', 1)} | {cpu:.1f}x | "
                  f"{_ms(rs, 'warm_cpu_max', 0)} | {_ms(rs, 'first_full_cpu', 0)} | "
                  f"{_fulls(rs)} |", flush=True)
    if os.path.exists("/proc/loadavg"):
        print(f"load {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
