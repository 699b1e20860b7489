"""The command line as the README documents it: ``--json`` everywhere, ``--version``,
one ``error:`` line for usage errors, help with real type names, full-width output when
piped, and status words that say what happened.

Stores here are written with the hashing embedder (the CLI opens a store with the
embedder it records), so no test loads a model.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from rich.table import Table
from typer.testing import CliRunner

import personatree
from personatree import PersonaTree, PersonaTreeConfig
from personatree.cli import app
from personatree.cli.common import CliConsole
from personatree.config import ConsolidationConfig
from personatree.consolidation_job import run_job
from personatree.demo import sample_interactions

from .conftest import T0

runner = CliRunner()
CFG = PersonaTreeConfig(embedder="hashing:256",
                        consolidation=ConsolidationConfig(min_cohesion=0.2, member_similarity=0.25))
LONG_USER = "user-" + "x" * 150


def run(*args: str) -> Any:
    return runner.invoke(app, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    """(store path, user, a leaf id), written with the hashing embedder."""
    path = str(tmp_path_factory.mktemp("polish") / "p.db")
    user, items = sample_interactions()
    with PersonaTree.open(path, CFG) as tree:
        tree.observe_many(user, items)
        tree.observe(LONG_USER, "I keep bees on the roof of my building.", at=T0)
        leaf = next(n.id for n in tree.graph(user).nodes())
    return path, user, leaf


def test_version_is_the_package_version() -> None:
    res = run("--version")
    assert res.exit_code == 0 and res.stdout.strip() == f"personatree {personatree.__version__}"


def test_every_command_the_readme_lists_takes_json(store: tuple[str, str, str]) -> None:
    path, user, leaf = store
    shown = json.loads(run("show", user, "--store", path, "--json").stdout)
    assert shown["user"] == user and leaf in shown["nodes"]
    assert shown["counts"]["leaf"] == sum(1 for n in shown["nodes"].values() if n["level"] == "leaf")
    assert set(shown["order"]) == {"roots", "loose_mids", "orphans"}
    exported = json.loads(run("export", user, "--store", path, "--json").stdout)
    assert exported["user_id"] == user and exported["format"] == "personatree.export/1"
    for args in (["stats", user], ["users"], ["explain", user, leaf], ["profile", user]):
        res = run(*args, "--store", path, "--json")
        assert res.exit_code == 0, (args, res.stderr)
        json.loads(res.stdout)
    page = Path(path).parent / "tree.html"
    viewed = json.loads(run("view", user, "-o", str(page), "--store", path, "--json").stdout)
    assert viewed == {"path": str(page), "bytes": page.stat().st_size}


def test_delete_user_takes_json(tmp_path: Path) -> None:
    path = str(tmp_path / "d.db")
    with PersonaTree.open(path, CFG) as tree:
        tree.observe("bo", "I collect old maps.", at=T0)
    res = run("delete-user", "bo", "--yes", "--store", path, "--json")
    assert res.exit_code == 0 and json.loads(res.stdout) == {"deleted": "bo"}


@pytest.mark.parametrize("args,needle", [
    (["show"], "Missing argument 'USER'"),
    (["no-such-command"], "No such command"),
    (["search", "ana", "q", "-k", "0"], "Invalid value for '-k'"),
    (["show", "ana", "--no-such-option"], "No such option"),
])
def test_a_usage_error_is_one_error_line(args: list[str], needle: str) -> None:
    res = run(*args)
    assert res.exit_code == 2
    assert res.stdout == ""
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], res.stderr
    assert "╭" not in res.stderr and "--help" in lines[0]


@pytest.mark.parametrize("command", ["forget", "recall", "search", "consolidate", "observe", "mcp", "export"])
def test_help_names_real_types(command: str) -> None:
    res = run(command, "--help")
    assert res.exit_code == 0
    assert not re.search(r"<(bool|str|int|float|Path)[^>]*>", res.stdout), res.stdout
    usage = next(line for line in res.stdout.splitlines() if "Usage:" in line)
    assert "{" not in usage and not re.search(r"\b[a-z_]+\b(?=\s*$)", usage.split("[OPTIONS]")[1]), usage


def test_help_shows_integer_and_path_types() -> None:
    assert "INTEGER" in run("search", "--help").stdout
    assert "PATH" in run("export", "--help").stdout


def test_piped_output_is_full_width(store: tuple[str, str, str]) -> None:
    path, _, _ = store
    # CliRunner's stdout is not a terminal, like a pipe or a file.
    res = run("stats", LONG_USER, "--store", path)
    assert res.exit_code == 0
    assert any(LONG_USER in line for line in res.stdout.splitlines()), res.stdout
    assert "…" not in res.stdout
    # A wide table with short headers: nothing is cut to fit 80 columns.
    out = io.StringIO()
    table = Table(*[f"column {i}" for i in range(12)])
    table.add_row(*["consolidated" for _ in range(12)])
    CliConsole(file=out).print(table)
    assert "…" not in out.getvalue() and out.getvalue().count("consolidated") == 12
    assert len(out.getvalue().splitlines()) == 5  # top rule, header, rule, the row, bottom rule


def test_a_pass_with_nothing_to_do_says_up_to_date(tmp_path: Path) -> None:
    path = str(tmp_path / "j.db")
    user, items = sample_interactions()
    with PersonaTree.open(path, CFG) as tree:
        tree.observe_many(user, items)
        leaves = tree.stats(user)["leaves"]
    now = T0.replace(year=T0.year + 1)
    run_job(path, workers=1, now=now, config=CFG)
    again = run_job(path, workers=1, now=now, config=CFG, force=True)
    dry = run_job(path, workers=1, now=now, config=CFG, force=True, dry_run=True)
    assert leaves >= 20
    assert [r.status for r in again.results] == ["up-to-date"]
    assert [r.status for r in dry.results] == ["up-to-date"]
