"""personatree: an evidence-graph memory for LLM agents.

Per user, a typed tree of what the user has shown (leaves), the patterns those
observations support (mids) and durable claims about the person (roots); every
claim stays traceable to the observations behind it.

>>> from personatree import PersonaTree                       # doctest: +SKIP
>>> tree = PersonaTree.open("memory.db")                       # doctest: +SKIP
>>> tree.observe("ana", [{"role": "user", "content": "I love hiking."}])  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# Names imported "as" themselves (the result types, open_store, the judge errors) are
# public too, though not in the pinned ``__all__`` below.
from .api import ForgetReport, PersonaTree, RebuildReport
from .aio import AsyncPersonaTree
from .clock import FixedClock, SystemClock
from .config import (
    ConfidenceConfig,
    ConsolidationConfig,
    InputLimits,
    InsertionConfig,
    PersonaTreeConfig,
    RecallConfig,
    TieringConfig,
)
from .embedders import HashingEmbedder, SentenceTransformerEmbedder
from .errors import (
    ConfigError,
    EmbedderError,
    InputError,
    InvariantError,
    JudgeError,
    JudgeOutputError,
    JudgeTimeoutError,
    MessageError,
    MigrationError,
    NotFoundError,
    PersonaTreeError,
    ProviderError,
    QueryError,
    RateLimitError,
    SchemaError,
    StaleStateError,
    StoreBusyError,
    StoreError,
    UnknownNodeError,
    UnknownUserError,
)
from .explanation import Explanation
from .graph import MemoryGraph
from .judge import OfflineJudge
from .ports import ChangeSet, Clock, Embedder, JournalEvent, Judge, Store, TokenCounter
from .portability import ImportReport
from .retrieval.result import Recall
from .schema import SchemaRegistry, SchemaType
from .store import open_store
from .tiering.profile import Profile
from .types import (
    Edge,
    EdgeKind,
    InsertReport,
    LeafDecision,
    LeafDraft,
    Level,
    Message,
    Node,
    Observation,
    Provenance,
    Route,
    SearchHit,
    Summary,
    Verdict,
)

if TYPE_CHECKING:  # pragma: no cover
    from .consolidate.plan import ConsolidationPlan

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # ConsolidationPlan is loaded on first use: its package pulls in the clustering
    # stack (scipy), which ``import personatree`` should not pay for.
    if name == "ConsolidationPlan":
        from .consolidate.plan import ConsolidationPlan

        return ConsolidationPlan
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    # the API
    "PersonaTree",
    "AsyncPersonaTree",
    "PersonaTreeConfig",
    "ConfidenceConfig",
    "InsertionConfig",
    "ConsolidationConfig",
    "RecallConfig",
    "TieringConfig",
    "InputLimits",
    "ForgetReport",
    "RebuildReport",
    "open_store",
    # results
    "Recall",
    "Profile",
    "ConsolidationPlan",
    "ImportReport",
    # the data
    "Level",
    "EdgeKind",
    "Message",
    "Observation",
    "Provenance",
    "LeafDraft",
    "Node",
    "Edge",
    "Verdict",
    "Route",
    "Summary",
    "InsertReport",
    "LeafDecision",
    "Explanation",
    "SearchHit",
    "MemoryGraph",
    "SchemaRegistry",
    "SchemaType",
    # the ports and their stock implementations
    "Embedder",
    "Judge",
    "Store",
    "TokenCounter",
    "Clock",
    "ChangeSet",
    "JournalEvent",
    "SentenceTransformerEmbedder",
    "OfflineJudge",
    "HashingEmbedder",
    "SystemClock",
    "FixedClock",
    # errors
    "PersonaTreeError",
    "ConfigError",
    "SchemaError",
    "InputError",
    "MessageError",
    "QueryError",
    "NotFoundError",
    "UnknownUserError",
    "UnknownNodeError",
    "InvariantError",
    "StoreError",
    "StoreBusyError",
    "StaleStateError",
    "MigrationError",
    "EmbedderError",
    "JudgeError",
    "JudgeOutputError",
    "JudgeTimeoutError",
    "ProviderError",
    "RateLimitError",
    "__version__",
]
