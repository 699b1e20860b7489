"""Judges: extraction, validation (ψ), routing and summarization.

:class:`OfflineJudge` needs no LLM (embeddings, lexical cues and heuristics).
"""

from __future__ import annotations

from .offline import OfflineJudge, QueryRouter

__all__ = ["OfflineJudge", "QueryRouter"]
