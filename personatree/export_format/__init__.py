"""The export format (``personatree.export/1``) as pydantic models: one serializer for
export and import.

Each model holds domain values (datetimes, levels, float32 vectors) and says how each
field is written (``model_dump`` gives the JSON-ready export data) and how it is read
back from an untrusted file (:meth:`ExportItem.decode`). The published JSON Schema is
``schemas/export.schema.json``; :mod:`personatree.portability` validates against it and
assembles the decoded items into a tree.

Encodings: times are ``datetime.isoformat()`` text with their UTC offset, embeddings
base64 of little-endian float32, levels and edge kinds their enum values.

Decoding is strict and names the offending field (``nodes[3].logit must be ...``). The
checks run in a fixed order per item (:attr:`ExportItem.check_order`), and the first
failing check's own error is raised, so that a file with several defects is reported by
the same one whatever pydantic collects along the way.

The package: :mod:`.values` (checks and encodings of single values), :mod:`.items`
(the decode machinery) and :mod:`.models` (the export's objects).
"""

from __future__ import annotations

from .items import DecodeContext, ExportItem
from .models import (
    ExportDocument,
    ExportEdge,
    ExportEvent,
    ExportHeader,
    ExportNode,
    ExportObservation,
    ExportProvenance,
    export_document,
    node_json,
)
from .values import (
    EXPORT_FORMAT,
    MAX_EXPORT_BYTES,
    check_int,
    check_json_object,
    check_list,
    check_object,
    check_text,
    check_time,
    embedding_text,
    encode_time,
)

__all__ = [
    "EXPORT_FORMAT",
    "MAX_EXPORT_BYTES",
    "DecodeContext",
    "ExportDocument",
    "ExportEdge",
    "ExportEvent",
    "ExportHeader",
    "ExportItem",
    "ExportNode",
    "ExportObservation",
    "ExportProvenance",
    "check_int",
    "check_json_object",
    "check_list",
    "check_object",
    "check_text",
    "check_time",
    "embedding_text",
    "encode_time",
    "export_document",
    "node_json",
]
