"""Token counting with the target model's real tokenizer (the ``TokenCounter`` port).

``litellm.token_counter`` picks the tokenizer of a model (tiktoken for OpenAI models,
bundled Hugging Face tokenizers for others) and works offline, but each call costs
~30 µs for a line, most of it resolving the tokenizer again; the count function is
resolved once per model (~4 µs a line). Recall counts the same node lines over and
over, so counts are also cached per text hash. For the gpt-4o family (the default
model) the same counts are made with tiktoken directly (:mod:`.openai_tokens`), so a
process that calls no LLM never pays the seconds litellm takes to import.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Any, Callable

from ..offline_litellm import import_litellm
from .openai_tokens import direct_counter

__all__ = ["LiteLLMTokenCounter", "CachedCounter", "WordCounter", "shared_counter", "counter_of"]


# Probe texts checked against ``litellm.token_counter`` before its resolved count
# function is trusted: plain prose, a rendered line, emoji, a long text (litellm
# extrapolates past a length limit) and special-token text.
_PROBES = (
    "I went hiking with Anna at the lake on Saturday.",
    "  - [2023-05-08] Likes sushi 🍣, dislikes crowds (conf 0.82)\n",
    "word " * 3000,
    "<|endoftext|> ünïcödé 東京 12:30pm",
)


def _count_function(model: str) -> Callable[[str], int]:
    # litellm's counts either way; litellm itself is imported only when needed.
    return direct_counter(model, lambda: _litellm_counter(model)) or _litellm_counter(model)


def _litellm_counter(model: str) -> Callable[[str], int]:
    litellm = import_litellm()

    def count(text: str) -> int:
        return int(litellm.token_counter(model=model, text=text))

    # ``token_counter`` resolves the model's tokenizer on every call (~25 µs of its
    # ~30 µs for a line). litellm's own resolver, called once, returns the same count
    # function it would use; it is private API, so it is only trusted when it agrees
    # with the public call on the probes, and the public call is used otherwise.
    try:
        from litellm.litellm_core_utils.token_counter import (  # noqa: PLC0415
            _get_count_function,
        )

        fast = _get_count_function(model)
        if all(int(fast(p)) == count(p) for p in _PROBES):
            return lambda text: int(fast(text))
    except Exception:  # noqa: BLE001 - any change in litellm's internals: stay public
        pass
    return count


class CachedCounter:
    """A :class:`~personatree.ports.TokenCounter` memoising another counting function.

    Parameters
    ----------
    fn : callable
        ``fn(text) -> int``.
    max_entries : int
        LRU capacity; older entries are evicted first.
    """

    def __init__(self, fn: Callable[[str], int], max_entries: int = 200_000) -> None:
        self._fn = fn
        self._max = max_entries
        self._cache: OrderedDict[bytes, int] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def count(self, text: str) -> int:
        """Number of tokens in ``text`` (cached by a 128-bit hash of the text)."""
        if not text:
            return 0
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                self.hits += 1
                return hit
        n = self._fn(text)
        with self._lock:
            self.misses += 1
            self._cache[key] = n
            if len(self._cache) > self._max:
                self._cache.popitem(last=False)
        return n


class LiteLLMTokenCounter(CachedCounter):
    """Counts tokens the way ``litellm.token_counter`` counts them for ``model``.

    litellm is imported only for a model not counted directly (see
    :mod:`.openai_tokens`).

    Parameters
    ----------
    model : str
        Any model name litellm knows (``"gpt-4o-mini"``, ``"claude-3-5-sonnet"``, ...);
        unknown names fall back to litellm's default tokenizer.
    max_entries : int
        Cache capacity.
    """

    def __init__(self, model: str = "gpt-4o-mini", max_entries: int = 200_000) -> None:
        self.model = model
        super().__init__(_count_function(model), max_entries)

    def __repr__(self) -> str:
        return f"LiteLLMTokenCounter({self.model!r})"


class WordCounter:
    """A crude, dependency-free counter (≈ 1.3 tokens per word) for quick experiments.

    It over-counts relative to BPE tokenizers on English prose, so budgets stay safe.
    """

    def count(self, text: str) -> int:
        """About 4/3 tokens per whitespace-separated word, at least 1 for non-empty text."""
        words = len(text.split())
        return 0 if not text else max(1, (4 * words + 2) // 3)


_COUNTERS: dict[str, LiteLLMTokenCounter] = {}
_COUNTERS_LOCK = threading.Lock()


def shared_counter(model: str) -> LiteLLMTokenCounter:
    """One cached counter per model per process (the cache is what makes counting cheap)."""
    with _COUNTERS_LOCK:
        c = _COUNTERS.get(model)
        if c is None:
            c = _COUNTERS[model] = LiteLLMTokenCounter(model)
        return c


def counter_of(obj: Any, model: str) -> Any:
    """The token counter a tree injects (attribute ``token_counter``), else the shared one."""
    injected = getattr(obj, "token_counter", None)
    return (
        injected if injected is not None and hasattr(injected, "count") else shared_counter(model)
    )
