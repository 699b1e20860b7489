"""Consolidation benchmark: one user with 1k / 5k / 20k orphans, and the job over many users.

Run from the repository root::

    python3 benchmarks/bench_consolidation.py            # 1k, 5k, 20k orphans + 100 users x 500 leaves
    python3 benchmarks/bench_consolidation.py --sizes 1000 --users 20

Each single-user size runs in a fresh subprocess so that the peak resident memory
(``resource.getrusage(...).ru_maxrss``) belongs to that size alone; the baseline RSS
after imports and data generation is printed next to it. Orphans are synthetic
384-dimensional unit vectors (planted patterns of 8–30 mentions plus 40 % noise, spread
over a year), so the figures measure consolidation, not the embedding model. The job
figure commits 100 users × 500 such leaves to a SQLite file and times ``run_job`` with
the local process pool (2 workers) — including worker start-up.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
DIM = 384


def synthetic_leaves(user: str, n: int, seed: int, dim: int = DIM) -> list:
    """``n`` orphan leaves: 60 % in planted patterns of 8–30 mentions, 40 % noise."""
    from personatree.types import Level, Node, Provenance

    rng = np.random.default_rng(seed)
    planted = int(n * 0.6)
    sizes: list[int] = []
    while sum(sizes) < planted:
        sizes.append(int(rng.integers(8, 31)))
    sizes[-1] -= sum(sizes) - planted
    vecs = []
    for s in sizes:
        centre = rng.normal(size=dim)
        centre /= np.linalg.norm(centre)
        # noise of norm ~0.8: members have cosine ~0.6 to each other, like one topic in MiniLM
        pts = centre + rng.normal(scale=0.8 / np.sqrt(dim), size=(s, dim))
        vecs.append(pts)
    vecs.append(rng.normal(size=(n - planted, dim)))
    x = np.vstack(vecs).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    types = ["preference", "routine", "state", "event"]
    out = []
    for i in range(n):
        at = T0 + timedelta(days=float(rng.uniform(0, 360)))
        out.append(Node(
            id=f"lf_{user}_{i:06d}", user_id=user, level=Level.LEAF, schema_type=types[i % 4 if i >= planted else 0],
            content=f"statement {i}", attributes={}, t_first=at, t_last=at, logit=0.0, embedding=x[i],
            provenance=(Provenance(f"o{i}", 0, 0, at, f"s{i // 10}"),),
        ))
    return out


class _Judge:
    """A minimal Judge: summaries only (the plan never calls the other methods)."""

    name = "bench"

    def extract(self, observations):  # noqa: ANN001, ANN201
        return [[] for _ in observations]

    def validate(self, pairs):  # noqa: ANN001, ANN201
        return []

    def route(self, query):  # noqa: ANN001, ANN201
        raise NotImplementedError

    def summarize(self, members, level, schema_type):  # noqa: ANN001, ANN201
        from personatree.types import Summary

        return Summary(f"{members[0].content} ({len(members)} mentions)", schema_type, {})


def one_size(n: int) -> dict:
    """Plan + apply for one user with ``n`` orphans (run in a fresh process)."""
    from personatree.config import ConsolidationConfig
    from personatree.consolidate import Consolidator, apply_plan
    from personatree.graph import MemoryGraph
    from personatree.schema import SchemaRegistry

    reg = SchemaRegistry.load()
    g = MemoryGraph("u")
    for leaf in synthetic_leaves("u", n, seed=n):
        g.add_node(leaf)
    import hdbscan  # noqa: F401  (import cost is not consolidation cost)

    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    cfg = ConsolidationConfig()
    c = Consolidator(cfg, reg, _Judge())
    t = time.perf_counter()
    plan = c.plan(g, T0 + timedelta(days=365), base_version=1)
    t_plan = time.perf_counter() - t
    apply_plan(g, plan, reg, cfg)
    t_all = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"orphans": n, "method": plan.method, "plan_s": round(t_plan, 2), "total_s": round(t_all, 2),
            "base_rss_mb": round(base), "peak_rss_mb": round(peak), "new_mids": len(plan.new_mids),
            "rounds": max((k.round for k in plan.clusters), default=0)}


def job(users: int, leaves: int, workers: int) -> dict:
    """Users/s of ``run_job`` over a SQLite store with ``users`` × ``leaves`` orphans."""
    from personatree.config import PersonaTreeConfig
    from personatree.consolidation_job import run_job
    from personatree.ports import ChangeSet
    from personatree.store import open_store

    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "bench.db")
        st = open_store(path)
        for u in range(users):
            uid = f"user{u:04d}"
            st.commit(ChangeSet(user_id=uid, upsert_nodes=synthetic_leaves(uid, leaves, seed=u, dim=256)))
        st.close()
        cfg = PersonaTreeConfig(embedder="hashing:256")
        t = time.perf_counter()
        report = run_job(path, workers=workers, now=T0 + timedelta(days=365), config=cfg)
        secs = time.perf_counter() - t
    statuses: dict[str, int] = {}
    for r in report.results:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    return {"users": users, "leaves_per_user": leaves, "workers": workers, "seconds": round(secs, 1),
            "users_per_s": round(users / secs, 2), "statuses": statuses}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[1000, 5000, 20000])
    ap.add_argument("--users", type=int, default=100)
    ap.add_argument("--leaves", type=int, default=500)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one_size(args.one)))
        return
    print(f"cpus: {os.cpu_count()}  python: {sys.version.split()[0]}")
    print(f"{'orphans':>8} {'method':>7} {'rounds':>6} {'plan s':>7} {'total s':>8} {'base MB':>8} {'peak MB':>8} {'mids':>6}")
    for n in args.sizes:
        out = subprocess.run([sys.executable, __file__, "--one", str(n)], capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{r['orphans']:>8} {r['method']:>7} {r['rounds']:>6} {r['plan_s']:>7} {r['total_s']:>8} "
              f"{r['base_rss_mb']:>8} {r['peak_rss_mb']:>8} {r['new_mids']:>6}", flush=True)
    if args.users:
        r = job(args.users, args.leaves, args.workers)
        print(f"job: {r['users']} users x {r['leaves_per_user']} leaves, {r['workers']} workers: "
              f"{r['seconds']} s, {r['users_per_s']} users/s  {r['statuses']}")


if __name__ == "__main__":
    main()
