"""Loaders for the four upstream benchmark formats, all producing :class:`~personatree_bench.types.Dataset`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..types import Dataset
from .knowme import load_knowme, parse_knowme_evidence
from .locomo import load_locomo, parse_evidence, parse_locomo_date
from .locomo_plus import load_locomo_plus, parse_time_gap
from .prefeval import load_prefeval

__all__ = [
    "DATASETS",
    "load_dataset",
    "load_locomo",
    "load_knowme",
    "load_prefeval",
    "load_locomo_plus",
    "parse_evidence",
    "parse_knowme_evidence",
    "parse_locomo_date",
    "parse_time_gap",
]

DATASETS = ("locomo", "knowme", "prefeval", "locomo_plus")


def load_dataset(name: str, path: str | Path, **options: Any) -> Dataset:
    """Load a dataset by format name.

    Parameters
    ----------
    name : str
        One of :data:`DATASETS` (``"locomo-plus"`` is accepted too).
    path : str or Path
        File or folder in the upstream format.
    **options
        Passed to the loader (``limit``, ``distractors``, ``host``, ``seed``...).

    Returns
    -------
    Dataset

    Raises
    ------
    ValueError
        For an unknown format name.
    """
    key = name.lower().replace("-", "_")
    loaders = {"locomo": load_locomo, "knowme": load_knowme, "prefeval": load_prefeval,
               "locomo_plus": load_locomo_plus}
    if key not in loaders:
        raise ValueError(f"unknown dataset {name!r}; use one of {', '.join(DATASETS)}")
    return loaders[key](path, **options)
