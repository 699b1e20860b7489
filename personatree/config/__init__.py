"""Frozen, validated configuration with named presets.

Nothing here reads the environment; a config is a value. Build one with keyword
arguments, start from a preset with :meth:`PersonaTreeConfig.preset`, or derive a
variant with ``config.model_copy(update=...)`` (validated again by :func:`derive`).

One module a concern: :mod:`.parts` (confidence, insertion, input limits),
:mod:`.consolidation`, :mod:`.recall` and :mod:`.tiering`; the top-level
:class:`PersonaTreeConfig` and :func:`derive` are here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

from ..errors import ConfigError
from .consolidation import ConsolidationConfig
from .frozen import Frozen
from .parts import ConfidenceConfig, InputLimits, InsertionConfig
from .recall import RecallConfig
from .tiering import TieringConfig

__all__ = [
    "ConfidenceConfig", "InsertionConfig", "InputLimits", "ConsolidationConfig", "RecallConfig",
    "TieringConfig", "PersonaTreeConfig", "derive",
]


class PersonaTreeConfig(Frozen):
    """Top-level configuration.

    Attributes
    ----------
    embedder : str
        ``"default"`` for the packaged all-MiniLM-L6-v2, ``"static"`` for its static
        (model2vec) distillation (the ``fast`` preset), or any sentence-transformers
        model name or local path.
    embed_batch_size : int
        Batch size for embedding.
    schema_path : str or None
        A schema registry file or folder; ``None`` uses the shipped one.
    busy_timeout_s : float
        How long a write waits for another writer's lock before ``StoreBusyError``.
    judge : str or dict
        ``"offline"`` (no model), any litellm model string (``"openai/gpt-4o-mini"``,
        ``"ollama/qwen3:8b"``), or a per-operation mapping such as
        ``{"validate": "openai/gpt-4o-mini", "summarize": "anthropic/claude-sonnet-4"}``.
    judge_options : dict
        Keyword options of :class:`~personatree.judge.llm.LLMJudge` (timeouts, retries,
        concurrency, ``fallback``).
    redact : tuple of {"email", "phone", "card"}
        Patterns removed from every message before it is stored (see
        :mod:`personatree.redact`); empty by default.
    resident_users : int or None
        How many users one process keeps in memory (each one's tree and the retrieval
        and tier state built over it). Beyond it the least recently read user is
        dropped from memory, never from the store, and read back when next met.
        ``None``: every user met stays.
    """

    embedder: str = "default"
    embed_batch_size: int = Field(default=64, ge=1, le=4096)
    schema_path: str | None = None
    busy_timeout_s: float = Field(default=10.0, gt=0.0, le=3600.0)
    redact: tuple[Literal["email", "phone", "card"], ...] = ()
    resident_users: int | None = Field(default=64, ge=1)
    judge: str | dict[str, str] = "offline"
    judge_options: dict[str, Any] = Field(default_factory=dict)
    confidence: ConfidenceConfig = ConfidenceConfig()
    insertion: InsertionConfig = InsertionConfig()
    limits: InputLimits = InputLimits()
    consolidation: ConsolidationConfig = ConsolidationConfig()
    recall: RecallConfig = RecallConfig()
    # Off by default until tiered recall's evidence recall on the LoCoMo harness is
    # measured within 2 points of the full search (see BENCHMARKS.md).
    tiering: TieringConfig = TieringConfig(tiers=False)

    @field_validator("judge")
    @classmethod
    def _judge_ops(cls, value: str | dict[str, str]) -> str | dict[str, str]:
        if isinstance(value, dict):
            unknown = set(value) - {"extract", "validate", "route", "summarize", "update"}
            if unknown:
                raise ValueError(f"unknown judge operations {sorted(unknown)}")
        elif not value.strip():
            raise ValueError("judge must be 'offline' or a model name")
        return value

    @classmethod
    def preset(cls, name: Literal["default", "conservative", "eager", "fast"], **overrides: Any) -> "PersonaTreeConfig":
        """A named preset, optionally with top-level overrides.

        Parameters
        ----------
        name : {"default", "conservative", "eager", "fast"}
            ``conservative`` attaches only on strong validator agreement and promotes
            roots later; ``eager`` forms patterns from fewer observations; ``fast``
            embeds with the static distillation of the packaged MiniLM (the ``fast``
            extra; distilled once on first use, see :mod:`personatree.static_embedder`).
        **overrides
            Top-level fields to replace.

        Raises
        ------
        ConfigError
            For an unknown preset or an invalid override.
        """
        presets: dict[str, dict[str, Any]] = {
            "default": {},
            "conservative": {
                "insertion": InsertionConfig(theta_attach=0.65, min_support_psi=0.45),
                "consolidation": ConsolidationConfig(n_min=4, n_root=8, theta_c=0.8, t_root_days=30.0),
            },
            "eager": {
                "insertion": InsertionConfig(theta_attach=0.45, min_support_psi=0.2),
                "consolidation": ConsolidationConfig(n_min=2, n_root=3, theta_c=0.6, t_root_days=7.0),
            },
            # A static embedder costs microseconds a text, so batches can be large.
            "fast": {"embedder": "static", "embed_batch_size": 1024},
        }
        if name not in presets:
            raise ConfigError(f"unknown preset {name!r}; choose one of {sorted(presets)}")
        return cls(**{**presets[name], **overrides})


def derive(config: PersonaTreeConfig, **changes: Any) -> PersonaTreeConfig:
    """A validated copy of ``config`` with top-level ``changes``.

    Raises
    ------
    ConfigError
        If the result is invalid.
    """
    try:
        return PersonaTreeConfig.model_validate({**config.model_dump(), **changes})
    except ValidationError as exc:
        raise ConfigError(str(exc)) from None
