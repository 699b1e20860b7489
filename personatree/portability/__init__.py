"""Import of a user export (``PersonaTree.export``) into a store.

An export is the documented JSON of ``schemas/export.schema.json``. Importing it into a
store where the user has no data gives back an equal tree (same nodes with the same
scores and embeddings, same edges), the same verbatim observation log and the same
journal, so ``rebuild`` keeps working after a move between stores or machines.

The importer is a public entry point that accepts untrusted files, so it is strict:

1. the data is validated against the JSON Schema (with :mod:`jsonschema` when it is
   installed; the checks of step 2 apply either way);
2. every value is decoded into the domain types, with typed errors that name the
   offending field (ids, texts, times, finite numbers, base64 float32 embeddings of the
   tree's embedder dimension, known schema types, provenance that points at an exported
   observation);
3. the nodes and edges are assembled into a :class:`~personatree.graph.MemoryGraph`,
   which enforces the tree invariants;
4. everything is written in one transaction that is refused unless the user is still
   empty, so a failed or concurrent import writes nothing.

The package: :mod:`.schema` (the JSON Schema and reading a file), :mod:`.journal`
(which journal events import), :mod:`.decode` (items through the models of
:mod:`personatree.export_format`, then the tree) and :mod:`.importer` (the write).
"""

from __future__ import annotations

from ..export_format import EXPORT_FORMAT, MAX_EXPORT_BYTES
from .decode import DecodedExport, decode_export
from .importer import ImportReport, import_export
from .schema import export_schema, export_schema_path, validate_export

__all__ = [
    "EXPORT_FORMAT",
    "MAX_EXPORT_BYTES",
    "DecodedExport",
    "ImportReport",
    "export_schema",
    "export_schema_path",
    "validate_export",
    "decode_export",
    "import_export",
]
