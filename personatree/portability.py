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
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import orjson

from .errors import InputError, PersonaTreeError, SchemaError, StoreError
from .export_format import (
    EXPORT_FORMAT,
    MAX_EXPORT_BYTES,
    DecodeContext,
    ExportEdge,
    ExportEvent,
    ExportHeader,
    ExportNode,
    ExportObservation,
    check_list,
    check_object,
    check_time,
)
from .graph import MemoryGraph
from .inputs import check_id
from .ports import ChangeSet, JournalEvent
from .types import Level, Node, Observation

if TYPE_CHECKING:  # pragma: no cover
    from .api import PersonaTree

__all__ = [
    "EXPORT_FORMAT",
    "ImportReport",
    "export_schema",
    "export_schema_path",
    "validate_export",
    "decode_export",
    "import_export",
]

@dataclass(frozen=True, slots=True)
class ImportReport:
    """What :func:`import_export` wrote.

    Attributes
    ----------
    user_id : str
    observations, nodes, edges, events : int
        Rows written per kind.
    version : int
        The user's version after the import.
    """

    user_id: str
    observations: int
    nodes: int
    edges: int
    events: int
    version: int


@dataclass(frozen=True, slots=True)
class DecodedExport:
    """An export decoded into domain objects and checked for internal consistency."""

    user_id: str
    embedder: str
    observations: tuple[Observation, ...]
    graph: MemoryGraph
    events: tuple[JournalEvent, ...]
    archive: tuple[Node, ...] = ()


# -- the schema --------------------------------------------------------------------------


def export_schema_path() -> Path:
    """Path of the shipped ``export.schema.json``."""
    from .schema import default_schema_dir

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


# -- decoding ----------------------------------------------------------------------------


def _parse(data: object) -> Any:
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


# -- journal payloads ---------------------------------------------------------------------
#
# ``rebuild`` replays the journal, so an imported event must carry what its replayer
# reads, with the right types; a forged event would otherwise make every later rebuild
# of the user fail. Keys are checked exactly (the writers' own keys, nothing else), so
# what imports is what this version writes and replays (a consolidation's plan summary
# excepted, see below).


def _payload_keys(payload: Mapping[str, Any], where: str, required: set[str], optional: set[str] | None) -> None:
    """Required keys present; with ``optional`` given, no key outside the two sets."""
    missing = required - set(payload)
    if missing:
        raise InputError(f"{where} has no {', '.join(repr(k) for k in sorted(missing))}")
    extra = set() if optional is None else set(payload) - required - optional
    if extra:
        raise InputError(f"{where} has unknown fields {sorted(extra)}")


def _observe_payload(payload: Mapping[str, Any], where: str, tree: "PersonaTree") -> None:
    _payload_keys(payload, where, {"observation_id"}, set())
    check_id(payload["observation_id"], f"{where}.observation_id", tree.config.limits)


def _forget_payload(payload: Mapping[str, Any], where: str, tree: "PersonaTree") -> None:
    _payload_keys(payload, where, {"node_id"}, {"cascade"})
    check_id(payload["node_id"], f"{where}.node_id", tree.config.limits)
    if not isinstance(payload.get("cascade", False), bool):
        raise InputError(f"{where}.cascade must be true or false")


def _consolidate_payload(payload: Mapping[str, Any], where: str, tree: "PersonaTree") -> None:
    from pydantic import ValidationError

    from .config import ConsolidationConfig

    # A consolidation's payload also summarises the plan (counts, digest), which grows
    # with the planner; the replayer reads only ``now`` and ``config``, so only those are pinned.
    _payload_keys(payload, where, {"now"}, None)
    check_time(payload["now"], f"{where}.now")
    raw = payload.get("config")
    if raw is None:
        return
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}.config must be an object, got {type(raw).__name__}")
    # The replayer keeps the fields this version knows (older exports lack new ones).
    known = {k: v for k, v in raw.items() if k in ConsolidationConfig.model_fields}
    try:
        ConsolidationConfig(**known)
    except (ValidationError, PersonaTreeError, TypeError, ValueError) as exc:
        first = exc.errors()[0] if isinstance(exc, ValidationError) else None
        detail = f"{'.'.join(map(str, first['loc']))}: {first['msg']}" if first else str(exc)
        raise InputError(f"{where}.config is not a valid consolidation configuration: {detail[:200]}") from None


def _delete_observation_payload(payload: Mapping[str, Any], where: str, tree: "PersonaTree") -> None:
    _payload_keys(payload, where, {"observation_id"}, set())
    check_id(payload["observation_id"], f"{where}.observation_id", tree.config.limits)


_PAYLOAD_CHECKS = {
    "observe": _observe_payload,
    "forget": _forget_payload,
    "consolidate": _consolidate_payload,
    "delete_observation": _delete_observation_payload,
}


def _check_payload(kind: str, payload: Mapping[str, Any], where: str, tree: "PersonaTree") -> None:
    """Refuse a journal event this version could not replay."""
    from .api import _REPLAYERS

    check = _PAYLOAD_CHECKS.get(kind)
    if check is not None:
        try:
            check(payload, where, tree)
        except InputError as exc:
            raise InputError(str(exc)) from None
        return
    if kind not in _REPLAYERS:
        known = sorted(set(_PAYLOAD_CHECKS) | set(_REPLAYERS))
        raise InputError(f"{where}: unknown journal event kind {kind[:40]!r}; this version knows {known}")


def _increasing(seqs: Sequence[int], what: str) -> None:
    for a, b in zip(seqs, seqs[1:]):
        if b <= a:
            raise InputError(f"{what} positions must increase strictly; found {a} then {b}")


def _context(tree: "PersonaTree") -> DecodeContext:
    """What the items of an export are checked against: ``tree``'s settings."""

    def check_payload(kind: str, payload: dict[str, Any], where: str) -> None:
        _check_payload(kind, payload, where, tree)

    return DecodeContext(
        limits=tree.config.limits,
        registry=tree.registry,
        embedder_dim=tree.embedder.dim,
        logit_clip=tree.config.confidence.clip,
        check_payload=check_payload,
    )


def _section(top: Mapping[str, Any], key: str) -> Sequence[Any]:
    """A required array of the export (``observations``, ``nodes``, ...)."""
    if key not in top:
        raise InputError(f"export has no {key!r}")
    return check_list(top[key], f"export.{key}")


def _header(top: Mapping[str, Any], ctx: DecodeContext) -> ExportHeader:
    """The top-level object's own fields, after refusing fields the format does not have."""
    extra = set(top) - {"format", "user_id", "version", "embedder", "observations", "nodes", "edges", "journal",
                        "archive"}
    if extra:
        raise InputError(f"export has unknown fields {sorted(map(str, extra))}")
    fields = {k: top[k] for k in ExportHeader.model_fields if k in top}
    return ExportHeader.decode(fields, "export", ctx)


def _check_cites(node: Node, where: str, obs_ids: set[str]) -> None:
    for p in node.provenance:
        if p.observation_id not in obs_ids:
            raise InputError(f"{where} cites observation {p.observation_id[:60]!r}, which is not in the export")


def _observations(top: Mapping[str, Any], uid: str, ctx: DecodeContext) -> tuple[Observation, ...]:
    observations = tuple(
        ExportObservation.decode(o, f"observations[{i}]", ctx).to_domain(uid)
        for i, o in enumerate(_section(top, "observations"))
    )
    _increasing([o.seq for o in observations], "observation")
    if len({o.id for o in observations}) != len(observations):
        raise InputError("export holds the same observation id twice")
    return observations


def _graph(
    top: Mapping[str, Any], raw_nodes: Sequence[Any], uid: str, obs_ids: set[str], ctx: DecodeContext
) -> MemoryGraph:
    """The exported tree, checked node by node, edge by edge, and then as a whole."""
    graph = MemoryGraph(uid)
    for i, item in enumerate(raw_nodes):
        node = ExportNode.decode(item, f"nodes[{i}]", ctx).to_domain(uid)
        if node.id in graph:
            raise InputError(f"nodes[{i}]: node id {node.id!r} appears twice")
        _check_cites(node, f"nodes[{i}]", obs_ids)
        graph.add_node(node)
    for i, item in enumerate(_section(top, "edges")):
        edge = ExportEdge.decode(item, f"edges[{i}]", ctx).to_domain()
        try:
            graph.add_edge(edge)  # enforces levels, single parent, no duplicates
        except PersonaTreeError as exc:
            raise type(exc)(f"edges[{i}]: {exc}") from None
    graph.check()
    return graph


def _archive(
    raw_archive: Sequence[Any], graph: MemoryGraph, uid: str, obs_ids: set[str], ctx: DecodeContext
) -> tuple[Node, ...]:
    archive: list[Node] = []
    seen: set[str] = set()
    for i, item in enumerate(raw_archive):
        # An archived leaf is written as a node; its fields are named as the nodes' are.
        node = ExportNode.decode(item, f"nodes[{i}]", ctx).to_domain(uid)
        where = f"archive[{i}]"
        if node.level is not Level.LEAF:
            raise InputError(f"{where}: only leaves are archived, got a {node.level.value}")
        if node.id in graph or node.id in seen:
            raise InputError(f"{where}: node id {node.id!r} appears twice")
        _check_cites(node, where, obs_ids)
        seen.add(node.id)
        archive.append(node)
    return tuple(archive)


def decode_export(tree: "PersonaTree", data: object) -> DecodedExport:
    """Validate an export and decode it into domain objects, without writing anything.

    Parameters
    ----------
    tree : PersonaTree
        The target: its schema registry, embedder and input limits apply.
    data : mapping, str, bytes or Path
        The export (as returned by ``PersonaTree.export``), its JSON text, or a file.

    Returns
    -------
    DecodedExport

    Raises
    ------
    InputError
        For anything malformed, with the offending field named.
    InvariantError, NotFoundError
        If the nodes and edges do not form a valid evidence tree.
    """
    raw = _parse(data)
    validate_export(raw)
    top = check_object(raw, "export")
    ctx = _context(tree)
    header = _header(top, ctx)
    raw_nodes = _section(top, "nodes")
    raw_archive = check_list(top.get("archive", []), "export.archive")
    if header.embedder != tree.embedder.name and any(
        isinstance(n, Mapping) and n.get("embedding") is not None for n in [*raw_nodes, *raw_archive]
    ):
        # Vectors of another model live in another space: search and insertion would be
        # silently wrong. Re-embedding is a rebuild, not an import.
        raise InputError(
            f"export was embedded with {header.embedder!r} but this store uses {tree.embedder.name!r}; "
            "open the target with the same embedder"
        )
    uid = header.user_id
    observations = _observations(top, uid, ctx)
    obs_ids = {o.id for o in observations}
    graph = _graph(top, raw_nodes, uid, obs_ids, ctx)
    events = tuple(
        ExportEvent.decode(e, f"journal[{i}]", ctx).to_domain() for i, e in enumerate(_section(top, "journal"))
    )
    _increasing([e.seq for e in events], "journal")
    archive = _archive(raw_archive, graph, uid, obs_ids, ctx)
    return DecodedExport(uid, header.embedder, observations, graph, events, archive)


# -- import ------------------------------------------------------------------------------


def import_export(tree: "PersonaTree", data: object) -> ImportReport:
    """Write an export into ``tree``'s store, as the export's user.

    The user must have no data in the target store; the import is one transaction, so
    it either writes everything or nothing. Observation and journal positions are
    assigned afresh by the store (in the exported order), everything else is kept.

    Parameters
    ----------
    tree : PersonaTree
        The target memory.
    data : mapping, str, bytes or Path
        An export (``PersonaTree.export`` output), its JSON text or a JSON file.

    Returns
    -------
    ImportReport

    Raises
    ------
    InputError
        If the export is malformed or the user already has data in the target.
    InvariantError, NotFoundError
        If its nodes and edges do not form a valid tree.
    StoreError
        If the store refused the write (nothing is written).
    """
    decoded = decode_export(tree, data)
    uid = decoded.user_id

    def work(graph: MemoryGraph) -> tuple[ChangeSet, ImportReport]:
        # Checked inside the transaction's retry loop: the commit carries the version
        # this graph was loaded at, so a concurrent writer makes the commit stale.
        if len(graph) or tree.store.version(uid) != 0:
            raise InputError(f"user {uid!r} already has data in this store; delete it first or import elsewhere")
        # _transact expects the cached graph to be mutated to match what is committed.
        nodes = [n.copy() for n in decoded.graph.nodes()]
        edges = list(decoded.graph.edges())
        for n in nodes:
            graph.add_node(n)
        for e in edges:
            graph.add_edge(e)
        change = ChangeSet(
            user_id=uid,
            observations=list(decoded.observations),
            upsert_nodes=nodes,
            upsert_edges=edges,
            events=list(decoded.events),
            archive_nodes=list(decoded.archive),
        )
        report = ImportReport(uid, len(decoded.observations), len(nodes), len(edges), len(decoded.events), 0)
        return change, report

    if not (decoded.observations or len(decoded.graph) or decoded.events or decoded.archive):
        raise InputError("export holds no data to import")
    report: ImportReport = tree._transact(uid, work)
    version = tree.store.version(uid)
    if version == 0:  # pragma: no cover - the store refused silently
        raise StoreError(f"import of user {uid!r} wrote nothing")
    return ImportReport(report.user_id, report.observations, report.nodes, report.edges, report.events, version)
