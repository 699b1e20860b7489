"""The shared instruments of a run: one embedder and one token counter for every system.

The benchmark's fairness rests on all systems seeing the same embedding model and
counting tokens with the same tokenizer, so both are built once here and handed to
every system.
"""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np

__all__ = ["CachedEmbedder", "CachedTokenCounter", "make_token_counter"]


class CachedEmbedder:
    """An :class:`~personatree.ports.Embedder` that memoizes another one by text.

    Used where the same texts recur across cases (PrefEval's distractors, LoCoMo-Plus
    hosts), so that every system pays for each distinct text once. Vectors are
    identical to the wrapped embedder's.

    Parameters
    ----------
    base : Embedder
        The real embedder.
    """

    def __init__(self, base: object) -> None:
        self.base = base
        self._cache: dict[str, np.ndarray] = {}

    @property
    def name(self) -> str:
        """The wrapped embedder's name (the vectors are the same)."""
        return str(self.base.name)  # type: ignore[attr-defined]

    @property
    def dim(self) -> int:
        """The wrapped embedder's dimension."""
        return int(self.base.dim)  # type: ignore[attr-defined]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed, computing only texts not seen before (in one batch).

        Parameters
        ----------
        texts : sequence of str

        Returns
        -------
        ndarray of shape (len(texts), dim)
        """
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            vecs = self.base.embed(missing)  # type: ignore[attr-defined]
            for t, v in zip(missing, vecs):
                self._cache[t] = v
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts]).astype(np.float32, copy=False)


class _LiteLLMCounter:
    """Fallback counter when ``personatree.retrieval.tokens`` is not available."""

    def __init__(self, model: str) -> None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm  # lazily: importing litellm is slow and reads the environment

        self._litellm = litellm
        self.model = model

    def count(self, text: str) -> int:
        return int(self._litellm.token_counter(model=self.model, text=text)) if text else 0


class CachedTokenCounter:
    """A :class:`~personatree.ports.TokenCounter` that memoizes counts by text.

    Baselines count the same turn at every budget and every question; caching makes
    packing cheap without changing a single count.

    Parameters
    ----------
    base : TokenCounter
    """

    def __init__(self, base: object) -> None:
        self.base = base
        self._cache: dict[str, int] = {}

    def count(self, text: str) -> int:
        """Tokens in ``text`` (as the wrapped counter says)."""
        n = self._cache.get(text)
        if n is None:
            n = int(self.base.count(text))  # type: ignore[attr-defined]
            if len(self._cache) < 1_000_000:
                self._cache[text] = n
        return n


def make_token_counter(model: str = "gpt-4o-mini") -> CachedTokenCounter:
    """The token counter every system uses: the engine's own if present, else litellm's.

    Parameters
    ----------
    model : str
        Model whose tokenizer counts.

    Returns
    -------
    CachedTokenCounter
    """
    try:
        from personatree.retrieval.tokens import LiteLLMTokenCounter
    except ImportError:
        return CachedTokenCounter(_LiteLLMCounter(model))
    return CachedTokenCounter(LiteLLMTokenCounter(model))
