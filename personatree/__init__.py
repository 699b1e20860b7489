"""personatree: an evidence-graph memory for LLM agents.

Per user, a typed tree of what the user has shown (leaves), the patterns those
observations support (mids) and durable claims about the person (roots); every
claim stays traceable to the observations behind it.

>>> from personatree import PersonaTree                       # doctest: +SKIP
>>> tree = PersonaTree.open("memory.db")                       # doctest: +SKIP
>>> tree.observe("ana", [{"role": "user", "content": "I love hiking."}])  # doctest: +SKIP
"""

from __future__ import annotations

from .api import ForgetReport, PersonaTree, RebuildReport
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
    MessageError,
    MigrationError,
    NotFoundError,
    PersonaTreeError,
    QueryError,
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
from .schema import SchemaRegistry, SchemaType
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

__version__ = "0.1.0"

__all__ = [
    # the API
    "PersonaTree",
    "PersonaTreeConfig",
    "ConfidenceConfig",
    "InsertionConfig",
    "ConsolidationConfig",
    "RecallConfig",
    "TieringConfig",
    "InputLimits",
    "ForgetReport",
    "RebuildReport",
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
    "__version__",
]
