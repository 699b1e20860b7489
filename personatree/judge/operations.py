"""The judge operations and which litellm model answers each."""

from __future__ import annotations

from typing import Iterable, Mapping

from ..errors import ConfigError

__all__ = ["OPERATIONS", "check_operations", "models_of", "judge_name"]

OPERATIONS: tuple[str, ...] = ("extract", "validate", "route", "summarize", "update")


def models_of(spec: str | Mapping[str, str]) -> dict[str, str]:
    """The litellm model of each LLM-answered operation (``"offline"`` ones left out).

    Parameters
    ----------
    spec : str or Mapping[str, str]
        One model string for every operation, or one per operation.

    Returns
    -------
    dict of str to str

    Raises
    ------
    ConfigError
        For an empty model string, an unknown operation or a value of the wrong type.
    """
    if isinstance(spec, str):
        if not spec.strip():
            raise ConfigError("the judge model must be a non-empty litellm model string")
        return {} if spec == "offline" else {op: spec for op in OPERATIONS}
    if not isinstance(spec, Mapping):
        raise ConfigError(f"judge model must be a string or a mapping, got {type(spec).__name__}")
    check_operations(spec)
    out: dict[str, str] = {}
    for op, m in spec.items():
        if not isinstance(m, str) or not m.strip():
            raise ConfigError(f"judge model for {op!r} must be a non-empty string")
        if m != "offline":
            out[op] = m
    return out


def check_operations(names: Iterable[object]) -> None:
    """Raise :class:`ConfigError` if any of ``names`` is not a judge operation."""
    unknown = set(names) - set(OPERATIONS)
    if unknown:
        raise ConfigError(f"unknown judge operations {sorted(map(str, unknown))}; use {', '.join(OPERATIONS)}")


def judge_name(models: Mapping[str, str]) -> str:
    """``"llm:<model>"``, or ``"llm:extract=…,validate=…"`` for per-operation models."""
    distinct = set(models.values())
    if len(distinct) == 1 and len(models) == len(OPERATIONS):
        return f"llm:{distinct.pop()}"
    return "llm:" + ",".join(f"{op}={models.get(op, 'offline')}" for op in OPERATIONS)
