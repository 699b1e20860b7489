"""An MCP server that gives an agent a personatree memory (``personatree mcp``).

Five tools, each a thin call into :class:`~personatree.api.PersonaTree`:

``remember``  record what the user said (an observation; leaves are extracted and inserted)
``recall``    query-conditioned, token-budgeted context for a question
``explain``   why a claim is believed: support path, evidence, conflicts, observations
``profile``   the standing profile block (top claims and patterns)
``forget``    remove a node and whatever was derived only from it

User scoping: every tool takes an optional ``user_id``. A server started with a
default user (``personatree mcp --user maya``) uses it when the argument is omitted;
with ``lock_user=True`` (``--lock-user``) it refuses any other user, so that one
server process can be handed to one user's agent without exposing anyone else.

Transports are the SDK's own: stdio (for desktop clients that spawn the server) and
streamable HTTP (``--transport http``). Built with the official ``mcp`` SDK
(``pip install 'personatree[mcp]'``); works with SDK 1.x (``FastMCP``) and 2.x
(``MCPServer``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, Field

from .errors import ConfigError, InputError, PersonaTreeError

if TYPE_CHECKING:
    from .api import PersonaTree

__all__ = ["ChatMessage", "build_server", "run_server", "server_class"]

F = TypeVar("F", bound=Callable[..., Any])

INSTRUCTIONS = (
    "Long-term memory about the user, kept as an evidence tree: leaves are things the user said, "
    "mids are patterns, roots are durable claims. Call `remember` with what the user tells you about "
    "themselves, `recall` with the current question before answering, `profile` at the start of a "
    "conversation, `explain` to see why a claim is believed, and `forget` when the user asks you to."
)


class ChatMessage(BaseModel):
    """One chat message given to ``remember``."""

    role: Literal["user", "assistant", "system", "tool"] = "user"
    content: str = Field(min_length=1)


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

    tree: PersonaTree
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
        """``fn`` with library errors turned into a tool error.

        Library errors are expected outcomes for an agent (unknown node, empty query):
        they go back as a tool error with one clean message, never a traceback.
        """
        tool_error = self.tool_error

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except PersonaTreeError as exc:
                raise tool_error(f"{type(exc).__name__}: {exc}") from None

        return wrapper  # type: ignore[return-value]


def build_server(
    tree: PersonaTree,
    *,
    default_user: str | None = None,
    lock_user: bool = False,
    default_budget: int | None = None,
    name: str = "personatree",
) -> Any:
    """An MCP server (SDK ``MCPServer``/``FastMCP``) exposing ``tree`` as tools.

    Parameters
    ----------
    tree : PersonaTree
        The memory; the caller keeps ownership (close it after the server stops).
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
        If ``lock_user`` is set without ``default_user``, or ``mcp`` is missing.
    """
    if lock_user and not default_user:
        raise ConfigError("lock_user needs a default_user")
    server_cls, tool_error = server_class()
    server = server_cls(name=name, instructions=INSTRUCTIONS)
    scope = _Scope(tree, tool_error, default_user, lock_user, default_budget)
    for make in _TOOLS:
        server.tool()(scope.guarded(make(scope)))
    _refuse_unknown_arguments(server)
    return server


# Each tool is made by a function of the server's scope: the SDK reads a tool's name,
# description and argument schema from the signature and docstring of what it is given.


def _remember_tool(scope: _Scope) -> Callable[..., dict[str, Any]]:
    def remember(
        text: str | None = None,
        messages: list[ChatMessage] | None = None,
        user_id: str | None = None,
        at: str | None = None,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        """Record what the user said so it becomes evidence in their memory.

        Give either `text` (one user message, verbatim) or `messages` (an exchange of
        {role, content}). `at` is an ISO-8601 time (default now); `session_id` groups
        messages of one conversation. Returns the evidence leaves extracted and whether
        each was attached to an existing pattern, recorded as a conflict, or kept as an orphan.
        """
        uid = scope.who(user_id)
        if (text is None) == (messages is None):
            raise InputError("give exactly one of text or messages")
        msgs: list[dict[str, str]] = (
            [{"role": "user", "content": text}] if text is not None
            else [{"role": m.role, "content": m.content} for m in messages or []]
        )
        when: datetime | str | None = at or None
        rep = scope.tree.observe(uid, msgs, at=when, session_id=session_id or None)
        return {
            "user_id": uid,
            "observation_id": rep.observation_id,
            "duplicate": rep.duplicate,
            "leaves": [
                {"node_id": d.leaf_id, "content": d.content, "schema_type": d.schema_type,
                 "action": d.action, "target": d.target}
                for d in rep.decisions
            ],
        }

    return remember


def _recall_tool(scope: _Scope) -> Callable[..., dict[str, Any]]:
    def recall(query: str, user_id: str | None = None, budget: int | None = None) -> dict[str, Any]:
        """Context about the user relevant to `query`, within a token budget.

        Returns `text` to put in the prompt, the `items` shown (claims, patterns and
        evidence with confidence and sources) and the `tokens` used.
        """
        uid = scope.who(user_id)
        # Only a missing budget takes the server's default: 0 or a negative budget is the
        # caller's mistake and gets the API's InputError, not a silent replacement.
        rec = scope.tree.recall(uid, query, budget=scope.default_budget if budget is None else budget)
        data: dict[str, Any] = rec.to_dict()
        data.pop("trace", None)  # the packer's trace is for debugging, not for the model's context
        data["user_id"] = uid
        return data

    return recall


def _explain_tool(scope: _Scope) -> Callable[..., dict[str, Any]]:
    def explain(node_id: str, user_id: str | None = None) -> dict[str, Any]:
        """Why a claim, pattern or piece of evidence is believed.

        Returns its support path up to the claim, the supporting and conflicting
        evidence with dates, the verbatim observations behind it, and a readable `text`.
        """
        uid = scope.who(user_id)
        ex = scope.tree.explain(uid, node_id)
        data = dataclasses.asdict(ex)
        data["text"] = ex.render()
        return _jsonable(data)

    return explain


def _profile_tool(scope: _Scope) -> Callable[..., dict[str, Any]]:
    def profile(user_id: str | None = None, limit: int = 12) -> dict[str, Any]:
        """The user's standing profile: their top claims and patterns by confidence, as `text`."""
        from .view.profile import profile_block

        return profile_block(scope.tree, scope.who(user_id), limit=limit).to_dict()

    return profile


def _forget_tool(scope: _Scope) -> Callable[..., dict[str, Any]]:
    def forget(node_id: str, user_id: str | None = None, cascade: bool = False) -> dict[str, Any]:
        """Remove a node (and with `cascade`, its whole support subtree) from the user's memory.

        Summaries derived only from it are removed too. The raw conversation log is kept
        (delete the user to erase it).
        """
        uid = scope.who(user_id)
        rep = scope.tree.forget(uid, node_id, cascade=cascade)
        return {"user_id": uid, "removed": list(rep.removed), "changed": list(rep.changed)}

    return forget


# In the order clients list them.
_TOOLS = (_remember_tool, _recall_tool, _explain_tool, _profile_tool, _forget_tool)


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


def _jsonable(value: Any) -> Any:
    """Dataclass dicts with datetimes and enums turned into JSON values."""
    from enum import Enum

    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    return value


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
