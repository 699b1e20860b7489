"""The commands that write and read one user's memory: ``demo``, ``observe``, ``show``,
``explain``, ``search``, ``stats`` and ``users``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.table import Table

from .common import BATCH, CreateOpt, JsonOpt, StoreOpt, console, errors, print_json, progress_bar
from .opening import open_tree
from .reading import read_interactions

if TYPE_CHECKING:
    from ..types import InsertReport

__all__ = ["count_table", "ingest", "register"]


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``, in the order ``--help`` lists them."""
    app.command()(demo)
    app.command()(observe)
    app.command()(show)
    app.command()(explain)
    app.command()(search)
    app.command()(stats)
    app.command()(users)


def ingest(store: str, create: bool, user: str, items: Sequence[Mapping[str, Any]], label: str) -> list[InsertReport]:
    """Observe ``items`` for ``user`` in the store (created if new), with a progress bar."""
    with open_tree(store, must_exist=False, create_dirs=create) as tree, \
            progress_bar(len(items), label) as update:
        return tree.observe_many(user, items, batch_size=BATCH, progress=update)


def count_table(data: Mapping[str, Any], title: str | None = None) -> Table:
    """A two-column table of ``data``: what, and how many."""
    t = Table("what", "count", title=title)
    for key, value in data.items():
        t.add_row(key, str(value))
    return t


def demo(store: str = typer.Option("personatree-demo.db", "--store", "-s", help="SQLite file for the demo.")) -> None:
    """Ingest a sample conversation, consolidate it, print the tree and explain a claim."""
    from ..demo import run_demo

    with errors():
        run_demo(store, console).close()


def observe(
    user: str,
    source: str = typer.Argument("-", help="JSON/JSONL file of interactions or messages; '-' for stdin."),
    store: str = StoreOpt,
    as_json: bool = JsonOpt,
    create: bool = CreateOpt,
) -> None:
    """Record interactions (JSON list, JSONL, or messages) for USER.

    Each item is {"messages": [{"role", "content"}...], "at"?, "session_id"?, "metadata"?}
    or a bare message {"role", "content"} (one interaction each).
    """
    with errors():
        items = read_interactions(source)
        reports = ingest(store, create, user, items, "observing")
        rows = [{"observation_id": r.observation_id, "duplicate": r.duplicate, "leaves": len(r.decisions),
                 "attached": r.attached, "conflicts": r.conflicts, "orphans": r.orphans} for r in reports]
        if as_json:
            print_json(rows)
            return
        t = Table("observation", "dup", "leaves", "attached", "conflicts", "orphans")
        for r in rows:
            t.add_row(str(r["observation_id"]), "yes" if r["duplicate"] else "", *(str(r[k]) for k in
                      ("leaves", "attached", "conflicts", "orphans")))
        console.print(t)


def show(user: str, store: str = StoreOpt, as_json: bool = JsonOpt) -> None:
    """Print USER's tree with confidences, counts and dates.

    With --json: {"user", "generated", "counts", "nodes", "order"}, every node by id with
    its level, type, content, confidence now, counts, dates, parent, children and
    conflicts; "order" lists the roots, the patterns without a claim and the orphans.
    """
    with errors(), open_tree(store) as tree:
        if as_json:
            from ..view.data import view_payload

            data = view_payload(tree.graph(user), tree.registry, tree.clock.now())
            print_json({k: v for k, v in data.items() if k not in ("title", "observations")})
            return
        # markup=False: the tree text is full of [type conf] brackets rich would eat.
        console.print(tree.render(user), highlight=False, markup=False, soft_wrap=True)


def explain(user: str, node_id: str, store: str = StoreOpt, as_json: bool = JsonOpt) -> None:
    """Show why NODE_ID is believed: support path, evidence, conflicts and observations."""
    with errors():
        with open_tree(store) as tree:
            ex = tree.explain(user, node_id)
        if as_json:
            print_json(dataclasses.asdict(ex))
        else:
            console.print(ex.render(), highlight=False, markup=False, soft_wrap=True)


def search(
    user: str,
    query: str,
    k: int = typer.Option(10, "-k", min=1, help="How many hits."),
    level: str | None = typer.Option(None, help="leaf, mid or root."),
    store: str = StoreOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Plain similarity search over USER's nodes."""
    with errors():
        with open_tree(store) as tree:
            hits = tree.search(user, query, k=k, levels=None if level is None else [level])
        if as_json:
            print_json([{"node_id": h.node_id, "level": h.level.value, "schema_type": h.schema_type,
                         "content": h.content, "score": h.score, "confidence": h.confidence,
                         "archived": h.archived} for h in hits])
            return
        t = Table("score", "level", "type", "conf", "content")
        for h in hits:
            level = f"{h.level.value} (archived)" if h.archived else h.level.value
            t.add_row(f"{h.score:.3f}", level, h.schema_type, f"{h.confidence:.2f}", escape(h.content))
        console.print(t)


def stats(user: str, store: str = StoreOpt, as_json: bool = JsonOpt) -> None:
    """Counts of USER's nodes, edges, orphans and observations."""
    with errors():
        with open_tree(store) as tree:
            data = tree.stats(user)
        if as_json:
            print_json(data)
            return
        console.print(count_table(data))


def users(store: str = StoreOpt, as_json: bool = JsonOpt) -> None:
    """List the users in the store."""
    with errors():
        with open_tree(store) as tree:
            ids = tree.users()
        if as_json:
            print_json(ids)
        else:
            for uid in ids:
                console.print(uid, highlight=False, markup=False)
