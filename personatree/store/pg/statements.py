"""SQL of the PostgreSQL row tables, generated from the codec's column orders.

Generated (through :mod:`personatree.store.rows`, as the SQLite store's are), so the
codec and the statements cannot disagree about positions.
"""

from __future__ import annotations

from ..codec import EDGE_COLUMNS, EVENT_COLUMNS, NODE_COLUMNS, OBSERVATION_COLUMNS
from ..rows import insert_sql, placeholders, select_sql, upsert_sql

__all__ = [
    "INSERT_EVENT",
    "INSERT_OBS",
    "SELECT_EDGES",
    "SELECT_EVENTS",
    "SELECT_NODES",
    "SELECT_OBS",
    "UPSERT_EDGE",
    "UPSERT_NODE",
    "UPSERT_ARCHIVE",
    "SELECT_ARCHIVE",
]


def _ph(n: int) -> str:
    return placeholders(n, "%s")


# The embedding (second to last) goes in binary: "%b" (see .adapt).
_NODE_VALUES = ", ".join(["%s"] * (len(NODE_COLUMNS) - 2) + ["%b", "%s"])

INSERT_OBS = insert_sql("observations", OBSERVATION_COLUMNS, _ph(len(OBSERVATION_COLUMNS)))
UPSERT_NODE = upsert_sql("nodes", NODE_COLUMNS, 2, _NODE_VALUES)
UPSERT_ARCHIVE = upsert_sql("archive", NODE_COLUMNS, 2, _NODE_VALUES)
UPSERT_EDGE = upsert_sql("edges", EDGE_COLUMNS, 3, _ph(len(EDGE_COLUMNS)))
INSERT_EVENT = insert_sql("journal", EVENT_COLUMNS, _ph(len(EVENT_COLUMNS)))

# Callers add "AND ..." and "ORDER BY seq" to the observations' select.
SELECT_OBS = select_sql("observations", OBSERVATION_COLUMNS, where="user_id = %s")
# pos (bigserial) is first-insertion order, which an upsert keeps: as SQLite's rowid.
SELECT_NODES = select_sql("nodes", NODE_COLUMNS, where="user_id = %s", order_by="pos")
SELECT_EDGES = select_sql("edges", EDGE_COLUMNS, where="user_id = %s", order_by="pos")
# Callers add "AND ..." and "ORDER BY pos".
SELECT_ARCHIVE = select_sql("archive", NODE_COLUMNS, where="user_id = %s")
SELECT_EVENTS = select_sql("journal", EVENT_COLUMNS, where="user_id = %s", order_by="seq")
