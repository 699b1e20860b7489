"""Typing a statement with a leaf-level schema type, without an LLM.

A multinomial logistic regression over the embeddings of the schema examples, fitted
once per process per (embedder, examples); then

    score_t(x) = log p_t(x) + CUE_WEIGHT · min(cue hits of t in x, CUE_CAP)

and the type is the argmax.
"""

from __future__ import annotations

import re
import threading
from typing import Any, Sequence

import numpy as np

from ..ports import Embedder
from ..schema import SchemaRegistry
from ..text import normalize
from ..types import Level

__all__ = ["LeafTyper", "LOGREG_C", "CUE_WEIGHT", "CUE_CAP", "TIE_MARGIN"]

LOGREG_C = 16.0
CUE_WEIGHT = 0.1
CUE_CAP = 2
# A sentence whose two best scores are closer than this is typed again from its own
# embedding alone: batch padding moves an embedding by ~1e-6, so only a near-tie can
# flip with the batch, and re-typing those from one fixed path makes the type the same
# whichever observations share the call.
TIE_MARGIN = 0.01


class LeafTyper:
    """The leaf-level types of a registry, their fitted model and their cues.

    Parameters
    ----------
    embedder : Embedder
        Embeds the schema examples (once per process) and re-embeds near-ties.
    registry : SchemaRegistry
        Leaf-level types with their examples (a type without examples is represented
        by its description) and cues.
    """

    def __init__(self, embedder: Embedder, registry: SchemaRegistry) -> None:
        self._embedder = embedder
        leaf_types = registry.types_at(Level.LEAF)
        self.names: tuple[str, ...] = tuple(t.name for t in leaf_types)
        texts: list[str] = []
        bounds: list[tuple[int, int]] = []
        for t in leaf_types:
            # A type without examples is represented by its description.
            ex = list(t.examples) or [t.description]
            bounds.append((len(texts), len(texts) + len(ex)))
            texts.extend(ex)
        self._n_types = len(bounds)
        examples = _embedded_examples(embedder, tuple(texts))
        labels = np.concatenate([np.full(b - a, j) for j, (a, b) in enumerate(bounds)]) if bounds else np.zeros(0)
        self._model = _fitted_model(embedder, tuple(texts), examples, labels)
        # One alternation over every cue of every leaf type; a hit votes for each type
        # that lists the cue. Longest cues first so "i have two" beats "i have a".
        cue_types: dict[str, list[int]] = {}
        for i, t in enumerate(leaf_types):
            for cue in t.cues:
                key = normalize(cue).strip()
                if key:
                    cue_types.setdefault(key, []).append(i)
        self._cue_types = {k: tuple(v) for k, v in cue_types.items()}
        self._cue_re: re.Pattern[str] | None = None
        if cue_types:
            alternation = "|".join(re.escape(c) for c in sorted(cue_types, key=lambda c: (-len(c), c)))
            self._cue_re = re.compile(rf"(?<![\w'])(?:{alternation})(?![\w'])")

    def assign(self, emb: np.ndarray, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Type index and its probability for each embedded text; near-ties (see
        ``TIE_MARGIN``) are typed again from their own embedding alone."""
        types, scores, margins = self.classify(emb, texts)
        if len(texts) > 1:
            for i in np.flatnonzero(margins < TIE_MARGIN).tolist():
                alone = np.ascontiguousarray(self._embedder.embed([texts[i]]), dtype=np.float32)
                t1, s1, _ = self.classify(alone, texts[i : i + 1])
                types[i], scores[i] = t1[0], s1[0]
        return types, scores

    def classify(self, emb: np.ndarray, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Argmax type index, its probability and the margin to the runner-up score, for
        each embedded text."""
        if self._model is None:
            # One leaf type (or none with examples): nothing to decide.
            n = len(texts)
            return np.zeros(n, dtype=np.int64), np.ones(n), np.full(n, np.inf)
        proba = _softmax_proba(self._model, emb.astype(np.float64))
        scores = np.log(np.clip(proba, 1e-12, 1.0))
        if self._cue_re is not None:
            for i, text in enumerate(texts):
                for j, v in enumerate(self._cue_votes(normalize(text))):
                    if v:
                        scores[i, j] += CUE_WEIGHT * min(v, CUE_CAP)
        order = np.argsort(-scores, axis=1, kind="stable")
        rows = np.arange(len(texts))
        best = order[:, 0]
        margin = scores[rows, best] - scores[rows, order[:, 1]]
        return best, np.round(proba[rows, best], 3), margin

    def _cue_votes(self, normalized: str) -> list[int]:
        """Cue hits per type in a normalized text."""
        votes = [0] * self._n_types
        if self._cue_re is None:
            return votes
        for h in self._cue_re.findall(normalized):
            for j in self._cue_types[h]:
                votes[j] += 1
        return votes


_EXAMPLE_CACHE: dict[tuple[str, tuple[str, ...]], np.ndarray] = {}
_EXAMPLE_CACHE_LOCK = threading.Lock()


def _embedded_examples(embedder: Embedder, texts: tuple[str, ...]) -> np.ndarray:
    """Embeddings of the schema examples, computed once per process per embedder.

    Every ``PersonaTree.open`` builds a judge; re-embedding ~100 examples costs about two
    seconds on a laptop CPU, which a CLI call or a test would pay each time. The cached
    array is read-only.
    """
    key = (embedder.name, texts)
    with _EXAMPLE_CACHE_LOCK:
        hit = _EXAMPLE_CACHE.get(key)
    if hit is None:
        hit = np.ascontiguousarray(embedder.embed(list(texts)), dtype=np.float32)
        hit.flags.writeable = False
        with _EXAMPLE_CACHE_LOCK:
            _EXAMPLE_CACHE[key] = hit
    return hit


def _softmax_proba(model: Any, x: np.ndarray) -> np.ndarray:
    """The fitted multinomial model's class probabilities for the rows of ``x``.

    The arithmetic of scikit-learn's ``predict_proba`` (the same products, the same
    softmax), without its per-call input validation, which costs more than the product
    on a batch of a few dozen statements. With two classes the model is binary and its
    own method is used.
    """
    if len(model.classes_) <= 2:
        return np.asarray(model.predict_proba(x))
    scores = x @ model.coef_.T + model.intercept_
    scores -= scores.max(axis=1).reshape(-1, 1)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=1).reshape(-1, 1)
    return np.asarray(scores)


_MODEL_CACHE: dict[tuple[str, tuple[str, ...]], Any] = {}


def _fitted_model(embedder: Embedder, texts: tuple[str, ...], examples: np.ndarray, labels: np.ndarray) -> Any:
    """The logistic regression from example embeddings to leaf types, fitted once per
    process per embedder and example list (``None`` with fewer than two types).

    A linear model over all examples separates the types better than nearest examples
    do: it learns which directions of the embedding space tell a routine from a
    preference, where similarity to a few examples is swayed by the topic ("I stopped
    running" is near "I ran a 10k", an event).
    """
    if len(set(labels.tolist())) < 2:
        return None
    key = (embedder.name, texts)
    with _EXAMPLE_CACHE_LOCK:
        hit = _MODEL_CACHE.get(key)
    if hit is None:
        from sklearn.linear_model import LogisticRegression  # type: ignore[import-untyped]

        hit = LogisticRegression(C=LOGREG_C, max_iter=5000).fit(examples.astype(np.float64), labels)
        with _EXAMPLE_CACHE_LOCK:
            _MODEL_CACHE[key] = hit
    return hit
