"""Memory one resident user holds, and what evicting the user gives back.

Run from the repository root, on the stores ``bench_first_recall.py`` builds::

    python3 benchmarks/bench_resident_memory.py --dir /tmp/first-recall --sizes 10000 50000

For each store: open it (fast preset), recall the small user, then measure with
``tracemalloc`` what the big user's first recall leaves alive (its tree, retrieval
state and caches) and what is left after ``engine.evict`` (the bound of
``PersonaTreeConfig.resident_users`` drops users this way).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench_first_recall import OTHER, USER, _open  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", type=Path, required=True)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000, 50000])
    args = ap.parse_args()
    print("| observations | nodes in the tree | held after the first recall MB | KB per tree node | "
          "left after evict MB |")
    print("|---|---|---|---|---|")
    for size in args.sizes:
        tree = _open(str(args.dir / f"user-{size}-fast.db"), "fast")
        tree.recall(OTHER, "What do I grow?", budget=1000)
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        tree.recall(USER, "What did I cook last weekend?", budget=1000)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
        nodes = len(tree.engine.trees[USER].graph)
        tree.engine.evict(USER)
        gc.collect()
        left = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        tree.close()
        print(f"| {size:,} | {nodes:,} | {held / 1e6:.1f} | {held / nodes / 1e3:.1f} | {left / 1e6:.1f} |")


if __name__ == "__main__":
    main()
