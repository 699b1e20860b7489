"""Row shaping, SQL text and commit rules shared by the stores.

The codec (:mod:`personatree.store.codec`) turns domain objects into row tuples and
back. This module holds what the stores then do with those tuples in the same way:
build their SQL from the codec's column orders, number log and journal rows, refuse
stale commits, delete a user, scope cache keys, decode a user's rows into a checksum,
and check the invariants that the SQL schemas share. Each SQL store passes its own placeholders (``?`` or ``%s``) and,
for PostgreSQL, the function that undoes its text escaping; nothing here talks to a
database driver, so the module imports nothing optional.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..errors import StaleStateError
from . import codec
from .codec import EVENT_COLUMNS, OBSERVATION_COLUMNS

__all__ = [
    "EVENT_SEQ",
    "OBS_SEQ",
    "STORE_TABLES",
    "USER_COUNT_TABLES",
    "USER_DELETE_ORDER",
    "USER_TABLES",
    "cache_scope",
    "check_expected_version",
    "column_list",
    "delete_user_sql",
    "digest_rows",
    "insert_sql",
    "integrity_problems",
    "numbered",
    "placeholders",
    "select_sql",
    "upsert_sql",
    "with_seq",
]

Row = tuple[Any, ...]

# Positions of the store-assigned sequence numbers in the codec's row tuples.
OBS_SEQ = OBSERVATION_COLUMNS.index("seq")
EVENT_SEQ = EVENT_COLUMNS.index("seq")

# The per-user tables (besides ``users`` and ``cache``), as ``counts`` names them.
USER_TABLES = ("observations", "nodes", "edges", "journal")
# ``counts`` keys: for one user, and for the whole store (``meta`` has no user). The
# archive is counted: it is part of what the user's memory holds.
USER_COUNT_TABLES = ("users", *USER_TABLES, "archive", "cache")
STORE_TABLES = (*USER_COUNT_TABLES, "meta")
# ``delete_user`` order: edges before the nodes they reference, the user row last.
# ``turn_docs`` and ``retrieval_snapshots`` are derived (recall's turn index and built
# state, see migrations 0004 and 0005): not counted, but deleted with the user like
# everything else of theirs.
USER_DELETE_ORDER = ("edges", "nodes", "archive", "observations", "journal", "cache", "turn_docs",
                     "retrieval_snapshots", "users")


# -- SQL text ----------------------------------------------------------------------------


def column_list(columns: Sequence[str]) -> str:
    """The columns as a comma-separated SQL list."""
    return ", ".join(columns)


def placeholders(n: int, mark: str) -> str:
    """``n`` bind markers (``?`` for SQLite, ``%s`` for psycopg), comma-separated."""
    return ", ".join([mark] * n)


def insert_sql(table: str, columns: Sequence[str], values: str) -> str:
    """``INSERT INTO table (columns) VALUES (values)``.

    Parameters
    ----------
    table : str
        The table.
    columns : sequence of str
        Its columns, in the codec's row order.
    values : str
        The bind markers, one per column (see :func:`placeholders`).

    Returns
    -------
    str
        The statement.
    """
    return f"INSERT INTO {table} ({column_list(columns)}) VALUES ({values})"


def upsert_sql(table: str, columns: Sequence[str], key: int, values: str) -> str:
    """An insert that updates every non-key column of the row it conflicts with.

    Parameters
    ----------
    table : str
        The table.
    columns : sequence of str
        Its columns, in the codec's row order, primary-key columns first.
    key : int
        How many leading columns form the conflict target (the primary key).
    values : str
        The bind markers, one per column.

    Returns
    -------
    str
        ``INSERT ... ON CONFLICT (key columns) DO UPDATE SET c = excluded.c, ...``.
    """
    return (
        f"{insert_sql(table, columns, values)} ON CONFLICT ({column_list(columns[:key])}) DO UPDATE SET "
        + ", ".join(f"{c} = excluded.{c}" for c in columns[key:])
    )


def select_sql(table: str, columns: Sequence[str], *, where: str = "", order_by: str = "") -> str:
    """``SELECT columns FROM table`` with an optional ``WHERE`` and ``ORDER BY``.

    Parameters
    ----------
    table : str
        The table.
    columns : sequence of str
        The columns, in the codec's row order (so rows decode directly).
    where : str
        The condition, without the keyword (empty: none).
    order_by : str
        The sort key, without the keywords (empty: none).

    Returns
    -------
    str
        The statement.
    """
    text = f"SELECT {column_list(columns)} FROM {table}"
    if where:
        text += f" WHERE {where}"
    if order_by:
        text += f" ORDER BY {order_by}"
    return text


# -- rows --------------------------------------------------------------------------------


def with_seq(row: Row, index: int, seq: int) -> Row:
    """``row`` with its sequence number (at ``index``) set to ``seq``.

    The codec encodes new log and journal rows with ``seq`` = 0: only the store knows
    the user's counters, so it numbers them when it writes them.
    """
    return (*row[:index], seq, *row[index + 1 :])


def numbered(rows: Sequence[Row], index: int, last: int) -> list[Row]:
    """``rows`` numbered ``last + 1, last + 2, ...`` at position ``index``.

    Parameters
    ----------
    rows : sequence of tuple
        Codec rows in write order (observations: :data:`OBS_SEQ`; journal events:
        :data:`EVENT_SEQ`).
    index : int
        Position of the sequence number in the rows.
    last : int
        The user's counter before this write (the last number already used).

    Returns
    -------
    list of tuple
        The rows, gap-free after ``last``.
    """
    return [with_seq(r, index, last + i + 1) for i, r in enumerate(rows)]


def check_expected_version(prep: codec.PreparedChange, current: int) -> None:
    """Refuse a change computed from another version of the user's tree.

    Parameters
    ----------
    prep : PreparedChange
        The change; its ``expected_version`` (``None``: unconditional) is checked.
    current : int
        The user's stored version, read inside the commit's transaction.

    Raises
    ------
    StaleStateError
        If ``prep.expected_version`` is set and differs from ``current``.
    """
    if prep.expected_version is not None and prep.expected_version != current:
        raise StaleStateError(
            f"user {prep.user_id!r} is at version {current}, the change expected "
            f"{prep.expected_version}; reload and retry"
        )


def delete_user_sql(mark: str, greatest: str) -> tuple[str, ...]:
    """The statements of ``delete_user``, in order, each binding the user id once.

    The first raises the store-wide version floor to the user's version, so a user
    re-created later never gets a version seen before; then every row of the user
    goes, in :data:`USER_DELETE_ORDER`.

    Parameters
    ----------
    mark : str
        The bind marker (``?`` or ``%s``).
    greatest : str
        The SQL function of the larger of two values (``max`` in SQLite,
        ``GREATEST`` in PostgreSQL).

    Returns
    -------
    tuple of str
        The statements, to run in one transaction.
    """
    floor = (
        f"UPDATE store_state SET version_floor = {greatest}(version_floor, "
        f"coalesce((SELECT version FROM users WHERE user_id = {mark}), 0)) WHERE id = 1"
    )
    return (floor, *(f"DELETE FROM {table} WHERE user_id = {mark}" for table in USER_DELETE_ORDER))


def cache_scope(user_id: str | None) -> str:
    """The cache rows' ``user_id`` for a cache call: ``''`` when unscoped.

    Raises
    ------
    InputError
        If ``user_id`` is given but empty or not valid text: ``''`` is taken by the
        unscoped cache, so a real user id must be non-empty.
    """
    if user_id is None:
        return ""
    return codec.check_text(user_id, "user_id", nonempty=True)


def digest_rows(
    observations: Iterable[Sequence[Any]],
    nodes: Iterable[Sequence[Any]],
    edges: Iterable[Sequence[Any]],
    events: Iterable[Sequence[Any]],
    archive: Iterable[Sequence[Any]] = (),
) -> str:
    """:func:`personatree.store.codec.digest` of one user's stored rows.

    Parameters
    ----------
    observations, nodes, edges, events : iterable of row tuples
        The user's rows in the codec's column orders, as read.
    archive : iterable of row tuples
        The user's archived leaves (node columns).

    Returns
    -------
    str
        Hex digest, equal in every store for equal data.
    """
    return codec.digest(
        [codec.decode_observation(r) for r in observations],
        [codec.decode_node(r) for r in nodes],
        [codec.decode_edge(r) for r in edges],
        [codec.decode_event(r) for r in events],
        [codec.decode_node(r) for r in archive],
    )


# -- invariants --------------------------------------------------------------------------

_DANGLING_EDGES = (
    "SELECT e.user_id, e.src, e.dst FROM edges e "
    "LEFT JOIN nodes a ON a.user_id = e.user_id AND a.id = e.src "
    "LEFT JOIN nodes b ON b.user_id = e.user_id AND b.id = e.dst "
    "WHERE a.id IS NULL OR b.id IS NULL"
)
_OWNED_TABLES = ("observations", "nodes", "journal")


def _counter_behind(counter: str, table: str, alias: str) -> str:
    # users.user_id is the primary key, so grouping by (user_id, counter) forms the same
    # groups as by user_id alone; PostgreSQL needs the counter named in GROUP BY.
    return (
        f"SELECT u.user_id, u.{counter}, max({alias}.seq) FROM users u JOIN {table} {alias} "
        f"ON {alias}.user_id = u.user_id GROUP BY u.user_id, u.{counter} HAVING max({alias}.seq) > u.{counter}"
    )


_COUNTERS = (
    ("observation", _counter_behind("obs_seq", "observations", "o")),
    ("journal", _counter_behind("event_seq", "journal", "j")),
)


def _same(text: str) -> str:
    return text


def integrity_problems(
    query: Callable[[str], Iterable[Sequence[Any]]], text: Callable[[str], str] = _same
) -> list[str]:
    """The schema-level invariants every SQL store checks, as problem messages.

    Edges whose ends are missing, per-user rows without a user row, and log or
    journal counters behind the stored positions.

    Parameters
    ----------
    query : callable
        Runs one parameterless statement inside the caller's read transaction and
        returns its rows (a DB-API ``execute``).
    text : callable
        Turns a stored id back into the caller's text (PostgreSQL's unescape).

    Returns
    -------
    list of str
        One message per problem; empty when healthy.
    """
    problems: list[str] = []
    for uid, src, dst in query(_DANGLING_EDGES):
        problems.append(f"edge {text(src)!r}->{text(dst)!r} of user {text(uid)!r} references a missing node")
    for table in _OWNED_TABLES:
        for (n,) in query(
            f"SELECT count(*) FROM {table} t WHERE NOT EXISTS "
            "(SELECT 1 FROM users u WHERE u.user_id = t.user_id)"
        ):
            if n:
                problems.append(f"{n} {table} rows belong to no user row")
    for name, statement in _COUNTERS:
        for uid, counter, top in query(statement):
            problems.append(f"user {text(uid)!r}: {name} counter {counter} behind seq {top}")
    return problems
