"""The commands over what is stored about a user as a whole: ``export``, ``forget``,
``delete-user`` and ``rebuild``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import orjson
import typer

from .common import JsonOpt, StoreOpt, console, err_console, errors, print_json
from .opening import open_tree

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``, in the order ``--help`` lists them."""
    app.command()(export)
    app.command()(forget)
    app.command("delete-user")(delete_user)
    app.command()(rebuild)


def export(
    user: str,
    out: Path | None = typer.Option(None, "--out", "-o", help="Write to this file instead of stdout."),
    store: str = StoreOpt,
    as_json: bool = typer.Option(False, "--json", help="Accepted for symmetry: the export is always JSON."),
) -> None:
    """Export everything stored about USER as JSON."""
    del as_json  # every command takes --json; this one prints JSON either way
    with errors():
        with open_tree(store) as tree:
            data = tree.export(user)
        blob = orjson.dumps(data, option=orjson.OPT_INDENT_2)
        if out is None:
            sys.stdout.write(blob.decode() + "\n")
        else:
            out.write_bytes(blob)
            console.print(f"wrote {out} ({len(blob):,} bytes)")


def forget(
    user: str,
    node_id: str,
    cascade: bool = typer.Option(False, help="Also remove the node's whole support subtree."),
    store: str = StoreOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Remove a node and whatever was derived only from it."""
    with errors():
        with open_tree(store) as tree:
            rep = tree.forget(user, node_id, cascade=cascade)
        if as_json:
            print_json({"removed": rep.removed, "changed": rep.changed})
        else:
            console.print(f"removed {len(rep.removed)} node(s): {', '.join(rep.removed)}")


def delete_user(
    user: str,
    yes: bool = typer.Option(False, "--yes", help="Confirm the deletion."),
    store: str = StoreOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Delete every row stored for USER."""
    if not yes:
        err_console.print("error: deleting a user needs --yes")
        raise typer.Exit(2)
    with errors():
        with open_tree(store) as tree:
            tree.delete_user(user)
        if as_json:
            print_json({"deleted": user})
        else:
            console.print(f"deleted {user}", markup=False)


def rebuild(user: str, store: str = StoreOpt, as_json: bool = JsonOpt) -> None:
    """Replay USER's log into a fresh tree and store it."""
    with errors():
        with open_tree(store) as tree:
            rep = tree.rebuild(user)
        data = {"events": rep.events, "nodes": rep.nodes, "edges": rep.edges, "equal": rep.equal}
        if as_json:
            print_json(data)
        else:
            console.print(json.dumps(data))
