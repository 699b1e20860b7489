"""Stance of conversational lines: how often the offline reader gets the speaker's stance.

Usage (from a checkout)::

    python benchmarks/bench_stance_chat.py [--errors] [--split tune|heldout|both] [--data PATH]

``benchmarks/data/stance_chat_labelled.jsonl`` holds chat lines written for this
benchmark, each labelled with the speaker's stance toward what it is about: greetings,
thanks and reassurance told with a negator ("no worries", "you're not alone"), a thing
said to be hard but kept up, things not done yet, praise told with a negator ("can't
beat"), and plain negative stances, cessations and starts beside them. A stance read
where there is none is what makes a false conflict in the tree. The reader is
:func:`personatree.text.stance_label`, the one every leaf's stance comes from. Tune
on the ``tune`` split; report the ``heldout`` one.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from personatree.stance import side_of
from personatree.text import stance_label

DEFAULT = Path(__file__).resolve().parent / "data" / "stance_chat_labelled.jsonl"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT)
    ap.add_argument("--split", choices=("tune", "heldout", "both"), default="both")
    ap.add_argument("--errors", action="store_true", help="list every wrong stance")
    args = ap.parse_args()
    rows = [json.loads(line) for line in args.data.read_text(encoding="utf-8").splitlines() if line.strip()]
    splits = ("tune", "heldout") if args.split == "both" else (args.split,)
    for split in splits:
        part = [r for r in rows if r["split"] == split]
        got = [stance_label(r["text"]) for r in part]
        right = sum(g == r["stance"] for g, r in zip(got, part))
        # A negative side read where the label has none is a would-be conflict.
        false_neg = sum(side_of(g) < 0 <= side_of(r["stance"]) for g, r in zip(got, part))
        by = Counter(r["stance"] for r in part)
        ok = Counter(r["stance"] for g, r in zip(got, part) if g == r["stance"])
        per = ", ".join(f"{k} {ok[k]}/{by[k]}" for k in sorted(by))
        print(f"{split}: stance accuracy {right / len(part):.3f} ({right}/{len(part)}); "
              f"negative side read on a line without one: {false_neg}; {per}")
        if args.errors:
            for g, r in zip(got, part):
                if g != r["stance"]:
                    print(f"  {r['stance']:>8} read as {g:<8} {r['text']}")


if __name__ == "__main__":
    main()
