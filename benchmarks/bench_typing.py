"""Typing benchmark of the offline judge: per-type P/R/F1, macro-F1 and stance accuracy.

Usage (from a checkout)::

    python benchmarks/bench_typing.py [--errors] [--split tune|heldout|both] [--data PATH]

Each labelled sentence is extracted alone with the real packaged embedder and the
shipped schema registry. Tune on the ``tune`` split; report the ``heldout`` one.
"""

from __future__ import annotations

import argparse
import time

from personatree_bench.typing_eval import DEFAULT_PATH, evaluate, format_report, load_labelled, predict
from personatree.embedders import SentenceTransformerEmbedder
from personatree.judge import OfflineJudge
from personatree.schema import SchemaRegistry


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DEFAULT_PATH))
    ap.add_argument("--split", choices=("tune", "heldout", "both"), default="both")
    ap.add_argument("--errors", action="store_true", help="list every wrong type and stance")
    args = ap.parse_args()
    rows = load_labelled(args.data)
    judge = OfflineJudge(SentenceTransformerEmbedder(), SchemaRegistry.load())
    splits = ("tune", "heldout") if args.split == "both" else (args.split,)
    t0 = time.perf_counter()
    for split in splits:
        part = [r for r in rows if r.split == split]
        preds = predict(judge, [r.text for r in part])
        print(format_report(evaluate(part, preds, split), errors=args.errors))
        print()
    print(f"{len(rows)} labelled sentences; {time.perf_counter() - t0:.1f}s")


if __name__ == "__main__":
    main()
