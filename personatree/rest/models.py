"""The REST server's request and response bodies, as pydantic models.

Requests refuse unknown fields (a misspelt ``bugdet`` is a 422, not a silent default).
Responses are read from the library's result objects (``from_attributes``), so the
OpenAPI document describes exactly what the Python API returns.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..types import Level

__all__ = [
    "MessageIn", "ObserveIn", "ObserveBatchIn", "RecallIn", "SearchIn", "ConsolidateIn",
    "InsertOut", "BatchOut", "RecallOut", "SearchOut", "ExplanationOut", "ProfileOut", "ForgetOut",
    "ImportOut", "ConsolidateOut", "StatsOut", "UsersOut", "HealthOut",
]



class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Out(BaseModel):
    model_config = ConfigDict(from_attributes=True)


# -- requests --------------------------------------------------------------------------


class MessageIn(_In):
    """One chat message."""

    role: Literal["user", "assistant", "system", "tool"] = "user"
    content: str = Field(min_length=1, description="The verbatim text.")
    name: str | None = Field(None, description="Optional speaker name.")


class ObserveIn(_In):
    """One interaction to record. Give ``text`` (one user message) or ``messages``."""

    text: str | None = Field(None, min_length=1, description="One user message, verbatim.")
    messages: list[MessageIn] | None = Field(None, min_length=1, description="The messages of the interaction.")
    at: datetime | None = Field(None, description="When it happened (ISO 8601); default now.")
    session_id: str | None = Field(None, min_length=1, description="Session id; default the UTC date.")
    observation_id: str | None = Field(None, min_length=1,
                                       description="Stable id; default derived from the content (a repeat is a no-op).")
    metadata: dict[str, Any] | None = Field(None, description="JSON data stored verbatim with the observation.")

    @model_validator(mode="after")
    def _one_of(self) -> "ObserveIn":
        if (self.text is None) == (self.messages is None):
            raise ValueError("give exactly one of text or messages")
        return self

    def interaction(self) -> dict[str, Any]:
        """The mapping :meth:`PersonaTree.observe_many` takes."""
        messages: Any = self.text if self.messages is None else [m.model_dump(exclude_none=True)
                                                                  for m in self.messages]
        return {"messages": messages, "at": self.at, "session_id": self.session_id,
                "observation_id": self.observation_id, "metadata": self.metadata}


class ObserveBatchIn(_In):
    """Many interactions of one user, recorded in order (all or nothing on bad input)."""

    interactions: list[ObserveIn] = Field(min_length=1, max_length=1000)


class RecallIn(_In):
    """A recall query."""

    query: str = Field(min_length=1, description="The question or topic.")
    budget: int | None = Field(None, ge=1, description="Token budget; default the server's config.")
    model: str | None = Field(None, min_length=1, description="Model whose tokenizer counts the budget.")
    levels: list[Level] | None = Field(None, min_length=1, description="Restrict to these levels.")
    trace: bool = Field(False, description="Include the packer's trace (for debugging).")


class SearchIn(_In):
    """A plain similarity search."""

    query: str = Field(min_length=1)
    k: int = Field(10, ge=1, le=1000, description="How many hits.")
    levels: list[Level] | None = Field(None, min_length=1, description="Restrict to these levels.")


class ConsolidateIn(_In):
    """A consolidation pass."""

    dry_run: bool = Field(False, description="Plan only; change nothing.")
    now: datetime | None = Field(None, description="The pass's notion of now; default the clock's.")


# -- responses -------------------------------------------------------------------------


class LeafDecisionOut(_Out):
    leaf_id: str
    content: str
    schema_type: str
    action: Literal["attach", "conflict", "orphan"]
    target: str | None


class InsertOut(_Out):
    """What ``observe`` did."""

    user_id: str
    observation_id: str
    duplicate: bool = Field(description="The observation was stored already; nothing changed.")
    decisions: list[LeafDecisionOut]


class BatchOut(BaseModel):
    """What ``observe`` did with each interaction, in order."""

    reports: list[InsertOut]


class RouteOut(BaseModel):
    level: Level
    probabilities: dict[str, float]
    schema_types: list[str]


class RecallItemOut(BaseModel):
    node_id: str
    level: Level
    schema_type: str
    depth: int
    parent: str | None
    tokens: int
    relevance: float
    confidence: float
    fit: float
    utility: float
    dense_rank: int | None
    lexical_rank: int | None
    sources: list[tuple[str, int]] = Field(description="(observation id, turn) pairs behind the node.")
    reason: str
    neighbour_of: str | None


class TraceOut(BaseModel):
    node_ids: list[str]
    action: str
    utility: float
    tokens: int
    reason: str


class RecallOut(BaseModel):
    """Context for an LLM within a token budget."""

    user_id: str
    text: str = Field(description="The rendered context, ready for a prompt.")
    tokens: int
    budget: int
    route: RouteOut
    items: list[RecallItemOut]
    trace: list[TraceOut] | None = None


class SearchHitOut(_Out):
    node_id: str
    level: Level
    schema_type: str
    content: str
    score: float
    confidence: float
    archived: bool


class SearchOut(BaseModel):
    user_id: str
    hits: list[SearchHitOut]


class ExplainStepOut(_Out):
    node_id: str
    level: Level
    schema_type: str
    content: str
    confidence: float
    n_support: int
    n_conflict: int
    t_first: datetime
    t_last: datetime
    edge_psi: float | None
    edge_reason: str | None


class MessageOut(_Out):
    role: str
    content: str
    name: str | None


class ObservationOut(_Out):
    id: str
    session_id: str
    at: datetime
    messages: list[MessageOut]
    metadata: dict[str, Any]


class ExplanationOut(_Out):
    """Why a node is believed."""

    user_id: str
    node_id: str
    path: list[ExplainStepOut] = Field(description="The node and its support path upward.")
    support: list[ExplainStepOut]
    conflicts: list[ExplainStepOut]
    observations: list[ObservationOut]
    archived: bool
    text: str = Field(description="A readable form.")


class ProfileItemOut(_Out):
    node_id: str
    level: Level
    schema_type: str
    confidence: float
    priority: float
    section: str
    line: str


class ProfileOut(_Out):
    """The standing profile block for a system prompt."""

    user_id: str
    text: str
    items: list[ProfileItemOut]
    tokens: int
    budget: int


class ForgetOut(_Out):
    user_id: str
    removed: list[str]
    changed: list[str]


class ImportOut(_Out):
    user_id: str
    observations: int
    nodes: int
    edges: int
    events: int
    version: int


class ConsolidateOut(BaseModel):
    """A consolidation plan, summarised (the full plan with ``?full=true``)."""

    user_id: str
    applied: bool = Field(description="Whether the plan was applied (false for dry runs and empty plans).")
    empty: bool
    now: datetime
    base_version: int
    digest: str
    method: str
    counts: dict[str, int]
    plan: dict[str, Any] | None = Field(None, description="The whole serialised plan, when asked for.")


class StatsOut(BaseModel):
    user_id: str
    leaves: int
    mids: int
    roots: int
    orphans: int
    support_edges: int
    conflict_edges: int
    observations: int
    archived_leaves: int
    version: int


class UsersOut(BaseModel):
    users: list[str] = Field(description="The users with data that this key may see.")


class HealthOut(BaseModel):
    status: Literal["ok"]
    version: str
