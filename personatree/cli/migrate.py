"""``personatree migrate``: copy a store to another, verified by counts and checksums.

Registered by :func:`register`::

    personatree migrate --from sqlite:///memory.db --to postgresql://app@db/personatree
"""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import Any, List, Optional

import typer
from rich.progress import Progress
from rich.table import Table

from ..errors import StoreError
from ..store import open_store
from ..store.copy import copy_store
from .common import console, errors, print_json

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add the ``migrate`` command to the CLI ``app``."""
    app.command("migrate")(migrate)


def migrate(
    source: str = typer.Option(..., "--from", help="Store to copy from (SQLite path or URL, postgresql://...)."),
    target: str = typer.Option(..., "--to", help="Store to copy into (created and migrated when new)."),
    users: Optional[List[str]] = typer.Option(None, "--user", "-u", help="Copy only this user (repeatable)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace users that exist in the target with other data."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON for scripts."),
) -> None:
    """Copy every user, metadata and cache entry from --from to --to, then verify each
    user by row counts and checksum. Re-running skips users already copied."""
    with errors():
        if source == target:
            raise StoreError("--from and --to name the same store")
        src_path = source[len("sqlite:///"):] if source.startswith("sqlite:///") else (
            source if "://" not in source else None)
        if src_path is not None and not Path(src_path).exists():
            # Opening a SQLite path creates the file; a typo must not "copy" nothing.
            raise StoreError(f"--from {source!r}: no such SQLite file")
        with closing(open_store(source)) as src, closing(open_store(target)) as dst:
            wanted = users or None
            total = len(wanted) if wanted else len(src.users())
            if as_json or total == 0:
                report = copy_store(src, dst, users=wanted, overwrite=overwrite)
            else:
                with Progress(console=console, transient=True) as bar:
                    task = bar.add_task("copying users", total=total)
                    report = copy_store(src, dst, users=wanted, overwrite=overwrite,
                                        progress=lambda _uid: bar.advance(task))
        if as_json:
            print_json(report.to_dict())
        else:
            table = Table("user", "status", "observations", "nodes", "edges", "journal", "cache", "checksum",
                          title="personatree migrate")
            for u in report.users:
                c: dict[str, Any] = u.counts
                style = {"copied": "green", "skipped": "dim", "failed": "red"}[u.status]
                table.add_row(u.user_id, f"[{style}]{u.status}[/]", *(str(c.get(k, 0)) for k in
                              ("observations", "nodes", "edges", "journal", "cache")), u.checksum[:12])
            console.print(table)
            console.print(f"metadata entries: {report.meta}, unscoped cache entries: {report.cache}")
            for p in report.problems:
                console.print(f"[red]problem:[/] {p}", highlight=False)
            console.print("[green]verified[/]" if report.ok else "[red]verification failed[/]")
        if not report.ok:
            raise typer.Exit(1)
