"""The scheduled consolidation job across users (``consolidation/run_job.py``).

One run consolidates every user changed since their last consolidation: the store
keeps, per user, the version reached by the last pass (meta key
``consolidation.version.<user>``), so an unchanged user costs one lookup. Each user
runs under a per-user lock (:mod:`~personatree.consolidate.locks`): an overlapping run
skips users it cannot lock, and rebasing a plan onto the tree it finds makes even
unlocked overlaps (and users written to mid-pass) safe. Users run on a local process pool by default (each worker opens its own
:class:`~personatree.api.PersonaTree` on the store) or on a Dask distributed cluster
given a scheduler address. A failing user is reported and the others still finish; the
exit code is non-zero when any user failed.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from .config import PersonaTreeConfig
from .errors import StaleStateError
from .types import utc
from .ports import Store
from .consolidate.locks import FileLocks, ThreadLocks, UserLocks, default_lock_dir

if TYPE_CHECKING:  # pragma: no cover
    from .api import PersonaTree

__all__ = ["Task", "UserResult", "JobReport", "consolidate_one", "changed_users", "run_job", "meta_key", "close_trees"]

FAILED = "failed"
#: A pass that found nothing to change (not "empty": the user may hold much evidence).
UP_TO_DATE = "up-to-date"


def meta_key(user_id: str) -> str:
    """The store meta key holding the version a user's last consolidation reached."""
    return f"consolidation.version.{user_id}"


@dataclass(frozen=True, slots=True)
class Task:
    """One user's work, as plain data (picklable for process pools and Dask)."""

    store: str
    user_id: str
    now: str
    dry_run: bool = False
    force: bool = False
    config: str = ""  # PersonaTreeConfig as JSON ("" = defaults)
    lock_dir: str | None = None


@dataclass(frozen=True, slots=True)
class UserResult:
    """What happened to one user.

    ``status`` is ``consolidated`` (a plan was applied), ``up-to-date`` (the pass found
    nothing to change, however much is stored), ``planned`` (dry run with changes to make), ``unchanged`` (no change since the last pass), ``locked``
    (another run holds the user), ``stale`` (concurrent writes touched every part of
    every plan tried; the next run picks it up) or ``failed``.
    """

    user_id: str
    status: str
    version: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    error: str = ""


@dataclass(frozen=True, slots=True)
class JobReport:
    """All users' results of one run."""

    results: tuple[UserResult, ...]
    seconds: float

    @property
    def failed(self) -> tuple[UserResult, ...]:
        """The users that failed."""
        return tuple(r for r in self.results if r.status == FAILED)

    @property
    def exit_code(self) -> int:
        """0 when no user failed, else 1."""
        return 1 if self.failed else 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"seconds": self.seconds, "exit_code": self.exit_code, "results": [asdict(r) for r in self.results]}


# -- the worker side ---------------------------------------------------------------------

_TREES: dict[tuple[int, int, str, str], "PersonaTree"] = {}


def _tree(store: str, config: str) -> "PersonaTree":
    """One PersonaTree per (process, thread, store, config): the model loads once per worker."""
    from .api import PersonaTree

    key = (os.getpid(), threading.get_ident(), store, config)
    if key not in _TREES:
        cfg = PersonaTreeConfig.model_validate_json(config) if config else PersonaTreeConfig()
        _TREES[key] = PersonaTree.open(store, cfg)
    return _TREES[key]


def close_trees() -> None:
    """Close the trees this process opened for jobs (inline runs call it at the end)."""
    me = os.getpid()
    for key in [k for k in _TREES if k[0] == me]:
        _TREES.pop(key).close()


def _locks(task: Task) -> UserLocks:
    directory = task.lock_dir or default_lock_dir(task.store)
    return FileLocks(directory) if directory is not None else ThreadLocks()


def consolidate_one(task: Task) -> UserResult:
    """Consolidate one user (runs in a worker); never raises, failures are results."""
    from .consolidate.apply import consolidate_user

    start = time.perf_counter()
    locks = _locks(task)
    if not locks.acquire(task.user_id):
        return UserResult(task.user_id, "locked")
    try:
        tree = _tree(task.store, task.config)
        version = tree.store.version(task.user_id)
        if not task.force and tree.store.get_meta(meta_key(task.user_id)) == str(version):
            return UserResult(task.user_id, "unchanged", version, seconds=time.perf_counter() - start)
        plan = consolidate_user(tree, task.user_id, dry_run=task.dry_run,
                                now=utc(datetime.fromisoformat(task.now)))
        after = tree.store.version(task.user_id)
        if plan.is_empty():
            status = UP_TO_DATE
        else:
            status = "planned" if task.dry_run else "consolidated"
        if not task.dry_run and not plan.dropped_parts:
            # A pass that left parts for later (concurrent writes touched them) does
            # not mark the user done: the next run plans them again.
            tree.store.set_meta(meta_key(task.user_id), str(after))
        return UserResult(task.user_id, status, after, plan.counts(), time.perf_counter() - start)
    except StaleStateError as exc:
        return UserResult(task.user_id, "stale", error=str(exc), seconds=time.perf_counter() - start)
    except Exception as exc:  # noqa: BLE001 - one user's failure must not stop the others
        return UserResult(task.user_id, FAILED, error=f"{type(exc).__name__}: {exc}",
                          seconds=time.perf_counter() - start)
    finally:
        locks.release(task.user_id)


# -- the driver side ---------------------------------------------------------------------


def changed_users(store: Store, users: Iterable[str] | None = None) -> list[str]:
    """Users whose store version moved since their last consolidation (sorted)."""
    out = []
    for u in sorted(users if users is not None else store.users()):
        if store.get_meta(meta_key(u)) != str(store.version(u)):
            out.append(u)
    return out


def _pool_map(tasks: Sequence[Task], workers: int) -> Iterable[UserResult]:
    if workers <= 1 or len(tasks) <= 1:
        try:
            for t in tasks:
                yield consolidate_one(t)
        finally:
            close_trees()
        return
    # spawn, not fork: the parent may hold threads (torch, BLAS) that fork would break.
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=ctx) as pool:
        futures = {pool.submit(consolidate_one, t): t for t in tasks}
        for fut in as_completed(futures):
            try:
                yield fut.result()
            except Exception as exc:  # noqa: BLE001 - a crashed worker fails its user only
                yield UserResult(futures[fut].user_id, FAILED, error=f"{type(exc).__name__}: {exc}")


def _dask_map(tasks: Sequence[Task], scheduler: Any) -> Iterable[UserResult]:
    from dask.distributed import Client, as_completed as dask_completed

    client = Client(scheduler) if isinstance(scheduler, str) else scheduler
    try:
        futures = client.map(consolidate_one, list(tasks), pure=False)
        owner = {f.key: t for f, t in zip(futures, tasks)}
        for fut in dask_completed(futures):
            try:
                yield fut.result()
            except Exception as exc:  # noqa: BLE001
                yield UserResult(owner[fut.key].user_id, FAILED, error=f"{type(exc).__name__}: {exc}")
    finally:
        if isinstance(scheduler, str):
            client.close()


def run_job(
    store: str,
    *,
    users: Sequence[str] | None = None,
    workers: int | None = None,
    scheduler: Any = None,
    now: datetime | None = None,
    dry_run: bool = False,
    force: bool = False,
    config: PersonaTreeConfig | None = None,
    lock_dir: str | None = None,
    on_result: Callable[[UserResult, int, int], None] | None = None,
) -> JobReport:
    """Consolidate every changed user of a store.

    Parameters
    ----------
    store : str
        SQLite path or store URL (every worker opens it).
    users : sequence of str, optional
        Only these users (default: all).
    workers : int, optional
        Local process-pool size (default: CPU count; ≤ 1 runs inline).
    scheduler : str or dask.distributed.Client, optional
        A Dask scheduler address (``tcp://host:8786``) or client; replaces the pool.
    now : datetime, optional
        Logical time of every pass (default: now, UTC).
    dry_run : bool
        Plan only; the watermark is not moved.
    force : bool
        Also consolidate users unchanged since their last pass.
    config : PersonaTreeConfig, optional
        Configuration each worker opens the store with.
    lock_dir : str, optional
        Directory of the per-user lock files (default: ``<store file>.locks``).
    on_result : callable, optional
        Called with (result, done, total) as users finish (progress display).

    Returns
    -------
    JobReport
    """
    from .store import open_store

    start = time.perf_counter()
    at = utc(now) if now is not None else datetime.now(timezone.utc)
    st = open_store(store)
    try:
        todo = sorted(users if users is not None else st.users()) if force else changed_users(st, users)
        skipped = [u for u in sorted(users if users is not None else st.users()) if u not in set(todo)]
        if not dry_run:
            st.set_meta("consolidation.last_run", utc(at).isoformat())
    finally:
        st.close()
    cfg = config.model_dump_json() if config is not None else ""
    tasks = [Task(store, u, utc(at).isoformat(), dry_run, force, cfg, lock_dir) for u in todo]
    results = [UserResult(u, "unchanged") for u in skipped]
    stream = _dask_map(tasks, scheduler) if scheduler is not None else _pool_map(tasks, workers or os.cpu_count() or 1)
    for i, res in enumerate(stream, 1):
        results.append(res)
        if on_result is not None:
            on_result(res, i, len(tasks))
    results.sort(key=lambda r: r.user_id)
    return JobReport(tuple(results), time.perf_counter() - start)
