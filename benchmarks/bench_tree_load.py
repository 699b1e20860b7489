"""Loading one user's tree: the rows read and the graph built, against the former ways.

Run from the repository root, on a store ``bench_first_recall.py`` builds::

    python3 benchmarks/bench_tree_load.py --db /tmp/first-recall/user-50000-fast.db

Side by side in one process, alternating, ``--reps`` runs each (medians printed):

- the node and edge selects as ``SQLiteReads.load_graph_with_version`` runs them
  (rowid first, put in order in Python) against ``ORDER BY rowid`` in SQL, after
  checking that both give the same rows in the same order;
- ``MemoryGraph.from_parts`` as it is (statements keyed on first use) against the
  same build followed by reading the statement map (what the build did before).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from typing import Any, Callable

from personatree.graph import MemoryGraph
from personatree.store import SQLiteStore, rows
from personatree.store.codec import EDGE_COLUMNS, NODE_COLUMNS
from personatree.store.sqlite import statements


def _median_ms(run: Callable[[], Any], reps: int) -> float:
    times = []
    for _ in range(reps):
        gc.collect()
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    return 1000 * statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--user", default="big")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    store = SQLiteStore(args.db)
    sorted_sql = (rows.select_sql("nodes", NODE_COLUMNS, where="user_id = ?", order_by="rowid"),
                  rows.select_sql("edges", EDGE_COLUMNS, where="user_id = ?", order_by="rowid"))

    def read(in_python: bool) -> tuple[list[Any], list[Any]]:
        with store._tx(write=False) as conn:
            if in_python:
                return (statements.in_rowid_order(conn.execute(statements.SELECT_NODES, (args.user,)).fetchall()),
                        statements.in_rowid_order(conn.execute(statements.SELECT_EDGES, (args.user,)).fetchall()))
            return (conn.execute(sorted_sql[0], (args.user,)).fetchall(),
                    conn.execute(sorted_sql[1], (args.user,)).fetchall())

    assert read(True) == read(False), "the two reads differ"
    nodes, edges, _ = store.load_graph_with_version(args.user)

    def keyed_at_load() -> None:
        _ = MemoryGraph.from_parts(args.user, nodes, edges)._statements

    print(f"{len(nodes):,} nodes, {len(edges):,} edges; medians of {args.reps} (ms)")
    print("| round | rows ordered in Python | ORDER BY rowid | from_parts | from_parts + statement map |")
    print("|---|---|---|---|---|")
    for i in range(args.rounds):
        a = _median_ms(lambda: read(True), args.reps)
        b = _median_ms(lambda: read(False), args.reps)
        c = _median_ms(lambda: MemoryGraph.from_parts(args.user, nodes, edges), args.reps)
        d = _median_ms(keyed_at_load, args.reps)
        print(f"| {i + 1} | {a:.1f} | {b:.1f} | {c:.1f} | {d:.1f} |", flush=True)
    store.close()


if __name__ == "__main__":
    main()
