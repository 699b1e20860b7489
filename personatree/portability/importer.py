"""Writing a decoded export into a store, as one transaction."""

from __future__ import annotations

from dataclasses import dataclass

from ..engine.core import EngineLike, engine_of
from ..errors import InputError, StoreError
from ..graph import MemoryGraph
from ..ports import ChangeSet
from .decode import decode_export


__all__ = ["ImportReport", "import_export"]


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


def import_export(tree: EngineLike, data: object) -> ImportReport:
    """Write an export into ``tree``'s store, as the export's user.

    The user must have no data in the target store; the import is one transaction, so
    it either writes everything or nothing. Observation and journal positions are
    assigned afresh by the store (in the exported order), everything else is kept.

    Parameters
    ----------
    tree : Engine or PersonaTree
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
    engine = engine_of(tree)
    decoded = decode_export(engine, data)
    uid = decoded.user_id

    def work(graph: MemoryGraph) -> tuple[ChangeSet, ImportReport]:
        # Checked inside the transaction's retry loop: the commit carries the version
        # this graph was loaded at, so a concurrent writer makes the commit stale.
        if len(graph) or engine.store.version(uid) != 0:
            raise InputError(f"user {uid!r} already has data in this store; delete it first or import elsewhere")
        # The transaction expects the cached graph to be mutated to match what is committed.
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
    report: ImportReport = engine.transact(uid, work)
    version = engine.store.version(uid)
    if version == 0:  # pragma: no cover - the store refused silently
        raise StoreError(f"import of user {uid!r} wrote nothing")
    return ImportReport(report.user_id, report.observations, report.nodes, report.edges, report.events, version)
