"""``personatree serve``: the REST server (:mod:`personatree.rest`) under uvicorn.

The command checks its settings and keys in the parent process (so a bad key file is
one ``error:`` line, not a crash in every worker), then hands uvicorn the import string
of :func:`worker_app`; each worker process builds its own app and opens its own tree
from the settings passed in the environment variable ``PERSONATREE_SERVE``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer

from .common import CreateOpt, StoreOpt, err_console, errors
from .opening import open_tree, store_file

__all__ = ["SETTINGS_ENV", "register", "serve", "worker_app"]

#: Where the parent process leaves the settings for its workers.
SETTINGS_ENV = "PERSONATREE_SERVE"


def register(app: typer.Typer) -> None:
    """Add the ``serve`` command to ``app``."""
    app.command("serve")(serve)


def worker_app() -> object:
    """The ASGI app of one worker, from the settings in ``PERSONATREE_SERVE`` (a uvicorn factory)."""
    import asyncio

    from ..aio import AsyncPersonaTree
    from ..rest import Limits, create_app, load_keys

    settings = json.loads(os.environ[SETTINGS_ENV])
    keys = load_keys(settings["keys_file"])

    async def opener() -> AsyncPersonaTree:
        # The model loads in a thread: the worker's event loop is already running.
        tree = await asyncio.to_thread(open_tree, settings["store"], must_exist=False,
                                       create_dirs=settings["create"])
        return AsyncPersonaTree(tree, max_threads=settings["threads"])

    limits = Limits(max_body_bytes=settings["max_body_bytes"], max_import_bytes=settings["max_import_bytes"])
    return create_app(opener, keys, limits=limits)


def serve(
    host: str = typer.Option("127.0.0.1", help="Interface to listen on (0.0.0.0 for every interface)."),
    port: int = typer.Option(8080, min=1, max=65535, help="TCP port."),
    workers: int = typer.Option(1, "--workers", "-w", min=1, help="Worker processes (use PostgreSQL for several)."),
    keys_file: Path | None = typer.Option(
        None, "--keys-file", "-k", envvar="PERSONATREE_API_KEYS_FILE",
        help="File of API keys, one '<key> <users|*> \\[name]' a line (also: env PERSONATREE_API_KEYS)."),
    max_body_bytes: int = typer.Option(1 << 20, min=1, help="Largest request body (bytes)."),
    max_import_bytes: int = typer.Option(64 << 20, min=1, help="Largest body of the import endpoints (bytes)."),
    threads: int | None = typer.Option(None, min=1, help="Threads per worker that run memory calls."),
    log_level: str = typer.Option("info", help="uvicorn log level (requests are logged without keys)."),
    store: str = StoreOpt,
    create: bool = CreateOpt,
) -> None:
    """Serve the memory over HTTP as a REST/JSON API with an OpenAPI document at /docs.

    Every request needs 'Authorization: Bearer <key>'; each key is restricted to a set of
    users or to all ('*'). Endpoints live under /v1/users/{user_id}/.
    """
    from ..errors import ConfigError

    with errors():
        try:
            import uvicorn

            from ..rest import load_keys
        except ModuleNotFoundError as exc:
            raise ConfigError(f"personatree serve needs {exc.name}: pip install 'personatree[server]'") from None
        keys = load_keys(keys_file)
        path = store_file(store)
        if path is not None and not path.expanduser().exists():
            # Created by the first worker; said here, once, since a server runs unattended.
            open_tree(store, must_exist=False, create_dirs=create).close()
            err_console.print(f"personatree: created a new, empty store at {path}", highlight=False, markup=False)
        os.environ[SETTINGS_ENV] = json.dumps({
            "store": store, "keys_file": None if keys_file is None else str(keys_file), "create": create,
            "threads": threads, "max_body_bytes": max_body_bytes, "max_import_bytes": max_import_bytes,
        })
        err_console.print(f"personatree REST on http://{host}:{port} (store {store}, {workers} worker"
                          f"{'s' if workers > 1 else ''}, {len(keys)} API key{'s' if len(keys) > 1 else ''})",
                          highlight=False, markup=False)
        uvicorn.run("personatree.cli.rest:worker_app", factory=True, host=host, port=port, workers=workers,
                    log_level=log_level, server_header=False)
