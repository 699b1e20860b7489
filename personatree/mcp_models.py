"""The typed arguments and results of the MCP tools (see :mod:`personatree.mcp_server`).

The SDK turns a tool's return annotation into its advertised ``outputSchema`` and its
argument annotations into the ``inputSchema``: pydantic models and ``Annotated``
fields here give an agent the exact shape of every result and the description and
limits of every argument, checked before the call runs (the same limits the Python
API checks: a budget of at least one token, a non-empty query, ids no longer than
the store accepts).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .config import InputLimits
from .retrieval.result import RecallItem
from .view.profile import ProfileLine

__all__ = [
    "Budget", "ChatMessage", "ExplainResult", "ExplainedNode", "ExplainedObservation", "ForgetResult",
    "Limit", "NodeId", "ProfileLine", "ProfileResult", "Query", "RecallItem", "RecallResult", "RecallRoute",
    "RememberResult", "RememberedLeaf", "UserId", "jsonable",
]

_ID_CHARS = InputLimits().max_id_chars

UserId = Annotated[str | None, Field(
    default=None, max_length=_ID_CHARS,
    description="Whose memory (default: the server's user, when it was started with one).")]
NodeId = Annotated[str, Field(min_length=1, max_length=_ID_CHARS,
                              description="A node id, as returned by recall, remember or profile.")]
Query = Annotated[str, Field(min_length=1, description="The question or topic to find context for.")]
Budget = Annotated[int | None, Field(
    default=None, ge=1, description="Most tokens the context may take (default: the server's budget).")]
FromUser = Annotated[bool, Field(
    default=False, description="True when `query` is the user's own latest message rather than a question about "
                               "them: the goals, values and conditions they have stated come with it.")]
Limit = Annotated[int, Field(default=12, ge=1, le=200, description="Most claims and patterns to list.")]


class _Out(BaseModel):
    # Results are closed shapes: a field the schema does not name is a bug here.
    model_config = ConfigDict(extra="forbid")


class ChatMessage(BaseModel):
    """One chat message given to ``remember``."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant", "system", "tool"] = Field(default="user", description="Who said it.")
    content: str = Field(min_length=1, description="What was said, verbatim.")


class RememberedLeaf(_Out):
    """One piece of evidence a ``remember`` call extracted."""

    node_id: str
    content: str = Field(description="The statement, verbatim.")
    schema_type: str = Field(description="Its kind (preference, fact, event...).")
    action: Literal["attach", "conflict", "orphan"] = Field(
        description="attach: supports a pattern; conflict: contradicts one; orphan: waits for consolidation.")
    target: str | None = Field(description="The pattern it supports or contradicts, if any.")


class RememberResult(_Out):
    """What ``remember`` stored."""

    user_id: str
    observation_id: str
    duplicate: bool = Field(description="True when memory already held this: nothing new was stored.")
    leaves: list[RememberedLeaf] = Field(description="New evidence extracted (empty for a duplicate).")
    existing: list[str] = Field(
        default_factory=list, description="For a duplicate, the evidence that already records it.")


class RecallRoute(_Out):
    """The abstraction level the router chose for the query."""

    level: Literal["leaf", "mid", "root"]
    probabilities: dict[str, float]
    schema_types: list[str]


class RecallResult(_Out):
    """Context for a question: the text for the prompt and what it is made of."""

    user_id: str
    text: str = Field(description="Put this in the prompt.")
    tokens: int
    budget: int
    route: RecallRoute
    # The library's own result types: their fields are the schema (levels as strings).
    items: list[RecallItem]


class ExplainedNode(_Out):
    """A node on a support path, or a piece of evidence for or against it."""

    node_id: str
    level: Literal["leaf", "mid", "root"]
    schema_type: str
    content: str
    confidence: float
    n_support: int
    n_conflict: int
    t_first: str
    t_last: str
    edge_psi: float | None
    edge_reason: str | None


class ExplainedObservation(_Out):
    """An observation behind the evidence, verbatim."""

    id: str
    user_id: str
    session_id: str
    at: str
    messages: list[dict[str, str | None]]
    metadata: dict[str, object]
    seq: int


class ExplainResult(_Out):
    """Why a node is believed."""

    user_id: str
    node_id: str
    path: list[ExplainedNode] = Field(description="From the node up to its claim.")
    support: list[ExplainedNode]
    conflicts: list[ExplainedNode]
    observations: list[ExplainedObservation]
    archived: bool = Field(description="A leaf the tree's bounds moved to the archive.")
    text: str = Field(description="The explanation as readable text.")


class ProfileResult(_Out):
    """The user's standing profile."""

    user_id: str
    text: str = Field(description="Ready to keep in every prompt.")
    source: str
    note: str | None
    lines: list[ProfileLine]


class ForgetResult(_Out):
    """What ``forget`` removed."""

    user_id: str
    removed: list[str]
    changed: list[str]


def jsonable(value: Any) -> Any:
    """Dataclass dicts with datetimes and enums turned into JSON values."""
    from enum import Enum

    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    return value
