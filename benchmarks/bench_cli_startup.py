"""Wall time of the reading CLI commands against a bare ``import personatree``.

Each command runs in a fresh interpreter, as a user at a terminal runs it, on the demo
store (built first with ``personatree demo`` when the given file does not exist). The
runs are interleaved (import, stats, show, import, stats, show...) so that load on the
machine affects every command alike, and each command's median is printed with its
ratio to the import's median, taken in this same run. A command that imported torch
would pay the model stack's import on every call: the last column says whether it did,
and the last row is that cost (import and load the packaged MiniLM), for comparison.

    python benchmarks/bench_cli_startup.py --store /tmp/personatree-demo.db --repeat 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Printed after the command so the row says whether the heavy stack was imported.
_PROBE = "; import sys; print('TORCH' if 'torch' in sys.modules else 'NO-TORCH', file=sys.stderr)"


def _commands(store: str, user: str) -> dict[str, list[str]]:
    cli = ("import sys; from personatree.cli import app; sys.argv = ['personatree'] + sys.argv[1:]\n"
           "try:\n    app()\nexcept SystemExit:\n    pass\n" + _PROBE.lstrip("; "))
    return {
        'python -c "import personatree"': [sys.executable, "-c", "import personatree" + _PROBE],
        f"personatree stats {user}": [sys.executable, "-c", cli, "stats", user, "--store", store],
        f"personatree show {user}": [sys.executable, "-c", cli, "show", user, "--store", store],
        f"personatree stats {user} --json": [sys.executable, "-c", cli, "stats", user, "--json", "--store", store],
        # What every command paid before the model loaded lazily: the import and the load.
        "import personatree + load MiniLM": [
            sys.executable, "-c", "from personatree.embedders import SentenceTransformerEmbedder as E; "
            "E().embed(['x'])" + _PROBE],
    }


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def _once(argv: list[str]) -> tuple[float, bool]:
    start = time.perf_counter()
    out = subprocess.run(argv, env=_env(), capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - start
    return seconds, "NO-TORCH" not in out.stderr


def main(argv: list[str] | None = None) -> None:
    """Build the demo store if needed, time each command ``--repeat`` times, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", default="personatree-demo.db", help="the demo store (built when missing)")
    ap.add_argument("--user", default="maya")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    if not Path(args.store).exists():
        print(f"building the demo store at {args.store} ...", flush=True)
        subprocess.run([sys.executable, "-m", "personatree", "demo", "--store", args.store], env=_env(),
                       check=True, capture_output=True)
    commands = _commands(args.store, args.user)
    times: dict[str, list[float]] = {name: [] for name in commands}
    torch: dict[str, bool] = {}
    for _ in range(args.repeat):
        for name, cmd in commands.items():
            seconds, loaded = _once(cmd)
            times[name].append(seconds)
            torch[name] = torch.get(name, False) or loaded
    base = statistics.median(next(iter(times.values())))
    print(f"{'command':36} {'median s':>9} {'min s':>7} {'x import':>9}  torch imported")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:36} {med:9.2f} {min(ts):7.2f} {med / base:9.2f}  {'yes' if torch[name] else 'no'}")
    print(f"({args.repeat} runs each, interleaved; {os.cpu_count()} CPUs; python {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
