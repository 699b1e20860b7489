"""Which levels of the tree does recall activate, per KnowMe-Bench task?

Ingests KnowMe dataset 1 (a first-person narrative stream of 6,644 entries) through
the public API only — ``PersonaTree.open`` on a temporary SQLite file,
``observe_many`` in chunks of 256 entries (each keeps its own timestamp and day
session) with a clock that follows the stream,
``consolidate`` every ``--consolidate-every`` entries and at the end — then asks every
question of every task with ``recall`` and reports, per task, the share of chosen
items that are leaves / mids / roots, the router's level votes, and (for tasks that
cite evidence) the share of gold evidence entries whose text reached the context.

Factual tasks (Information Extraction, Temporal Reasoning) should lean on leaves;
Expert-Annotated Psychoanalysis should reach roots.

Run::

    python3 benchmarks/knowme_activation.py [--data ../shared/data/knowme/dataset1]
        [--budget 1000] [--limit N] [--consolidate-every 500]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from personatree.api import PersonaTree  # noqa: E402
from personatree_bench import load_knowme  # noqa: E402
from personatree_bench.systems import interaction  # noqa: E402
from personatree.clock import FixedClock  # noqa: E402
from personatree.types import Level  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "knowme" / "dataset1"


def ingest(
    tree: PersonaTree, clock: FixedClock, user: str, turns, every: int, chunk: int = 256
) -> dict[str, float]:
    """Replay the stream in time order: ``observe_many`` per chunk, ``consolidate`` every ``every`` entries.

    Each interaction carries its own timestamp and day-session, so chunking across day
    boundaries stores exactly what per-day calls would; it only batches the embedding.
    """
    t_obs = t_cons = 0.0
    consolidated = None
    since = 0
    for start in range(0, len(turns), chunk):
        run = turns[start : start + chunk]
        clock.set(run[-1].at)
        t0 = time.perf_counter()
        tree.observe_many(user, [interaction(user, t) for t in run])
        t_obs += time.perf_counter() - t0
        since += len(run)
        if since >= every or start + chunk >= len(turns):
            t0 = time.perf_counter()
            try:
                tree.consolidate(user, now=run[-1].at)
                consolidated = True
            except (ImportError, NotImplementedError, AttributeError) as exc:
                consolidated = False
                print(f"consolidation unavailable: {exc}", file=sys.stderr)
                every = 10**12
            t_cons += time.perf_counter() - t0
            since = 0
        print(
            f"ingested {start + len(run)}/{len(turns)} ({t_obs:.0f} s observe, {t_cons:.0f} s consolidate)",
            file=sys.stderr,
        )
    return {"observe_s": t_obs, "consolidate_s": t_cons, "consolidated": float(bool(consolidated))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument("--limit", type=int, default=None, help="only the first N stream entries")
    ap.add_argument("--consolidate-every", type=int, default=500)
    ap.add_argument(
        "--store", default=None, help="reuse (or keep) this SQLite file instead of a temp one"
    )
    args = ap.parse_args()

    ds = load_knowme(args.data, limit=args.limit)
    conv = ds.conversations[0]
    user = "narrator"
    tmp = tempfile.TemporaryDirectory(prefix="knowme-activation-")
    path = Path(args.store) if args.store else Path(tmp.name) / "knowme.db"
    clock = FixedClock(conv.turns[0].at)
    tree = PersonaTree.open(path, clock=clock)
    try:
        fresh = user not in tree.users()
        stats = ingest(tree, clock, user, conv.turns, args.consolidate_every) if fresh else {}
        clock.set(max(t.at for t in conv.turns))
        st = tree.stats(user)
        text_of = {t.id: t for t in conv.turns}
        obs_turn = {f"{user}:{t.id}": t.id for t in conv.turns}
        shares: dict[str, Counter] = defaultdict(Counter)
        routes: dict[str, Counter] = defaultdict(Counter)
        recall_hits: dict[str, list[float]] = defaultdict(list)
        n_q: Counter = Counter()
        reached: Counter = Counter()
        lat: list[float] = []
        for q in conv.questions:
            t0 = time.perf_counter()
            rec = tree.recall(user, q.text, budget=args.budget)
            lat.append(time.perf_counter() - t0)
            n_q[q.category] += 1
            routes[q.category][rec.route.level] += 1
            for it in rec.items:
                shares[q.category][it.level] += 1
            if any(it.level is Level.ROOT for it in rec.items):
                reached[q.category] += 1
            if q.evidence:
                shown = {obs_turn.get(s[0]) for s in rec.sources}
                recall_hits[q.category].append(
                    sum(e in shown for e in q.evidence) / len(q.evidence)
                )
        del text_of
    finally:
        tree.close()
        tmp.cleanup()

    print(
        f"\nKnowMe dataset 1: {len(conv.turns):,} entries -> {st['leaves']:,} leaves, {st['mids']:,} mids, "
        f"{st['roots']:,} roots; budget {args.budget} tokens; "
        + (
            f"ingest {stats['observe_s']:.0f} s + consolidation {stats['consolidate_s']:.0f} s"
            if stats
            else "reused store"
        )
    )
    lat.sort()
    print(
        f"recall latency (with query embedding): p50 {1000 * lat[len(lat) // 2]:.0f} ms, "
        f"p95 {1000 * lat[int(0.95 * (len(lat) - 1))]:.0f} ms over {len(lat)} questions\n"
    )
    print(
        "| task | questions | routed L / M / R | items: leaves | mids | roots | questions reaching a root | evidence recall |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for task in sorted(n_q):
        tot = sum(shares[task].values()) or 1
        r = routes[task]
        ev = recall_hits.get(task)
        ev_s = f"{sum(ev) / len(ev):.2f}" if ev else "n/a (no evidence cited)"
        print(
            f"| {task} | {n_q[task]} | {r[Level.LEAF]} / {r[Level.MID]} / {r[Level.ROOT]} | "
            f"{shares[task][Level.LEAF] / tot:.0%} | {shares[task][Level.MID] / tot:.0%} | "
            f"{shares[task][Level.ROOT] / tot:.0%} | {reached[task] / n_q[task]:.0%} | {ev_s} |"
        )


if __name__ == "__main__":
    main()
