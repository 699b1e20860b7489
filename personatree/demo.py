"""The demo: ingest a small sample conversation, consolidate, show the tree, explain a claim.

Run it with ``personatree demo`` (or ``python -m personatree demo``).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from .api import PersonaTree
from .clock import FixedClock
from .types import Level, utc

__all__ = ["sample_interactions", "run_demo"]


def sample_interactions() -> tuple[str, list[dict[str, Any]]]:
    """The shipped sample conversation as ``(user_id, interactions)`` for ``observe_many``.

    Each user/assistant exchange is one interaction, a minute apart within a session.
    """
    raw = resources.files("personatree").joinpath("data/sample_conversation.json").read_text("utf-8")
    data = json.loads(raw)
    items: list[dict[str, Any]] = []
    for session in data["sessions"]:
        start = utc(datetime.fromisoformat(session["at"]))
        for i, turn in enumerate(session["turns"]):
            items.append({
                "messages": [
                    {"role": "user", "content": turn["user"]},
                    {"role": "assistant", "content": turn["assistant"]},
                ],
                "at": start + timedelta(minutes=i),
                "session_id": session["session_id"],
            })
    return data["user_id"], items


def run_demo(path: str | Path, console: Console | None = None, *, reset: bool = True) -> PersonaTree:
    """Ingest the sample into the store at ``path`` and print what the memory holds.

    Parameters
    ----------
    path : str or Path
        SQLite file to use.
    console : rich.console.Console, optional
        Where to print.
    reset : bool
        Delete the sample user first so the demo can be rerun.

    Returns
    -------
    PersonaTree
        The open memory (close it when done).
    """
    con = console or Console()
    user, items = sample_interactions()
    # The sample is dated 2024: run the demo on a clock that follows the sample, so that
    # confidences and the growth bounds (orphans older than a year go) read it as recent.
    clock = FixedClock(items[0]["at"])
    tree = PersonaTree.open(path, clock=clock)
    if reset and tree.store.version(user):
        tree.delete_user(user)
    # Two phases, as a live agent would see them: three months of conversations and a
    # consolidation pass, then the weeks after a knee injury, which contradict a pattern.
    cut = len(items) - 5
    for phase in (items[:cut], items[cut:]):
        con.print(f"[bold]Observing[/] {len(phase)} interactions of [cyan]{user}[/] "
                  f"({phase[0]['at']:%Y-%m-%d} to {phase[-1]['at']:%Y-%m-%d}) ...")
        reports = tree.observe_many(user, phase)
        con.print(f"  {sum(len(r.decisions) for r in reports)} evidence leaves: "
                  f"{sum(r.attached for r in reports)} attached to a pattern, "
                  f"{sum(r.conflicts for r in reports)} contradicting one, "
                  f"{sum(r.orphans for r in reports)} waiting for consolidation")
        clock.set(phase[-1]["at"] + timedelta(days=1))
        as_of = clock.now()
        plan = tree.consolidate(user)
        counts = ", ".join(f"{v} {k}" for k, v in plan.counts().items() if v)
        con.print(f"[bold]Consolidated[/] as of {as_of:%Y-%m-%d}: {counts or 'nothing to change'}")
    con.print(Panel(Text(tree.render(user)), title=f"memory of {user}", expand=False))
    # Explain a contradicted pattern if there is one (both sides show), else the best claim.
    claims = [n for n in tree.nodes(user, Level.MID) if n.n_conflict] or tree.nodes(user, Level.ROOT) \
        or tree.nodes(user, Level.MID) or tree.nodes(user, Level.LEAF)
    if claims:
        best = max(claims, key=lambda n: (n.n_support, n.t_last))
        con.print(Panel(Text(tree.explain(user, best.id).render()), title=f"explain {best.id}", expand=False))
    rec = tree.recall(user, "Would Maya enjoy a hiking holiday?", budget=300)
    con.print(Panel(Text(rec.text), title=f"recall: 'Would Maya enjoy a hiking holiday?' ({rec.tokens} tokens)",
                    expand=False))
    return tree
