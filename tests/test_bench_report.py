"""The markdown report of a benchmark run says each figure once and says what it counts.

A LoCoMo-shaped result (categories 1 to 4 plus adversarial category 5) is built from
records, summarised by the harness's own ``summarize`` and rendered.
"""

from __future__ import annotations


from personatree_bench.metrics import QueryRecord, summarize
from personatree_bench.report import markdown
from personatree_bench.runner import BenchResult, _growth

BUDGETS = [500, 1000]
SYSTEMS = ["personatree", "dense"]
# (category, adversarial, how many questions, how many of them have no gold evidence)
CATEGORIES = [("1", False, 4, 0), ("2", False, 3, 1), ("4", False, 5, 1), ("5", True, 6, 0)]


def records() -> list[QueryRecord]:
    out: list[QueryRecord] = []
    for system in SYSTEMS:
        for budget in BUDGETS:
            for cat, adv, n, ungolded in CATEGORIES:
                for i in range(n):
                    gold = () if i < ungolded else (f"t{i}",)
                    # personatree finds every other turn; dense finds none of the adversarial ones.
                    found = system == "personatree" and i % 2 == 0 or system == "dense" and not adv
                    shown = gold if found else ()
                    out.append(QueryRecord(system, "c1", f"{cat}-{i}", cat, adv, "budget", budget, gold,
                                           shown, 100, 0.01))
    return out


def report() -> str:
    result = BenchResult("locomo", SYSTEMS, BUDGETS, [])
    result.records = records()
    result.summary = summarize(result.records)
    result.growth = {"personatree": _growth("personatree", [(0, 300), (100, 300), (200, 300)]),
                     "dense": _growth("dense", [(0, 0), (100, 4000), (200, 8000)])}
    result.meta = {"conversations": 1, "turns": 200,
                   "engine": {"consolidate": "session", "consolidation_available": True, "consolidate_seconds": 1.0,
                              "all_roots_and_mids_tokens_per_100_turns": 714.0}}
    return markdown(result)


def table(text: str, title: str) -> list[list[str]]:
    """The rows (header first, rule dropped) of the table under the heading ``title``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip("|").split("|")])
        elif rows:
            break
    return [r for r in rows if not set("".join(r)) <= set("-")]


def test_the_header_counts_the_adversarial_questions_it_sets_apart() -> None:
    head = report().splitlines()[0]
    # 12 non-adversarial questions, 10 with gold evidence; 6 adversarial ones apart.
    assert "10 scored of 12 non-adversarial questions" in head
    assert "6 adversarial reported apart" in head


def test_the_adversarial_category_is_one_column_not_two() -> None:
    rows = table(report(), "#### recall per category @1000")
    head = rows[0]
    assert head == ["system", "1 multi-hop [4]", "2 temporal [2]", "4 single-hop [4]", "adversarial [6], apart"]
    assert not any("5 adversarial" in h for h in head)
    by_system = {r[0]: r[1:] for r in rows[1:]}
    assert by_system["personatree"][-1] == "0.500" and by_system["dense"][-1] == "0.000"
    # Every category column holds that category's own figure.
    assert by_system["dense"][:3] == ["1.000", "1.000", "1.000"]


def test_the_growth_column_says_what_it_counts_and_agrees_with_the_note() -> None:
    text = report()
    rows = table(text, "### locomo")
    col = rows[0].index("standing context growth /100 turns")
    cells = {r[0]: r[col] for r in rows[1:]}
    assert cells["personatree"] == "0 (profile block)"
    assert cells["dense"] == "4000 (raw history)"
    note = next(line for line in text.splitlines() if line.startswith("personatree: consolidation="))
    assert "714 tokens/100 turns" in note and "not standing context" in note and "profile block" in note
