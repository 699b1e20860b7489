"""The LLM response cache, in the store's cache table.

Keys hash (model, prompt id, the exact rendered messages, the sampling parameters), so
a new prompt version, a changed schema registry or another model never reuses an old
answer, while re-running consolidation or ``rebuild`` on the same data pays nothing.
Only validated answers are cached (as their canonical JSON), never failures or
fallbacks. Entries are scoped to the user whose text they hold, so ``delete_user``
removes them. Without a store the cache lives in process memory (bounded).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import OrderedDict
from typing import Any, Mapping, Sequence

from ..errors import PersonaTreeError
from ..ports import Store

__all__ = ["ResponseCache", "cache_key"]

_log = logging.getLogger(__name__)


def cache_key(
    model: str, prompt_id: str, messages: Sequence[Mapping[str, str]], params: Mapping[str, Any] | None = None
) -> str:
    """The cache key of one request.

    Parameters
    ----------
    model : str
        The litellm model string.
    prompt_id : str
        ``"<operation>.v<version>"``.
    messages : sequence of mappings
        The rendered chat messages.
    params : mapping, optional
        Sampling parameters that change the answer (temperature...).

    Returns
    -------
    str
        ``"<prompt_id>:<sha256 hex>"``.
    """
    blob = json.dumps(
        {"model": model, "prompt": prompt_id, "messages": [dict(m) for m in messages], "params": dict(params or {})},
        ensure_ascii=False, sort_keys=True, separators=(",", ":"),
    )
    return f"{prompt_id}:{hashlib.sha256(blob.encode('utf-8', 'surrogatepass')).hexdigest()}"


class ResponseCache:
    """Validated answers by key, in ``store``'s cache table (or in memory).

    Parameters
    ----------
    store : Store, optional
        Where entries live; ``None`` keeps them in process memory.
    namespace : str
        The store cache namespace.
    memory_items : int
        Bound of the in-memory cache (used without a store).

    Notes
    -----
    A failing cache never fails a judge call: read and write errors of the store are
    logged and treated as a miss.
    """

    def __init__(self, store: Store | None = None, *, namespace: str = "llm", memory_items: int = 4096) -> None:
        self.store = store
        self.namespace = namespace
        self._memory: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._limit = memory_items
        self._lock = threading.Lock()

    def get(self, key: str, *, user_id: str | None = None) -> Any | None:
        """The cached JSON value, or ``None`` on a miss."""
        raw: str | None
        if self.store is None:
            with self._lock:
                raw = self._memory.get((user_id or "", key))
                if raw is not None:
                    self._memory.move_to_end((user_id or "", key))
        else:
            try:
                raw = self.store.cache_get(self.namespace, key, user_id=user_id or None)
            except PersonaTreeError as exc:
                _log.warning("LLM cache read failed (%s); treating as a miss", exc)
                return None
        if raw is None:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return None

    def put(self, key: str, value: Any, *, user_id: str | None = None) -> None:
        """Store a JSON-serializable value."""
        raw = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        if self.store is None:
            with self._lock:
                self._memory[(user_id or "", key)] = raw
                self._memory.move_to_end((user_id or "", key))
                while len(self._memory) > self._limit:
                    self._memory.popitem(last=False)
            return
        try:
            self.store.cache_put(self.namespace, key, raw, user_id=user_id or None)
        except PersonaTreeError as exc:
            _log.warning("LLM cache write failed (%s); answer not cached", exc)
