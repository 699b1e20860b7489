"""The offline level router: which abstraction level (and schema types) a query needs.

A multinomial logistic regression over the query embedding plus a few lexical cue
features, trained on labelled example questions shipped as data in
``schemas/router_examples.toml``. The cues carry what a sentence embedding blurs:
"why …" and "what kind of person …" ask for roots, "how often …" and "lately" for
patterns, "when did …" and spelled-out dates for evidence.
"""

from __future__ import annotations

import hashlib
import re
import threading
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..ports import Embedder
from ..schema import default_schema_dir
from ..types import Level, Route

__all__ = [
    "RouterExamples",
    "load_examples",
    "cue_features",
    "Router",
    "default_router",
    "default_cache_dir",
]

_LABELS = {"L": Level.LEAF, "M": Level.MID, "R": Level.ROOT}
_ORDER = (Level.LEAF, Level.MID, Level.ROOT)

# One feature per cue group; each group votes for one level (the classifier learns how much).
_CUES: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.I)
    for p in (
        # leaf: specific facts and events
        r"^\W*(when|where|which|who|whom)\b",
        r"\bwhat (did|was|were|time|date|colou?r|score|gift|book|movie|song)\b|\bname of\b|\bwhat'?s the name\b",
        r"\bhow (much|many|long|far|old)\b",
        r"\b(yesterday|last (night|week|weekend|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b|\bon (monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b",
        r"\b(january|february|march|april|june|july|august|september|october|november|december)\b|\b(1[89]|20)\d\d\b",
        r"\b(exactly|specific|quote|remind me|details?)\b",
        # mid: patterns over time
        r"\b(lately|recently|these days|nowadays|over time|this (year|month|summer|winter)|past (few )?(days|weeks|months|years?)|since)\b",
        r"\bhow (often|frequently|regularly)\b|\b(usually|typically|normally|generally|tend to|regularly|often|again and again|keep)\b",
        r"\b(have|has) (i|you|he|she|they|\w+) been\b|\b(more|less) (than|and)\b|\banymore\b|\bstopped\b",
        r"\b(habits?|routines?|patterns?|trends?|recurring|go-to|kinds? of|types? of)\b",
        # root: durable claims and insight
        r"^\W*why\b|\bwhy (do|does|am|is)\b",
        r"\bwhat kind of (person|friend|partner|parent)\b|\bdescribe (me|him|her|my)\b|\bwho (am i|is \w+) (at heart|really)\b",
        r"\bwould (i|he|she|\w+) (enjoy|like|love|be|appreciate|want)\b|\bwhat (gift|holiday|kind of \w+) would\b|\bsuit\b|\bfits? (who|my)\b",
        r"\b(matters?|important|values?|principles?|believes?|beliefs?|personality|identity|motivat\w*|meaning|deep down|at heart|core)\b",
        r"\b(fears?|afraid|insecurit\w*|defen[cs]e|prioriti[sz]e|boundar\w*|compromise|never cross|nature|self-image|sees? (him|her|my)self)\b",
    )
)
_CUE_SCALE = 0.5  # comparable to one embedding coordinate's spread after normalisation


def cue_features(query: str) -> np.ndarray:
    """Binary lexical cue features of a query (one per cue group), scaled.

    Parameters
    ----------
    query : str

    Returns
    -------
    ndarray of shape (n_cues,), float32
    """
    return np.array([_CUE_SCALE if p.search(query) else 0.0 for p in _CUES], dtype=np.float32)


@dataclass(frozen=True, slots=True)
class RouterExamples:
    """Labelled example questions and schema hints.

    Attributes
    ----------
    questions : tuple of str
    labels : tuple of Level
    hints : Mapping[str, tuple of str]
        Schema type → lower-case cue substrings.
    """

    questions: tuple[str, ...]
    labels: tuple[Level, ...]
    hints: Mapping[str, tuple[str, ...]]


def load_examples(path: str | Path | None = None) -> RouterExamples:
    """Load ``router_examples.toml`` (default: the shipped one).

    Raises
    ------
    SchemaError
        If the file is missing or malformed.
    """
    from ..errors import SchemaError

    p = Path(path) if path is not None else default_schema_dir() / "router_examples.toml"
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
        questions: list[str] = []
        labels: list[Level] = []
        for block in data["examples"]:
            level = _LABELS[str(block["level"]).upper()]
            for q in block["questions"]:
                questions.append(str(q))
                labels.append(level)
        hints = {
            str(k): tuple(str(c).lower() for c in v.get("cues", ()))
            for k, v in data.get("hints", {}).items()
        }
    except (OSError, KeyError, TypeError, tomllib.TOMLDecodeError) as exc:
        raise SchemaError(f"bad router examples: {exc}", path=str(p)) from None
    return RouterExamples(tuple(questions), tuple(labels), hints)


class Router:
    """Predicts the level a query needs, and the schema types it is about.

    Parameters
    ----------
    embedder : Embedder
        Embeds queries (and the training examples, once).
    examples : RouterExamples, optional
        Training data; default the shipped examples.
    C : float
        Inverse L2 regularisation of the logistic regression.
    cache_dir : str or Path, optional
        Where to keep the embedded examples between processes (keyed by the embedder
        name and the examples' text), so that fitting is a sub-second logistic
        regression; ``None`` embeds them every time.

    Notes
    -----
    Fitting embeds ~190 short questions (0.5–1 s with MiniLM on an idle CPU, several
    seconds on a busy one) and fits the regression (~50 ms). The vector cache makes
    every later process's fit take well under 2 s.
    """

    def __init__(
        self,
        embedder: Embedder,
        examples: RouterExamples | None = None,
        C: float = 4.0,
        cache_dir: str | Path | None = None,
    ) -> None:
        self.embedder = embedder
        self.examples = examples or load_examples()
        self.C = C
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._clf: Any = None
        self._x: np.ndarray | None = None

    def _example_vectors(self) -> np.ndarray:
        qs = list(self.examples.questions)
        path = None
        if self.cache_dir is not None:
            name = str(getattr(self.embedder, "name", type(self.embedder).__name__))
            key = hashlib.sha256("\x1f".join([name, *qs]).encode()).hexdigest()[:24]
            path = self.cache_dir / f"router-{key}.npy"
            try:
                vecs = np.load(path)
                # The dimension too: two models may share a name (a test's tiny one).
                if vecs.shape == (len(qs), int(self.embedder.dim)):
                    return vecs
            except (OSError, ValueError):
                pass
        vecs = self.embedder.embed(qs)
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(f".{threading.get_ident()}.tmp.npy")
                np.save(tmp, vecs)
                tmp.replace(path)  # atomic: concurrent processes never read half a file
            except OSError:
                pass  # a read-only home only costs the re-embedding
        return vecs

    def _features(self, vectors: np.ndarray, queries: Sequence[str]) -> np.ndarray:
        cues = (
            np.stack([cue_features(q) for q in queries]) if queries else np.zeros((0, len(_CUES)))
        )
        return np.hstack([np.asarray(vectors, dtype=np.float32), cues.astype(np.float32)])

    def _model(self) -> Any:
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(C=self.C, max_iter=2000, class_weight="balanced")

    def fit(self) -> "Router":
        """Embed the examples and fit the classifier (≈1 s with MiniLM on a CPU)."""
        ex = self.examples
        self._x = self._features(self._example_vectors(), ex.questions)
        y = np.array([lv.rank for lv in ex.labels])
        self._clf = self._model().fit(self._x, y)
        self._coef = np.asarray(self._clf.coef_, dtype=np.float64)
        self._intercept = np.asarray(self._clf.intercept_, dtype=np.float64)
        return self

    def cross_validate(self, folds: int = 5, seed: int = 0) -> float:
        """Stratified k-fold accuracy of the same model on the examples."""
        from sklearn.model_selection import StratifiedKFold, cross_val_score

        if self._x is None:
            self.fit()
        y = np.array([lv.rank for lv in self.examples.labels])
        cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
        return float(cross_val_score(self._model(), self._x, y, cv=cv).mean())

    def schema_types(self, query: str) -> tuple[str, ...]:
        """Schema types whose hint cues occur in the query, most cues first (at most 3)."""
        q = " " + re.sub(r"[^\w' ]+", " ", query.lower()) + " "
        # Cues match at word starts ("son" must not fire inside "person").
        hits = [
            (sum((" " + c) in q for c in cues), name) for name, cues in self.examples.hints.items()
        ]
        return tuple(name for n, name in sorted(hits, key=lambda t: (-t[0], t[1])) if n > 0)[:3]

    def route_vector(self, query: str, vector: np.ndarray) -> Route:
        """Route a query whose embedding is already known (saves the ~5 ms embedding)."""
        if self._clf is None:
            self.fit()
        x = self._features(np.asarray(vector, dtype=np.float32).reshape(1, -1), [query])[0]
        # The multinomial model's softmax by hand: sklearn's predict_proba spends ~50x
        # longer validating one row than computing it, and recall runs per query.
        if self._coef.shape[0] == len(self._clf.classes_):
            z = self._coef @ x + self._intercept
            e = np.exp(z - z.max())
            proba = e / e.sum()
        else:  # two classes only (a custom examples file): one logit
            proba = self._clf.predict_proba(x.reshape(1, -1))[0]
        probs = {lv: 0.0 for lv in _ORDER}
        for cls, p in zip(self._clf.classes_, proba):
            probs[_ORDER[int(cls)]] = float(p)
        level = max(_ORDER, key=lambda lv: probs[lv])
        return Route(level=level, probabilities=probs, schema_types=self.schema_types(query))

    def route(self, query: str) -> Route:
        """Route a query: predicted level, class probabilities and schema constraints."""
        return self.route_vector(query, self.embedder.embed([query])[0])


_ROUTERS: dict[str, Router] = {}
_ROUTERS_LOCK = threading.Lock()


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/personatree`` (default ``~/.cache/personatree``), read at call time."""
    import os

    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "personatree"


def default_router(embedder: Embedder) -> Router:
    """The fitted router for this embedder, shared in-process (fitted once per embedder name)."""
    key = str(getattr(embedder, "name", type(embedder).__name__))
    with _ROUTERS_LOCK:
        r = _ROUTERS.get(key)
        if r is None:
            r = _ROUTERS[key] = Router(embedder, cache_dir=default_cache_dir()).fit()
        return r
