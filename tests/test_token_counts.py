"""Token counts without litellm: the same numbers, and no litellm import on a read.

The gpt-4o family is counted with tiktoken directly (``retrieval.openai_tokens``);
its counts must be exactly litellm's on varied text (prose, rendered lines, unicode,
special-token text, texts across the 1,024-character chunk boundary), and a process
that only observes, consolidates, recalls and reads a profile with the offline judge
must never import litellm.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from personatree.retrieval.openai_tokens import encoding_of
from personatree.retrieval.tokens import LiteLLMTokenCounter

REPO = Path(__file__).resolve().parents[1]

_PIECES = (
    "I", "went", "hiking", "with", "Anna", "at", "the", "lake", "on", "Saturday", "3 May 2023", "12:30pm",
    "ünïcödé", "東京", "Ça coûte 12,50 €", "🍣", "🚗💨", "<|endoftext|>", "<|fim_prefix|>", "  ", "\n", "\t",
    "- [Mar 2024] Prefers window seats (conf 0.74)\n", "don't", "we're", "x" * 37, "...", "1234567890",
    "https://example.org/a?b=c", "naïve café", "Привет", "مرحبا", "  - 2024-03-02 ", "(", ")", "'", '"',
)


def _texts(n: int) -> list[str]:
    rng = random.Random(42)
    out = ["", " ", "\n\n\t  ", "a" * 1024, "a" * 1025, "ab " * 700, "word " * 3000, "🍣" * 600]
    while len(out) < n:
        size = rng.choice((1, 3, 8, 20, 60, 300))
        out.append(rng.choice(("", " ")).join(rng.choice(_PIECES) for _ in range(size)))
    return out


@pytest.mark.parametrize("model", ["gpt-4o-mini", "gpt-4o", "openai/gpt-4o-mini", "gpt-4o-2024-08-06"])
def test_direct_counts_equal_litellm(model: str) -> None:
    import litellm

    assert encoding_of(model) == "o200k_base"
    counter = LiteLLMTokenCounter(model)
    texts = _texts(400)
    assert [counter.count(t) for t in texts] == [litellm.token_counter(model=model, text=t) for t in texts]


def test_other_models_are_left_to_litellm() -> None:
    for model in ("gpt-3.5-turbo", "claude-3-5-sonnet", "azure/gpt-4o", "llama-3-70b", "gpt-4o mini"):
        assert encoding_of(model) is None


# Observe, consolidate, recall and read a profile with the offline judge, then report
# which litellm modules the process imported.
_DRIVER = r"""
import json, sys
from personatree import PersonaTree
from personatree.config import PersonaTreeConfig
tree = PersonaTree.open(sys.argv[1], PersonaTreeConfig(embedder="hashing"))
tree.observe("u", "I moved to Berlin last year and I work as a nurse.")
tree.observe("u", "I love hiking in the Alps with my sister Anna.")
tree.consolidate("u")
recall = tree.recall("u", "Where do I live?", budget=300)
profile = tree.profile("u")
tree.close()
print(json.dumps({"tokens": recall.tokens, "litellm": sorted(m for m in sys.modules if m.split(".")[0] == "litellm")}))
"""


def test_reads_with_the_offline_judge_do_not_import_litellm(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", _DRIVER, f"sqlite:///{tmp_path / 'm.db'}"], env=env,
                         capture_output=True, text=True, timeout=300, check=True)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["tokens"] > 0
    assert report["litellm"] == []


def test_a_line_counted_for_one_model_is_counted_again_for_another() -> None:
    # Recall caches each rendered line's token counts in the user's state; a recall for
    # another model (``model=``) must count with its own tokenizer, not reuse them.
    from datetime import datetime, timezone

    from personatree.graph import MemoryGraph
    from personatree.retrieval.options import _line
    from personatree.retrieval.state import RetrievalState
    from personatree.retrieval.tokens import WordCounter
    from personatree.types import Level, Node

    class Double(WordCounter):
        def count(self, text: str) -> int:
            return 2 * super().count(text)

    at = datetime(2024, 3, 2, tzinfo=timezone.utc)
    node = Node("l1", "sam", Level.LEAF, "event", "We walked along the river after dinner.", {}, at, at, 0.4)
    state = RetrievalState(MemoryGraph("sam"))
    one, two = _line(state, node, 0.6, WordCounter()), _line(state, node, 0.6, Double())
    assert two[1] == 2 * one[1] and two[2] == 2 * one[2]
