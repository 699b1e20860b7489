"""Change sets validated and encoded into rows before a store is touched."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from ...errors import InputError
from ...ports import ChangeSet
from ...types import Level, Node
from .records import encode_edge, encode_event, encode_node, encode_observation
from .values import check_text

__all__ = ["PreparedChange", "check_ids", "prepare_change"]


# -- change sets -------------------------------------------------------------------------


def check_ids(ids: object, field: str) -> list[str]:
    """Validate a sequence of ids (a bare ``str`` is refused: it would iterate characters).

    Raises
    ------
    InputError
        If ``ids`` is not a sequence of valid strings.
    """
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
        raise InputError(f"{field} must be a sequence of str, got {type(ids).__name__}")
    return [check_text(i, f"{field}[]") for i in ids]


@dataclass(frozen=True, slots=True)
class PreparedChange:
    """A validated, encoded :class:`~personatree.ports.ChangeSet` (rows with seq 0).

    Observations are de-duplicated by id within the change (the first one wins), as
    they are against the stored log.
    """

    user_id: str
    expected_version: int | None
    observations: list[tuple[Any, ...]]
    upsert_nodes: list[tuple[Any, ...]]
    delete_nodes: list[str]
    upsert_edges: list[tuple[Any, ...]]
    delete_edges: list[tuple[str, str]]
    events: list[tuple[Any, ...]]
    empty: bool
    delete_observations: list[str] = field(default_factory=list)
    # Archive rows (node rows of leaves that left the tree) and archive ids to drop:
    # the ids of upserted tree nodes are in ``unarchive`` too (one place or the other).
    archive_nodes: list[tuple[Any, ...]] = field(default_factory=list)
    unarchive: list[str] = field(default_factory=list)
    # The change only updates recall statistics (ChangeSet.stats_only, honoured for an
    # upsert-only change): the user's retrieval snapshot is kept, not deleted.
    keeps_snapshot: bool = False


def prepare_change(change: ChangeSet) -> PreparedChange:
    """Validate and encode a change set before any storage is touched.

    Raises
    ------
    InputError
        If anything in it is malformed or belongs to another user.
    """
    if not isinstance(change, ChangeSet):
        raise InputError(f"commit takes a ChangeSet, got {type(change).__name__}")
    user_id = check_text(change.user_id, "user_id", nonempty=True)
    expected = change.expected_version
    if expected is not None and (isinstance(expected, bool) or not isinstance(expected, int) or expected < 0):
        raise InputError(f"expected_version must be None or an int >= 0, got {expected!r}")
    observations: list[tuple[Any, ...]] = []
    seen: set[str] = set()
    for obs in change.observations:
        row = encode_observation(obs, user_id)
        if row[1] not in seen:
            seen.add(row[1])
            observations.append(row)
    delete_edges: list[tuple[str, str]] = []
    for pair in change.delete_edges:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise InputError(f"delete_edges must hold (src, dst) tuples, got {pair!r}")
        delete_edges.append((check_text(pair[0], "delete_edges src"), check_text(pair[1], "delete_edges dst")))
    archive_rows = []
    for n in change.archive_nodes:
        if not isinstance(n, Node) or n.level is not Level.LEAF:
            raise InputError("archive_nodes must hold leaf nodes")
        archive_rows.append(encode_node(n, user_id))
    upserts = [encode_node(n, user_id) for n in change.upsert_nodes]
    unarchive = check_ids(change.unarchive, "unarchive")
    return PreparedChange(
        user_id=user_id,
        expected_version=expected,
        observations=observations,
        upsert_nodes=upserts,
        delete_nodes=check_ids(change.delete_nodes, "delete_nodes"),
        upsert_edges=[encode_edge(e, user_id) for e in change.upsert_edges],
        delete_edges=delete_edges,
        events=[encode_event(e, user_id) for e in change.events],
        empty=change.is_empty(),
        delete_observations=check_ids(change.delete_observations, "delete_observations"),
        archive_nodes=archive_rows,
        unarchive=list(dict.fromkeys([*unarchive, *(r[1] for r in upserts)])),
        keeps_snapshot=change.stats_only is True and bool(upserts) and not (
            change.observations or change.delete_nodes or change.upsert_edges or change.delete_edges
            or change.events or change.delete_observations or change.archive_nodes or change.unarchive),
    )
