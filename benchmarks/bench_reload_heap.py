"""A process that loads a big user, recalls and drops it, again and again: its heap.

Run from the repository root, on a store of ``bench_first_recall.py``::

    python3 benchmarks/bench_reload_heap.py --url sqlite:////tmp/personatree-first-recall/user-10000-fast.db

What a stateless worker does with a user it will not keep (the hot-tier benchmark's
"load from PostgreSQL" path does the same): each round loads the user's tree and
retrieval state, answers one recall, and drops both from the engine. A dropped
tree's objects are held in reference cycles (networkx keeps views of a graph that
refer back to it), so only the cyclic collector frees them; any change to when the
collector runs its full collections shows here as a heap that grows round after
round. Printed per round: resident memory, the objects the collector tracks, and
the full collections run so far.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _rss_mb() -> float:
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    from bench_first_recall import OTHER, USER, _open

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True, help="a store of bench_first_recall.py (fast preset)")
    ap.add_argument("--rounds", type=int, default=12)
    args = ap.parse_args()
    tree = _open(args.url, "fast")
    tree.recall(OTHER, "What do I grow?", budget=1000)
    fulls = [0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "stop" and info["generation"] == 2:
            fulls[0] += 1

    gc.callbacks.append(on_gc)
    print("| round | resident MB | objects tracked | full collections so far |")
    print("|---|---|---|---|")
    for i in range(args.rounds):
        tree.recall(USER, "What do I like to cook?", budget=1000)
        tree.engine.evict(USER)
        print(f"| {i + 1} | {_rss_mb():.0f} | {len(gc.get_objects()):,} | {fulls[0]} |", flush=True)
    tree.close()


if __name__ == "__main__":
    main()
