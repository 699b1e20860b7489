"""Observe and recall throughput: PostgreSQL versus SQLite, 1 and 4 client processes.

Every client is a separate process with its own ``PersonaTree`` (as separate app
instances would be) and its own user: the multi-tenant case the PostgreSQL store is
for. Each client first warms up (one observe and one recall, which load the tokenizer
and the router), then all clients start together at a barrier and run

* ``observe``: ``--observe`` interactions, one call (one transaction) each;
* ``recall``: ``--recall`` token-budgeted recalls on the tree just built
  (``tree.search`` if ``recall`` is unavailable).

Throughput is the total number of calls divided by the wall time from the common
start to the last client's end; latencies are per call. The embedder is the
deterministic ``HashingEmbedder`` by default so that the store, not the model,
dominates; pass ``--embedder minilm`` for the packaged sentence-transformers model.

PostgreSQL comes from ``--pg-url`` or, by default, a throwaway server started with
the ``pgserver`` package (unix socket only, data deleted at exit).

Run::

    python benchmarks/bench_stores.py                 # table for people
    python benchmarks/bench_stores.py --markdown      # table for BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import shutil
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from typing import Any

QUERIES = (
    "What does the user like to do on weekends?",
    "Any food allergies?",
    "Where does the user live?",
    "How does the user feel about work lately?",
)
TEMPLATES = (
    "I went hiking in the mountains again, trail {i} was beautiful.",
    "I am allergic to peanuts, so I skipped the dessert at dinner {i}.",
    "Work has been stressful this week, deadline number {i} is coming.",
    "I live in Oslo and I cycle to the office, ride {i} was cold.",
    "I prefer tea over coffee, I had cup {i} this morning.",
)


@dataclass(frozen=True)
class Row:
    """One (store, clients) measurement."""

    store: str
    clients: int
    observe_per_s: float
    observe_p50_ms: float
    observe_p95_ms: float
    recall_per_s: float
    recall_p50_ms: float
    recall_p95_ms: float
    give_ups: int


def _embedder(name: str) -> Any:
    from personatree.embedders import HashingEmbedder, make_embedder

    return HashingEmbedder(256) if name == "hashing" else make_embedder("default")


def _client(url: str, user: str, n_obs: int, n_recall: int, embedder: str, barrier: Any, out: Any) -> None:
    """One app instance: warm up, wait for the others, observe, wait, recall."""
    from personatree.api import PersonaTree
    from personatree.errors import StaleStateError

    try:
        tree = PersonaTree.open(url, embedder=_embedder(embedder))
        tree.observe(user, "Warm-up: I like long walks.", observation_id="warmup")
        use_recall = True
        try:
            tree.recall(user, QUERIES[0])
        except Exception:  # noqa: BLE001 - fall back to plain search, as documented
            use_recall = False
            tree.search(user, QUERIES[0])
        barrier.wait(timeout=300)
        give_ups = 0
        obs_lat: list[float] = []
        start = time.monotonic()
        for i in range(n_obs):
            t = time.perf_counter()
            while True:
                try:
                    tree.observe(user, TEMPLATES[i % len(TEMPLATES)].format(i=i), observation_id=f"o{i}")
                    break
                except StaleStateError:
                    give_ups += 1
            obs_lat.append(time.perf_counter() - t)
        obs_end = time.monotonic()
        barrier.wait(timeout=300)
        rec_lat: list[float] = []
        rec_start = time.monotonic()
        for i in range(n_recall):
            t = time.perf_counter()
            if use_recall:
                tree.recall(user, QUERIES[i % len(QUERIES)])
            else:
                tree.search(user, QUERIES[i % len(QUERIES)])
            rec_lat.append(time.perf_counter() - t)
        rec_end = time.monotonic()
        tree.close()
        out.put(("ok", start, obs_end, obs_lat, rec_start, rec_end, rec_lat, give_ups, use_recall))
    except BaseException as exc:  # noqa: BLE001 - report to the parent
        barrier.abort()
        out.put(("error", repr(exc)))


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(store: str, url: str, clients: int, n_obs: int, n_recall: int, embedder: str) -> tuple[Row, bool]:
    """Run ``clients`` processes against ``url`` and aggregate their timings."""
    from personatree.api import PersonaTree

    PersonaTree.open(url, embedder=_embedder(embedder)).close()  # migrate outside the timing
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(clients)
    out = ctx.Queue()
    run = uuid.uuid4().hex[:6]
    procs = [
        ctx.Process(target=_client, args=(url, f"user-{run}-{c}", n_obs, n_recall, embedder, barrier, out))
        for c in range(clients)
    ]
    for p in procs:
        p.start()
    results = [out.get(timeout=1800) for _ in procs]
    for p in procs:
        p.join(60)
    bad = [r for r in results if r[0] != "ok"]
    if bad:
        raise RuntimeError(f"a client failed on {store}: {bad[0][1]}")
    obs_wall = max(r[2] for r in results) - min(r[1] for r in results)
    rec_wall = max(r[5] for r in results) - min(r[4] for r in results)
    obs_lat = [x for r in results for x in r[3]]
    rec_lat = [x for r in results for x in r[6]]
    row = Row(
        store=store,
        clients=clients,
        observe_per_s=len(obs_lat) / obs_wall,
        observe_p50_ms=_pct(obs_lat, 0.50),
        observe_p95_ms=_pct(obs_lat, 0.95),
        recall_per_s=len(rec_lat) / rec_wall,
        recall_p50_ms=_pct(rec_lat, 0.50),
        recall_p95_ms=_pct(rec_lat, 0.95),
        give_ups=sum(r[7] for r in results),
    )
    return row, all(r[8] for r in results)


def _start_postgres() -> tuple[str, str]:
    import pgserver

    folder = tempfile.mkdtemp(prefix="personatree-bench-pg-")
    server = pgserver.get_server(os.path.join(folder, "data"), cleanup_mode="delete")
    _start_postgres.server = server  # type: ignore[attr-defined]  # keep it alive until exit
    return server.get_uri(), folder


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, run every (store, clients) combination, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--observe", type=int, default=200, help="observe calls per client (default 200)")
    ap.add_argument("--recall", type=int, default=200, help="recall calls per client (default 200)")
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 4], help="client process counts (default 1 4)")
    ap.add_argument("--pg-url", default=None, help="an existing PostgreSQL (default: start one with pgserver)")
    ap.add_argument("--embedder", choices=["hashing", "minilm"], default="hashing")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args(argv)

    work = tempfile.mkdtemp(prefix="personatree-bench-")
    pg_folder = None
    try:
        base = args.pg_url
        if base is None:
            base, pg_folder = _start_postgres()
        rows: list[Row] = []
        recall_used = True
        for clients in args.clients:
            for store in ("sqlite", "postgres"):
                if store == "sqlite":
                    url = f"sqlite:///{os.path.join(work, f'bench-{clients}.db')}"
                else:
                    url = f"{base}{'&' if '?' in base else '?'}schema=bench_{uuid.uuid4().hex[:8]}"
                row, used = measure(store, url, clients, args.observe, args.recall, args.embedder)
                recall_used &= used
                rows.append(row)
                print(f"  done: {store} x{clients}", file=sys.stderr, flush=True)
        _print(rows, args, recall_used)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if pg_folder:
            shutil.rmtree(pg_folder, ignore_errors=True)


def print_table(header: list[str], body: list[list[str]], env: str, *, markdown: bool, text_columns: int) -> None:
    """A table for people (aligned columns) or for BENCHMARKS.md (Markdown), then ``env``.

    The first ``text_columns`` columns are left-aligned in Markdown, the others right.
    """
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join("---:" if i >= text_columns else "---" for i in range(len(header))) + "|")
        for b in body:
            print("| " + " | ".join(b) + " |")
        print(f"\n{env}")
        return
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(header)]
    print("  ".join(h.rjust(w) for h, w in zip(header, widths)))
    for b in body:
        print("  ".join(c.rjust(w) for c, w in zip(b, widths)))
    print(env)


def _print(rows: list[Row], args: argparse.Namespace, recall_used: bool) -> None:
    header = ["store", "clients", "observe/s", "obs p50 ms", "obs p95 ms",
              f"{'recall' if recall_used else 'search'}/s", "p50 ms", "p95 ms", "stale give-ups"]
    body = [[r.store, str(r.clients), f"{r.observe_per_s:.0f}", f"{r.observe_p50_ms:.1f}",
             f"{r.observe_p95_ms:.1f}", f"{r.recall_per_s:.0f}", f"{r.recall_p50_ms:.1f}",
             f"{r.recall_p95_ms:.1f}", str(r.give_ups)] for r in rows]
    env = (f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python "
           f"{platform.python_version()}, embedder={args.embedder}, {args.observe} observes + "
           f"{args.recall} recalls per client, one user per client")
    print_table(header, body, env, markdown=args.markdown, text_columns=2)
    if args.markdown:
        return
    if any(r.give_ups for r in rows):
        print("stale give-ups: times the API's internal retries were exhausted and the client retried")


if __name__ == "__main__":
    main()
