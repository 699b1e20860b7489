"""The typing benchmark: how well the offline judge types and reads the stance of a leaf.

A labelled set of first-person sentences (``benchmarks/data/typing_labelled.jsonl``,
written for this benchmark) carries, per sentence, the leaf schema type, the stance
(``positive | negative | neutral | stopped | started``) and a fixed ``split``
(``tune`` or ``heldout``). Rules, cues and examples are tuned on ``tune`` only; the
figures that count are the ``heldout`` ones.

Each sentence is typed alone, as one observation, through the judge's real
:meth:`~personatree.judge.OfflineJudge.extract`. A sentence the judge does not keep
counts as a miss for its type (predicted ``"-"``) and a wrong stance.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Sequence

from personatree.errors import InputError
from personatree.types import Message, Observation

__all__ = [
    "DEFAULT_PATH",
    "Labelled",
    "TypingReport",
    "load_labelled",
    "evaluate",
    "format_report",
    "predict",
]

STANCES = ("positive", "negative", "neutral", "stopped", "started")
DEFAULT_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "typing_labelled.jsonl"
_AT = datetime(2024, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True, slots=True)
class Labelled:
    """One labelled sentence."""

    text: str
    type: str
    stance: str
    split: str


@dataclass(frozen=True, slots=True)
class TypingReport:
    """Per-type precision/recall/F1, macro-F1 and stance accuracy of one split."""

    split: str
    n: int
    per_type: dict[str, tuple[float, float, float, int]]
    macro_f1: float
    type_accuracy: float
    stance_accuracy: float
    confusions: list[tuple[str, str, str]]
    stance_errors: list[tuple[str, str, str]]


def load_labelled(path: Path | str = DEFAULT_PATH) -> list[Labelled]:
    """Read the labelled set (one JSON object per line).

    Parameters
    ----------
    path : path-like

    Returns
    -------
    list of Labelled

    Raises
    ------
    InputError
        When a line is not an object with ``text``, ``type``, ``stance`` and ``split``,
        or a stance is not one of the five values.
    """
    out: list[Labelled] = []
    for no, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            row = Labelled(str(obj["text"]), str(obj["type"]), str(obj["stance"]), str(obj["split"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{path}: line {no}: {exc}") from None
        if row.stance not in STANCES:
            raise InputError(f"{path}: line {no}: unknown stance {row.stance!r}")
        out.append(row)
    return out


def predict(judge: object, texts: Sequence[str]) -> list[tuple[str, str]]:
    """(type, stance) the judge gives each text alone ("-" when it keeps no leaf)."""
    out: list[tuple[str, str]] = []
    for i, text in enumerate(texts):
        obs = Observation(f"typing-{i}", "typing", "typing", _AT, (Message("user", text),))
        drafts = judge.extract([obs])[0]  # type: ignore[attr-defined]
        if not drafts:
            out.append(("-", "-"))
        else:
            d = drafts[0]
            out.append((d.schema_type, str(d.attributes.get("stance", "-"))))
    return out


def evaluate(rows: Iterable[Labelled], predictions: Sequence[tuple[str, str]], split: str) -> TypingReport:
    """Score predictions against labels for one split.

    Parameters
    ----------
    rows : iterable of Labelled
        The labelled sentences of the split, in the order of ``predictions``.
    predictions : sequence of (type, stance)
    split : str
        Name shown in the report.

    Returns
    -------
    TypingReport
    """
    rows = list(rows)
    types = sorted({r.type for r in rows})
    per: dict[str, tuple[float, float, float, int]] = {}
    for t in types:
        tp = sum(1 for r, p in zip(rows, predictions) if r.type == t and p[0] == t)
        fp = sum(1 for r, p in zip(rows, predictions) if r.type != t and p[0] == t)
        fn = sum(1 for r, p in zip(rows, predictions) if r.type == t and p[0] != t)
        prec = tp / (tp + fp) if tp + fp else 0.0
        rec = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        per[t] = (prec, rec, f1, tp + fn)
    n = len(rows)
    macro = sum(v[2] for v in per.values()) / len(per) if per else 0.0
    acc = sum(1 for r, p in zip(rows, predictions) if r.type == p[0]) / n if n else 0.0
    st = sum(1 for r, p in zip(rows, predictions) if r.stance == p[1]) / n if n else 0.0
    conf = [(r.text, r.type, p[0]) for r, p in zip(rows, predictions) if r.type != p[0]]
    serr = [(r.text, r.stance, p[1]) for r, p in zip(rows, predictions) if r.stance != p[1]]
    return TypingReport(split, n, per, macro, acc, st, conf, serr)


def format_report(report: TypingReport, *, errors: bool = False) -> str:
    """A plain-text table of one split's report (with the errors when asked)."""
    lines = [f"split {report.split} (n={report.n})", f"{'type':<14}{'P':>7}{'R':>7}{'F1':>7}{'n':>5}"]
    for t, (p, r, f, k) in report.per_type.items():
        lines.append(f"{t:<14}{p:>7.3f}{r:>7.3f}{f:>7.3f}{k:>5}")
    lines.append(f"{'macro-F1':<14}{report.macro_f1:>21.3f}")
    lines.append(f"{'type accuracy':<14}{report.type_accuracy:>21.3f}")
    lines.append(f"{'stance acc.':<14}{report.stance_accuracy:>21.3f}")
    if errors:
        for text, want, got in report.confusions:
            lines.append(f"  type   {want:>12} -> {got:<12} {text}")
        for text, want, got in report.stance_errors:
            lines.append(f"  stance {want:>12} -> {got:<12} {text}")
    return "\n".join(lines)
