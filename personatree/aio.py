"""The async API: :class:`AsyncPersonaTree`, the :class:`~personatree.api.PersonaTree`
calls as coroutines.

There is one core, the synchronous one: every coroutine runs the sync call of the same
name in a thread of a bounded pool owned by the async tree, so an event loop (FastAPI,
an MCP server, LangGraph's ``ainvoke``) never blocks on embedding, the judge or the
store, and nothing is implemented twice. Concurrency is the core's: the engine's
per-process lock guards the cached trees, and writers of one user take turns (a lock
beside a SQLite file, an advisory lock in PostgreSQL), so concurrent tasks interleave
their calls safely and every acknowledged write is stored.

>>> async with await AsyncPersonaTree.open("memory.db") as tree:      # doctest: +SKIP
...     await tree.observe("ana", "I love hiking.")
...     print((await tree.recall("ana", "what does Ana like?")).text)
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Concatenate, Coroutine, ParamSpec, TypeVar

from .api import PersonaTree
from .errors import ConfigError, PersonaTreeError
from .portability import ImportReport, import_export

__all__ = ["AsyncPersonaTree", "ClosedError", "DEFAULT_MAX_THREADS"]

P = ParamSpec("P")
R = TypeVar("R")

#: Threads of the pool by default. The core serialises most work on its lock, so more
#: threads than this add waiting, not throughput; a few let reads overlap embedding.
DEFAULT_MAX_THREADS = min(8, (os.cpu_count() or 1) + 2)


class ClosedError(PersonaTreeError):
    """A call was made on an :class:`AsyncPersonaTree` after :meth:`~AsyncPersonaTree.aclose`."""


def _coroutine(
    method: Callable[Concatenate[PersonaTree, P], R],
) -> Callable[Concatenate["AsyncPersonaTree", P], Coroutine[Any, Any, R]]:
    """The coroutine version of a ``PersonaTree`` method: the same call, in the pool."""
    name = method.__name__

    @functools.wraps(method)
    async def call(self: "AsyncPersonaTree", *args: P.args, **kwargs: P.kwargs) -> R:
        bound: Callable[..., R] = getattr(self.sync, name)
        return await self.run(bound, *args, **kwargs)

    return call


class AsyncPersonaTree:
    """An evidence-tree memory whose calls are coroutines.

    Wraps a :class:`~personatree.api.PersonaTree`; each coroutine has the signature,
    the result and the errors of the sync method of the same name (see its
    docstring). Use :meth:`open` (or pass a tree you opened), then :meth:`aclose` or
    ``async with``.

    Parameters
    ----------
    tree : PersonaTree
        The sync tree to run the calls on. :meth:`aclose` closes it.
    max_threads : int, optional
        Size of the thread pool that runs the sync calls (at most that many calls run
        at once; the others wait their turn without blocking the event loop).
        Default :data:`DEFAULT_MAX_THREADS`.

    Notes
    -----
    A cancelled coroutine stops waiting, but the sync call it started runs to its end
    in its thread (a thread cannot be interrupted safely): a cancelled ``observe`` may
    still be stored, exactly once. A ``progress`` callback given to ``observe_many``
    is called from the pool's thread.
    """

    def __init__(self, tree: PersonaTree, *, max_threads: int | None = None) -> None:
        if max_threads is not None and (not isinstance(max_threads, int) or isinstance(max_threads, bool)
                                        or max_threads < 1):
            raise ConfigError("max_threads must be a positive integer")
        self.sync = tree
        self.max_threads = max_threads or DEFAULT_MAX_THREADS
        self._pool = ThreadPoolExecutor(self.max_threads, thread_name_prefix="personatree-aio")
        self._closed = False

    @classmethod
    async def open(cls, *args: Any, max_threads: int | None = None, **kwargs: Any) -> "AsyncPersonaTree":
        """Open (or create) a memory, as :meth:`PersonaTree.open` does, without blocking the loop.

        Parameters
        ----------
        *args, **kwargs
            Those of :meth:`PersonaTree.open` (``path``, ``config``, ``embedder``, ...).
        max_threads : int, optional
            Size of the thread pool (see :class:`AsyncPersonaTree`).

        Returns
        -------
        AsyncPersonaTree
        """
        # Loading the embedder and migrating the store take seconds: not on the loop.
        tree = await asyncio.to_thread(PersonaTree.open, *args, **kwargs)
        try:
            return cls(tree, max_threads=max_threads)
        except BaseException:
            tree.close()
            raise

    async def run(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        """Run a sync callable in the tree's thread pool and await its result.

        The building block of every coroutine here, public so that an interface can run
        a sync helper over :attr:`sync` (a service that takes the tree) the same way.

        Raises
        ------
        ClosedError
            After :meth:`aclose`.
        """
        if self._closed:
            raise ClosedError("this AsyncPersonaTree is closed")
        loop = asyncio.get_running_loop()
        # The caller's context variables (request ids, tracing) follow the call into
        # the thread, as with asyncio.to_thread.
        ctx = contextvars.copy_context()
        return await loop.run_in_executor(self._pool, functools.partial(ctx.run, fn, *args, **kwargs))

    async def aclose(self) -> None:
        """Wait for the running calls, then close the tree and its store. Idempotent."""
        if self._closed:
            return
        self._closed = True
        # Calls already submitted finish first: a write acknowledged by the pool is
        # never cut off by the close of its store.
        await asyncio.to_thread(self._pool.shutdown, wait=True)
        await asyncio.to_thread(self.sync.close)

    @property
    def closed(self) -> bool:
        """Whether :meth:`aclose` was called."""
        return self._closed

    async def __aenter__(self) -> "AsyncPersonaTree":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AsyncPersonaTree({self.sync.store!r}, max_threads={self.max_threads})"

    # -- the PersonaTree calls, as coroutines --------------------------------------------

    observe = _coroutine(PersonaTree.observe)
    observe_many = _coroutine(PersonaTree.observe_many)
    import_chat = _coroutine(PersonaTree.import_chat)
    consolidate = _coroutine(PersonaTree.consolidate)
    forget = _coroutine(PersonaTree.forget)
    delete_observation = _coroutine(PersonaTree.delete_observation)
    delete_user = _coroutine(PersonaTree.delete_user)
    rebuild = _coroutine(PersonaTree.rebuild)
    graph = _coroutine(PersonaTree.graph)
    users = _coroutine(PersonaTree.users)
    node = _coroutine(PersonaTree.node)
    nodes = _coroutine(PersonaTree.nodes)
    confidence = _coroutine(PersonaTree.confidence)
    search = _coroutine(PersonaTree.search)
    explain = _coroutine(PersonaTree.explain)
    render = _coroutine(PersonaTree.render)
    stats = _coroutine(PersonaTree.stats)
    recall = _coroutine(PersonaTree.recall)
    profile = _coroutine(PersonaTree.profile)
    judge_usage = _coroutine(PersonaTree.judge_usage)
    export = _coroutine(PersonaTree.export)

    async def import_export(self, data: object) -> ImportReport:
        """Import a user's export (a dict, JSON text or bytes), as
        :func:`personatree.portability.import_export` does.

        Returns
        -------
        ImportReport

        Raises
        ------
        InputError
            For a malformed export; nothing is stored.
        """
        return await self.run(import_export, self.sync, data)

