"""Reports of a :class:`~personatree_bench.runner.BenchResult`: markdown tables and a plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .metrics import category_labels
from .output import fmt
from .runner import BenchResult

__all__ = ["markdown", "plot_recall"]


def _headline_budget(result: BenchResult) -> int:
    return 1000 if 1000 in result.budgets else result.budgets[len(result.budgets) // 2]


def markdown(result: BenchResult) -> str:
    """Markdown tables: headline recall per system, per category, costs.

    Parameters
    ----------
    result : BenchResult

    Returns
    -------
    str
    """
    hb = _headline_budget(result)
    use_hit = result.dataset in ("prefeval", "locomo_plus")
    metric = "hit" if use_hit else "recall"
    lines = _headline_table(result, metric, hb)
    lines += _category_tables(result, metric, hb)
    if use_hit:
        lines.append("")
        lines.append("(hit = at least one gold turn in the context; recall @budgets: "
                     + ", ".join(
                         f"{s} {fmt(result.summary.get(s, {}).get('budget', {}).get(hb, {}).get('overall', {}).get('recall'))}"
                         for s in result.systems) + f" @{hb})")
    lines += _engine_notes(result.meta.get("engine") or {})
    return "\n".join(lines) + "\n"


def _headline_table(result: BenchResult, metric: str, hb: int) -> list[str]:
    # The title, then one row per system: the metric at every budget and top-k, and the costs.
    lines: list[str] = []
    any_sys: dict[str, Any] = next(iter(result.summary.values()), {})
    first = any_sys.get("budget", {}).get(result.budgets[0], {}) if any_sys else {}
    n = first.get("overall", {}).get("n", 0)
    scored = first.get("overall", {}).get("scored", 0)
    adversarial = first.get("adversarial", {}).get("n", 0)
    # The headline counts only non-adversarial questions; say how many were set apart,
    # so that the category tables below (which report them) add up.
    apart = f"; {adversarial} adversarial reported apart" if adversarial else ""
    lines.append(
        f"### {result.dataset}: evidence {metric} "
        f"({result.meta.get('conversations')} streams, {result.meta.get('turns')} turns, "
        f"{scored} scored of {n} non-adversarial questions{apart})"
    )
    lines.append("")
    head = ["system"] + [f"@{b}" for b in result.budgets] + [f"top-{k}" for k in result.topk]
    head += [f"tokens P50/P95 @{hb}", f"latency P50/P95 ms @{hb}", "ingest s", "standing context growth /100 turns"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join(["---"] * len(head)) + "|")
    for system in result.systems:
        s = result.summary.get(system, {})
        row = [system]
        row += [fmt(s.get("budget", {}).get(b, {}).get("overall", {}).get(metric)) for b in result.budgets]
        row += [fmt(s.get("topk", {}).get(k, {}).get("overall", {}).get(metric)) for k in result.topk]
        o = s.get("budget", {}).get(hb, {}).get("overall", {})
        row.append(f"{fmt(o.get('tokens_p50'), 0)} / {fmt(o.get('tokens_p95'), 0)}")
        row.append(f"{fmt(o.get('latency_p50_ms'), 1)} / {fmt(o.get('latency_p95_ms'), 1)}")
        row.append(fmt(result.ingest.get(system, {}).get("seconds"), 1))
        row.append(_growth_cell(result.growth.get(system, {})))
        lines.append("| " + " | ".join(row) + " |")
    return lines


def _growth_cell(growth: dict[str, Any]) -> str:
    # The figure and what it counts ("profile block", "raw history"): personatree's
    # standing context is its capped profile block, not every claim it holds.
    measures = str(growth.get("measures", "")).split(" tokens", 1)[0]
    value = fmt(growth.get("tokens_per_100_turns"), 0)
    return f"{value} ({measures})" if measures else value


def _category_tables(result: BenchResult, metric: str, hb: int) -> list[str]:
    # One table per budget: the metric per question category, adversarial questions in
    # one column of their own (their category is not repeated beside it).
    labels = category_labels(result.dataset)
    lines: list[str] = []
    cats: list[str] = []
    for s in result.summary.values():
        entry = s.get("budget", {}).get(hb, {})
        apart = set(entry.get("adversarial_categories", ()))
        for c in entry.get("categories", {}):
            if c not in cats and c not in apart:
                cats.append(c)
    for b in result.budgets if cats else []:
        lines.append("")
        lines.append(f"#### {metric} per category @{b} tokens (n scored in brackets)")
        lines.append("")
        first = next(iter(result.summary.values()))["budget"][b]
        sample = first["categories"]
        head = ["system"] + [
            f"{c} {labels.get(c, '')}".strip() + f" [{sample.get(c, {}).get('scored', 0)}]" for c in cats
        ] + [f"adversarial [{first.get('adversarial', {}).get('scored', 0)}], apart"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "|".join(["---"] * len(head)) + "|")
        for system in result.systems:
            e = result.summary.get(system, {}).get("budget", {}).get(b, {})
            row = [system] + [fmt(e.get("categories", {}).get(c, {}).get(metric)) for c in cats]
            row.append(fmt(e.get("adversarial", {}).get(metric)))
            lines.append("| " + " | ".join(row) + " |")
    return lines


def _engine_notes(eng: dict[str, Any]) -> list[str]:
    # personatree's own figures: consolidation, unbounded growth and the size of the tree.
    if not eng:
        return []
    lines = [""]
    lines.append(
        f"personatree: consolidation={eng.get('consolidate')} "
        f"(available: {eng.get('consolidation_available')}; "
        f"{fmt(eng.get('consolidate_seconds'), 1)} s of the ingest time); all roots and mids together "
        f"grow by {fmt(eng.get('all_roots_and_mids_tokens_per_100_turns'), 0)} tokens/100 turns, but they "
        "are not standing context: recall picks the ones a question needs, and the growth column "
        "counts the profile block, which is capped"
    )
    size = eng.get("tree_size") or {}
    if size:
        lines.append(
            f"tree per 100 turns: {fmt(size.get('leaves_per_100_turns'), 1)} leaves, "
            f"{fmt(size.get('mids_per_100_turns'), 1)} mids, {fmt(size.get('roots_per_100_turns'), 1)} roots "
            f"in the tree; {fmt(size.get('archived_per_100_turns'), 1)} archived leaves; "
            f"profile block {fmt(size.get('profile_tokens_mean'), 0)} tokens (mean over "
            f"{size.get('conversations')} conversations)"
        )
    return lines


def plot_recall(result: BenchResult, path: str | Path) -> Path:
    """A PNG of headline recall (or hit) against budget, one line per system.

    Parameters
    ----------
    result : BenchResult
    path : str or Path

    Returns
    -------
    Path
    """
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    metric = "hit" if result.dataset in ("prefeval", "locomo_plus") else "recall"
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    for system in result.systems:
        ys = [result.summary.get(system, {}).get("budget", {}).get(b, {}).get("overall", {}).get(metric)
              for b in result.budgets]
        pts = [(b, y) for b, y in zip(result.budgets, ys) if y is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=system)
    ax.set_xscale("log")
    ax.minorticks_off()  # only the budgets themselves are labelled
    ax.set_xticks(result.budgets)
    ax.set_xticklabels([str(b) for b in result.budgets])
    ax.set_xlabel("context budget (tokens)")
    ax.set_ylabel(f"evidence {metric}")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.set_title(f"{result.dataset}: evidence {metric} vs budget")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(p)
    plt.close(fig)
    return p
