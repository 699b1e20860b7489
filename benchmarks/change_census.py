"""How many of the faithfulness scenarios' changes the offline rules read as a change.

For each split of a scenario file, counts the later statements that
:func:`personatree.text.is_change` reads as a change in the speaker's life (a stop, a
start, a move, a job or relationship begun or ended, a diagnosis); recall links such a
statement to the earlier ones it updates at a lower similarity than a mere change of
stance (``recall.update_floor`` against ``update_flip_floor``). Prints counts only, so
that a held-out split can be reported without being read.

Usage::

    python benchmarks/change_census.py [scenarios.json]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from personatree.text import is_change
from personatree.text.stance import stance_label
from personatree_bench.scenarios import load_scenarios


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?", type=Path, default=None, help="Scenario file (default: the packaged one).")
    args = ap.parse_args()
    scenarios = load_scenarios(args.path)
    for split in sorted({s.split for s in scenarios}, key=lambda x: (x != "tune", x)):
        changes = [s.change.text for s in scenarios if s.split == split]
        read = sum(is_change(t, stance_label(t)) for t in changes)
        print(f"{split}: {read} of {len(changes)} changes read as a change")


if __name__ == "__main__":
    main()
