"""Judges: extraction, validation (ψ), routing and summarization.

:class:`OfflineJudge` needs no LLM (embeddings, lexical cues and heuristics).
"""

from __future__ import annotations

from .offline import OfflineJudge, QueryRouter

__all__ = ["OfflineJudge", "QueryRouter"]

# LLM judge (issue 5): litellm-backed judge, its factory and its typed errors.
from .factory import make_judge  # noqa: E402
from .llm import (  # noqa: E402
    FallbackEvent,
    JudgeError,
    JudgeOutputError,
    JudgeStats,
    JudgeTimeoutError,
    LLMJudge,
    ProviderError,
    RateLimitError,
)

__all__ += [
    "LLMJudge",
    "make_judge",
    "JudgeStats",
    "FallbackEvent",
    "JudgeError",
    "RateLimitError",
    "JudgeTimeoutError",
    "ProviderError",
    "JudgeOutputError",
]
