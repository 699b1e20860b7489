"""The REST server against the in-process API: requests/s and p50/p95 latency of observe
and recall, 1 and 4 clients, SQLite and PostgreSQL, in one run.

For each (store, clients, workers) the same work runs twice, side by side:

* ``in-process``: one ``PersonaTree`` in this process, each client a thread calling
  ``observe`` and ``recall`` directly (an app that embeds the library);
* ``rest``: ``personatree serve`` in a subprocess (``--workers W``), each client a
  thread with its own ``httpx.Client`` (keep-alive) calling the endpoints.

Each client has its own user. A client first warms up (one observe, one recall), then
all clients start together and run ``--observe`` observes, then ``--recall`` recalls.
Throughput is calls divided by the wall time from the common start to the last
client's end; latencies are per call. The embedder is the deterministic
``HashingEmbedder`` by default, so that the transport and the store, not the model,
dominate; ``--embedder minilm`` uses the packaged model (both sides).

PostgreSQL comes from ``--pg-url`` or a throwaway ``pgserver`` (unix socket only).

Run::

    python benchmarks/bench_rest.py --markdown
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_stores import QUERIES, TEMPLATES, _pct, _start_postgres, print_table  # noqa: E402
from tests.rest_server import free_port, wait_healthy  # noqa: E402

KEY = "bench-key-0123456789abcdef"


@dataclass(frozen=True)
class Row:
    """One measurement: a mode on a (store, clients, workers) setup."""

    store: str
    clients: int
    workers: int
    mode: str
    observe_per_s: float
    observe_p50_ms: float
    observe_p95_ms: float
    recall_per_s: float
    recall_p50_ms: float
    recall_p95_ms: float


Call = Callable[[str, str, int], None]  # (kind, user, i)


def _timed(call: Call, kind: str, user: str, n: int) -> tuple[float, list[float], float]:
    """``n`` calls of one kind: (start, latencies, end)."""
    start, latencies = time.monotonic(), []
    for i in range(n):
        t = time.perf_counter()
        call(kind, user, i)
        latencies.append(time.perf_counter() - t)
    return start, latencies, time.monotonic()


def _run_clients(clients: int, make_call: Callable[[], Call], n_obs: int, n_recall: int, run: str,
                 warmup: int = 10) -> tuple[list[float], float, list[float], float]:
    """Start ``clients`` threads at a barrier; (observe latencies, wall, recall latencies, wall)."""
    barrier = threading.Barrier(clients)
    marks: list[tuple[float, float, float, float]] = []
    obs_lat: list[float] = []
    rec_lat: list[float] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def client(c: int) -> None:
        try:
            call, user = make_call(), f"u-{run}-{c}"
            # Warm-up: a server's pool threads each open their own store connection and
            # fill their caches on first use, so a handful of calls precede the timing.
            for w in range(warmup):
                call("observe", user, -1 - w)
                call("recall", user, w)
            barrier.wait(600)
            o0, mine_o, o1 = _timed(call, "observe", user, n_obs)
            barrier.wait(600)
            r0, mine_r, r1 = _timed(call, "recall", user, n_recall)
            with lock:
                marks.append((o0, o1, r0, r1))
                obs_lat.extend(mine_o)
                rec_lat.extend(mine_r)
        except BaseException as exc:  # noqa: BLE001 - reported after the join
            barrier.abort()
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"a client failed: {errors[0]!r}")
    obs_wall = max(m[1] for m in marks) - min(m[0] for m in marks)
    rec_wall = max(m[3] for m in marks) - min(m[2] for m in marks)
    return obs_lat, obs_wall, rec_lat, rec_wall


def _text(i: int) -> str:
    return f"Warm-up {-i}: I like long walks." if i < 0 else TEMPLATES[i % len(TEMPLATES)].format(i=i)


def in_process(url: str, embedder: Any, clients: int, n_obs: int, n_recall: int) -> tuple[Any, ...]:
    """The work on one PersonaTree of this process, one thread per client."""
    from personatree import PersonaTree

    tree = PersonaTree.open(url, embedder=embedder)

    def make_call() -> Call:
        def call(kind: str, user: str, i: int) -> None:
            if kind == "observe":
                tree.observe(user, _text(i), observation_id=f"o{i}")
            else:
                tree.recall(user, QUERIES[i % len(QUERIES)])
        return call

    try:
        return _run_clients(clients, make_call, n_obs, n_recall, uuid.uuid4().hex[:6])
    finally:
        tree.close()


def over_rest(base: str, clients: int, n_obs: int, n_recall: int) -> tuple[Any, ...]:
    """The same work through the REST server at ``base``, one httpx client per thread."""
    import httpx

    def make_call() -> Call:
        http = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {KEY}"}, timeout=300)

        def call(kind: str, user: str, i: int) -> None:
            if kind == "observe":
                r = http.post(f"/v1/users/{user}/observations", json={"text": _text(i), "observation_id": f"o{i}"})
            else:
                r = http.post(f"/v1/users/{user}/recall", json={"query": QUERIES[i % len(QUERIES)]})
            r.raise_for_status()
        return call

    return _run_clients(clients, make_call, n_obs, n_recall, uuid.uuid4().hex[:6])


def _row(store: str, clients: int, workers: int, mode: str, result: tuple[Any, ...]) -> Row:
    obs_lat, obs_wall, rec_lat, rec_wall = result
    return Row(store, clients, workers, mode, len(obs_lat) / obs_wall, _pct(obs_lat, 0.5), _pct(obs_lat, 0.95),
               len(rec_lat) / rec_wall, _pct(rec_lat, 0.5), _pct(rec_lat, 0.95))


def _serve(url: str, work: Path, workers: int) -> tuple[subprocess.Popen[bytes], str]:
    keys = work / "keys.txt"
    keys.write_text(f"{KEY} * bench\n", encoding="utf-8")
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen([sys.executable, "-m", "personatree", "serve", "--store", url, "--keys-file", str(keys),
                             "--port", str(port), "--workers", str(workers), "--log-level", "warning"],
                            stdout=subprocess.DEVNULL, stderr=(work / f"serve-{port}.log").open("wb"), env=env)
    base = f"http://127.0.0.1:{port}"
    wait_healthy(base, proc, timeout_s=600)
    return proc, base


def measure(store: str, url: str, clients: int, workers: int, args: argparse.Namespace, work: Path) -> list[Row]:
    """Both modes on one store URL (the store made with the benchmark's embedder)."""
    from personatree import PersonaTree
    from personatree.embedders import HashingEmbedder, make_embedder

    embedder = HashingEmbedder(256) if args.embedder == "hashing" else make_embedder("default")
    # A first write records the embedder in the store, so the server opens it with the same one.
    with PersonaTree.open(url, embedder=embedder) as tree:
        tree.observe("setup", "I set up the benchmark.")
    rows = [_row(store, clients, workers, "in-process", in_process(url, embedder, clients, args.observe, args.recall))]
    proc, base = _serve(url, work, workers)
    try:
        rows.append(_row(store, clients, workers, "rest", over_rest(base, clients, args.observe, args.recall)))
    finally:
        proc.terminate()
        proc.wait(60)
    print(f"  done: {store} x{clients} ({workers} worker{'s' if workers > 1 else ''})", file=sys.stderr, flush=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, run every setup, print the table."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--observe", type=int, default=100, help="observe calls per client (default 100)")
    ap.add_argument("--recall", type=int, default=100, help="recall calls per client (default 100)")
    ap.add_argument("--pg-url", default=None, help="an existing PostgreSQL (default: start one with pgserver)")
    ap.add_argument("--embedder", choices=["hashing", "minilm"], default="hashing")
    ap.add_argument("--pg-workers", type=int, default=2, help="workers of the extra 4-client PostgreSQL run")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="personatree-bench-rest-"))
    pg_folder = None
    try:
        base = args.pg_url
        if base is None:
            base, pg_folder = _start_postgres()
        setups = [("sqlite", 1, 1), ("postgres", 1, 1), ("sqlite", 4, 1), ("postgres", 4, 1),
                  ("postgres", 4, args.pg_workers)]
        rows: list[Row] = []
        for store, clients, workers in setups:
            url = (f"sqlite:///{work / f'bench-{clients}-{workers}.db'}" if store == "sqlite"
                   else f"{base}{'&' if '?' in base else '?'}schema=rest_{uuid.uuid4().hex[:8]}")
            rows.extend(measure(store, url, clients, workers, args, work))
        _print(rows, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if pg_folder:
            shutil.rmtree(pg_folder, ignore_errors=True)


def _print(rows: list[Row], args: argparse.Namespace) -> None:
    header = ["store", "clients", "workers", "mode", "observe/s", "obs p50 ms", "obs p95 ms", "recall/s",
              "rec p50 ms", "rec p95 ms", "rest/in-process (obs, rec)"]
    body = []
    for r in rows:
        base = next(b for b in rows if (b.store, b.clients, b.workers, b.mode) == (r.store, r.clients, r.workers,
                                                                                  "in-process"))
        ratio = "" if r.mode != "rest" else (f"{r.observe_per_s / base.observe_per_s:.2f}, "
                                             f"{r.recall_per_s / base.recall_per_s:.2f}")
        body.append([r.store, str(r.clients), str(r.workers), r.mode, f"{r.observe_per_s:.0f}",
                     f"{r.observe_p50_ms:.1f}", f"{r.observe_p95_ms:.1f}", f"{r.recall_per_s:.0f}",
                     f"{r.recall_p50_ms:.1f}", f"{r.recall_p95_ms:.1f}", ratio])
    env = (f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
           f"embedder={args.embedder}, {args.observe} observes + {args.recall} recalls per client, one user "
           f"per client; in-process workers = 1 process")
    print_table(header, body, env, markdown=args.markdown, text_columns=4)


if __name__ == "__main__":
    main()
