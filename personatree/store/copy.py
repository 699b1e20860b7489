"""Copy everything from one store to another, verified (``personatree migrate``).

Typical use: move a single-process SQLite file to a PostgreSQL shared by many app
instances (or back). Each user is copied in one commit (all of that user or nothing),
then verified: the user's row counts and the store-independent checksum
(:func:`personatree.store.codec.digest`) must be equal on both sides. Store-wide
metadata and caches (LLM responses, watermarks) are copied too.

Re-running is safe: a user already in the target with the same checksum is skipped,
so an interrupted migration resumes where it stopped. A user present in the target
with *different* data is refused unless ``overwrite=True``. Writers should be stopped
during a migration; a user whose source version moves meanwhile fails verification.

Versions are per store: a copied user starts at the target's next version, not at the
source's number (versions only have to be monotonic within one store).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..errors import StoreError
from ..ports import ChangeSet, Store
from . import codec

__all__ = ["UserCopy", "CopyReport", "copy_store", "store_extras"]


@dataclass(frozen=True, slots=True)
class UserCopy:
    """The outcome for one user.

    Attributes
    ----------
    user_id : str
    status : str
        ``"copied"``, ``"skipped"`` (already identical in the target) or ``"failed"``.
    counts : dict
        The source's row counts (``observations``, ``nodes``, ``edges``, ``journal``, ``cache``).
    checksum : str
        The source's checksum.
    detail : str
        Why verification failed (empty otherwise).
    """

    user_id: str
    status: str
    counts: dict[str, int]
    checksum: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class CopyReport:
    """What :func:`copy_store` did.

    Attributes
    ----------
    users : list of UserCopy
    meta : int
        Metadata entries copied.
    cache : int
        Unscoped cache entries copied (user-scoped ones are in each user's counts).
    ok : bool
        Every user verified and every metadata and cache entry read back equal.
    problems : list of str
    """

    users: list[UserCopy] = field(default_factory=list)
    meta: int = 0
    cache: int = 0
    ok: bool = True
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (for ``--json``)."""
        return {
            "ok": self.ok,
            "meta": self.meta,
            "cache": self.cache,
            "problems": list(self.problems),
            "users": [
                {"user_id": u.user_id, "status": u.status, "counts": u.counts, "checksum": u.checksum,
                 "detail": u.detail}
                for u in self.users
            ],
        }


def store_extras(store: Store) -> tuple[list[tuple[str, str]], list[tuple[str, str, str, str]]]:
    """All metadata ``(key, value)`` and cache ``(user_id, namespace, key, value)`` rows.

    The Store protocol reads these by key only, so listing them needs the backend:
    SQLite and PostgreSQL are read directly; the in-memory fake from its fields.
    ``user_id`` is ``""`` for unscoped cache rows.

    Raises
    ------
    StoreError
        For a store kind that cannot be listed.
    """
    from .memory import MemoryStore
    from .sqlite import SQLiteStore

    if isinstance(store, SQLiteStore):
        # A separate read-only connection: one snapshot of both tables, no writes.
        conn = sqlite3.connect(f"file:{store.path}?mode=ro", uri=True)
        try:
            conn.execute("BEGIN")
            meta = [(str(k), str(v)) for k, v in conn.execute("SELECT key, value FROM meta ORDER BY key")]
            cache = [tuple(map(str, r)) for r in conn.execute(
                "SELECT user_id, namespace, key, value FROM cache ORDER BY user_id, namespace, key")]
        finally:
            conn.close()
        return meta, cache  # type: ignore[return-value]
    if isinstance(store, MemoryStore):
        with store._lock:
            return sorted(store._meta.items()), sorted((*k, v) for k, v in store._cache.items())
    if type(store).__name__ == "PostgresStore":
        return store._extras()  # type: ignore[attr-defined,no-any-return]
    raise StoreError(f"cannot list the metadata and caches of {type(store).__name__}")


def _user_counts(store: Store, user_id: str) -> dict[str, int]:
    counts = dict(store.counts(user_id))
    counts.pop("users", None)
    return counts


def copy_store(
    source: Store,
    target: Store,
    *,
    users: Sequence[str] | None = None,
    overwrite: bool = False,
    progress: Callable[[str], None] | None = None,
) -> CopyReport:
    """Copy users, metadata and caches from ``source`` to ``target`` and verify them.

    Parameters
    ----------
    source, target : Store
    users : sequence of str, optional
        Only these users (default: every user of the source).
    overwrite : bool
        Replace a user that exists in the target with different data (default: refuse
        that user and report it).
    progress : callable, optional
        Called with each user id once it is done.

    Returns
    -------
    CopyReport
        ``ok`` is False when any user or entry failed; nothing is raised for those, so
        that one bad user does not hide the state of the others.
    """
    wanted = source.users() if users is None else list(dict.fromkeys(codec.check_ids(users, "users")))
    meta, cache = store_extras(source)
    by_user: dict[str, list[tuple[str, str, str]]] = {}
    unscoped: list[tuple[str, str, str]] = []
    for uid, ns, key, value in cache:
        (by_user.setdefault(uid, []) if uid else unscoped).append((ns, key, value))
    report = CopyReport()
    for uid in wanted:
        result = _copy_user(source, target, uid, by_user.get(uid, []), overwrite)
        report.users.append(result)
        if result.status == "failed":
            report.problems.append(f"user {uid!r}: {result.detail}")
        if progress is not None:
            progress(uid)
    copied_meta = 0
    if users is None:  # store-wide entries only in a full copy
        for key, value in meta:
            target.set_meta(key, value)
            copied_meta += 1
        for ns, key, value in unscoped:
            target.cache_put(ns, key, value)
        for key, value in meta:
            if target.get_meta(key) != value:
                report.problems.append(f"meta {key!r} differs after the copy")
        for ns, key, value in unscoped:
            if target.cache_get(ns, key) != value:
                report.problems.append(f"cache {ns!r}/{key!r} differs after the copy")
    return CopyReport(
        users=report.users,
        meta=copied_meta,
        cache=len(unscoped) if users is None else 0,
        ok=not report.problems,
        problems=report.problems,
    )


def _copy_user(
    source: Store, target: Store, uid: str, cache: list[tuple[str, str, str]], overwrite: bool
) -> UserCopy:
    checksum = source.checksum(uid)
    counts = _user_counts(source, uid)
    if target.version(uid) != 0:
        if target.checksum(uid) == checksum and _user_counts(target, uid) == counts:
            return UserCopy(uid, "skipped", counts, checksum)
        if not overwrite:
            return UserCopy(uid, "failed", counts, checksum,
                            "exists in the target with different data (use overwrite to replace it)")
        target.delete_user(uid)
    version_before = source.version(uid)
    nodes, edges, _ = source.load_graph_with_version(uid)
    change = ChangeSet(
        uid,
        observations=source.observations(uid),
        upsert_nodes=nodes,
        upsert_edges=edges,
        events=source.events(uid),
        archive_nodes=source.archive(uid),
        expected_version=0,  # nobody else may have created the user meanwhile
    )
    target.commit(change)
    for ns, key, value in cache:
        target.cache_put(ns, key, value, user_id=uid)
    problems = []
    if source.version(uid) != version_before:
        problems.append("the source changed during the copy (stop writers and re-run)")
    if target.archive_ids(uid) != source.archive_ids(uid):
        problems.append("the archived leaves differ")
    got_counts = _user_counts(target, uid)
    if got_counts != counts:
        problems.append(f"counts differ: source {counts}, target {got_counts}")
    got = target.checksum(uid)
    if got != checksum:
        problems.append(f"checksum differs: source {checksum[:12]}…, target {got[:12]}…")
    for ns, key, value in cache:
        if target.cache_get(ns, key, user_id=uid) != value:
            problems.append(f"cache {ns!r}/{key!r} differs")
            break
    if problems:
        return UserCopy(uid, "failed", counts, checksum, "; ".join(problems))
    return UserCopy(uid, "copied", counts, checksum)
