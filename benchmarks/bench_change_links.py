"""What showing a new statement to a judge that reads changes costs, before the model.

Run from the repository root, on a store ``bench_first_recall.py`` builds::

    python3 benchmarks/bench_change_links.py --url sqlite:////tmp/first-recall/user-50000-fast.db

With an LLM judge, every insert picks, for each new statement, the person's earlier
statements closest to it (``personatree.change_links``) from the tree's leaves and
the archive's. This times that choice for one new statement (one ``observe``) and for
a batch (an import), with a judge that reads changes and answers at once with no
link, so only the selection is timed. The archive is read and stacked once per
change of it (timed first, then the listing every insert makes). Prints the median
of ``--reps`` calls with the archive shown and without it, each with candidates
ranked by the similarity specific to the person (``insertion.update_specific``, the
default) and by plain cosine, side by side.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from datetime import timedelta

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


class _Silent:
    """Reads changes, finds none: only the candidate selection before it is timed."""

    asked = 0

    def judges_updates(self) -> bool:
        return True

    def updates(self, groups):  # type: ignore[no-untyped-def]
        self.asked += len(groups)
        return [[] for _ in groups]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--user", default="big")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()

    from personatree import PersonaTree
    from personatree.change_links import archived_block, link_changes
    from personatree.config import PersonaTreeConfig
    from personatree.types import Level, Node, Provenance

    tree = PersonaTree.open(args.url, PersonaTreeConfig.preset("fast"))
    engine = tree.engine
    cfg = engine.config.insertion
    with engine.lock:
        graph = engine.live_graph(args.user)
        t = time.perf_counter()
        archive = archived_block(engine, args.user, graph)
        first_read = time.perf_counter() - t
        t = time.perf_counter()
        archived_block(engine, args.user, graph)
        again = time.perf_counter() - t
    latest = max(n.t_last for n in graph.nodes(Level.LEAF))
    texts = [f"I gave away my old gear and stopped going, number {i}." for i in range(args.batch)]
    vecs = engine.embedder.embed(texts)

    def fresh(k: int) -> list[Node]:
        out = []
        for i in range(k):
            at = latest + timedelta(days=1, minutes=i)
            out.append(Node(f"bench-{i}", args.user, Level.LEAF, "event", texts[i], {}, at, at, 0.0,
                            embedding=vecs[i], provenance=(Provenance(f"o-bench-{i}", 0, 0, at, "s-bench"),)))
        return out

    judge = _Silent()
    print(f"tree leaves: {len(graph.index(Level.LEAF).ids)}; archived leaves: {len(archive[0].nodes)}; "
          f"archive read and stacked: first {1000 * first_read:.0f} ms, then {1000 * again:.1f} ms "
          "(ids listed, none new)")
    ranks = {"specific": cfg, "plain cosine": cfg.model_copy(update={"update_specific": False})}
    for k in (1, args.batch):
        for rank, rank_cfg in ranks.items():
            row = []
            for shown in (archive, None):
                runs = []
                for _ in range(args.reps):
                    leaves = fresh(k)
                    t = time.perf_counter()
                    link_changes(graph, leaves, judge, rank_cfg, shown)
                    runs.append(time.perf_counter() - t)
                row.append(statistics.median(runs))
            print(f"{k} new statement(s), ranked by {rank}: with the archive {1000 * row[0]:.1f} ms, "
                  f"tree only {1000 * row[1]:.1f} ms (median of {args.reps})")
    tree.close()


if __name__ == "__main__":
    main()
