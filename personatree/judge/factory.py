"""Build the judge a configuration names: ``"offline"``, a litellm model, or one per operation."""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import ConfigError
from ..ports import Embedder, Judge, Store
from ..schema import SchemaRegistry
from .llm import LLMJudge
from .operations import check_operations

__all__ = ["make_judge", "JudgeSpec"]

#: ``"offline"``, a litellm model string, or ``{"extract" | "validate" | "route" | "summarize" | "update": model}``.
JudgeSpec = str | Mapping[str, str]


def make_judge(
    spec: JudgeSpec | Judge,
    *,
    embedder: Embedder,
    registry: SchemaRegistry,
    store: Store | None = None,
    offline: Judge | None = None,
    **options: Any,
) -> Judge:
    """The judge named by ``spec``.

    Parameters
    ----------
    spec : str, Mapping or Judge
        ``"offline"``: the offline judge. A litellm model string
        (``"openai/gpt-4o-mini"``, ``"ollama/qwen3:8b"``): an :class:`LLMJudge` for every
        operation. A mapping from operation to model string (``"offline"`` allowed):
        an :class:`LLMJudge` per operation, the missing ones offline. A ready Judge is
        returned as is.
    embedder : Embedder
    registry : SchemaRegistry
    store : Store, optional
        Holds the LLM response cache.
    offline : Judge, optional
        The offline judge to use (and to fall back to); default
        ``OfflineJudge(embedder, registry)``.
    **options
        Passed to :class:`LLMJudge` (``fallback``, ``timeout_s``, ``max_retries``,
        ``max_concurrency``, ``completion_kwargs``...).

    Returns
    -------
    Judge

    Raises
    ------
    ConfigError
        For an empty model string, an unknown operation or a value of the wrong type.
    """
    if not isinstance(spec, (str, Mapping)):
        if isinstance(spec, Judge):
            return spec
        raise ConfigError(f"judge must be 'offline', a litellm model string or a mapping, got {type(spec).__name__}")
    if isinstance(spec, Mapping):
        check_operations(spec)
        every_offline = all(v == "offline" for v in spec.values())
    else:
        every_offline = spec.strip() == "offline"
    if every_offline:
        if options:
            raise ConfigError(f"options {sorted(options)} apply to LLM judges only")
        if offline is not None:
            return offline
        from .offline import OfflineJudge

        return OfflineJudge(embedder, registry)
    return LLMJudge(spec, embedder=embedder, registry=registry, store=store, offline=offline, **options)
