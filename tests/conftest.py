"""Shared fixtures: the real packaged embedder (loaded once), the shipped registry, the
real offline judge (one per module), and a scripted judge for tests that need exact
validator answers. Plain helpers (``T0``, ``open_tree``, ``seed_mid``) are in helpers.py."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator, Sequence

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from personatree.embedders import HashingEmbedder, SentenceTransformerEmbedder  # noqa: E402
from personatree.judge import OfflineJudge  # noqa: E402
from personatree.schema import SchemaRegistry  # noqa: E402
from personatree.types import (  # noqa: E402
    LeafDraft,
    Level,
    Node,
    Observation,
    Provenance,
    Route,
    Summary,
    Verdict,
)

from .helpers import T0, Parts  # noqa: E402, F401  (T0 re-exported: tests import it from here)

DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def embedder() -> SentenceTransformerEmbedder:
    """The real packaged all-MiniLM-L6-v2 (offline)."""
    return SentenceTransformerEmbedder()


@pytest.fixture(scope="session")
def hashing() -> HashingEmbedder:
    """The deterministic hashing fake."""
    return HashingEmbedder(256)


@pytest.fixture(scope="session")
def registry() -> SchemaRegistry:
    """The shipped schema registry."""
    return SchemaRegistry.load()


@pytest.fixture(scope="module")
def parts(embedder: SentenceTransformerEmbedder, registry: SchemaRegistry) -> Parts:
    """The real embedder, registry and offline judge, for :func:`helpers.open_tree`.

    Module-scoped: building the offline judge costs about 2 s, so a module shares one.
    """
    return Parts(embedder, registry, OfflineJudge(embedder, registry))


class ScriptedJudge:
    """A Judge whose validator answers come from a script; extraction is one leaf per
    user message (whole message, typed by a ``type:`` prefix such as ``"fact: I live in Oslo"``).

    Implements the Judge protocol for tests that need exact control over ψ.
    """

    def __init__(self, embedder, psi: dict[tuple[str, str], float] | None = None, default_psi: float = 0.0):
        self._embedder = embedder
        self.psi = dict(psi or {})
        self.default_psi = default_psi
        self.calls: list[tuple[str, str]] = []

    @property
    def name(self) -> str:
        return "scripted"

    def extract(self, observations: Sequence[Observation]) -> list[list[LeafDraft]]:
        out: list[list[LeafDraft]] = []
        texts: list[str] = []
        for o in observations:
            for m in o.messages:
                if m.role == "user":
                    texts.append(m.content.split(":", 1)[1].strip() if ":" in m.content else m.content)
        vecs = iter(self._embedder.embed(texts)) if texts else iter(())
        for o in observations:
            drafts = []
            for turn, m in enumerate(o.messages):
                if m.role != "user":
                    continue
                kind, _, text = m.content.partition(":")
                if not text:
                    kind, text = "event", m.content
                drafts.append(LeafDraft(text.strip(), kind.strip(), {"polarity": 0},
                                        Provenance(o.id, turn, 0, o.at, o.session_id), next(vecs)))
            out.append(drafts)
        return out

    def validate(self, pairs: Sequence[tuple[Node, Node, float]]) -> list[Verdict]:
        out = []
        for leaf, cand, _sim in pairs:
            self.calls.append((leaf.content, cand.content))
            psi = self.psi.get((leaf.content, cand.content), self.default_psi)
            label = "support" if psi > 0.2 else "conflict" if psi < -0.2 else "unrelated"
            out.append(Verdict(label, psi, f"scripted {label}"))
        return out

    def route(self, query: str) -> Route:
        return Route(Level.LEAF, {Level.LEAF: 1.0, Level.MID: 0.0, Level.ROOT: 0.0})

    def summarize(self, members: Sequence[Node], level: Level, schema_type: str) -> Summary:
        return Summary(members[0].content, schema_type)


@pytest.fixture()
def scripted(hashing: HashingEmbedder) -> ScriptedJudge:
    """A fresh scripted judge over the hashing embedder."""
    return ScriptedJudge(hashing)


@pytest.fixture()
def db_path(tmp_path: Path) -> Iterator[Path]:
    """A SQLite file path in a fresh temporary folder."""
    yield tmp_path / "memory.db"
