"""Consolidation under load: a busy user, and a very big one.

Run from the repository root::

    python3 benchmarks/bench_consolidation_load.py                  # both parts, SQLite and PostgreSQL
    python3 benchmarks/bench_consolidation_load.py --part load --seconds 30 --backends sqlite
    python3 benchmarks/bench_consolidation_load.py --part big --big 50000

**load** — one process writes to a user (``observe_many`` batches of 2 short messages,
at full speed or ``--rate`` messages a second) while this process consolidates the same
user back to back for ``--seconds``. Reported per backend: consolidation passes, how many
applied (with how many of those rebased onto the writer's commits, and how many plan
parts were left for the next pass), how many were refused (``StaleStateError``), the
pass time, and beside it the writer's throughput and the ``StaleStateError`` its calls
saw (goal: none). Afterwards every acknowledged observation must be stored and the tree
must pass its invariant check. PostgreSQL comes from ``--pg-url`` or, when the tests'
``pgserver`` is installed, a throwaway local server (unix socket only).

**big** — one user with ``--big`` short observations (``HashingEmbedder(256)``,
``observe_many`` in batches of 1,000) on a SQLite file, then ``consolidate``; in a
subprocess, so that a crash (a signal) is reported instead of ending the benchmark.
Reported: whether consolidation completed (or the signal and the phase it died in), the
ingest and consolidation times, and the peak resident memory.

Everything uses ``HashingEmbedder`` and the offline judge: the figures measure the
engine, not a model. Sentences are generated here from our own templates.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SUBJECTS = ["I", "My brother", "My partner", "My boss", "My neighbour", "My best friend"]
VERBS = ["love", "hate", "often cook", "keep buying", "want to try", "gave up", "talk about", "dream of"]
OBJECTS = ["spicy ramen", "trail running", "old jazz records", "board games", "sourdough bread", "the night shift",
           "sailing lessons", "green tea", "budget travel", "chess puzzles", "gardening", "horror films",
           "rock climbing", "French grammar", "vintage cameras", "early mornings", "yoga classes", "cold showers"]
TAILS = ["lately", "on weekends", "every evening", "since last spring", "more than ever", "when it rains", "", ""]


def sentence(rng: random.Random) -> str:
    """One short made-up message about the user."""
    tail = rng.choice(TAILS)
    return f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}{' ' + tail if tail else ''}."


def _tree(url: str) -> Any:
    from personatree import PersonaTree
    from personatree.config import PersonaTreeConfig
    from personatree.embedders import HashingEmbedder

    return PersonaTree.open(url, PersonaTreeConfig(busy_timeout_s=60), embedder=HashingEmbedder(256))


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# -- children ------------------------------------------------------------------------------


def child_writer(url: str, seconds: float, rate: float, ack: str, seed: int) -> None:
    """Write to user ``busy`` for ``seconds``; print a JSON summary."""
    from personatree.errors import StaleStateError

    rng = random.Random(seed)
    tree = _tree(url)
    print("ready", flush=True)
    n = stale = i = 0
    start = time.monotonic()
    with open(ack, "w", encoding="utf-8") as out:
        while time.monotonic() - start < seconds:
            items = [{"messages": sentence(rng), "observation_id": f"w{seed}-{i}-{k}", "session_id": f"s{i % 9}"}
                     for k in range(2)]
            try:
                reports = tree.observe_many("busy", items)
            except StaleStateError:
                stale += 1
                continue
            out.write("".join(r.observation_id + "\n" for r in reports))
            n += len(reports)
            i += 1
            if rate > 0:
                time.sleep(max(0.0, start + n / rate - time.monotonic()))
    tree.close()
    print(json.dumps({"acked": n, "seconds": time.monotonic() - start, "stale": stale}), flush=True)


def child_big(url: str, n: int, batch: int) -> None:
    """Ingest ``n`` observations for one user, then consolidate; JSON line per phase."""
    rng = random.Random(50)
    tree = _tree(url)
    print(json.dumps({"phase": "start", "rss_mb": _rss_mb()}), flush=True)
    t = time.perf_counter()
    for start in range(0, n, batch):
        items = [{"messages": sentence(rng), "observation_id": f"b{j}", "session_id": f"s{j // 50}"}
                 for j in range(start, min(n, start + batch))]
        tree.observe_many("big", items, batch_size=batch)
        print(json.dumps({"phase": "ingest", "done": min(n, start + batch), "seconds": time.perf_counter() - t,
                          "rss_mb": _rss_mb()}), flush=True)
    ingest = time.perf_counter() - t
    print(json.dumps({"phase": "consolidate", "rss_mb": _rss_mb()}), flush=True)
    t = time.perf_counter()
    plan = tree.consolidate("big")
    took = time.perf_counter() - t
    stats = tree.stats("big")
    tree.close()
    print(json.dumps({"phase": "done", "ingest_s": ingest, "consolidate_s": took, "rss_mb": _rss_mb(),
                      "counts": plan.counts(), "leaves": stats["leaves"], "mids": stats["mids"],
                      "roots": stats["roots"]}), flush=True)


# -- the load part -------------------------------------------------------------------------


def run_load(url: str, seconds: float, rate: float, seed_n: int) -> dict[str, Any]:
    """A writer subprocess and back-to-back consolidations of the same user."""
    from personatree.errors import StaleStateError

    rng = random.Random(7)
    tree = _tree(url)
    tree.observe_many("busy", [{"messages": sentence(rng), "observation_id": f"seed-{i}", "session_id": f"s{i % 9}"}
                               for i in range(seed_n)])
    ack = tempfile.NamedTemporaryFile(prefix="ack-", suffix=".txt", delete=False).name
    writer = subprocess.Popen(
        [sys.executable, __file__, "--_child", "writer", "--url", url, "--seconds", str(seconds + 5),
         "--rate", str(rate), "--ack", ack], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert writer.stdout is not None
    if writer.stdout.readline().strip() != "ready":
        raise RuntimeError("the writer did not start")
    time.sleep(1.0)  # let it reach full speed
    passes: list[dict[str, Any]] = []
    stop = time.monotonic() + seconds
    while time.monotonic() < stop and writer.poll() is None:
        before = tree.store.version("busy")
        t = time.perf_counter()
        try:
            plan = tree.consolidate("busy")
            row = {"ok": True, "empty": plan.is_empty(), "rebased": plan.rebased_from is not None,
                   "left": plan.dropped_parts, "moved": tree.store.version("busy") - before - (not plan.is_empty())}
        except StaleStateError:
            row = {"ok": False}
        row["seconds"] = time.perf_counter() - t
        passes.append(row)
    out, _ = writer.communicate(timeout=120)
    summary = json.loads(out.strip().splitlines()[-1])
    acked = set(Path(ack).read_text(encoding="utf-8").split())
    os.unlink(ack)
    stored = {o.id for o in tree.store.observations("busy")}
    tree.graph("busy").check()
    lost = len(acked - stored)
    tree.close()
    applied = [p for p in passes if p["ok"]]
    return {
        "passes": len(passes), "applied": len(applied), "refused": len(passes) - len(applied),
        "nonempty": sum(not p["empty"] for p in applied), "rebased": sum(p["rebased"] for p in applied),
        "left_parts": sum(p["left"] for p in applied),
        "pass_s_median": statistics.median(p["seconds"] for p in passes) if passes else 0.0,
        "pass_s_max": max((p["seconds"] for p in passes), default=0.0),
        "writer_msgs_per_s": summary["acked"] / summary["seconds"], "writer_stale": summary["stale"],
        "lost": lost,
    }


def _pg_url(given: str | None) -> str | None:
    if given:
        return given
    try:
        from tests.pg_fixtures import fresh_schema_url, server_url

        return fresh_schema_url(server_url(), "bench")
    except BaseException as exc:  # noqa: BLE001 - pytest.skip is a BaseException
        print(f"  (PostgreSQL unavailable: {exc}; pass --pg-url)", flush=True)
        return None


def part_load(backends: list[str], seconds: float, rates: list[float], seed_n: int, pg: str | None) -> list[str]:
    lines = ["| backend | writer | passes | applied | of which wrote something | of which rebased | parts left | refused | "
             "pass s (median / max) | writer msg/s | writer StaleStateError | acknowledged lost |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for backend in backends:
        for rate in rates:
            if backend == "sqlite":
                url = str(Path(tempfile.mkdtemp(prefix="bench-load-")) / "load.db")
            else:
                url = _pg_url(pg)
                if url is None:
                    continue
            r = run_load(url, seconds, rate, seed_n)
            share = 100.0 * r["applied"] / max(1, r["passes"])
            lines.append(
                f"| {backend} | {'full speed' if rate <= 0 else f'{rate:g} msg/s'} | {r['passes']} | "
                f"{r['applied']} ({share:.0f} %) | {r['nonempty']} | {r['rebased']} | {r['left_parts']} | {r['refused']} | "
                f"{r['pass_s_median']:.2f} / {r['pass_s_max']:.2f} | {r['writer_msgs_per_s']:.1f} | "
                f"{r['writer_stale']} | {r['lost']} |")
            print(lines[-1], flush=True)
    return lines


def part_big(n: int, batch: int) -> list[str]:
    url = str(Path(tempfile.mkdtemp(prefix="bench-big-")) / "big.db")
    proc = subprocess.Popen([sys.executable, __file__, "--_child", "big", "--url", url, "--big", str(n),
                             "--batch", str(batch)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None
    last: dict[str, Any] = {}
    for line in proc.stdout:
        try:
            last = json.loads(line)
        except ValueError:
            continue
        if last.get("phase") == "ingest" and last["done"] % 10_000 == 0:
            print(f"  ingested {last['done']} in {last['seconds']:.0f} s, peak RSS {last['rss_mb']:.0f} MB", flush=True)
    code = proc.wait()
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
    lines = ["| observations | outcome | ingest s | consolidate s | peak RSS MB | leaves / mids / roots after |",
             "|---|---|---|---|---|---|"]
    if code == 0 and last.get("phase") == "done":
        lines.append(f"| {n} | completed | {last['ingest_s']:.0f} | {last['consolidate_s']:.0f} | {peak:.0f} | "
                     f"{last['leaves']} / {last['mids']} / {last['roots']} |")
    else:
        how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
        lines.append(f"| {n} | died ({how}) in phase {last.get('phase', '?')} | "
                     f"{last.get('seconds', float('nan')):.0f} | - | {peak:.0f} | - |")
    print(lines[-1], flush=True)
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=["load", "big", "all"], default="all")
    ap.add_argument("--backends", default="sqlite,postgres")
    ap.add_argument("--seconds", type=float, default=60.0, help="load part: consolidating time per run")
    ap.add_argument("--rates", default="0,10", help="load part: writer rates in msg/s (0 = full speed)")
    ap.add_argument("--seed-observations", type=int, default=400)
    ap.add_argument("--pg-url", default=None)
    ap.add_argument("--big", type=int, default=50_000)
    ap.add_argument("--batch", type=int, default=1_000)
    # internal: the subprocesses
    ap.add_argument("--_child", choices=["writer", "big"], help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    ap.add_argument("--rate", type=float, default=0.0, help=argparse.SUPPRESS)
    ap.add_argument("--ack", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._child == "writer":
        child_writer(args.url, args.seconds, args.rate, args.ack, 11)
        return
    if args._child == "big":
        child_big(args.url, args.big, args.batch)
        return
    out = [f"consolidation under load, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
           f"{os.cpu_count()} CPUs, command: python3 benchmarks/bench_consolidation_load.py {' '.join(sys.argv[1:])}"]
    if args.part in ("load", "all"):
        out += ["", f"busy user ({args.seconds:g} s of back-to-back consolidation beside one writer):"]
        out += part_load(args.backends.split(","), args.seconds, [float(x) for x in args.rates.split(",")],
                         args.seed_observations, args.pg_url)
    if args.part in ("big", "all"):
        out += ["", f"one big user ({args.big} observations, batches of {args.batch}):"]
        out += part_big(args.big, args.batch)
    print("\n" + "\n".join(out))


if __name__ == "__main__":
    main()
