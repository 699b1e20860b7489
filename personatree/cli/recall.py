"""The ``personatree recall`` command."""

from __future__ import annotations

import typer

from .common import JsonOpt, StoreOpt, console, errors, print_json
from .opening import open_tree

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add ``recall USER QUERY [--budget N] [--model M] [--level L] [--from-user] [--json]
    [--store S]`` to ``app``."""
    app.command()(recall)


def recall(
    user: str,
    query: str,
    budget: int = typer.Option(
        None, "--budget", "-b", min=1, help="Token budget (default from config)."
    ),
    model: str = typer.Option(
        None, "--model", "-m", help="Model whose tokenizer counts the budget."
    ),
    level: list[str] = typer.Option(
        None, "--level", "-l", help="Only these levels (leaf, mid, root); repeatable."
    ),
    from_user: bool = typer.Option(
        False, "--from-user", help="QUERY is the user's own message, not a question about them."
    ),
    store: str = StoreOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Print the context a recall of QUERY gives for USER, within a token budget."""
    with errors():
        with open_tree(store) as tree:
            rec = tree.recall(user, query, budget=budget, model=model, levels=level or None,
                              from_user=from_user)
        if as_json:
            print_json(rec.to_dict())
            return
        probs = ", ".join(f"{k.value} {v:.2f}" for k, v in rec.route.probabilities.items())
        kinds = ", ".join(rec.route.schema_types) or "any type"
        console.print(
            f"[dim]route: {rec.route.level.value} ({probs}); {kinds}; "
            f"{rec.tokens}/{rec.budget} tokens, {len(rec.items)} nodes[/]",
            highlight=False,
        )
        console.print(rec.text or "(nothing relevant stored)", highlight=False, markup=False)
