"""SQL of the SQLite row tables, generated from the codec's column orders, and the
chunked ``IN (...)`` select that every id-list read of the store uses.

Generated (through :mod:`personatree.store.rows`, as the PostgreSQL store's are), so
the codec and the statements cannot disagree about positions.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from operator import itemgetter
from typing import Any

from .. import rows
from ..codec import EDGE_COLUMNS, EVENT_COLUMNS, NODE_COLUMNS, OBSERVATION_COLUMNS

__all__ = [
    "DELETE_USER",
    "INSERT_EVENT",
    "INSERT_OBS",
    "RECALL_STATS",
    "SELECT_ARCHIVE",
    "SELECT_EDGES",
    "SELECT_EVENTS",
    "SELECT_NODES",
    "SELECT_OBS",
    "UPSERT_ARCHIVE",
    "UPSERT_EDGE",
    "UPSERT_META",
    "UPSERT_NODE",
    "in_rowid_order",
    "select_in",
]

# SQLite's default limit on bound parameters is 32766 (3.32+); stay far below it.
_CHUNK = 500


def _marks(n: int) -> str:
    return rows.placeholders(n, "?")


INSERT_OBS = rows.insert_sql("observations", OBSERVATION_COLUMNS, _marks(len(OBSERVATION_COLUMNS)))
UPSERT_NODE = rows.upsert_sql("nodes", NODE_COLUMNS, 2, _marks(len(NODE_COLUMNS)))
UPSERT_EDGE = rows.upsert_sql("edges", EDGE_COLUMNS, 3, _marks(len(EDGE_COLUMNS)))
INSERT_EVENT = rows.insert_sql("journal", EVENT_COLUMNS, _marks(len(EVENT_COLUMNS)))
SELECT_OBS = rows.select_sql("observations", OBSERVATION_COLUMNS)
# rowid order is first-insertion order: an upsert keeps the row (and its rowid). The
# rows are selected with their rowid first and put in that order by ``in_rowid_order``:
# read through the (user, level) index, ``ORDER BY rowid`` makes SQLite sort them in a
# temporary B-tree, which took longer than reading them (a tree of 10^4 nodes).
SELECT_NODES = rows.select_sql("nodes", ("rowid", *NODE_COLUMNS), where="user_id = ?")
SELECT_EDGES = rows.select_sql("edges", ("rowid", *EDGE_COLUMNS), where="user_id = ?")
SELECT_EVENTS = rows.select_sql("journal", EVENT_COLUMNS, where="user_id = ?", order_by="seq")
# The tree nodes a recall has used (most of a big tree never is).
RECALL_STATS = ("SELECT id, recall_count, t_access FROM nodes "
                "WHERE user_id = ? AND (recall_count > 0 OR t_access IS NOT NULL)")
UPSERT_ARCHIVE = rows.upsert_sql("archive", NODE_COLUMNS, 2, _marks(len(NODE_COLUMNS)))
SELECT_ARCHIVE = rows.select_sql("archive", NODE_COLUMNS, where="user_id = ?")
DELETE_USER = rows.delete_user_sql("?", "max")
UPSERT_META = (
    "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)


def in_rowid_order(found: list[Any]) -> list[Any]:
    """Rows selected with their rowid first (``SELECT_NODES``, ``SELECT_EDGES``), in
    rowid order and without it: the rows the codec decodes, in insertion order."""
    found.sort(key=itemgetter(0))
    return [r[1:] for r in found]


def select_in(
    conn: sqlite3.Connection, head: str, user_id: str, ids: Sequence[str], tail: str = ""
) -> list[Any]:
    """Rows of ``{head} AND id IN (...) {tail}`` for ``ids``, in chunks of bound parameters.

    Parameters
    ----------
    conn : sqlite3.Connection
        The connection of the caller's transaction.
    head : str
        A select that ends in ``WHERE user_id = ?``.
    user_id : str
        The value bound to that first marker.
    ids : sequence of str
        The ids to look up (may be many: they are sent in chunks).
    tail : str
        What follows the ``IN`` list in each chunk's statement (e.g. an ``ORDER BY``).

    Returns
    -------
    list
        The rows of every chunk, chunk after chunk.
    """
    found: list[Any] = []
    for i in range(0, len(ids), _CHUNK):
        chunk = ids[i : i + _CHUNK]
        sql = f"{head} AND id IN ({_marks(len(chunk))}){tail}"
        found.extend(conn.execute(sql, (user_id, *chunk)))
    return found
