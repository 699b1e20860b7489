"""Where a cold Redis read goes: one user's entry read by a process that never saw it.

One user with a tree of --nodes nodes (bench_hot_redis's generator) in a SQLite file,
written through a ``hot=`` tree, so its entry is in a local redis-server. Then, --reps
times, the entry is read as a stateless worker reads it, each phase timed: the Redis
transfer, decoding, the entry's graph, and the tier-1 and tier-1+2 hot indexes built
two ways side by side: from the entry's text analysis (``lex``, what a reader does)
and from the text (what it did before entries carried ``lex``, and still does with
an entry that lacks it). Also timed: one write of the user's entry (rank, build,
index, encode, put). Embeddings come from a hashing embedder: indexing cost is the
text's, not the vectors'.

Run::

    python3 benchmarks/bench_hot_redis_read.py --nodes 2000 --reps 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_hot_redis import apply, pool, start_redis, user_change  # noqa: E402

from personatree.api import PersonaTree  # noqa: E402
from personatree.embedders import HashingEmbedder  # noqa: E402
from personatree.hot_redis import HOT_FIELDS, decode_entry  # noqa: E402
from personatree.tiering.entries import entry_graph, entry_indexes  # noqa: E402
from personatree.tiering.shared import write_through  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    emb = HashingEmbedder(384)
    texts = pool(int(args.nodes * 1.1))
    every = [t for ts in texts.values() for t in ts]
    vecs = dict(zip(every, emb.embed(every)))
    proc, url, folder = start_redis()
    try:
        db = Path(tempfile.mkdtemp(prefix="personatree-bench-read-")) / "t.db"
        tree = PersonaTree.open(db, embedder=emb, hot=url)
        change = user_change("u", args.nodes, texts, vecs, seed=1)
        tree.engine.transact("u", lambda g: apply(g, change))
        assert tree.hot is not None
        tier, engine = tree.hot, tree.engine
        tcfg = tier.tiering(engine)
        phases: dict[str, list[float]] = {k: [] for k in
                                          ("transfer", "decode", "graph", "indexes from lex", "indexes from text",
                                           "write entry")}
        n_nodes = n_t1 = 0
        for _ in range(args.reps):
            t0 = time.perf_counter()
            fields = tier.client.get("u", HOT_FIELDS) or {}
            t1 = time.perf_counter()
            entry = decode_entry("u", fields)
            t2 = time.perf_counter()
            g = entry_graph(entry)
            t3 = time.perf_counter()
            h1, h12 = entry_indexes(entry, tcfg, g)
            t4 = time.perf_counter()
            bare = replace(entry, lex={})
            entry_indexes(bare, tcfg, entry_graph(bare))
            t5 = time.perf_counter()
            tier.client.delete("u")  # so the write below is not skipped as current
            t6 = time.perf_counter()
            write_through(engine, tier, "u", engine.store.version("u"))
            t7 = time.perf_counter()
            for k, v in zip(phases, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4 - (t3 - t2), t7 - t6)):
                phases[k].append(1000 * v)
            n_nodes = len(entry.nodes)
            n_t1 = len(h1.counts) if h1 is not None else 0
        tree.close()
    finally:
        proc.terminate()
        proc.wait(10)
    print(f"\none user, {args.nodes} nodes; entry of {n_nodes} nodes ({n_t1} in tier 1's sub-tree); "
          f"{args.reps} reads, median (min-max) ms")
    print("| phase | ms |")
    print("|---|---|")
    for k, v in phases.items():
        print(f"| {k} | {statistics.median(v):.0f} ({min(v):.0f}-{max(v):.0f}) |")
    lex, text = statistics.median(phases["indexes from lex"]), statistics.median(phases["indexes from text"])
    print(f"hot indexes: {text / lex:.1f}x faster from lex than from the text")


if __name__ == "__main__":
    main()
