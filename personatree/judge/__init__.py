"""Judges: extraction, validation (ψ), routing and summarization.

:class:`OfflineJudge` needs no LLM (embeddings, lexical cues and heuristics).
:class:`LLMJudge` asks any litellm model and falls back to the offline judge;
:func:`make_judge` builds the one a configuration names. With the fallback off, a
failed LLM call raises a :class:`JudgeError` subclass.
"""

from __future__ import annotations

from ..errors import JudgeError, JudgeOutputError, JudgeTimeoutError, ProviderError, RateLimitError
from .accounting import FallbackEvent, JudgeStats
from .factory import make_judge
from .llm import LLMJudge
from .offline import OfflineJudge, QueryRouter

__all__ = [
    "OfflineJudge",
    "QueryRouter",
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
