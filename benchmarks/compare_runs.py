"""Compare two benchmark runs question by question: did a change move any context?

Reads two ``--out`` files of ``personatree bench locomo`` (or ``knowme``), written by
two codes on the same data, and counts the (system, conversation, question, budget)
records whose shown evidence is the same in both, then lists per budget the questions
whose recall moved. A change meant to leave recall alone should print no moved record.

Usage::

    personatree bench locomo ../shared/data/locomo/locomo_dev.json --systems personatree \\
        --budgets 300,500,1000 --topk "" --out before.json        # from the code before
    personatree bench locomo ... --out after.json                  # from this code
    python benchmarks/compare_runs.py before.json after.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

Key = tuple[str, str, str, str, int]


def _records(path: Path) -> dict[Key, dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {(r["system"], r["conv"], r["question"], r["mode"], int(r["value"])): r for r in data["records"]}


def _recall(record: dict[str, Any]) -> str:
    # The share of the question's gold evidence the context showed ("-" without gold).
    gold = set(record.get("gold") or ())
    return f"{len(gold & set(record['shown'])) / len(gold):.2f}" if gold else "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    args = ap.parse_args(argv)
    before, after = _records(args.before), _records(args.after)
    common = sorted(before.keys() & after.keys())
    moved = [k for k in common if before[k]["shown"] != after[k]["shown"]]
    print(f"{len(common)} records in both ({len(before)} before, {len(after)} after); "
          f"same evidence shown in {len(common) - len(moved)}, moved in {len(moved)}")
    for key in moved:
        print(f"  {key[0]} {key[1]} {key[2]} {key[3]}={key[4]}: "
              f"recall {_recall(before[key])} -> {_recall(after[key])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
