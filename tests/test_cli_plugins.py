"""Command plugins: typer sub-apps the CLI finds through the ``personatree.commands`` entry points.

Discovery is driven with real ``EntryPoint`` objects naming real modules written to
``tmp_path``, so nothing needs to be installed for the test.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from personatree.cli import PLUGIN_GROUP, _plugin_entry_points, _register_plugins

runner = CliRunner()


def fresh_app() -> typer.Typer:
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

    @app.command()
    def hello() -> None:
        typer.echo("hello")

    return app


def entry(name: str, value: str) -> EntryPoint:
    return EntryPoint(name, value, PLUGIN_GROUP)


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for mod in [m for m in sys.modules if m.startswith("pt_plugin_")]:
        sys.modules.pop(mod, None)


def test_a_plugin_sub_app_is_added_under_its_entry_point_name(plugin_dir: Path) -> None:
    (plugin_dir / "pt_plugin_ok.py").write_text(
        "import typer\napp = typer.Typer()\n\n@app.command()\ndef ping() -> None:\n    typer.echo('pong')\n"
        "\n@app.command()\ndef other() -> None:\n    pass\n")
    app = fresh_app()
    assert _register_plugins(app, [entry("extra", "pt_plugin_ok:app")]) == ["extra"]
    res = runner.invoke(app, ["extra", "ping"])
    assert res.exit_code == 0 and res.stdout == "pong\n"


def test_a_plugin_that_cannot_be_loaded_says_which_extra_to_install(plugin_dir: Path) -> None:
    (plugin_dir / "pt_plugin_needs.py").write_text("import pt_dependency_that_does_not_exist_xyz\n")
    app = fresh_app()
    found = [entry("bench", "pt_plugin_needs:app"), entry("absent", "pt_plugin_not_installed_xyz:app")]
    assert _register_plugins(app, found) == ["bench", "absent"]
    for args in (["bench"], ["bench", "--help"], ["bench", "locomo", "x.json", "--quick"]):
        res = runner.invoke(app, args)
        assert res.exit_code == 1 and "Traceback" not in res.stdout + res.stderr
        assert res.stderr == ("error: ConfigError: personatree bench needs pt_dependency_that_does_not_exist_xyz: "
                              "pip install 'personatree[bench]'\n")
    res = runner.invoke(app, ["absent"])
    assert res.exit_code == 1 and "pt_plugin_not_installed_xyz" in res.stderr and "personatree[absent]" in res.stderr
    # The other commands are unaffected.
    assert runner.invoke(app, ["hello"]).stdout == "hello\n"


def test_a_plugin_with_a_bug_is_not_hidden(plugin_dir: Path) -> None:
    (plugin_dir / "pt_plugin_bug.py").write_text("raise RuntimeError('plugin bug')\n")
    with pytest.raises(RuntimeError, match="plugin bug"):
        _register_plugins(fresh_app(), [entry("bug", "pt_plugin_bug:app")])


def test_the_harness_is_found_whether_or_not_its_entry_point_is_installed() -> None:
    benches = [ep for ep in _plugin_entry_points() if ep.name == "bench"]
    assert [ep.value for ep in benches] == ["personatree_bench.command:app"]
    assert isinstance(benches[0].load(), typer.Typer)


def test_the_library_never_imports_the_harness_or_a_plotting_library() -> None:
    # The CLI names the harness's entry point as a string, for installs that predate it.
    root = Path(__file__).resolve().parents[1] / "personatree"
    sources = {p: p.read_text(encoding="utf-8").replace('"personatree_bench.command:app"', "")
               for p in root.rglob("*.py")}
    assert [str(p) for p, text in sources.items() if "personatree_bench" in text or "matplotlib" in text] == []
