"""The ``personatree`` command line: a thin layer over the Python API.

Every command takes ``--store`` (a SQLite path or store URL; the environment
variable ``PERSONATREE_STORE`` sets the default) and most take ``--json`` for
machine-readable output. Library errors become one clean line on stderr and exit
code 1, usage errors one ``error:`` line and exit code 2 (:mod:`.group`), never a
traceback. Reading commands load no model (it loads on the first text to embed).
Long ingestions show a progress bar on stderr, so that stdout stays clean for ``--json``.

Commands that only read refuse a store file that does not exist (instead of
creating an empty one); ``observe``, ``import``, ``demo`` and ``mcp`` create it, in
a folder that exists: a store path whose folder is missing is refused as a likely typo
unless ``--create`` asks for the folders to be made.

One module per command group (:mod:`.memory`, :mod:`.records`, :mod:`.chat_import`,
:mod:`.serve`, :mod:`.consolidate`, :mod:`.recall`, :mod:`.migrate`), each with a
``register(app)``; what they share is in :mod:`.common` and :mod:`.opening`.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib.metadata import EntryPoint, entry_points

import typer

from . import chat_import, consolidate, memory, migrate, recall, records, serve
from . import rest
from .chat_import import chat_export_interactions
from .group import PersonaTreeGroup, version_option
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
    cls=PersonaTreeGroup,
)


@app.callback()
def _options(version: bool = version_option()) -> None:
    """Evidence-tree memory for LLM agents: observe, consolidate, recall, explain."""
for _group in (memory, records, chat_import, serve, consolidate, recall, migrate):
    _group.register(app)
rest.register(app)  # personatree serve: the REST server (the server extra)


COMPONENTS: tuple[str, ...] = ()


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


PLUGIN_GROUP = "personatree.commands"
# The plugins this project ships, by entry point, for an install whose metadata predates
# the group (an editable install made before the entry point was declared).
SHIPPED_PLUGINS = {"bench": "personatree_bench.command:app"}


def _plugin_entry_points() -> list[EntryPoint]:
    """The ``personatree.commands`` entry points installed, plus any shipped one they lack."""
    found = list(entry_points(group=PLUGIN_GROUP))
    names = {ep.name for ep in found}
    return found + [EntryPoint(name, value, PLUGIN_GROUP) for name, value in SHIPPED_PLUGINS.items()
                    if name not in names]


def _register_plugins(target: typer.Typer, found: Iterable[EntryPoint]) -> list[str]:
    """Add the typer sub-app each entry point names, under the entry point's name.

    A plugin whose package or one of its dependencies is not installed still gets its
    command, which fails with one line naming the extra to install (by convention the
    extra has the command's name), so every other command keeps working. Any other error
    while loading a plugin is a bug in it and propagates.

    Parameters
    ----------
    target : typer.Typer
        The app that receives the sub-apps.
    found : Iterable[EntryPoint]
        Entry points whose objects are ``typer.Typer`` sub-apps.

    Returns
    -------
    list[str]
        The names registered, in order.
    """
    done: list[str] = []
    for ep in found:
        try:
            sub = ep.load()
        except ModuleNotFoundError as exc:
            _register_missing_plugin(target, ep.name, exc.name or str(exc))
        else:
            target.add_typer(sub, name=ep.name)
        done.append(ep.name)
    return done


def _register_missing_plugin(target: typer.Typer, name: str, missing: str) -> None:
    # Takes any arguments, --help included, so that every use says what to install.
    @target.command(name, add_help_option=False, help=f"Not installed: needs the extra '{name}' of personatree.",
                    context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def unavailable() -> None:
        from ..errors import ConfigError

        with errors():
            raise ConfigError(f"personatree {name} needs {missing}: pip install 'personatree[{name}]'")


_register_plugins(app, _plugin_entry_points())


def main() -> None:
    """Entry point of the ``personatree`` script."""
    app()
