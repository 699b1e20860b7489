"""An MCP server that gives an agent a personatree memory (``personatree mcp``).

Five tools, each a coroutine calling :class:`~personatree.aio.AsyncPersonaTree` (the
sync core in a thread pool, so the server's event loop never waits on embedding):

``remember``  record what the user said (an observation; leaves are extracted and inserted)
``recall``    query-conditioned, token-budgeted context for a question
``explain``   why a claim is believed: support path, evidence, conflicts, observations
``profile``   the standing profile block (top claims and patterns)
``forget``    remove a node and whatever was derived only from it

User scoping: every tool takes an optional ``user_id``. A server started with a
default user (``personatree mcp --user maya``) uses it when the argument is omitted;
with ``lock_user=True`` (``--lock-user``) it refuses any other user, so that one
server process can be handed to one user's agent without exposing anyone else.

Results and arguments are typed (:mod:`personatree.mcp_models`): every tool advertises
a closed output schema, and every argument a description and the API's limits;
unknown arguments are refused. The profile is also a resource,
``personatree://profile/{user_id}`` (and ``personatree://profile`` for the default user).

Transports are the SDK's own: stdio (for desktop clients that spawn the server) and
streamable HTTP (``--transport http``). Built with the official ``mcp`` SDK
(``pip install 'personatree[mcp]'``); works with SDK 1.x (``FastMCP``) and 2.x
(``MCPServer``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, Field

from .errors import ConfigError, InputError, PersonaTreeError
from .mcp_models import (
    Budget,
    ChatMessage,
    ExplainResult,
    ForgetResult,
    FromUser,
    Limit,
    NodeId,
    ProfileResult,
    Query,
    RecallResult,
    RememberedLeaf,
    RememberResult,
    UserId,
    jsonable,
)

if TYPE_CHECKING:
    from .aio import AsyncPersonaTree
    from .api import PersonaTree

__all__ = ["ChatMessage", "build_server", "run_server", "server_class"]

F = TypeVar("F", bound=Callable[..., Any])

INSTRUCTIONS = (
    "Long-term memory about the user, kept as an evidence tree: leaves are things the user said, "
    "mids are patterns, roots are durable claims. Call `remember` with what the user tells you about "
    "themselves, `recall` with the current question before answering, `profile` at the start of a "
    "conversation, `explain` to see why a claim is believed, and `forget` when the user asks you to."
)


def server_class() -> tuple[type, type[Exception]]:
    """The SDK's high-level server class and its tool-error class.

    mcp 2.x renamed ``FastMCP`` to ``MCPServer``; both are supported so that an
    application pinned to either major version can embed this server.

    Raises
    ------
    ConfigError
        If the ``mcp`` package is not installed.
    """
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError

        return MCPServer, ToolError
    except ModuleNotFoundError as exc:
        if exc.name is not None and not exc.name.startswith("mcp"):
            raise
    try:
        from mcp.server.fastmcp import FastMCP  # type: ignore[no-redef,attr-defined,unused-ignore]
        from mcp.server.fastmcp.exceptions import ToolError  # type: ignore[no-redef,import-not-found,unused-ignore]

        return FastMCP, ToolError
    except ModuleNotFoundError as exc:
        if exc.name is not None and not exc.name.startswith("mcp"):
            raise
        raise ConfigError("the MCP server needs the mcp package: pip install 'personatree[mcp]'") from None


@dataclasses.dataclass(frozen=True)
class _Scope:
    """What every tool of one server shares: the memory, its user scoping and defaults."""

    tree: AsyncPersonaTree
    tool_error: type[Exception]
    default_user: str | None
    lock_user: bool
    default_budget: int | None

    def who(self, user_id: str | None) -> str:
        """The user a call is for; a tool error when there is none or another is refused."""
        uid = (user_id or "").strip() or self.default_user
        if not uid:
            raise self.tool_error("user_id is required: this server has no default user")
        if self.lock_user and uid != self.default_user:
            raise self.tool_error(f"this server only serves user {self.default_user!r}")
        return uid

    def guarded(self, fn: F) -> F:
        """The coroutine ``fn`` with library errors turned into a tool error.

        Library errors are expected outcomes for an agent (unknown node, empty query):
        they go back as a tool error with one clean message, never a traceback.
        """
        tool_error = self.tool_error

        @functools.wraps(fn)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except PersonaTreeError as exc:
                raise tool_error(f"{type(exc).__name__}: {exc}") from None

        return wrapper  # type: ignore[return-value]


def build_server(
    tree: PersonaTree | AsyncPersonaTree,
    *,
    default_user: str | None = None,
    lock_user: bool = False,
    default_budget: int | None = None,
    name: str = "personatree",
) -> Any:
    """An MCP server (SDK ``MCPServer``/``FastMCP``) exposing ``tree`` as tools and resources.

    Parameters
    ----------
    tree : PersonaTree or AsyncPersonaTree
        The memory; the caller keeps ownership (close it after the server stops). A
        sync tree is wrapped in an :class:`~personatree.aio.AsyncPersonaTree`, so that
        tool calls run in its thread pool and never block the server's event loop.
    default_user : str, optional
        User of calls that give no ``user_id``.
    lock_user : bool
        Refuse any ``user_id`` other than ``default_user`` (requires it).
    default_budget : int, optional
        Token budget of ``recall`` when the call gives none (default: the tree's config).
    name : str
        Server name shown to clients.

    Returns
    -------
    MCPServer or FastMCP
        Call ``.run("stdio")`` or connect the SDK's ``Client`` to it in-process.

    Raises
    ------
    ConfigError
        If ``lock_user`` is set without ``default_user``, a default budget is not a
        positive integer, or ``mcp`` is missing.
    """
    from . import __version__
    from .aio import AsyncPersonaTree

    if lock_user and not default_user:
        raise ConfigError("lock_user needs a default_user")
    if default_budget is not None and (isinstance(default_budget, bool) or not isinstance(default_budget, int)
                                       or default_budget < 1):
        raise ConfigError("the default budget must be a positive integer")
    server_cls, tool_error = server_class()
    try:
        server = server_cls(name=name, instructions=INSTRUCTIONS, version=__version__)
    except TypeError:  # mcp 1.x: no version argument
        server = server_cls(name=name, instructions=INSTRUCTIONS)
    atree = tree if isinstance(tree, AsyncPersonaTree) else AsyncPersonaTree(tree)
    scope = _Scope(atree, tool_error, default_user, lock_user, default_budget)
    for make in _TOOLS:
        server.tool()(scope.guarded(make(scope)))
    _refuse_unknown_arguments(server)
    add_profile_resources(server, scope)
    return server


# Each tool is made by a function of the server's scope: the SDK reads a tool's name,
# description, argument schema (with the limits of mcp_models) and output schema from
# the signature and docstring of what it is given.


def _remember_tool(scope: _Scope) -> Callable[..., Awaitable[RememberResult]]:
    async def remember(
        text: Annotated[str | None, Field(default=None, min_length=1,
                                          description="One user message, verbatim.")] = None,
        messages: Annotated[list[ChatMessage] | None, Field(
            default=None, min_length=1, description="An exchange of {role, content} messages.")] = None,
        user_id: UserId = None,
        at: Annotated[str | None, Field(default=None, description="When it was said, ISO 8601 (default now).")] = None,
        session_id: Annotated[str | None, Field(
            default=None, max_length=256, description="Groups the messages of one conversation.")] = None,
    ) -> RememberResult:
        """Record what the user said so it becomes evidence in their memory.

        Give either `text` (one user message, verbatim) or `messages` (an exchange of
        {role, content}). `at` is an ISO-8601 time (default now); `session_id` groups
        messages of one conversation. Returns the evidence leaves extracted and whether
        each was attached to an existing pattern, recorded as a conflict, or kept as an
        orphan; `duplicate` is true when the memory already held all of it.
        """
        uid = scope.who(user_id)
        if (text is None) == (messages is None):
            raise InputError("give exactly one of text or messages")
        msgs: list[dict[str, str]] = (
            [{"role": "user", "content": text}] if text is not None
            else [{"role": m.role, "content": m.content} for m in messages or []]
        )
        rep = await scope.tree.observe(uid, msgs, at=at or None, session_id=session_id or None)
        existing = [] if rep.decisions else await scope.tree.run(recorded_statements, scope.tree.sync, uid,
                                                                 rep.observation_id, msgs)
        return RememberResult(
            user_id=uid, observation_id=rep.observation_id, duplicate=rep.duplicate or bool(existing),
            leaves=[RememberedLeaf(node_id=d.leaf_id, content=d.content, schema_type=d.schema_type,
                                   action=d.action, target=d.target) for d in rep.decisions],  # type: ignore[arg-type]
            existing=existing,
        )

    return remember


def _recall_tool(scope: _Scope) -> Callable[..., Awaitable[RecallResult]]:
    async def recall(query: Query, user_id: UserId = None, budget: Budget = None,
                     from_user: FromUser = False) -> RecallResult:
        """Context about the user relevant to `query`, within a token budget.

        Returns `text` to put in the prompt, the `items` shown (claims, patterns and
        evidence with confidence and sources) and the `tokens` used.
        """
        uid = scope.who(user_id)
        rec = await scope.tree.recall(uid, query, budget=scope.default_budget if budget is None else budget,
                                      from_user=from_user)
        data: dict[str, Any] = rec.to_dict()
        data.pop("trace", None)  # the packer's trace is for debugging, not for the model's context
        return RecallResult.model_validate({**data, "user_id": uid})

    return recall


def _explain_tool(scope: _Scope) -> Callable[..., Awaitable[ExplainResult]]:
    async def explain(node_id: NodeId, user_id: UserId = None) -> ExplainResult:
        """Why a claim, pattern or piece of evidence is believed.

        Returns its support path up to the claim, the supporting and conflicting
        evidence with dates, the verbatim observations behind it, and a readable `text`.
        """
        uid = scope.who(user_id)
        ex = await scope.tree.explain(uid, node_id)
        return ExplainResult.model_validate(jsonable({**dataclasses.asdict(ex), "text": ex.render()}))

    return explain


def _profile_tool(scope: _Scope) -> Callable[..., Awaitable[ProfileResult]]:
    async def profile(user_id: UserId = None, limit: Limit = 12) -> ProfileResult:
        """The user's standing profile: their top claims and patterns by confidence, as `text`.

        Also readable as the resource ``personatree://profile/{user_id}``.
        """
        return await profile_result(scope, scope.who(user_id), limit)

    return profile


def _forget_tool(scope: _Scope) -> Callable[..., Awaitable[ForgetResult]]:
    async def forget(
        node_id: NodeId,
        user_id: UserId = None,
        cascade: Annotated[bool, Field(default=False, description="Also remove its whole support subtree.")] = False,
    ) -> ForgetResult:
        """Remove a node (and with `cascade`, its whole support subtree) from the user's memory.

        Summaries derived only from it are removed too. The raw conversation log is kept
        (delete the user to erase it).
        """
        uid = scope.who(user_id)
        rep = await scope.tree.forget(uid, node_id, cascade=cascade)
        return ForgetResult(user_id=uid, removed=list(rep.removed), changed=list(rep.changed))

    return forget


# In the order clients list them.
_TOOLS = (_remember_tool, _recall_tool, _explain_tool, _profile_tool, _forget_tool)


async def profile_result(scope: _Scope, user_id: str, limit: int = 12) -> ProfileResult:
    """The profile block of ``user_id`` as the ``profile`` tool and resource return it."""
    from .view.profile import profile_block

    block = await scope.tree.run(profile_block, scope.tree.sync, user_id, limit=limit)
    return ProfileResult.model_validate(block.to_dict())


def add_profile_resources(server: Any, scope: _Scope) -> None:
    """Expose the profile as resources: ``personatree://profile/{user_id}`` for any user
    the server serves, and ``personatree://profile`` for its default user."""
    try:
        from mcp.server.mcpserver.exceptions import ResourceError
    except ModuleNotFoundError:  # mcp 1.x
        from mcp.server.fastmcp.exceptions import ResourceError  # type: ignore[no-redef,import-not-found,unused-ignore]

    async def read(user_id: str | None) -> str:
        # The SDK hides any error but its own ResourceError behind "error creating
        # resource": a refused user or an unknown one must say so.
        try:
            return (await profile_result(scope, scope.who(user_id))).text
        except (PersonaTreeError, scope.tool_error) as exc:
            raise ResourceError(str(exc) if isinstance(exc, scope.tool_error) else
                                f"{type(exc).__name__}: {exc}") from None

    async def user_profile(user_id: str) -> str:
        """The standing profile of a user: top claims and patterns, ready for a prompt."""
        return await read(user_id)

    server.resource("personatree://profile/{user_id}", name="profile", mime_type="text/plain")(user_profile)
    if scope.default_user:
        async def default_profile() -> str:
            """The standing profile of this server's user."""
            return await read(None)

        server.resource("personatree://profile", name="default-profile", mime_type="text/plain")(default_profile)


def recorded_statements(tree: PersonaTree, user_id: str, observation_id: str,
                        messages: list[dict[str, str]]) -> list[str]:
    """The leaves that already record every statement of the user's ``messages``.

    An observation that made no new leaf either said nothing memorable (a greeting)
    or repeated what its session had recorded (the same ``remember`` sent twice); only
    the second is a duplicate. Empty unless every sentence is already evidence.
    """
    from .text.sentences import split_sentences

    sentences = [x for m in messages if m["role"] == "user" for x in split_sentences(m["content"])]
    stored = tree.store.observations(user_id, [observation_id])
    if not sentences or not stored:
        return []
    graph = tree.graph(user_id)
    found = [graph.find_statement(stored[0].session_id, x) for x in sentences]
    return [] if None in found else sorted({x for x in found if x is not None})


def _refuse_unknown_arguments(server: Any) -> None:
    """Make every tool refuse arguments it does not declare.

    The SDK validates tool arguments with a pydantic model that ignores unknown keys, so
    a misspelt argument (``bugdet``) would be dropped silently and the call would run
    with the default. Each tool's argument model is replaced by a subclass that refuses
    them, naming the argument and the ones the tool takes, and the advertised input
    schema says ``additionalProperties: false``.

    Raises
    ------
    ConfigError
        If this SDK version keeps its tools where this function cannot find them (so
        the server is never built without the check).
    """
    from pydantic import ConfigDict, model_validator

    tools = getattr(getattr(server, "_tool_manager", None), "_tools", None)
    if not isinstance(tools, dict) or not tools:
        raise ConfigError("this mcp SDK version keeps its tools where personatree cannot check their arguments")
    for name, tool in tools.items():
        meta = getattr(tool, "fn_metadata", None)
        base = getattr(meta, "arg_model", None)
        if meta is None or not (isinstance(base, type) and issubclass(base, BaseModel)):
            raise ConfigError(f"cannot check the arguments of MCP tool {name!r} with this mcp SDK version")
        allowed = tuple(f.alias or k for k, f in base.model_fields.items())

        def refuse(cls: type, data: Any, _allowed: tuple[str, ...] = allowed, _name: str = name) -> Any:
            if isinstance(data, dict):
                unknown = sorted(str(k) for k in data if k not in _allowed)
                if unknown:
                    raise ValueError(f"unknown argument{'s' if len(unknown) > 1 else ''} "
                                     f"{', '.join(map(repr, unknown))}; {_name} takes {', '.join(_allowed)}")
            return data

        strict = type(base.__name__, (base,), {
            "__module__": base.__module__,
            "model_config": ConfigDict(**{**base.model_config, "extra": "forbid"}),  # type: ignore[typeddict-item]
            # pydantic's stubs do not describe a classmethod made at run time.
            "_refuse_unknown": model_validator(mode="before")(classmethod(refuse)),  # type: ignore[arg-type]
        })
        meta.arg_model = strict
        params = getattr(tool, "parameters", None)
        if isinstance(params, dict):
            params["additionalProperties"] = False


def run_server(
    tree: PersonaTree,
    *,
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 8765,
    path: str = "/mcp",
    **options: Any,
) -> None:
    """Serve ``tree`` until the client disconnects (stdio) or the process is stopped (HTTP).

    Parameters
    ----------
    tree : PersonaTree
    transport : {"stdio", "http"}
        ``http`` is the SDK's streamable HTTP transport.
    host, port, path : str, int, str
        Where the HTTP transport listens (ignored for stdio).
    **options
        Passed to :func:`build_server` (``default_user``, ``lock_user``, ``default_budget``).
    """
    server = build_server(tree, **options)
    if transport == "stdio":
        server.run("stdio")
        return
    if transport != "http":
        raise ConfigError(f"unknown transport {transport!r}; use stdio or http")
    try:
        # mcp 2.x takes the HTTP settings as run() arguments ...
        server.run("streamable-http", host=host, port=port, streamable_http_path=path)
    except TypeError:
        # ... mcp 1.x keeps them in server.settings.
        server.settings.host, server.settings.port = host, port
        server.settings.streamable_http_path = path
        server.run("streamable-http")
