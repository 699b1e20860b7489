"""Checks and encodings of the export's values: each check names the field it refuses."""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ..errors import InputError
from ..inputs import parse_metadata
from ..textcheck import find_text_fault
from ..types import utc

__all__ = [
    "EXPORT_FORMAT",
    "MAX_EXPORT_BYTES",
    "check_embedding",
    "check_int",
    "check_json_object",
    "check_list",
    "check_number",
    "check_object",
    "check_text",
    "check_time",
    "embedding_text",
    "encode_time",
]

EXPORT_FORMAT = "personatree.export/1"

# An export is refused beyond this many JSON bytes when given as text (a guard against
# memory exhaustion from a hostile file; a real user is far below it).
MAX_EXPORT_BYTES = 1 << 30


# -- value checks (each names the field it refuses) ----------------------------------------


def check_object(value: object, where: str) -> Mapping[str, Any]:
    """``value`` as a JSON object, or :class:`InputError`."""
    if not isinstance(value, Mapping):
        raise InputError(f"{where} must be an object, got {type(value).__name__}")
    return value


def check_list(value: object, where: str) -> Sequence[Any]:
    """``value`` as a JSON array, or :class:`InputError`."""
    if not isinstance(value, list):
        raise InputError(f"{where} must be an array, got {type(value).__name__}")
    return value


def check_text(value: object, where: str) -> str:
    """A string without NUL that is valid UTF-8, or :class:`InputError`."""
    if not isinstance(value, str):
        raise InputError(f"{where} must be a string, got {type(value).__name__}")
    fault = find_text_fault(value)
    if fault is not None:
        if fault.kind == "nul":
            raise InputError(f"{where} contains a NUL character")
        raise InputError(f"{where} is not valid text")
    return value


def check_int(value: object, where: str, minimum: int = 0) -> int:
    """A (non-bool) integer in ``[minimum, 2**63 - 1]``, or :class:`InputError`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{where} must be an integer, got {type(value).__name__}")
    if value < minimum or value > 2**63 - 1:
        raise InputError(f"{where} is out of range: {value}")
    return value


def check_number(value: object, where: str, lo: float = -math.inf, hi: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{where} must be a number, got {type(value).__name__}")
    try:
        out = float(value)
    except OverflowError:
        raise InputError(f"{where} is out of range") from None
    if not math.isfinite(out) or not lo <= out <= hi:
        raise InputError(f"{where} must be a finite number in [{lo}, {hi}], got {value!r}")
    return out


def check_time(value: object, where: str) -> datetime:
    """An ISO-8601 date-time with a UTC offset, as an aware UTC datetime, or :class:`InputError`."""
    text = check_text(value, where)
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{where} is not an ISO-8601 date-time: {text[:60]!r}") from None
    if parsed.tzinfo is None:
        # A time without an offset is ambiguous; exports always carry one.
        raise InputError(f"{where} has no UTC offset: {text[:60]!r}")
    try:
        return utc(parsed)
    except OverflowError:
        raise InputError(f"{where} is out of range") from None


def check_json_object(value: object, where: str, *, max_bytes: int = MAX_EXPORT_BYTES) -> dict[str, Any]:
    """A JSON object that can be stored and read back (see :func:`~personatree.inputs.parse_metadata`).

    Node attributes and journal payloads are written by the library and grow with a
    cluster (a mid lists its days), so only the export's own size bounds them; caller
    metadata keeps the limit ``observe`` applies.
    """
    if not isinstance(value, Mapping):
        raise InputError(f"{where} must be an object, got {type(value).__name__}")
    try:
        return parse_metadata(value, max_bytes=max_bytes)
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None


def check_embedding(value: object, where: str, dim: int | None) -> np.ndarray | None:
    if value is None:
        return None
    text = check_text(value, where)
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise InputError(f"{where} is not base64") from None
    if not raw or len(raw) % 4:
        raise InputError(f"{where} is not a whole number of float32 values ({len(raw)} bytes)")
    vec = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if dim is not None and vec.shape[0] != dim:
        raise InputError(f"{where} has dimension {vec.shape[0]}, the embedder gives {dim}")
    if not np.isfinite(vec).all():
        raise InputError(f"{where} holds non-finite values")
    vec.setflags(write=False)
    return vec


# -- encodings ------------------------------------------------------------------------------


def encode_time(value: datetime) -> str:
    """A time as the export writes it: ``isoformat()`` with the UTC offset."""
    return value.isoformat()


def embedding_text(vector: np.ndarray | None) -> str | None:
    """An embedding as the export writes it: base64 of little-endian float32 (or None)."""
    if vector is None:
        return None
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")
