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

from .api import PersonaTree
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
    tree = PersonaTree.open(path)
    user, items = sample_interactions()
    if reset and tree.store.version(user):
        tree.delete_user(user)
    con.print(f"[bold]Ingesting[/] {len(items)} interactions of user [cyan]{user}[/] into {path} ...")
    reports = tree.observe_many(user, items)
    n_leaves = sum(len(r.decisions) for r in reports)
    con.print(f"  {n_leaves} evidence leaves extracted, "
              f"{sum(r.attached for r in reports)} attached, {sum(r.conflicts for r in reports)} conflicts")
    try:
        plan = tree.consolidate(user)
        summary = getattr(plan, "summary", None)
        con.print(f"[bold]Consolidated[/]: {summary() if callable(summary) else 'done'}")
    except ImportError:
        con.print("[dim]consolidation is not available in this build[/]")
    con.print(Panel(tree.render(user), title=f"memory of {user}", expand=False))
    claims = tree.nodes(user, Level.ROOT) or tree.nodes(user, Level.MID) or tree.nodes(user, Level.LEAF)
    if claims:
        best = max(claims, key=lambda n: (n.n_support, n.t_last))
        con.print(Panel(tree.explain(user, best.id).render(), title=f"explain {best.id}", expand=False))
    try:
        rec = tree.recall(user, "Would Maya enjoy a hiking holiday?", budget=300)
        con.print(Panel(rec.text, title=f"recall: 'Would Maya enjoy a hiking holiday?' ({rec.tokens} tokens)",
                        expand=False))
    except ImportError:
        pass
    return tree
