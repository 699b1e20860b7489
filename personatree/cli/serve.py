"""The commands that hand the memory to someone else: ``profile`` (the block an agent
keeps in every prompt), ``view`` (an HTML page) and ``mcp`` (a server for agents)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from .common import CreateOpt, JsonOpt, StoreOpt, console, err_console, errors, print_json
from .opening import open_tree, store_file

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``, in the order ``--help`` lists them."""
    app.command()(profile)
    app.command()(view)
    app.command()(mcp)


def profile(
    user: str,
    limit: int = typer.Option(12, "--limit", "-n", min=1, help="Most claims and patterns to show."),
    store: str = StoreOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Print USER's profile block: the top claims and patterns an agent keeps in every prompt."""
    from ..view.profile import profile_block

    with errors():
        with open_tree(store) as tree:
            block = profile_block(tree, user, limit=limit)
        if as_json:
            print_json(block.to_dict())
            return
        if block.note:
            err_console.print(f"[dim]note: {escape(block.note)}[/]", highlight=False)
        if block.lines:
            t = Table("level", "type", "conf", "+/-", "line", title=f"profile of {escape(user)}")
            for x, after in zip(block.lines, [*block.lines[1:], None]):
                # A rule between the claims and the recent statements, as the block has headers.
                t.add_row(x.level, x.schema_type, f"{x.confidence:.2f}", f"+{x.n_support}/-{x.n_conflict}",
                          escape(x.content), end_section=after is not None and after.section != x.section)
            console.print(t)
        elif block.text:
            console.print(block.text, highlight=False, markup=False)


def view(
    user: str,
    out: Path | None = typer.Option(None, "--out", "-o", help="HTML file to write (default USER.html)."),
    open_browser: bool = typer.Option(False, "--open", help="Open the page in a web browser."),
    store: str = StoreOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Write an interactive HTML page of USER's tree (self-contained: opens offline)."""
    from ..view import tree_html

    with errors():
        with open_tree(store) as tree:
            page = tree_html(tree, user)
        path = out or Path(f"{user}.html")
        path.write_text(page, encoding="utf-8")
        if as_json:
            print_json({"path": str(path), "bytes": len(page.encode())})
        else:
            console.print(f"wrote {path} ({len(page.encode()):,} bytes)", highlight=False)
        if open_browser:
            import webbrowser

            webbrowser.open(path.resolve().as_uri())


def mcp(
    user: str | None = typer.Option(None, "--user", "-u", help="Default user of tool calls without user_id."),
    lock_user: bool = typer.Option(False, "--lock-user", help="Refuse any user other than --user."),
    transport: str = typer.Option("stdio", "--transport", "-t", help="stdio or http (streamable HTTP)."),
    host: str = typer.Option("127.0.0.1", help="HTTP host."),
    port: int = typer.Option(8765, min=1, max=65535, help="HTTP port."),
    path: str = typer.Option("/mcp", help="HTTP endpoint path."),
    budget: int | None = typer.Option(None, "--budget", "-b", min=1, help="Default recall token budget."),
    store: str = StoreOpt,
    create: bool = CreateOpt,
) -> None:
    """Serve the memory to agents over MCP (tools: remember, recall, explain, profile, forget).

    A --store file that does not exist is created (in a folder that exists; --create also
    makes missing folders) and announced on stderr.
    """
    from ..errors import ConfigError
    from ..mcp_server import build_server, run_server

    with errors():
        if transport not in ("stdio", "http"):
            raise ConfigError(f"unknown transport {transport!r}; use stdio or http")
        if lock_user and not user:
            raise ConfigError("--lock-user needs --user")
        store_path = store_file(store)
        is_new = store_path is not None and not store_path.expanduser().exists()
        with open_tree(store, must_exist=False, create_dirs=create) as tree:
            if is_new:
                # A server runs unattended: say that it starts on an empty memory.
                err_console.print(f"personatree: created a new, empty store at {store_path}", highlight=False,
                                  markup=False)
            build_server(tree, default_user=user, lock_user=lock_user)  # fail early on a missing SDK
            if transport == "http":
                err_console.print(f"personatree MCP on http://{host}:{port}{path} (store {store})", highlight=False)
            run_server(tree, transport=transport, host=host, port=port, path=path,  # type: ignore[arg-type]
                       default_user=user, lock_user=lock_user, default_budget=budget)
