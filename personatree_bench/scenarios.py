"""Change-of-mind scenarios: the data of the faithfulness benchmark.

A scenario is a few statements of one habit or state of a person made over weeks,
one later statement that changes it, and a question whose right answer depends on the
change while sharing few words with it. Scenarios are stored as JSON (the packaged set
is ``personatree_bench/data/faithfulness.json``)::

    {"format": "personatree.faithfulness/1",
     "scenarios": [
       {"id": "seafood-flip", "split": "tune", "kind": "stance_flip", "topic": "sushi",
        "statements": [{"text": "I love sushi.", "stance": "positive"}, ...],
        "change": {"text": "I can't stand sushi now.", "stance": "negative"},
        "question": "Should I book a seafood place for their birthday?"}]}

Every field is checked on load; a broken scenario raises :class:`ScenarioError`
naming the scenario and the field, so a typo never silently shrinks the benchmark.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import orjson

from personatree.errors import InputError

__all__ = [
    "KINDS",
    "STANCES",
    "SPLITS",
    "Statement",
    "Scenario",
    "ScenarioError",
    "parse_scenario",
    "parse_scenarios",
    "load_scenarios",
    "default_scenarios_path",
]

KINDS = ("stance_flip", "cessation", "move", "job", "relationship", "diet", "health")
STANCES = ("positive", "negative", "stopped", "started", "changed", "neutral")
SPLITS = ("tune", "heldout")
FORMAT = "personatree.faithfulness/1"


class ScenarioError(InputError):
    """A scenario file or one scenario in it is malformed.

    Parameters
    ----------
    message : str
        What is wrong.
    scenario : str, optional
        The scenario id (or its position when it has no usable id).
    field : str, optional
        The field that is wrong.
    """

    def __init__(self, message: str, *, scenario: str | None = None, field: str | None = None) -> None:
        where = ", ".join(x for x in (f"scenario {scenario!r}" if scenario else "",
                                      f"field {field!r}" if field else "") if x)
        super().__init__(f"{where}: {message}" if where else message)
        self.scenario = scenario
        self.field = field


@dataclass(frozen=True, slots=True)
class Statement:
    """One thing the person says in a scenario.

    Attributes
    ----------
    text : str
        The words of the turn, first person.
    stance : str
        One of :data:`STANCES`: the person's stance toward the scenario's topic.
    """

    text: str
    stance: str


@dataclass(frozen=True, slots=True)
class Scenario:
    """A change of mind (or of life) and the question that depends on it.

    Attributes
    ----------
    id : str
        Unique in its file.
    split : str
        ``"tune"`` (may be studied and tuned on) or ``"heldout"`` (report only).
    kind : str
        One of :data:`KINDS`.
    topic : str
        A short name of what changes (for reports only; never given to a system).
    statements : tuple of Statement
        The earlier statements, oldest first (at least two).
    change : Statement
        The later statement that changes them: the person's latest word on the topic.
    question : str
        Asked after the change; its answer depends on the change.
    """

    id: str
    split: str
    kind: str
    topic: str
    statements: tuple[Statement, ...]
    change: Statement
    question: str


def _text(raw: Mapping[str, Any], key: str, sid: str, field: str | None = None) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ScenarioError("must be a non-empty string", scenario=sid, field=field or key)
    return value.strip()


def _statement(raw: object, sid: str, field: str) -> Statement:
    if not isinstance(raw, Mapping):
        raise ScenarioError("must be an object with 'text' and 'stance'", scenario=sid, field=field)
    text = _text(raw, "text", sid, f"{field}.text")
    stance = raw.get("stance")
    if stance not in STANCES:
        raise ScenarioError(f"stance must be one of {', '.join(STANCES)}, got {stance!r}",
                            scenario=sid, field=f"{field}.stance")
    return Statement(text, str(stance))


def parse_scenario(raw: object, position: int = 0) -> Scenario:
    """Check one scenario mapping and build a :class:`Scenario`.

    Parameters
    ----------
    raw : object
        One element of the file's ``scenarios`` list.
    position : int
        Its index, named in errors when it has no usable id.

    Returns
    -------
    Scenario

    Raises
    ------
    ScenarioError
        For a missing or malformed field, fewer than two earlier statements, a change
        whose stance equals every earlier one, or a question identical to a statement.
    """
    if not isinstance(raw, Mapping):
        raise ScenarioError("must be an object", scenario=f"#{position}")
    sid_raw = raw.get("id")
    sid = sid_raw.strip() if isinstance(sid_raw, str) and sid_raw.strip() else f"#{position}"
    if sid.startswith("#"):
        raise ScenarioError("must be a non-empty string", scenario=sid, field="id")
    split = raw.get("split")
    if split not in SPLITS:
        raise ScenarioError(f"must be one of {', '.join(SPLITS)}, got {split!r}", scenario=sid, field="split")
    kind = raw.get("kind")
    if kind not in KINDS:
        raise ScenarioError(f"must be one of {', '.join(KINDS)}, got {kind!r}", scenario=sid, field="kind")
    topic = _text(raw, "topic", sid)
    stmts = raw.get("statements")
    if not isinstance(stmts, Sequence) or isinstance(stmts, (str, bytes)) or len(stmts) < 2:
        raise ScenarioError("must be a list of at least two statements", scenario=sid, field="statements")
    statements = tuple(_statement(s, sid, f"statements[{i}]") for i, s in enumerate(stmts))
    change = _statement(raw.get("change"), sid, "change")
    # A "change" that repeats the earlier stance measures nothing.
    if all(s.stance == change.stance for s in statements):
        raise ScenarioError("the change must take a stance different from the earlier statements",
                            scenario=sid, field="change.stance")
    question = _text(raw, "question", sid)
    if question in {s.text for s in statements} | {change.text}:
        raise ScenarioError("the question repeats a statement", scenario=sid, field="question")
    return Scenario(sid, str(split), str(kind), topic, statements, change, question)


def parse_scenarios(data: object) -> list[Scenario]:
    """Check a whole scenario document (the parsed JSON) and build its scenarios.

    Parameters
    ----------
    data : object
        ``{"format": ..., "scenarios": [...]}`` or a bare list of scenarios.

    Returns
    -------
    list of Scenario
        In file order.

    Raises
    ------
    ScenarioError
        For a malformed document, a malformed scenario or a repeated id.
    """
    if isinstance(data, Mapping):
        fmt = data.get("format", FORMAT)
        if fmt != FORMAT:
            raise ScenarioError(f"unknown format {fmt!r}; expected {FORMAT!r}")
        data = data.get("scenarios")
    if not isinstance(data, list):
        raise ScenarioError("a scenario file holds a list of scenarios under 'scenarios'")
    out = [parse_scenario(x, i) for i, x in enumerate(data)]
    seen: set[str] = set()
    for s in out:
        if s.id in seen:
            raise ScenarioError("appears twice", scenario=s.id, field="id")
        seen.add(s.id)
    return out


def default_scenarios_path() -> Path:
    """The packaged scenario file (``personatree_bench/data/faithfulness.json``)."""
    return Path(__file__).resolve().parent / "data" / "faithfulness.json"


def load_scenarios(path: str | Path | None = None, *, split: str | None = None,
                   limit: int | None = None) -> list[Scenario]:
    """Load and check a scenario file.

    Parameters
    ----------
    path : str or Path, optional
        Default :func:`default_scenarios_path`.
    split : str, optional
        Keep only ``"tune"`` or ``"heldout"`` scenarios.
    limit : int, optional
        Keep the first ``limit`` of each split (after filtering), so a small run still
        covers both parts.

    Returns
    -------
    list of Scenario

    Raises
    ------
    ScenarioError
        When the file is not JSON or a scenario is malformed (every scenario is
        checked, also those filtered out).
    OSError
        When the file cannot be read.
    """
    p = Path(path) if path is not None else default_scenarios_path()
    try:
        data = orjson.loads(p.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise ScenarioError(f"{p} is not valid JSON: {exc}") from None
    scenarios = parse_scenarios(data)
    if split is not None and split not in SPLITS:
        raise ScenarioError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    out: list[Scenario] = []
    taken: dict[str, int] = {}
    for s in scenarios:
        if split is not None and s.split != split:
            continue
        if limit is not None and taken.get(s.split, 0) >= limit:
            continue
        taken[s.split] = taken.get(s.split, 0) + 1
        out.append(s)
    return out
