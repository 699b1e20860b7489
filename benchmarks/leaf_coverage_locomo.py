"""Which LoCoMo evidence turns become at least one leaf under the offline judge's keep rule.

Usage (from a checkout; put the personatree to measure first on PYTHONPATH)::

    python benchmarks/leaf_coverage_locomo.py ../shared/data/locomo/locomo_dev.json

For every turn of every session, the turn's sentences (``split_sentences``) are kept as
the offline judge keeps them (``informative_part``, or ``is_informative`` on versions
without it); a turn "has a leaf" when one of them is kept. Printed: the share of all
turns with a leaf and the share of QA evidence turns with a leaf. It measures only what
becomes a leaf (no embedding, no recall), so it runs in seconds.
"""

from __future__ import annotations

import json
import sys

from personatree import text as T


def _kept(sentence: str) -> bool:
    part = getattr(T, "informative_part", None)
    return part(sentence) is not None if part is not None else T.is_informative(sentence)


def main(path: str) -> None:
    data = json.load(open(path, encoding="utf-8"))
    ev_total = ev_leaf = turns = kept = 0
    for conv in data:
        leafy: dict[str, bool] = {}
        for key, session in conv["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                for turn in session:
                    leafy[turn["dia_id"]] = any(_kept(s) for s in T.split_sentences(turn["text"]))
        turns += len(leafy)
        kept += sum(leafy.values())
        for qa in conv["qa"]:
            for e in qa.get("evidence", []):
                if e in leafy:
                    ev_total += 1
                    ev_leaf += leafy[e]
    print(f"turns with a leaf {kept}/{turns} = {kept / turns:.3f}; "
          f"evidence turns with a leaf {ev_leaf}/{ev_total} = {ev_leaf / ev_total:.4f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/locomo/locomo_dev.json")
