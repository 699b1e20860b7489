"""Where a cold Redis read goes: one user's entry read by a process that never saw it.

One user with a tree of --nodes nodes (bench_hot_redis's generator) in a SQLite file,
written through a ``hot=`` tree, so its entry is in a local redis-server. Then, --reps
times, the entry is read as a stateless worker reads it, each phase timed: the probe
(the small fields and the embeddings) and the bound that tells a query no hot tier
could answer; the rest of the entry; decoding it without its nodes and parsing its
rows; tier 1's sub-tree decoded and indexed from the entry's text analysis (``lex``,
what a tier-1 answer builds); the whole entry's graph and the tiers 1+2 index (what a
tier-2 answer adds); for comparison, the two indexes from the text (an entry without
``lex``). Also timed: one write of the user's entry (rank, build, index, encode, put),
and the write a tier-3 answer's promotions owe, three ways over the same prior entry:
patched from it (what the writer does), with the prior decoded whole and its tiers
1+2 index restored and synced, and from scratch.
Embeddings come from a hashing embedder: indexing cost is the text's, not the vectors'.

Run::

    python3 benchmarks/bench_hot_redis_read.py --nodes 2000 --reps 5
"""

from __future__ import annotations

import argparse
import copy
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
from personatree.hot_redis import HOT_FIELDS, PROBE_FIELDS, REST_FIELDS, EntryRows, decode_entry, decode_heads  # noqa: E402
from personatree.tiering.entries import entry_graph, entry_index, entry_indexes, entry_tiers  # noqa: E402
from personatree.tiering.entry_bound import bound_could  # noqa: E402
from personatree.tiering.shared import _publish, versions, write_through  # noqa: E402
from personatree.tiering.tiers import promote  # noqa: E402


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
        phases: dict[str, list[float]] = {}
        n_nodes = n_t1 = n_promoted = 0
        q = emb.embed(["What did I tell you about the lake?"])[0]
        for _ in range(args.reps):
            marks = [("start", time.perf_counter())]

            def mark(name: str) -> None:
                marks.append((name, time.perf_counter()))

            probe = tier.client.get("u", PROBE_FIELDS) or {}
            mark("probe: transfer (small fields, embeddings)")
            bound_could(decode_heads(probe.get("bound")), probe["emb"], q, tcfg.sufficient_cosine,
                        tcfg.sufficient_fill * 1000, None)
            mark("probe: the bound (could a hot tier answer?)")
            fields = probe | (tier.client.get("u", REST_FIELDS) or {})
            mark("rest: transfer")
            entry = decode_entry("u", fields, nodes=False)
            rows = EntryRows("u", fields["rows"], fields["emb"], fields["edges"])
            mark("decode without nodes, rows parsed")
            h1 = entry_index(entry, tcfg, "t1", rows=rows)
            mark("tier 1: sub-tree decoded, indexed from lex")
            entry.nodes, entry.edges = rows.nodes(), rows.edges()
            g = entry_graph(entry)
            mark("tiers 1+2: all nodes decoded, graph")
            entry_index(entry, tcfg, "t12", graph=g)
            mark("tiers 1+2: indexed from lex")
            bare = replace(entry, lex={})
            entry_indexes(bare, tcfg, entry_graph(bare))
            mark("both indexes from the text (no lex; graph included)")
            tier.client.delete("u")  # so the write below is not skipped as current
            marks[-1] = (marks[-1][0], time.perf_counter())
            write_through(engine, tier, "u", engine.store.version("u"))
            mark("write entry (rank, build, index, encode, put)")
            # A tier-3 answer's promotions, written three ways over the same prior entry.
            version, content = versions(engine, "u")
            graph = engine.state("u").graph
            held = tier.client.get("u", HOT_FIELDS + ("heads",)) or {}
            base = decode_entry("u", held, nodes=False)
            promoted = entry_tiers(base)
            cold = [x for x in promoted.headers if x not in promoted.hot][:: max(1, len(promoted.headers) // 40)]
            n_promoted = len(promote(promoted, graph, cold[:5], engine.registry, engine.clock.now(), tcfg))
            marks[-1] = (marks[-1][0], time.perf_counter())
            rows_ = EntryRows("u", held["rows"], held["emb"], held["edges"])
            _publish(engine, tier, graph, copy.deepcopy(promoted), version, content, prior=base, rows=rows_)
            mark("promotion write: patched (rows parsed, analysis patched, put)")
            whole = decode_entry("u", held)
            _publish(engine, tier, graph, copy.deepcopy(promoted), version, content, prior=whole)
            mark("promotion write: prior decoded whole, tiers 1+2 restored and synced")
            _publish(engine, tier, graph, copy.deepcopy(promoted), version, content)
            mark("promotion write: from scratch (indexed from the text)")
            for (_, a), (name, b) in zip(marks, marks[1:]):
                phases.setdefault(name, []).append(1000 * (b - a))
            n_nodes = len(entry.nodes)
            n_t1 = len(h1.counts)
        tree.close()
    finally:
        proc.terminate()
        proc.wait(10)
    print(f"\none user, {args.nodes} nodes; entry of {n_nodes} nodes ({n_t1} in tier 1's sub-tree); "
          f"{args.reps} reads, median (min-max) ms; {n_promoted} nodes promoted by the tier-3 answer")
    print("| phase | ms |")
    print("|---|---|")
    for k, v in phases.items():
        print(f"| {k} | {statistics.median(v):.0f} ({min(v):.0f}-{max(v):.0f}) |")
    t1 = sum(statistics.median(phases[k]) for k in list(phases)[:5])
    print(f"a tier-1 read (probe to tier-1 index): {t1:.0f} ms")


if __name__ == "__main__":
    main()
