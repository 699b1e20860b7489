"""``personatree bench``: the benchmark harness on the command line.

``personatree bench DATASET PATH [options]`` with DATASET one of ``locomo``,
``knowme``, ``prefeval``, ``locomo-plus``; ``personatree bench ingest [PATH]`` for
the ingestion-throughput benchmark; ``personatree bench faithfulness [PATH]`` for
the change-of-mind scenarios; ``personatree bench cue-recall [PATH]`` for recall of
the cue speaker's own statement on cue/trigger pairs. Heavy imports happen inside the commands, so
registering them costs nothing when another command runs.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any, Callable, Optional, Protocol

import typer

# The harness's own dependencies (the ``bench`` extra), checked when the CLI loads it, so
# that ``personatree bench`` says what to install instead of failing after a long run.
for _module in ("matplotlib", "rank_bm25"):
    if importlib.util.find_spec(_module) is None:
        raise ModuleNotFoundError(f"No module named {_module!r}", name=_module)

__all__ = ["app", "bench_app", "parse_int_list", "QUICK"]

bench_app = typer.Typer(
    name="bench",
    help="Benchmarks: evidence recall on LoCoMo / KnowMe / PrefEval / LoCoMo-Plus, and ingestion throughput.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# What --quick loads: one conversation, or a small slice, enough for CI.
QUICK: dict[str, dict[str, Any]] = {
    "locomo": {"limit": 1},
    "knowme": {"limit": 400},
    "prefeval": {"limit": 1, "topics": ["lifestyle_dietary"]},
    "locomo_plus": {"limit": 3},
}
_DEFAULT_LOCOMO = Path("..") / "shared" / "data" / "locomo" / "locomo_dev.json"


def parse_int_list(text: str) -> list[int]:
    """Parse ``"500,1000,2000"`` into ``[500, 1000, 2000]`` (empty string: ``[]``).

    Raises
    ------
    typer.BadParameter
        For anything that is not a comma-separated list of positive integers.
    """
    if not text.strip():
        return []
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise typer.BadParameter(f"expected comma-separated integers, got {text!r}") from None
    if any(v < 1 for v in values):
        raise typer.BadParameter("values must be positive")
    return values


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def _check_split(split: str) -> None:
    if split not in ("tune", "heldout", "all"):
        _fail(f"--split must be tune, heldout or all, not {split!r}")


class _Run(Protocol):
    def to_dict(self, *, with_records: bool = True) -> dict[str, Any]: ...

    def save(self, path: Path, *, with_records: bool = True) -> Path: ...


def _print_run(result: _Run, table: Callable[[], str], *, as_json: bool, records: bool, out: Optional[Path]) -> None:
    # The JSON goes to stdout for scripts, so the --out line then goes to stderr.
    import orjson

    if as_json:
        typer.echo(orjson.dumps(result.to_dict(with_records=records),
                                option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode())
    else:
        typer.echo(table())
    if out is not None:
        typer.echo(f"results: {result.save(out, with_records=records)}", err=as_json)


def _run(
    dataset: str, path: Path, systems: str, budgets: str, topk: str, out: Optional[Path],
    plot: Optional[Path], quick: bool, distractors: int, limit: Optional[int], host: Optional[Path],
    seed: int, consolidate: str, consolidate_min_turns: int, model: str, progress: bool, records: bool,
    skip: int = 0, embedder: str = "default",
) -> None:
    from personatree.errors import PersonaTreeError

    from .datasets import load_dataset
    from .report import markdown, plot_recall
    from .runner import run_benchmark

    if not path.exists():
        _fail(f"{path} does not exist")
    options: dict[str, Any] = dict(QUICK[dataset]) if quick else {}
    if limit is not None:
        options["limit"] = limit
    if dataset == "prefeval":
        options["distractors"] = distractors
        options["skip"] = skip
    elif skip:
        _fail("--skip applies to prefeval only")
    if dataset == "locomo_plus":
        options["seed"] = seed
        if host is not None:
            options["host"] = host
    try:
        data = load_dataset(dataset, path, **options)
    except (OSError, ValueError) as exc:
        _fail(f"cannot load {dataset} from {path}: {exc}")
    names = [s.strip() for s in systems.split(",") if s.strip()]
    try:
        result = run_benchmark(
            data, names, budgets=parse_int_list(budgets), topk=parse_int_list(topk), model=model,
            engine_options={"consolidate": consolidate, "consolidate_min_turns": consolidate_min_turns},
            progress=progress, embedder=_embedder(embedder),
        )
    except (PersonaTreeError, ValueError) as exc:
        _fail(f"{type(exc).__name__}: {exc}")
    result.meta["command"] = " ".join(["personatree"] + sys.argv[1:])
    typer.echo(markdown(result))
    if out is not None:
        typer.echo(f"results: {result.save(out, with_records=records)}")
    if plot is not None:
        typer.echo(f"plot: {plot_recall(result, plot)}")


_EMBEDDER_HELP = ("Embedder every system shares: default (the packaged MiniLM), fast (the fast preset's "
                  "static embedder) or any embedder spec of PersonaTreeConfig.embedder.")


def _embedder(spec: str) -> Any:
    """The embedder of a ``--embedder`` value (``fast`` names the fast preset's)."""
    from personatree.config import PersonaTreeConfig
    from personatree.embedders import make_embedder

    if spec == "default":
        return None  # the runner's own default, loaded only when needed
    if spec == "fast":
        spec = PersonaTreeConfig.preset("fast").embedder
    return make_embedder(spec)


def _dataset_command(dataset: str) -> Callable[..., None]:
    default_distractors = 24

    def command(
        path: Path = typer.Argument(..., help="Dataset file or folder in the upstream format."),
        systems: str = typer.Option(
            "personatree,personatree-leaves,dense,dense+bm25,recency", "--systems",
            help="Comma-separated systems to compare."),
        budgets: str = typer.Option("500,1000,2000", "--budgets", help="Token budgets, comma-separated."),
        topk: str = typer.Option("5,10", "--topk", help="k values for recall at top-k ('' to skip)."),
        out: Optional[Path] = typer.Option(None, "--out", help="Write the JSON results here."),
        plot: Optional[Path] = typer.Option(None, "--plot", help="Write a PNG of recall vs budget here."),
        quick: bool = typer.Option(False, "--quick", help="One conversation / a small slice, for CI."),
        distractors: int = typer.Option(default_distractors, "--distractors",
                                        help="PrefEval: distractor conversations between preference and question."),
        limit: Optional[int] = typer.Option(None, "--limit", help="Conversations (LoCoMo), entries (KnowMe), "
                                            "items per topic file (PrefEval) or items (LoCoMo-Plus)."),
        skip: int = typer.Option(0, "--skip", min=0,
                                 help="PrefEval: leave out the first N items of each topic file."),
        host: Optional[Path] = typer.Option(None, "--host", help="LoCoMo-Plus: the host LoCoMo file."),
        seed: int = typer.Option(0, "--seed", help="LoCoMo-Plus: seed of the insertion points."),
        consolidate: str = typer.Option("session", "--consolidate",
                                        help="When personatree consolidates: session (after every session), "
                                             "every-N (every N sessions), once (after the last session) or none."),
        consolidate_min_turns: int = typer.Option(1, "--consolidate-min-turns",
                                                  help="Consolidate at a session end only after this many new turns."),
        model: str = typer.Option("gpt-4o-mini", "--model", help="Tokenizer model for every budget."),
        progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
        records: bool = typer.Option(True, "--records/--no-records", help="Include per-query records in --out."),
        embedder: str = typer.Option("default", "--embedder", help=_EMBEDDER_HELP),
    ) -> None:
        _run(dataset, path, systems, budgets, topk, out, plot, quick, distractors, limit, host, seed,
             consolidate, consolidate_min_turns, model, progress, records, skip, embedder)

    command.__doc__ = f"Evidence recall on a {dataset.replace('_', '-')} dataset, every system side by side."
    return command


def ingest(
    path: Optional[Path] = typer.Argument(None, help="LoCoMo-format file (default ../shared/data/locomo/locomo_dev.json)."),
    batch_size: int = typer.Option(256, "--batch-size", help="observe_many batch size (and bare chunk size)."),
    repeats: int = typer.Option(1, "--repeats", help="Bare-embedding runs before and after the engine."),
    limit: Optional[int] = typer.Option(None, "--limit", help="Only the first N conversations."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write the JSON result here."),
    embedders: str = typer.Option("default", "--embedders", help="Comma-separated --embedder values, each "
                                  "measured in turn in this run (e.g. default,fast); ratios against the first."),
) -> None:
    """Ingestion throughput: observe_many against the bare embedder on the same turns."""
    import orjson

    from .datasets import load_locomo
    from .ingest import format_ingest, format_ingest_comparison, run_ingest_benchmark

    src = path or _DEFAULT_LOCOMO
    if not src.exists():
        _fail(f"{src} does not exist; pass the LoCoMo file as PATH")
    convs = load_locomo(src, limit=limit).conversations
    specs = [e.strip() for e in embedders.split(",") if e.strip()] or ["default"]
    results = {}
    for spec in specs:
        result = run_ingest_benchmark(convs, _embedder(spec), batch_size=batch_size, bare_repeats=repeats)
        results[spec] = result
        typer.echo(f"embedder {spec}:\n{format_ingest(result)}\n")
    if len(results) > 1:
        typer.echo(format_ingest_comparison(results))
    if out is not None:
        payload = {k: r.to_dict() for k, r in results.items()}
        out.write_bytes(orjson.dumps(payload if len(payload) > 1 else payload[specs[0]], option=orjson.OPT_INDENT_2))
        typer.echo(f"results: {out}")


def faithfulness(
    path: Optional[Path] = typer.Argument(None, help="Scenario file (default: the packaged set)."),
    host: Path = typer.Option(_DEFAULT_LOCOMO, "--host", help="LoCoMo file whose speakers host the scenarios."),
    split: str = typer.Option("all", "--split", help="tune, heldout or all (both, reported apart)."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Only the first N scenarios of each split."),
    quick: bool = typer.Option(False, "--quick", help="One scenario of each split, for CI."),
    budgets: str = typer.Option("300,1000", "--budgets", help="Token budgets, comma-separated."),
    paths: str = typer.Option("live,bulk", "--paths", help="live (consolidate every session), bulk (once)."),
    dense: bool = typer.Option(True, "--dense/--no-dense", help="Flat dense over the same turns, side by side."),
    seed: int = typer.Option(0, "--seed", help="Seed of where each scenario lands in its host."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write the JSON results here."),
    as_json: bool = typer.Option(False, "--json", help="Print the JSON results instead of the table."),
    records: bool = typer.Option(True, "--records/--no-records", help="Include per-case records in the JSON."),
    model: str = typer.Option("gpt-4o-mini", "--model", help="Tokenizer model for every budget."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="One line per case on stderr."),
    labelled_changes: bool = typer.Option(
        False, "--labelled-changes",
        help="The judge reads each change from the labels: an upper bound for a judge that reads changes."),
) -> None:
    """Change-of-mind scenarios: does recall bring the person's latest statement, not a stale one?"""
    from personatree.errors import PersonaTreeError

    from .datasets import load_locomo
    from .faithfulness import format_faithfulness, run_faithfulness
    from .output import progress_printer
    from .scenarios import load_scenarios
    from .stitch import stitch_all

    _check_split(split)
    if not host.exists():
        _fail(f"{host} does not exist; pass the LoCoMo file with --host")
    try:
        scenarios = load_scenarios(path, split=None if split == "all" else split, limit=1 if quick else limit)
        cases = stitch_all(scenarios, load_locomo(host).conversations, seed=seed)
        result = run_faithfulness(
            cases, budgets=parse_int_list(budgets), paths=[p.strip() for p in paths.split(",") if p.strip()],
            dense=dense, model=model, progress=progress_printer() if progress else None,
            labelled_changes=labelled_changes,
        )
    except (PersonaTreeError, OSError, ValueError) as exc:
        _fail(f"{type(exc).__name__}: {exc}")
    result.meta["command"] = " ".join(["personatree"] + sys.argv[1:])
    result.meta["scenario_file"] = str(path) if path else "packaged"
    _print_run(result, lambda: format_faithfulness(result), as_json=as_json, records=records, out=out)


def cue_recall(
    path: Optional[Path] = typer.Argument(None, help="Cue/trigger items in the LoCoMo-Plus format with a "
                                          "'split' field (default: the packaged dev set)."),
    host: Path = typer.Option(_DEFAULT_LOCOMO, "--host", help="LoCoMo file of the host conversations."),
    split: str = typer.Option("all", "--split", help="tune, heldout or all (both, reported apart)."),
    systems: str = typer.Option("personatree,dense", "--systems", help="Comma-separated systems to compare."),
    budgets: str = typer.Option("1000", "--budgets", help="Token budgets, comma-separated."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Only the first N items of each split."),
    quick: bool = typer.Option(False, "--quick", help="One item of each split, for CI."),
    seed: int = typer.Option(0, "--seed", help="Seed of the insertion points."),
    consolidate: str = typer.Option("session", "--consolidate", help="When personatree consolidates: "
                                    "session, end or none."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write the JSON results here."),
    as_json: bool = typer.Option(False, "--json", help="Print the JSON results instead of the table."),
    records: bool = typer.Option(True, "--records/--no-records", help="Include per-query records in the JSON."),
    model: str = typer.Option("gpt-4o-mini", "--model", help="Tokenizer model for every budget."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show progress on stderr."),
) -> None:
    """Cue/trigger pairs: does recall bring back the cue speaker's own statement?"""
    from personatree.errors import PersonaTreeError

    from .cues import SPLITS, format_cue_recall, run_cue_recall
    from .datasets.locomo_plus import default_cues_path
    from .output import progress_printer

    _check_split(split)
    src = path or default_cues_path()
    for p in (src, host):
        if not p.exists():
            _fail(f"{p} does not exist")
    try:
        result = run_cue_recall(
            src, host=host, splits=SPLITS if split == "all" else (split,),
            systems=[s.strip() for s in systems.split(",") if s.strip()], budgets=parse_int_list(budgets),
            seed=seed, limit=1 if quick else limit, model=model, progress=progress_printer() if progress else None,
            engine_options={"consolidate": consolidate},
        )
    except (PersonaTreeError, OSError, ValueError) as exc:
        _fail(f"{type(exc).__name__}: {exc}")
    result.meta["command"] = " ".join(["personatree"] + sys.argv[1:])
    _print_run(result, lambda: format_cue_recall(result), as_json=as_json, records=records, out=out)


for _name in ("locomo", "knowme", "prefeval", "locomo_plus"):
    _command = _dataset_command(_name)
    bench_app.command(_name.replace("_", "-"))(_command)
    if "_" in _name:
        bench_app.command(_name, hidden=True)(_command)
bench_app.command("ingest")(ingest)
bench_app.command("faithfulness")(faithfulness)
bench_app.command("cue-recall")(cue_recall)

# The object the ``personatree.commands`` entry point names: ``personatree bench``.
app = bench_app
