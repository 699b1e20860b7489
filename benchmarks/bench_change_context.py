"""What recall carries with a changed claim: the statement said around the change.

Run from the repository root, on a store ``bench_first_recall.py`` builds, once per
checkout to compare (``PYTHONPATH=<other checkout>`` for the other)::

    python3 benchmarks/bench_change_context.py --url sqlite:////tmp/first-recall/user-50000-fast.db

Builds (or reads back) the user's retrieval state with one recall, then, for every
pattern whose latest contradiction changed it, times
``retrieval.changes.context_leaf`` (the statement closest in meaning to the change,
said between the pattern's last support and the change): median of ``--reps`` calls
per pattern. Prints how many patterns, the leaf rows searched, the rows at or above
the cosine floor, and the median and total time per call; and a digest of the
answers, so that two checkouts can be seen to agree.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import time

import numpy as np

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--user", default="big")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()

    from personatree import PersonaTree
    from personatree.config import PersonaTreeConfig
    from personatree.retrieval.changes import CONTEXT_COSINE, context_leaf
    from personatree.retrieval.prelude import user_state
    from personatree.timeline import node_timeline
    from personatree.types import Level

    tree = PersonaTree.open(args.url, PersonaTreeConfig.preset("fast"))
    engine = tree.engine
    tree.recall(args.user, "What do I usually do?", budget=300)
    with engine.lock:
        state = user_state(engine, args.user, engine.existing_state(args.user))
    arr = state.arrays[Level.LEAF]
    changed = []
    for mid in state.graph.nodes(Level.MID):
        tl = node_timeline(state.graph, mid.id)
        if tl.changed and tl.latest_conflict is not None and tl.latest_conflict in state.nodes:
            changed.append((tl, tl.latest_conflict))
    times, close, answers = [], [], []
    for tl, latest in changed:
        close.append(int(np.count_nonzero(arr.matrix @ state.nodes[latest].embedding > CONTEXT_COSINE)))
        runs = []
        for _ in range(args.reps):
            t = time.perf_counter()
            answer = context_leaf(state, tl, latest)
            runs.append(time.perf_counter() - t)
        times.append(statistics.median(runs))
        answers.append(f"{tl.node_id}:{answer}")
    tree.close()
    digest = hashlib.blake2b("\n".join(answers).encode(), digest_size=8).hexdigest()
    if not times:
        print("no changed pattern in this store")
        return
    print(f"changed patterns: {len(changed)}; leaf rows: {len(arr.ids)}; rows above the floor per call: "
          f"median {statistics.median(close):.0f}, max {max(close)}")
    print(f"context_leaf per call: median {1000 * statistics.median(times):.2f} ms, "
          f"max {1000 * max(times):.2f} ms; all calls {1000 * sum(times):.1f} ms; answers {digest}")


if __name__ == "__main__":
    main()
