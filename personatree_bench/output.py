"""How results leave the harness: JSON files, table cells and progress lines."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Callable, TextIO

import orjson

__all__ = ["write_json", "fmt", "progress_printer"]


def write_json(path: str | Path, data: Any) -> Path:
    """Write ``data`` as indented JSON to ``path``, making its folder if needed.

    Parameters
    ----------
    path : str or Path
    data : Any
        What ``orjson`` serialises; mappings may have non-string keys (token budgets).

    Returns
    -------
    Path
        The file written.
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))
    return p


def fmt(value: Any, digits: int = 3) -> str:
    """A table cell: ``–`` for a missing value, floats to ``digits`` places, the rest as is."""
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def progress_printer(stream: TextIO | None = None) -> Callable[[str], None]:
    """A ``progress`` callback that prints each line with elapsed seconds (stderr by default)."""
    t0 = time.perf_counter()
    out = stream or sys.stderr

    def say(line: str) -> None:
        print(f"[{time.perf_counter() - t0:7.0f}s] {line}", file=out, flush=True)

    return say
