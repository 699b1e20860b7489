"""The fast preset's static embedder: loading, embedding, the cache, and no mixing with MiniLM."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from personatree.api import PersonaTree
from personatree.config import PersonaTreeConfig
from personatree.embedders import default_model_path, make_embedder, spec_of
from personatree.errors import ConfigError, EmbedderError
from personatree.static_embedder import STATIC_MODEL_NAME, StaticEmbedder, static_cache_dir, static_model_path

model2vec = pytest.importorskip("model2vec")


def _tiny_model(folder: Path, dim: int = 32) -> Path:
    """A model2vec model over the packaged MiniLM tokenizer with random vectors."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(Path(default_model_path()) / "tokenizer.json"))
    vectors = np.random.default_rng(3).normal(size=(tok.get_vocab_size(), dim)).astype(np.float32)
    model2vec.StaticModel(vectors, tok, normalize=True).save_pretrained(str(folder))
    return folder


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PERSONATREE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # the router's cache, too
    _tiny_model(tmp_path / "cache" / STATIC_MODEL_NAME)
    return tmp_path / "cache"


def test_the_cache_folder_can_be_overridden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERSONATREE_CACHE_DIR", str(tmp_path / "here"))
    assert static_cache_dir() == tmp_path / "here"
    with pytest.raises(EmbedderError, match="no distilled static model"):
        static_model_path(distill=False)
    monkeypatch.delenv("PERSONATREE_CACHE_DIR")
    assert static_cache_dir().name == "personatree"


def test_fast_preset_embeds_with_unit_rows(cache: Path) -> None:
    cfg = PersonaTreeConfig.preset("fast")
    assert cfg.embedder == "static" and spec_of(STATIC_MODEL_NAME) == "static"
    emb = make_embedder(cfg.embedder)
    assert isinstance(emb, StaticEmbedder) and emb.name == STATIC_MODEL_NAME and emb.dim == 32
    out = emb.embed(["I fed the cat.", "I fed the cat.", "", "qqqqzzzz"])
    assert out.shape == (4, 32) and out.dtype == np.float32
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    assert np.allclose(out[0], out[1])
    assert emb.embed([]).shape == (0, 32)


def test_a_minilm_store_refuses_the_fast_preset(cache: Path, tmp_path: Path, embedder) -> None:
    path = tmp_path / "m.db"
    tree = PersonaTree.open(path, embedder=embedder)
    tree.observe("ana", "I adopted a grey cat from the shelter.")
    tree.close()
    with pytest.raises(ConfigError, match="built with the embedder 'all-MiniLM-L6-v2'"):
        PersonaTree.open(path, PersonaTreeConfig.preset("fast"))
    fast = tmp_path / "fast.db"
    tree = PersonaTree.open(fast, PersonaTreeConfig.preset("fast"))
    tree.observe("ana", "I adopted a grey cat from the shelter.")
    assert tree.recall("ana", "What pet do I have?").node_ids
    tree.close()
    with pytest.raises(ConfigError, match=STATIC_MODEL_NAME):
        PersonaTree.open(fast, embedder=embedder)


def test_a_given_model_folder_records_its_path(tmp_path: Path) -> None:
    folder = _tiny_model(tmp_path / "mine", dim=8)
    emb = make_embedder(f"static:{folder}")
    assert emb.name == f"static:{folder.resolve()}" and spec_of(emb.name) == emb.name and emb.dim == 8
    with pytest.raises(EmbedderError, match="no model2vec model"):
        StaticEmbedder(tmp_path / "missing")


def test_the_static_embedder_does_not_import_torch(cache: Path) -> None:
    import subprocess

    code = ("import sys; from personatree.static_embedder import StaticEmbedder; "
            "StaticEmbedder().embed(['hello there']); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.slow
def test_distilling_the_packaged_minilm_works_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("PERSONATREE_CACHE_DIR", str(tmp_path))
    folder = static_model_path()
    assert folder == tmp_path / STATIC_MODEL_NAME and (folder / "model.safetensors").exists()
    emb = StaticEmbedder()
    assert emb.dim == 256
    cat, kitten, invoice = emb.embed(["my cat", "a small kitten", "the tax invoice"])
    assert float(cat @ kitten) > float(cat @ invoice)
    assert static_model_path() == folder  # cached: not distilled again
