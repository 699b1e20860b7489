"""CLI commands load only what they use.

Each reading command runs in a fresh interpreter on a store built with the real
packaged MiniLM (so the store records it): none may import torch,
sentence-transformers, transformers or litellm. Bad input to ``observe`` fails before
any model loads, and opening the model prints no weights-loading bar unless asked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from personatree import PersonaTree
from personatree.api import EMBEDDER_META_KEY
from personatree.demo import sample_interactions
from personatree.embedders import HashingEmbedder

REPO = Path(__file__).resolve().parents[1]
# litellm too: with the offline judge no command calls a model, and the token counter of
# the default model counts without it.
HEAVY = ("torch", "sentence_transformers", "transformers", "litellm")

# Runs the CLI in-process once per argument list and reports the exit codes, what each
# printed on stderr, and which heavy modules were imported by the end.
_DRIVER = r"""
import contextlib, io, json, sys
from personatree.cli import app
runs = []
for args in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            app(args, prog_name="personatree")
            code = 0
        except SystemExit as exc:
            code = exc.code or 0
    runs.append({"args": args, "code": code, "stderr": err.getvalue()})
heavy = sorted(m for m in %r if m in sys.modules)
print(json.dumps({"runs": runs, "heavy": heavy}))
""" % (HEAVY,)


def drive(*commands: list[str]) -> dict[str, Any]:
    """Run ``commands`` in one fresh interpreter; see ``_DRIVER``."""
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", _DRIVER, json.dumps(list(commands))], env=env,
                         capture_output=True, text=True, timeout=300, check=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture(scope="module")
def minilm_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    """A store that records the packaged MiniLM: (path, user, a leaf id).

    Written with the hashing embedder at MiniLM's dimension and then given MiniLM's
    record, so building it costs no model load; to the CLI it is a MiniLM store, and a
    command that embedded anything would have to load MiniLM.
    """
    path = str(tmp_path_factory.mktemp("startup") / "m.db")
    user, items = sample_interactions()
    with PersonaTree.open(path, embedder=HashingEmbedder(384)) as tree:
        tree.observe_many(user, items[:6])
        leaf = next(n.id for n in tree.graph(user).nodes())
        tree.store.set_meta(EMBEDDER_META_KEY, json.dumps({"name": "all-MiniLM-L6-v2", "dim": 384}))
    return path, user, leaf


def test_reading_commands_never_import_torch(minilm_store: tuple[str, str, str]) -> None:
    store, user, leaf = minilm_store
    commands = [["show", user], ["stats", user], ["stats", user, "--json"], ["users"], ["export", user],
                ["explain", user, leaf], ["profile", user], ["forget", user, leaf],
                ["delete-user", user, "--yes"]]
    result = drive(*[[*c, "--store", store] for c in commands])
    assert [r["code"] for r in result["runs"]] == [0] * len(commands), result["runs"]
    assert result["heavy"] == []


BAD_ITEMS = [
    ({"messages": [{"role": "robot", "content": "I like tea."}]}, "unknown role"),
    ({"messages": [{"role": "user", "content": "I like tea."}], "at": "last tuesday"}, "at"),
    ({"messages": [{"role": "user", "content": "   "}]}, "empty"),
]


def test_bad_input_fails_before_the_model_loads(tmp_path: Path) -> None:
    commands = []
    for i, (item, _) in enumerate(BAD_ITEMS):
        src = tmp_path / f"in{i}.json"
        src.write_text(json.dumps([{"messages": [{"role": "user", "content": "I like tea."}]}, item]))
        commands.append(["observe", "ana", str(src), "--store", str(tmp_path / "new.db")])
    result = drive(*commands)
    for run, (_, needle) in zip(result["runs"], BAD_ITEMS):
        assert run["code"] == 1 and run["stderr"].startswith("error: ") and needle in run["stderr"], run
        assert "Error: " in run["stderr"].splitlines()[0] and len(run["stderr"].splitlines()) == 1
    assert result["heavy"] == []


@pytest.mark.slow  # two model loads in fresh interpreters
def test_loading_the_model_prints_no_weights_bar(tmp_path: Path) -> None:
    code = ("from personatree.embedders import SentenceTransformerEmbedder\n"
            "e = SentenceTransformerEmbedder()\n"
            "assert not e.loaded and e.dim == 384\n"
            "print(e.embed(['hello']).shape, e.loaded)\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    quiet = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                           timeout=300, check=True)
    assert quiet.stdout.strip() == "(1, 384) True"
    assert "Loading weights" not in quiet.stderr and "it/s" not in quiet.stderr, quiet.stderr
    # Asked for, the bar is drawn (so the silence above is the switch, not an accident).
    loud = subprocess.run([sys.executable, "-c", code.replace("Embedder()", "Embedder(progress=True)")],
                          env=env, capture_output=True, text=True, timeout=300, check=True)
    assert "Loading weights" in loud.stderr
