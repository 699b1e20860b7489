"""The REST server's request and response bodies, as pydantic models.

Requests refuse unknown fields (a misspelt ``bugdet`` is a 422, not a silent default).
Responses are the library's own result types where they exist.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .. import Explanation, InsertReport, Level, Route, SearchHit
from ..retrieval.result import RecallItem, TraceEntry

__all__ = [
    "MessageIn", "ObserveIn", "ObserveBatchIn", "RecallIn", "SearchIn", "ConsolidateIn",
    "BatchOut", "ChatImportOut", "RecallOut", "SearchOut", "ExplanationOut", "ConsolidateOut", "StatsOut", "UsersOut",
    "HealthOut",
]



class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


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
    from_user: bool = Field(False, description="The query is the user's own latest message, not a "
                            "question about them: their stated goals, values and conditions come with it.")
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


# -- responses --------------------------------------------------------------------------
#
# The library's result types (frozen dataclasses) are response types as they are, so the
# OpenAPI document describes exactly what the Python API returns; the models below only
# add what a response needs beside them (the user, a readable text, an opt-out).


class BatchOut(BaseModel):
    """What ``observe`` did with each interaction, in order."""

    reports: list[InsertReport]


class ChatImportOut(BaseModel):
    """What a chat import stored."""

    user_id: str
    summary: dict[str, Any] = Field(description="The export's counts and what insertion did (new, duplicates, "
                                                "leaves, attached, conflicts, ...).")


class RecallOut(BaseModel):
    """Context for an LLM within a token budget (:class:`~personatree.Recall`)."""

    user_id: str
    text: str = Field(description="The rendered context, ready for a prompt.")
    tokens: int
    budget: int
    route: Route
    items: list[RecallItem]
    trace: list[TraceEntry] | None = Field(None, description="The packer's decisions, when asked for.")


class SearchOut(BaseModel):
    user_id: str
    hits: list[SearchHit]


class ExplanationOut(BaseModel):
    """Why a node is believed (:class:`~personatree.Explanation`), with its text form."""

    explanation: Explanation
    text: str = Field(description="A readable form.")


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
