"""The ``personatree`` command line: a thin layer over the Python API.

Every command takes ``--store`` (a SQLite path or store URL; the environment
variable ``PERSONATREE_STORE`` sets the default) and most take ``--json`` for
machine-readable output. Library errors become one clean line on stderr and a
non-zero exit, never a traceback.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any, Iterator, Optional

import orjson
import typer
from rich.console import Console
from rich.table import Table

from .errors import InputError, PersonaTreeError

__all__ = ["app", "main"]

app = typer.Typer(
    name="personatree",
    help="Evidence-tree memory for LLM agents: observe, consolidate, recall, explain.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err_console = Console(stderr=True)

StoreOpt = typer.Option(
    "personatree.db", "--store", "-s", envvar="PERSONATREE_STORE",
    help="SQLite file or store URL (env PERSONATREE_STORE).",
)
JsonOpt = typer.Option(False, "--json", help="Print JSON for scripts.")


@contextlib.contextmanager
def errors() -> Iterator[None]:
    """Turn library errors into one clean line and exit code 1."""
    try:
        yield
    except PersonaTreeError as exc:
        err_console.print(f"[red]error:[/] {type(exc).__name__}: {exc}", highlight=False)
        raise typer.Exit(1) from None


def open_tree(store: str) -> Any:
    """Open a PersonaTree on ``store`` (imported lazily: the model loads only when needed)."""
    from .api import PersonaTree

    return PersonaTree.open(store)


def print_json(data: Any) -> None:
    """Write ``data`` as JSON to stdout."""
    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2, default=str).decode() + "\n")


@app.command()
def demo(store: str = typer.Option("personatree-demo.db", "--store", "-s", help="SQLite file for the demo.")) -> None:
    """Ingest a sample conversation, consolidate it, print the tree and explain a claim."""
    from .demo import run_demo

    with errors():
        run_demo(store, console).close()


def _read_interactions(source: str) -> list[dict[str, Any]]:
    text = sys.stdin.read() if source == "-" else _read_file(source)
    text = text.strip()
    if not text:
        raise InputError("no input")
    try:
        if text.startswith("["):
            data = orjson.loads(text)
        elif text.startswith("{") and "\n" not in text:
            data = [orjson.loads(text)]
        else:
            data = [orjson.loads(line) for line in text.splitlines() if line.strip()]
    except orjson.JSONDecodeError as exc:
        raise InputError(f"input is not JSON or JSONL: {exc}") from None
    items: list[dict[str, Any]] = []
    for i, obj in enumerate(data if isinstance(data, list) else [data]):
        if isinstance(obj, dict) and "messages" in obj:
            items.append(obj)
        elif isinstance(obj, dict) and "role" in obj:
            # A bare message per line: one interaction each.
            items.append({"messages": [obj]})
        else:
            raise InputError(f"item {i} is neither an interaction with 'messages' nor a message")
    return items


def _read_file(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from None


@app.command()
def observe(
    user: str,
    source: str = typer.Argument("-", help="JSON/JSONL file of interactions or messages; '-' for stdin."),
    store: str = StoreOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Record interactions (JSON list, JSONL, or messages) for USER."""
    with errors():
        items = _read_interactions(source)
        tree = open_tree(store)
        try:
            reports = tree.observe_many(user, items)
        finally:
            tree.close()
        rows = [{"observation_id": r.observation_id, "duplicate": r.duplicate, "leaves": len(r.decisions),
                 "attached": r.attached, "conflicts": r.conflicts, "orphans": r.orphans} for r in reports]
        if as_json:
            print_json(rows)
            return
        t = Table("observation", "dup", "leaves", "attached", "conflicts", "orphans")
        for r in rows:
            t.add_row(r["observation_id"], "yes" if r["duplicate"] else "", *(str(r[k]) for k in
                      ("leaves", "attached", "conflicts", "orphans")))
        console.print(t)


@app.command()
def show(user: str, store: str = StoreOpt) -> None:
    """Print USER's tree with confidences, counts and dates."""
    with errors():
        tree = open_tree(store)
        try:
            console.print(tree.render(user), highlight=False)
        finally:
            tree.close()


@app.command()
def explain(user: str, node_id: str, store: str = StoreOpt, as_json: bool = JsonOpt) -> None:
    """Show why NODE_ID is believed: support path, evidence, conflicts and observations."""
    with errors():
        tree = open_tree(store)
        try:
            ex = tree.explain(user, node_id)
        finally:
            tree.close()
        if as_json:
            import dataclasses

            print_json(dataclasses.asdict(ex))
        else:
            console.print(ex.render(), highlight=False)


@app.command()
def search(
    user: str,
    query: str,
    k: int = typer.Option(10, "-k", min=1, help="How many hits."),
    level: Optional[str] = typer.Option(None, help="leaf, mid or root."),
    store: str = StoreOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Plain similarity search over USER's nodes."""
    with errors():
        tree = open_tree(store)
        try:
            hits = tree.search(user, query, k=k, level=level)
        finally:
            tree.close()
        if as_json:
            print_json([{"node_id": h.node_id, "level": h.level.value, "schema_type": h.schema_type,
                         "content": h.content, "score": h.score, "confidence": h.confidence} for h in hits])
            return
        t = Table("score", "level", "type", "conf", "content")
        for h in hits:
            t.add_row(f"{h.score:.3f}", h.level.value, h.schema_type, f"{h.confidence:.2f}", h.content)
        console.print(t)


@app.command()
def stats(user: str, store: str = StoreOpt, as_json: bool = JsonOpt) -> None:
    """Counts of USER's nodes, edges, orphans and observations."""
    with errors():
        tree = open_tree(store)
        try:
            data = tree.stats(user)
        finally:
            tree.close()
        if as_json:
            print_json(data)
            return
        t = Table("what", "count")
        for key, value in data.items():
            t.add_row(key, str(value))
        console.print(t)


@app.command()
def users(store: str = StoreOpt, as_json: bool = JsonOpt) -> None:
    """List the users in the store."""
    with errors():
        tree = open_tree(store)
        try:
            ids = tree.users()
        finally:
            tree.close()
        if as_json:
            print_json(ids)
        else:
            for uid in ids:
                console.print(uid, highlight=False)


@app.command()
def export(
    user: str,
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write to this file instead of stdout."),
    store: str = StoreOpt,
) -> None:
    """Export everything stored about USER as JSON."""
    with errors():
        tree = open_tree(store)
        try:
            data = tree.export(user)
        finally:
            tree.close()
        blob = orjson.dumps(data, option=orjson.OPT_INDENT_2)
        if out is None:
            sys.stdout.write(blob.decode() + "\n")
        else:
            out.write_bytes(blob)
            console.print(f"wrote {out} ({len(blob):,} bytes)")


@app.command()
def forget(
    user: str,
    node_id: str,
    cascade: bool = typer.Option(False, help="Also remove the node's whole support subtree."),
    store: str = StoreOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Remove a node and whatever was derived only from it."""
    with errors():
        tree = open_tree(store)
        try:
            rep = tree.forget(user, node_id, cascade=cascade)
        finally:
            tree.close()
        if as_json:
            print_json({"removed": rep.removed, "changed": rep.changed})
        else:
            console.print(f"removed {len(rep.removed)} node(s): {', '.join(rep.removed)}")


@app.command("delete-user")
def delete_user(
    user: str,
    yes: bool = typer.Option(False, "--yes", help="Confirm the deletion."),
    store: str = StoreOpt,
) -> None:
    """Delete every row stored for USER."""
    if not yes:
        err_console.print("error: deleting a user needs --yes")
        raise typer.Exit(2)
    with errors():
        tree = open_tree(store)
        try:
            tree.delete_user(user)
        finally:
            tree.close()
        console.print(f"deleted {user}")


@app.command()
def rebuild(user: str, store: str = StoreOpt, as_json: bool = JsonOpt) -> None:
    """Replay USER's log into a fresh tree and store it."""
    with errors():
        tree = open_tree(store)
        try:
            rep = tree.rebuild(user)
        finally:
            tree.close()
        data = {"events": rep.events, "nodes": rep.nodes, "edges": rep.edges, "equal": rep.equal}
        if as_json:
            print_json(data)
        else:
            console.print(json.dumps(data))


def _register_components() -> None:
    # Components add their own commands; a component missing from a build is skipped.
    import importlib

    for module in ("personatree.consolidate.command", "personatree.retrieval.command",
                   "personatree.bench.command"):
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        mod.register(app)


_register_components()


def main() -> None:
    """Entry point of the ``personatree`` script."""
    app()
