"""The click group behind the ``personatree`` app: one ``error:`` line for usage errors,
help that names real types, and ``--version``.

Typer's rich formatting draws usage errors in a multi-line box and shows every
parameter's Python annotation (``<bool>`` beside a flag, ``{user}`` in the usage
line). Scripts and people grepping logs get one line instead, the same shape as the
library errors :func:`~personatree.cli.common.errors` prints.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer._click.core import Command, Context  # typer carries its own click since 0.25
from typer._click.exceptions import ClickException, UsageError
from typer.core import TyperArgument, TyperGroup, TyperOption

__all__ = ["PersonaTreeGroup", "version_option"]


# The names click's help has always used for these annotations.
_TYPE_NAMES = {"str": "TEXT", "int": "INTEGER", "float": "FLOAT", "Path": "PATH", "bool": "BOOLEAN",
               "datetime": "DATETIME"}


def _type_name(param: TyperOption | TyperArgument) -> str:
    bare = param.bare_type()
    inner = bare.removeprefix("list[").removesuffix("]")
    return _TYPE_NAMES.get(inner, inner.upper())


class _Option(TyperOption):
    """An option whose help shows click's type name, and none for a flag."""

    def display_type(self, ctx: Context) -> str:
        return "" if self.is_flag or self.count else _type_name(self)

    def display_type_rich(self, ctx: Context) -> str | None:
        if self.metavar is not None:
            return self.metavar
        shown = self.display_type(ctx)
        return shown or None


class _Argument(TyperArgument):
    """An argument shown as ``USER`` (``[USER]`` when optional) with its type name."""

    def display_type(self, ctx: Context) -> str:
        return _type_name(self)

    @property
    def display_name_raw(self) -> str:
        return self.metavar if self.metavar is not None else (self.name or "").upper()

    def _usage_display_name(self) -> str:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return name if self.nargs == 1 else name + "..."


def _plain_params(command: Command) -> None:
    """Give every parameter of ``command`` and its subcommands the plain help display."""
    # click builds --help on first use and caches it: build it now to restyle it too.
    help_option = command.get_help_option(Context(command))
    for param in [*command.params, *([help_option] if help_option is not None else [])]:
        if type(param) is TyperOption:
            param.__class__ = _Option
        elif type(param) is TyperArgument:
            param.__class__ = _Argument
    for sub in getattr(command, "commands", {}).values():
        _plain_params(sub)


class PersonaTreeGroup(TyperGroup):
    """The top-level group: plain parameter help, one-line usage errors."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _plain_params(self)

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, windows_expand_args: bool = True,
             **extra: Any) -> Any:
        """Run the app; a usage error is one ``error:`` line on stderr and exit code 2."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, windows_expand_args, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        except UsageError as exc:
            hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            typer.echo(f"error: {exc.format_message()}{hint}", err=True)
            sys.exit(exc.exit_code)
        except ClickException as exc:
            typer.echo(f"error: {exc.format_message()}", err=True)
            sys.exit(exc.exit_code)
        except typer.Abort:
            typer.echo("aborted", err=True)
            sys.exit(1)
        # Not standalone, click returns an exit code raised with typer.Exit (an int) or
        # the command's own return value (None for every command here).
        sys.exit(rv if isinstance(rv, int) else 0)


def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"personatree {__version__}")
        raise typer.Exit()


def version_option() -> Any:
    """The eager ``--version`` option of the app's callback."""
    return typer.Option(False, "--version", callback=_print_version, is_eager=True,
                        help="Print the version and exit.")
