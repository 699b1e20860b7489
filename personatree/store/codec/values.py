"""Scalar values of the row codec: texts, integers, finite numbers, times, JSON, embeddings.

Every check raises :class:`~personatree.errors.InputError` naming the field, before
any storage is touched, so a bad change set writes nothing.
"""

from __future__ import annotations

import math
from datetime import datetime
from functools import lru_cache
from typing import Any, Mapping

import numpy as np
import orjson

from ...errors import InputError, StoreError
from ...textcheck import find_text_fault
from ...types import utc

__all__ = [
    "check_float",
    "check_int",
    "check_mapping",
    "check_text",
    "decode_embedding",
    "decode_time",
    "dumps",
    "encode_embedding",
    "encode_optional_time",
    "encode_time",
    "loads",
]

_INT64 = (-(2**63), 2**63 - 1)
_JSON_OPTS = orjson.OPT_SERIALIZE_NUMPY
_F32 = np.dtype("<f4")


# -- scalars -----------------------------------------------------------------------------


def check_text(value: object, field: str, *, nonempty: bool = False) -> str:
    """Validate a string destined for storage.

    Parameters
    ----------
    value : object
        The candidate value.
    field : str
        Name used in the error message.
    nonempty : bool
        Also refuse the empty string (ids).

    Returns
    -------
    str
        ``value`` unchanged.

    Raises
    ------
    InputError
        If it is not a ``str``, is empty when it must not be, or is not encodable as
        UTF-8 (lone surrogates), which SQLite and JSON both require.
    """
    if not isinstance(value, str):
        raise InputError(f"{field} must be a str, got {type(value).__name__}")
    if nonempty and not value:
        raise InputError(f"{field} must not be empty")
    # NUL is storable (PostgreSQL's columns escape it); a lone surrogate is not.
    if find_text_fault(value, nul=False) is not None:
        raise InputError(f"{field} is not valid text (it contains a lone surrogate)")
    return value


def check_int(value: object, field: str) -> int:
    # bool is an int subclass but storing True as a count is a caller bug.
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{field} must be an int, got {type(value).__name__}")
    out = int(value)
    if not _INT64[0] <= out <= _INT64[1]:
        raise InputError(f"{field} does not fit in 64 bits")
    return out


def check_float(value: object, field: str) -> float:
    # SQLite stores NaN as NULL, so a non-finite score would silently change meaning.
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"{field} must be a number, got {type(value).__name__}")
    out = float(value)
    if not math.isfinite(out):
        raise InputError(f"{field} must be finite, got {out}")
    return out


@lru_cache(maxsize=8192)
def _iso(value: datetime) -> str:
    return utc(value).isoformat(timespec="microseconds")


def encode_time(value: object, field: str = "datetime") -> str:
    """A datetime as fixed-width ISO-8601 UTC text with microseconds.

    Naive datetimes are taken as UTC (:func:`personatree.types.utc`).

    Raises
    ------
    InputError
        If ``value`` is not a datetime.
    """
    if not isinstance(value, datetime):
        raise InputError(f"{field} must be a datetime, got {type(value).__name__}")
    # Cached: a node's t_first, t_last and provenance usually share one instant, and
    # equal instants encode equally whatever their timezone.
    return _iso(value)


@lru_cache(maxsize=8192)
def decode_time(text: str) -> datetime:
    """Inverse of :func:`encode_time` (an aware UTC datetime; datetimes are immutable,
    so decoded values are cached and shared)."""
    return datetime.fromisoformat(text)


def encode_optional_time(value: datetime | None, field: str) -> str | None:
    return None if value is None else encode_time(value, field)


def dumps(value: Any, field: str) -> str:
    """JSON text of ``value``.

    Raises
    ------
    InputError
        If it is not JSON-serializable (non-str keys, sets, objects, huge ints,
        invalid text).
    """
    try:
        return orjson.dumps(value, option=_JSON_OPTS).decode("utf-8")
    except (orjson.JSONEncodeError, TypeError, ValueError) as exc:
        raise InputError(f"{field} is not JSON-serializable: {exc}") from None


def loads(text: str) -> Any:
    """Parse JSON text written by :func:`dumps`."""
    return orjson.loads(text)


def check_mapping(value: object, field: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise InputError(f"{field} must be a mapping, got {type(value).__name__}")
    return dict(value)


# -- embeddings --------------------------------------------------------------------------


def encode_embedding(value: object, field: str = "embedding") -> tuple[bytes | None, int | None]:
    """An embedding as (little-endian float32 bytes, dim), or (None, None).

    Raises
    ------
    InputError
        If it is not a finite 1-D numeric vector.
    """
    if value is None:
        return None, None
    try:
        arr = np.asarray(value, dtype=_F32)
    except (TypeError, ValueError):
        raise InputError(f"{field} must be a numeric vector") from None
    if arr.ndim != 1 or arr.shape[0] == 0:
        raise InputError(f"{field} must be a non-empty 1-D vector, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise InputError(f"{field} must be finite")
    return arr.tobytes(), int(arr.shape[0])


def decode_embedding(blob: bytes | None, dim: int | None) -> np.ndarray | None:
    """Inverse of :func:`encode_embedding`: a read-only float32 view over ``blob``."""
    if blob is None:
        return None
    arr = np.frombuffer(blob, dtype=_F32)
    if dim is not None and arr.shape[0] != dim:
        raise StoreError(f"corrupt embedding: {arr.shape[0]} floats stored, dimension says {dim}")
    return arr
