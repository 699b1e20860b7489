"""What every command shares: the consoles, the common options, error handling and output.

Library errors become one clean line on stderr and a non-zero exit, never a
traceback. Long ingestions show a progress bar on stderr, so that stdout stays clean
for ``--json``.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

import orjson
import typer
from rich.console import Console, ConsoleDimensions

from ..errors import PersonaTreeError

__all__ = [
    "BATCH",
    "CliConsole",
    "CreateOpt",
    "JsonOpt",
    "StoreOpt",
    "console",
    "err_console",
    "errors",
    "print_json",
    "progress_bar",
]

# Output piped to a file or another program has no width to fit; rich assumes 80
# columns and then cuts table cells ("sta…"). This wide is enough never to cut a row.
_PIPE_WIDTH = 10_000


class CliConsole(Console):
    """A rich console that is full width when its stream is not a terminal.

    On a terminal (or with ``COLUMNS`` set) it fits the terminal as usual.
    """

    @property
    def size(self) -> ConsoleDimensions:
        """The terminal's size, or :data:`_PIPE_WIDTH` columns when piped."""
        dims = super().size
        if self._width is None and not self.is_terminal and "COLUMNS" not in os.environ:
            return ConsoleDimensions(_PIPE_WIDTH, dims.height)
        return dims

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size


console = CliConsole()
err_console = CliConsole(stderr=True)

StoreOpt = typer.Option(
    "personatree.db", "--store", "-s", envvar="PERSONATREE_STORE",
    help="SQLite file or store URL (env PERSONATREE_STORE).",
)
JsonOpt = typer.Option(False, "--json", help="Print JSON for scripts.")
CreateOpt = typer.Option(
    False, "--create",
    help="Create the store's missing folders. Without it a new store is created only in a folder "
         "that exists, so a mistyped --store path is an error rather than a new empty memory.",
)

_PROGRESS_MIN = 32
BATCH = 32
"""Interactions embedded per batch by the commands that ingest."""


@contextlib.contextmanager
def errors() -> Iterator[None]:
    """Turn library and file errors into one clean line on stderr and exit code 1."""
    try:
        yield
    except PersonaTreeError as exc:
        _fail(f"{type(exc).__name__}: {exc}")
    except OSError as exc:
        # Writing --out files, reading inputs, binding a port: the message is enough.
        _fail(f"{type(exc).__name__}: {exc}")
    except KeyboardInterrupt:
        err_console.print("interrupted", highlight=False)
        raise typer.Exit(130) from None


def _fail(message: str) -> NoReturn:
    # markup=False: the message may contain user text with square brackets.
    err_console.print("error: " + message, highlight=False, markup=False, soft_wrap=True)
    raise typer.Exit(1) from None


@contextlib.contextmanager
def progress_bar(total: int, label: str) -> Iterator[Callable[[int], None]]:
    """A rich progress bar on stderr for ``total`` items; yields ``update(done)``.

    Shown only on a terminal and for more than one batch, so scripts and small inputs
    get clean output.
    """
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    show = total > _PROGRESS_MIN and err_console.is_terminal
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=err_console, transient=True, disable=not show) as bar:
        task = bar.add_task(label, total=total)
        yield lambda done: bar.update(task, completed=done)


def print_json(data: Any) -> None:
    """Write ``data`` as JSON to stdout."""
    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2, default=str).decode() + "\n")
