"""The published JSON Schema of the export, validation against it, and reading an
export given as a mapping, JSON text or bytes, or a file."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson

from ..errors import InputError, SchemaError
from ..export_format import MAX_EXPORT_BYTES

__all__ = ["export_schema", "export_schema_path", "read_export", "validate_export"]


def export_schema_path() -> Path:
    """Path of the shipped ``export.schema.json``."""
    from ..schema import default_schema_dir

    return default_schema_dir() / "export.schema.json"


@lru_cache(maxsize=1)
def _schema_text() -> str:
    path = export_schema_path()
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:  # a broken installation, not bad input
        raise SchemaError(f"cannot read the export schema: {exc}", path=str(path)) from None


def export_schema() -> dict[str, Any]:
    """The JSON Schema of the export format (a fresh copy).

    Raises
    ------
    SchemaError
        If the shipped schema file is missing or unreadable.
    """
    return json.loads(_schema_text())


@lru_cache(maxsize=1)
def _validator() -> Any:
    try:
        import jsonschema  # type: ignore[import-untyped]
    except ImportError:
        return None
    cls = jsonschema.validators.validator_for(export_schema())
    return cls(export_schema(), format_checker=cls.FORMAT_CHECKER)


def validate_export(data: object) -> None:
    """Validate ``data`` against ``schemas/export.schema.json``.

    Uses :mod:`jsonschema` when it is installed (``pip install personatree[dev]``);
    without it only the structural checks of :func:`decode_export` apply.

    Raises
    ------
    InputError
        Naming the first violation and where it is.
    """
    validator = _validator()
    if validator is None:
        return
    try:
        error = next(iter(sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))), None)
    except RecursionError:
        raise InputError("export is nested too deeply") from None
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        message = error.message if len(error.message) <= 300 else error.message[:300] + "..."
        raise InputError(f"export does not match the schema at {where}: {message}")


def read_export(data: object) -> Any:
    """Accept a mapping, JSON text/bytes, or a path to a JSON file."""
    if isinstance(data, Path):
        path = data
        try:
            size = path.stat().st_size
            if size > MAX_EXPORT_BYTES:
                raise InputError(f"export file {path} is {size:,} bytes; the limit is {MAX_EXPORT_BYTES:,}")
            data = path.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read export file {path}: {exc}") from None
    if isinstance(data, str):
        data = data.encode("utf-8", errors="surrogatepass")
    if isinstance(data, (bytes, bytearray, memoryview)):
        if len(data) > MAX_EXPORT_BYTES:
            raise InputError(f"export is {len(data):,} bytes; the limit is {MAX_EXPORT_BYTES:,}")
        try:
            return orjson.loads(bytes(data))
        except orjson.JSONDecodeError as exc:
            raise InputError(f"export is not valid JSON: {exc}") from None
    return data
