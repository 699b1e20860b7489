"""The shared instruments of a run: one embedder and one token counter for every system.

The benchmark's fairness rests on all systems seeing the same embedding model and
counting tokens with the same tokenizer, so both are built once here and handed to
every system.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:
    from personatree import Embedder, TokenCounter

__all__ = ["CachedEmbedder", "CachedTokenCounter", "default_embedder", "make_token_counter"]


def default_embedder() -> Embedder:
    """The embedder every system shares unless a run is given one: the packaged all-MiniLM-L6-v2."""
    # Imported here: loading sentence-transformers is slow, and a run given an embedder never needs it.
    from personatree.embedders import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


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

    def __init__(self, base: Embedder) -> None:
        self.base = base
        self._cache: dict[str, np.ndarray] = {}

    @property
    def name(self) -> str:
        """The wrapped embedder's name (the vectors are the same)."""
        return str(self.base.name)

    @property
    def dim(self) -> int:
        """The wrapped embedder's dimension."""
        return int(self.base.dim)

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
            vecs = self.base.embed(missing)
            for t, v in zip(missing, vecs):
                self._cache[t] = v
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts]).astype(np.float32, copy=False)


class CachedTokenCounter:
    """A :class:`~personatree.ports.TokenCounter` that memoizes counts by text.

    Baselines count the same turn at every budget and every question; caching makes
    packing cheap without changing a single count.

    Parameters
    ----------
    base : TokenCounter
    """

    def __init__(self, base: TokenCounter) -> None:
        self.base = base
        self._cache: dict[str, int] = {}

    def count(self, text: str) -> int:
        """Tokens in ``text`` (as the wrapped counter says)."""
        n = self._cache.get(text)
        if n is None:
            n = int(self.base.count(text))
            if len(self._cache) < 1_000_000:
                self._cache[text] = n
        return n


def make_token_counter(model: str = "gpt-4o-mini") -> CachedTokenCounter:
    """The token counter every system uses: the engine's own, cached.

    Parameters
    ----------
    model : str
        Model whose tokenizer counts.

    Returns
    -------
    CachedTokenCounter
    """
    # Imported here: importing litellm is slow and reads the environment.
    from personatree.retrieval.tokens import LiteLLMTokenCounter

    return CachedTokenCounter(LiteLLMTokenCounter(model))
