"""How many benchmark questions recall reads as the person telling their own situation.

Counts, per dev set, the questions :func:`personatree.text.tells_own_situation` passes
(those get the standing bonus in recall; the others are ranked as before).

Usage::

    python benchmarks/situation_census.py --data ../shared/data
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from personatree.text import tells_own_situation
from personatree_bench.datasets.knowme import load_knowme
from personatree_bench.datasets.prefeval import load_prefeval


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path("..") / "shared" / "data")
    args = ap.parse_args()
    locomo = json.loads((args.data / "locomo" / "locomo_dev.json").read_text(encoding="utf-8"))
    sets = {
        "LoCoMo dev": [q["question"] for c in locomo for q in c["qa"]],
        "KnowMe dataset 1": [q.text for c in load_knowme(args.data / "knowme" / "dataset1").conversations
                             for q in c.questions],
        "PrefEval dev": [q.text for c in load_prefeval(args.data / "prefeval").conversations for q in c.questions],
        "PrefEval item 7": [q.text for c in load_prefeval(args.data / "prefeval", skip=6, limit=1).conversations
                            for q in c.questions],
    }
    for name, questions in sets.items():
        print(f"{name}: {sum(map(tells_own_situation, questions))} of {len(questions)} questions pass")


if __name__ == "__main__":
    main()
