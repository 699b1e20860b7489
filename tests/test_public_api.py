"""The public surface is curated and pinned."""

from __future__ import annotations

from pathlib import Path

import personatree
from personatree import errors

PINNED = {
    "PersonaTree", "PersonaTreeConfig", "ConfidenceConfig", "InsertionConfig", "ConsolidationConfig",
    "RecallConfig", "TieringConfig", "InputLimits", "ForgetReport", "RebuildReport", "Level", "EdgeKind", "Message",
    "Observation", "Provenance", "LeafDraft", "Node", "Edge", "Verdict", "Route", "Summary",
    "InsertReport", "LeafDecision", "Explanation", "SearchHit", "MemoryGraph", "SchemaRegistry",
    "SchemaType", "Embedder", "Judge", "Store", "TokenCounter", "Clock", "ChangeSet", "JournalEvent",
    "SentenceTransformerEmbedder", "OfflineJudge", "HashingEmbedder", "SystemClock", "FixedClock", "PersonaTreeError",
    "ConfigError", "SchemaError", "InputError", "MessageError", "QueryError", "NotFoundError",
    "UnknownUserError", "UnknownNodeError", "InvariantError", "StoreError", "StoreBusyError",
    "StaleStateError", "MigrationError", "EmbedderError", "JudgeError", "JudgeOutputError",
    "JudgeTimeoutError", "ProviderError", "RateLimitError", "Recall", "Profile", "ConsolidationPlan",
    "ImportReport", "open_store", "__version__",
    "AsyncPersonaTree",
}


def test_all_is_pinned() -> None:
    assert set(personatree.__all__) == PINNED
    assert len(personatree.__all__) == len(set(personatree.__all__))
    for name in personatree.__all__:
        assert hasattr(personatree, name), name


def test_py_typed_shipped() -> None:
    assert (Path(personatree.__file__).parent / "py.typed").exists()


def test_one_exception_tree() -> None:
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.PersonaTreeError)
    # the tree is drawn in the module docstring
    for name in errors.__all__:
        assert name in (errors.__doc__ or "")
