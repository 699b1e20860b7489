"""The engine core shared by the facade and the services.

:class:`Engine` owns the collaborators (store, config, registry, embedder, judge,
clock, token counter), the lock, each user's cached tree, the transaction and its
retries, the journal replayers and the services' per-engine caches. The modules
beside it are the engine's own operations: ``ingest`` (observe), ``replay``
(rebuild), ``reads``, ``export``.
"""

from __future__ import annotations

from .caches import Caches, Slot
from .core import Engine, EngineLike, HasEngine, Replayer, TreeState, engine_of
from .reports import ForgetReport, RebuildReport

__all__ = ["Engine", "EngineLike", "HasEngine", "Replayer", "TreeState", "engine_of", "Caches", "Slot",
           "ForgetReport", "RebuildReport"]
