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

import base64
import binascii
import json
import math
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
import orjson

from .errors import InputError, PersonaTreeError, SchemaError, StoreError
from .graph import MemoryGraph
from .inputs import MAX_METADATA_BYTES, check_id, parse_messages, parse_metadata
from .ports import ChangeSet, JournalEvent
from .types import Edge, EdgeKind, Level, Node, Observation, Provenance, utc

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

EXPORT_FORMAT = "personatree.export/1"

# An export is refused beyond this many JSON bytes when given as text (a guard against
# memory exhaustion from a hostile file; a real user is far below it).
MAX_EXPORT_BYTES = 1 << 30


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
        import jsonschema
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
        try:
            size = data.stat().st_size
            if size > MAX_EXPORT_BYTES:
                raise InputError(f"export file {data} is {size:,} bytes; the limit is {MAX_EXPORT_BYTES:,}")
            data = data.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read export file {data}: {exc}") from None
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


def _obj(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InputError(f"{where} must be an object, got {type(value).__name__}")
    return value


def _list(value: object, where: str) -> Sequence[Any]:
    if not isinstance(value, list):
        raise InputError(f"{where} must be an array, got {type(value).__name__}")
    return value


def _field(obj: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise InputError(f"{where} has no {key!r}")
    return obj[key]


def _text(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise InputError(f"{where} must be a string, got {type(value).__name__}")
    if "\x00" in value:
        raise InputError(f"{where} contains a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{where} is not valid text") from None
    return value


def _int(value: object, where: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{where} must be an integer, got {type(value).__name__}")
    if value < minimum or value > 2**63 - 1:
        raise InputError(f"{where} is out of range: {value}")
    return value


def _num(value: object, where: str, lo: float = -math.inf, hi: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{where} must be a number, got {type(value).__name__}")
    try:
        out = float(value)
    except OverflowError:
        raise InputError(f"{where} is out of range") from None
    if not math.isfinite(out) or not lo <= out <= hi:
        raise InputError(f"{where} must be a finite number in [{lo}, {hi}], got {value!r}")
    return out


def _time(value: object, where: str) -> datetime:
    text = _text(value, where)
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


def _json_object(value: object, where: str, *, max_bytes: int = MAX_EXPORT_BYTES) -> dict[str, Any]:
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


def _embedding(value: object, where: str, dim: int | None) -> np.ndarray | None:
    if value is None:
        return None
    text = _text(value, where)
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


def _observation(item: object, i: int, user_id: str, tree: "PersonaTree") -> Observation:
    where = f"observations[{i}]"
    o = _obj(item, where)
    extra = set(o) - {"id", "seq", "session_id", "at", "messages", "metadata"}
    if extra:
        raise InputError(f"{where} has unknown fields {sorted(map(str, extra))}")
    raw_messages = _list(_field(o, "messages", where), f"{where}.messages")
    try:
        messages = parse_messages(list(raw_messages), tree.config.limits)
    except InputError as exc:
        raise InputError(f"{where}.messages: {exc}") from None
    return Observation(
        id=check_id(_field(o, "id", where), f"{where}.id", tree.config.limits),
        user_id=user_id,
        session_id=_text(_field(o, "session_id", where), f"{where}.session_id"),
        at=_time(_field(o, "at", where), f"{where}.at"),
        messages=messages,
        metadata=_json_object(_field(o, "metadata", where), f"{where}.metadata", max_bytes=MAX_METADATA_BYTES),
        seq=_int(_field(o, "seq", where), f"{where}.seq"),
    )


def _provenance(item: object, where: str) -> Provenance:
    p = _obj(item, where)
    extra = set(p) - {"observation_id", "turn", "sentence", "at", "session_id"}
    if extra:
        raise InputError(f"{where} has unknown fields {sorted(map(str, extra))}")
    return Provenance(
        observation_id=_text(_field(p, "observation_id", where), f"{where}.observation_id"),
        turn=_int(_field(p, "turn", where), f"{where}.turn"),
        sentence=_int(_field(p, "sentence", where), f"{where}.sentence"),
        at=_time(_field(p, "at", where), f"{where}.at"),
        session_id=_text(_field(p, "session_id", where), f"{where}.session_id"),
    )


_NODE_FIELDS = frozenset({
    "id", "level", "schema_type", "content", "attributes", "t_first", "t_last", "logit",
    "n_support", "n_conflict", "provenance", "recall_count", "t_access", "embedding",
})


def _node(item: object, i: int, user_id: str, tree: "PersonaTree") -> Node:
    where = f"nodes[{i}]"
    n = _obj(item, where)
    extra = set(n) - _NODE_FIELDS
    if extra:
        raise InputError(f"{where} has unknown fields {sorted(map(str, extra))}")
    level_text = _text(_field(n, "level", where), f"{where}.level")
    try:
        level = Level(level_text)
    except ValueError:
        raise InputError(f"{where}.level must be leaf, mid or root, got {level_text[:40]!r}") from None
    schema_type = _text(_field(n, "schema_type", where), f"{where}.schema_type")
    if schema_type not in tree.registry:
        # Decay and priors are looked up by type; an unknown type would fail later, on read.
        raise InputError(f"{where}.schema_type {schema_type[:60]!r} is not in this store's schema registry")
    t_access = _field(n, "t_access", where)
    clip = tree.config.confidence.clip
    return Node(
        id=check_id(_field(n, "id", where), f"{where}.id", tree.config.limits),
        user_id=user_id,
        level=level,
        schema_type=schema_type,
        content=_text(_field(n, "content", where), f"{where}.content"),
        attributes=_json_object(_field(n, "attributes", where), f"{where}.attributes"),
        t_first=_time(_field(n, "t_first", where), f"{where}.t_first"),
        t_last=_time(_field(n, "t_last", where), f"{where}.t_last"),
        # Logits are clipped to [-L, L] by every update, so anything outside is forged.
        logit=_num(_field(n, "logit", where), f"{where}.logit", -clip, clip),
        n_support=_int(_field(n, "n_support", where), f"{where}.n_support"),
        n_conflict=_int(_field(n, "n_conflict", where), f"{where}.n_conflict"),
        embedding=_embedding(_field(n, "embedding", where), f"{where}.embedding", tree.embedder.dim),
        provenance=tuple(
            _provenance(p, f"{where}.provenance[{j}]")
            for j, p in enumerate(_list(_field(n, "provenance", where), f"{where}.provenance"))
        ),
        recall_count=_int(_field(n, "recall_count", where), f"{where}.recall_count"),
        t_access=None if t_access is None else _time(t_access, f"{where}.t_access"),
    )


def _edge(item: object, i: int) -> Edge:
    where = f"edges[{i}]"
    e = _obj(item, where)
    extra = set(e) - {"src", "dst", "kind", "psi", "weight", "reason", "at"}
    if extra:
        raise InputError(f"{where} has unknown fields {sorted(map(str, extra))}")
    kind_text = _text(_field(e, "kind", where), f"{where}.kind")
    try:
        kind = EdgeKind(kind_text)
    except ValueError:
        raise InputError(f"{where}.kind must be support or conflict, got {kind_text[:40]!r}") from None
    return Edge(
        src=_text(_field(e, "src", where), f"{where}.src"),
        dst=_text(_field(e, "dst", where), f"{where}.dst"),
        kind=kind,
        psi=_num(_field(e, "psi", where), f"{where}.psi", -1.0, 1.0),
        weight=_num(_field(e, "weight", where), f"{where}.weight"),
        reason=_text(_field(e, "reason", where), f"{where}.reason"),
        at=_time(_field(e, "at", where), f"{where}.at"),
    )


def _event(item: object, i: int, tree: "PersonaTree") -> JournalEvent:
    where = f"journal[{i}]"
    e = _obj(item, where)
    extra = set(e) - {"seq", "kind", "payload", "at"}
    if extra:
        raise InputError(f"{where} has unknown fields {sorted(map(str, extra))}")
    kind = _text(_field(e, "kind", where), f"{where}.kind")
    if not kind:
        raise InputError(f"{where}.kind is empty")
    payload = _json_object(_field(e, "payload", where), f"{where}.payload")
    _check_payload(kind, payload, f"{where}.payload", tree)
    return JournalEvent(
        kind=kind,
        payload=payload,
        at=_time(_field(e, "at", where), f"{where}.at"),
        seq=_int(_field(e, "seq", where), f"{where}.seq"),
    )


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
    _time(payload["now"], f"{where}.now")
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
    replayers = tree.engine.replayers
    check = _PAYLOAD_CHECKS.get(kind)
    if check is not None:
        try:
            check(payload, where, tree)
        except InputError as exc:
            raise InputError(str(exc)) from None
        return
    if kind not in replayers:
        known = sorted(set(_PAYLOAD_CHECKS) | set(replayers))
        raise InputError(f"{where}: unknown journal event kind {kind[:40]!r}; this version knows {known}")


def _increasing(seqs: Sequence[int], what: str) -> None:
    for a, b in zip(seqs, seqs[1:]):
        if b <= a:
            raise InputError(f"{what} positions must increase strictly; found {a} then {b}")


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
    top = _obj(raw, "export")
    extra = set(top) - {"format", "user_id", "version", "embedder", "observations", "nodes", "edges", "journal",
                        "archive"}
    if extra:
        raise InputError(f"export has unknown fields {sorted(map(str, extra))}")
    fmt = _field(top, "format", "export")
    if fmt != EXPORT_FORMAT:
        raise InputError(f"unknown export format {str(fmt)[:60]!r}; this version reads {EXPORT_FORMAT!r}")
    uid = check_id(_field(top, "user_id", "export"), "export.user_id", tree.config.limits)
    _int(_field(top, "version", "export"), "export.version")
    embedder = _text(_field(top, "embedder", "export"), "export.embedder")
    raw_nodes = _list(_field(top, "nodes", "export"), "export.nodes")
    raw_archive = _list(top.get("archive", []), "export.archive")
    if embedder != tree.embedder.name and any(
        isinstance(n, Mapping) and n.get("embedding") is not None for n in [*raw_nodes, *raw_archive]
    ):
        # Vectors of another model live in another space: search and insertion would be
        # silently wrong. Re-embedding is a rebuild, not an import.
        raise InputError(
            f"export was embedded with {embedder!r} but this store uses {tree.embedder.name!r}; "
            "open the target with the same embedder"
        )

    observations = tuple(
        _observation(o, i, uid, tree)
        for i, o in enumerate(_list(_field(top, "observations", "export"), "export.observations"))
    )
    _increasing([o.seq for o in observations], "observation")
    obs_ids = {o.id for o in observations}
    if len(obs_ids) != len(observations):
        raise InputError("export holds the same observation id twice")

    graph = MemoryGraph(uid)
    for i, item in enumerate(raw_nodes):
        node = _node(item, i, uid, tree)
        if node.id in graph:
            raise InputError(f"nodes[{i}]: node id {node.id!r} appears twice")
        for p in node.provenance:
            if p.observation_id not in obs_ids:
                raise InputError(
                    f"nodes[{i}] cites observation {p.observation_id[:60]!r}, which is not in the export"
                )
        graph.add_node(node)
    for i, item in enumerate(_list(_field(top, "edges", "export"), "export.edges")):
        edge = _edge(item, i)
        try:
            graph.add_edge(edge)  # enforces levels, single parent, no duplicates
        except PersonaTreeError as exc:
            raise type(exc)(f"edges[{i}]: {exc}") from None
    graph.check()

    events = tuple(_event(e, i, tree) for i, e in enumerate(_list(_field(top, "journal", "export"), "export.journal")))
    _increasing([e.seq for e in events], "journal")
    archive: list[Node] = []
    seen: set[str] = set()
    for i, item in enumerate(raw_archive):
        node = _node(item, i, uid, tree)
        where = f"archive[{i}]"
        if node.level is not Level.LEAF:
            raise InputError(f"{where}: only leaves are archived, got a {node.level.value}")
        if node.id in graph or node.id in seen:
            raise InputError(f"{where}: node id {node.id!r} appears twice")
        for p in node.provenance:
            if p.observation_id not in obs_ids:
                raise InputError(f"{where} cites observation {p.observation_id[:60]!r}, which is not in the export")
        seen.add(node.id)
        archive.append(node)
    return DecodedExport(uid, embedder, observations, graph, events, tuple(archive))


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
        # transact expects the cached graph to be mutated to match what is committed.
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
    report: ImportReport = tree.engine.transact(uid, work)
    version = tree.store.version(uid)
    if version == 0:  # pragma: no cover - the store refused silently
        raise StoreError(f"import of user {uid!r} wrote nothing")
    return ImportReport(report.user_id, report.observations, report.nodes, report.edges, report.events, version)
