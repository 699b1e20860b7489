"""The ``personatree`` command line: a thin layer over the Python API.

Every command takes ``--store`` (a SQLite path or store URL; the environment
variable ``PERSONATREE_STORE`` sets the default) and most take ``--json`` for
machine-readable output. Library errors become one clean line on stderr and a
non-zero exit, never a traceback. Long ingestions show a progress bar on stderr,
so that stdout stays clean for ``--json``.

Commands that only read refuse a store file that does not exist (instead of
creating an empty one); ``observe``, ``import``, ``demo`` and ``mcp`` create it, in
a folder that exists: a store path whose folder is missing is refused as a likely typo
unless ``--create`` asks for the folders to be made.

One module per command group (:mod:`.memory`, :mod:`.records`, :mod:`.chat_import`,
:mod:`.serve`, :mod:`.consolidate`, :mod:`.recall`, :mod:`.migrate`), each with a
``register(app)``; what they share is in :mod:`.common` and :mod:`.opening`.
"""

from __future__ import annotations

import typer

from . import chat_import, consolidate, memory, migrate, recall, records, serve
from .chat_import import chat_export_interactions
from .common import CreateOpt, JsonOpt, StoreOpt, console, err_console, errors, print_json, progress_bar
from .opening import open_tree, store_file
from .reading import json_lines

# What the command modules share is importable from the package too.
__all__ = [
    "CreateOpt",
    "JsonOpt",
    "StoreOpt",
    "app",
    "chat_export_interactions",
    "console",
    "err_console",
    "errors",
    "json_lines",
    "main",
    "open_tree",
    "print_json",
    "progress_bar",
    "store_file",
]

app = typer.Typer(
    name="personatree",
    help="Evidence-tree memory for LLM agents: observe, consolidate, recall, explain.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
for _group in (memory, records, chat_import, serve, consolidate, recall, migrate):
    _group.register(app)


COMPONENTS = ("personatree.bench.command",)


def _register_components(modules: tuple[str, ...] = COMPONENTS) -> list[str]:
    """Let each component add its commands; return the modules that were registered.

    A component missing from a build (its ``command`` module or its package absent)
    is skipped. Any other error, including a ``ModuleNotFoundError`` for something the
    component itself imports, is a real bug and propagates.
    """
    import importlib

    done: list[str] = []
    for module in modules:
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is not None and (module == exc.name or module.startswith(exc.name + ".")):
                continue
            raise
        mod.register(app)
        done.append(module)
    return done


_register_components()


def main() -> None:
    """Entry point of the ``personatree`` script."""
    app()
