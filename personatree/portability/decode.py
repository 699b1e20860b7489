"""Decoding an export into domain objects and an evidence tree, without writing anything."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..engine.core import Engine, EngineLike, engine_of
from ..errors import InputError, PersonaTreeError
from ..export_format import (
    DecodeContext,
    ExportEdge,
    ExportEvent,
    ExportHeader,
    ExportNode,
    ExportObservation,
    check_list,
    check_object,
)
from ..graph import MemoryGraph
from ..ports import JournalEvent
from ..types import Level, Node, Observation
from .journal import check_payload
from .schema import read_export, validate_export


__all__ = ["DecodedExport", "decode_export"]


@dataclass(frozen=True, slots=True)
class DecodedExport:
    """An export decoded into domain objects and checked for internal consistency."""

    user_id: str
    embedder: str
    observations: tuple[Observation, ...]
    graph: MemoryGraph
    events: tuple[JournalEvent, ...]
    archive: tuple[Node, ...] = ()


def _increasing(seqs: Sequence[int], what: str) -> None:
    for a, b in zip(seqs, seqs[1:]):
        if b <= a:
            raise InputError(f"{what} positions must increase strictly; found {a} then {b}")


def _context(engine: Engine) -> DecodeContext:
    """What the items of an export are checked against: ``tree``'s settings."""

    def payload_check(kind: str, payload: dict[str, Any], where: str) -> None:
        check_payload(kind, payload, where, engine)

    return DecodeContext(
        limits=engine.config.limits,
        registry=engine.registry,
        embedder_dim=engine.embedder.dim,
        logit_clip=engine.config.confidence.clip,
        check_payload=payload_check,
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


def decode_export(tree: EngineLike, data: object) -> DecodedExport:
    """Validate an export and decode it into domain objects, without writing anything.

    Parameters
    ----------
    tree : Engine or PersonaTree
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
    engine = engine_of(tree)
    raw = read_export(data)
    validate_export(raw)
    top = check_object(raw, "export")
    ctx = _context(engine)
    header = _header(top, ctx)
    raw_nodes = _section(top, "nodes")
    raw_archive = check_list(top.get("archive", []), "export.archive")
    if header.embedder != engine.embedder.name and any(
        isinstance(n, Mapping) and n.get("embedding") is not None for n in [*raw_nodes, *raw_archive]
    ):
        # Vectors of another model live in another space: search and insertion would be
        # silently wrong. Re-embedding is a rebuild, not an import.
        raise InputError(
            f"export was embedded with {header.embedder!r} but this store uses {engine.embedder.name!r}; "
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
