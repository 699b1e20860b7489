"""The ASGI application: :func:`create_app` builds it over an :class:`AsyncPersonaTree`.

The app owns no logic of its own: the routes (:mod:`.routes`) await the async tree, the
keys (:mod:`.keys`) say who may act for whom, errors become problem details
(:mod:`.problems`), and FastAPI's own body limit refuses oversized bodies while they
are read. Several worker processes (``uvicorn --workers N``) can serve one store:
each opens its own tree, and the stores are process-safe.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import AsyncIterator, Awaitable, Callable

from fastapi import FastAPI

from ..aio import AsyncPersonaTree
from .keys import ApiKeys
from .models import HealthOut
from .limits import DeclaredLengthLimit, Limits
from .problems import install_handlers
from .routes import build_router

__all__ = ["Limits", "TreeOpener", "create_app"]

#: Opens the tree a server works on (called once per worker, at start-up).
TreeOpener = Callable[[], Awaitable[AsyncPersonaTree]]


def _version() -> str:
    from .. import __version__

    return __version__


def create_app(tree: AsyncPersonaTree | TreeOpener, keys: ApiKeys, *, limits: Limits | None = None) -> FastAPI:
    """The REST application.

    Parameters
    ----------
    tree : AsyncPersonaTree or callable
        The memory to serve (the caller closes it), or a coroutine function that opens
        one at start-up (the app closes it at shutdown).
    keys : ApiKeys
        The accepted API keys.
    limits : Limits, optional
        Request size limits.

    Returns
    -------
    FastAPI
    """
    lim = limits or Limits()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if isinstance(tree, AsyncPersonaTree):
            app.state.tree = tree
            yield
            return
        app.state.tree = opened = await tree()
        try:
            yield
        finally:
            await opened.aclose()

    app = FastAPI(
        title="personatree", version=_version(), lifespan=lifespan,
        description=(
            "Evidence-tree memory for LLM agents over HTTP. Every call names its user; an API key "
            "(`Authorization: Bearer <key>`) is restricted to a set of users or to all. Errors are "
            "problem details (RFC 9457, `application/problem+json`)."
        ),
    )
    app.state.keys = keys
    install_handlers(app)
    # The limits are the routes' (not the app's): FastAPI's app-wide limit would replace the
    # early 413 problem of DeclaredLengthLimit with a plain-text one.
    app.include_router(build_router(limits=lim))
    app.add_middleware(DeclaredLengthLimit, limits=lim)

    @app.get("/healthz", tags=["server"])
    async def health() -> HealthOut:
        """Liveness: answers without a key."""
        return HealthOut(status="ok", version=_version())

    return app
