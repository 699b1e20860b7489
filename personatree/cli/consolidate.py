"""Command line for consolidation: ``personatree consolidate`` and the job script.

``register(app)`` adds ``consolidate USER [--dry-run|--apply] [--json] [--store PATH]``
and ``consolidate --all`` to the main Typer app (a dry run unless ``--apply``); :func:`job_main` is the entry point of
``consolidation/run_job.py`` (and of ``python -m personatree.cli.consolidate``).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any, Optional, Sequence

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..types import utc
from .common import JsonOpt, StoreOpt, console, err_console, errors, print_json
from .opening import open_tree

if TYPE_CHECKING:
    from ..consolidation_job import JobReport, UserResult

__all__ = ["register", "job_main", "run_with_progress", "summary_table"]

_STYLE = {"consolidated": "green", "up-to-date": "dim", "planned": "cyan", "unchanged": "dim",
          "locked": "yellow", "stale": "yellow", "failed": "red"}


def summary_table(report: JobReport) -> Table:
    """A rich table with one row per user."""
    t = Table(title=f"consolidation: {len(report.results)} users in {report.seconds:.1f}s")
    for col in ("user", "status", "version", "new mids", "roots", "merges", "deleted", "trimmed", "pruned", "s"):
        t.add_column(col, justify="left" if col in ("user", "status") else "right")
    t.add_column("error", overflow="fold")
    for r in report.results:
        c = r.counts
        t.add_row(
            r.user_id, f"[{_STYLE.get(r.status, '')}]{r.status}[/]", str(r.version),
            str(c.get("new_mids", "")), str(c.get("promotions", "")), str(c.get("merges", "")),
            str(c.get("deletions", "")), str(c.get("trimmed_leaves", "")), str(c.get("prunes", "")),
            f"{r.seconds:.2f}", r.error,
        )
    return t


def run_with_progress(console: Console, show: bool = True, **kwargs: Any) -> JobReport:
    """:func:`~personatree.consolidation_job.run_job` with a progress bar on ``console``."""
    # Imported here: the job pulls in the clustering stack (scipy, hdbscan), which every
    # other command would otherwise load at start-up.
    from ..consolidation_job import run_job

    if not show:
        return run_job(**kwargs)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        bar = progress.add_task("consolidating", total=None)

        def tick(res: UserResult, done: int, total: int) -> None:
            progress.update(bar, total=total, completed=done, description=f"{res.user_id}: {res.status}")

        return run_job(on_result=tick, **kwargs)


def register(app: typer.Typer) -> None:
    """Add the ``consolidate`` command to ``app``."""
    app.command("consolidate")(consolidate)


def consolidate(
    user: Optional[str] = typer.Argument(None, help="The user to consolidate (or --all)."),
    all_users: bool = typer.Option(False, "--all", help="Every user changed since the last run."),
    # Dry run unless asked: a pass deletes orphans and rewrites claims, so a person at
    # a terminal sees the plan first. The scheduled job script applies by default.
    dry_run: bool = typer.Option(
        True, "--dry-run/--apply", help="Print the plan only (default), or apply it."
    ),
    as_json: bool = JsonOpt,
    store: str = StoreOpt,
    now: Optional[str] = typer.Option(None, help="Logical time of the pass (ISO 8601)."),
    workers: int = typer.Option(0, help="--all: process-pool size (0: CPU count)."),
    scheduler: Optional[str] = typer.Option(None, help="--all: Dask scheduler, tcp://host:8786."),
    force: bool = typer.Option(False, help="--all: also users unchanged since their last pass."),
) -> None:
    """Cluster orphans into patterns, promote durable claims and bound growth."""
    at = utc(datetime.fromisoformat(now)) if now else None
    if all_users == (user is not None):
        err_console.print("error: give a USER or --all (not both)", highlight=False)
        raise typer.Exit(2)
    if all_users:
        with errors():
            report = run_with_progress(
                err_console, not as_json and err_console.is_terminal, store=store, workers=workers or None,
                scheduler=scheduler, now=at, dry_run=dry_run, force=force,
            )
        if as_json:
            print_json(report.to_dict())
        else:
            console.print(summary_table(report))
        raise typer.Exit(report.exit_code)
    assert user is not None  # a USER or --all, checked above
    with errors(), open_tree(store) as tree:
        plan = tree.consolidate(user, dry_run=dry_run, now=at)
    if as_json:
        sys.stdout.write(plan.to_json(indent=2) + "\n")
    else:
        console.print(plan.describe(), highlight=False, markup=False)
        console.print("(dry run: nothing applied; --apply applies it)" if dry_run else
                        "applied" if not plan.is_empty() else "nothing to apply")


def job_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the scheduled job; returns the exit code (1 if any user failed)."""
    ap = argparse.ArgumentParser(prog="run_job", description="Consolidate every user changed since the last run.")
    ap.add_argument("store", help="SQLite file or store URL")
    ap.add_argument("--workers", type=int, default=0, help="process-pool size (0: CPU count)")
    ap.add_argument("--scheduler", default=None, help="Dask scheduler address, e.g. tcp://dask:8786")
    ap.add_argument("--user", action="append", dest="users", help="only this user (repeatable)")
    ap.add_argument("--now", default=None, help="logical time (ISO 8601; default now)")
    ap.add_argument("--dry-run", action="store_true", help="plan only")
    ap.add_argument("--force", action="store_true", help="also users unchanged since their last pass")
    ap.add_argument("--config", default=None, help="PersonaTreeConfig as a JSON file")
    ap.add_argument("--lock-dir", default=None, help="directory of per-user lock files")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    from ..config import PersonaTreeConfig
    from ..errors import PersonaTreeError

    err = err_console
    try:
        cfg = None
        if args.config:
            with open(args.config, encoding="utf-8") as fh:
                cfg = PersonaTreeConfig.model_validate(json.load(fh))
        report = run_with_progress(
            err, not (args.quiet or args.json), store=args.store, users=args.users,
            workers=args.workers or None, scheduler=args.scheduler,
            now=utc(datetime.fromisoformat(args.now)) if args.now else None,
            dry_run=args.dry_run, force=args.force, config=cfg, lock_dir=args.lock_dir,
        )
    except (PersonaTreeError, OSError, ValueError) as exc:
        err.print(f"[red]error:[/] {type(exc).__name__}: {exc}", highlight=False)
        return 2
    if args.json:
        sys.stdout.write(json.dumps(report.to_dict(), indent=2) + "\n")
    else:
        console.print(summary_table(report))
        for r in report.failed:
            err.print(f"[red]failed:[/] {r.user_id}: {r.error}", highlight=False)
    return report.exit_code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(job_main())
