"""Structured output of the LLM judge, with litellm's ``mock_response`` at the network edge.

Each request carries its output schema (:mod:`personatree.judge.wire`) as
``response_format``; a server that refuses a form makes the judge step down for that
model (:mod:`personatree.judge.structured`); ``judge_usage`` reports the share of calls
the model answered itself. The schemas are checked with ``jsonschema``: what they allow
passes the judge's checks, what the judge would reject they refuse.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import jsonschema
import litellm
import pytest

from personatree.errors import ConfigError
from personatree.judge import LLMJudge, OfflineJudge
from personatree.judge.jobs import extract_job, validate_job
from personatree.judge.parsing import ExtractAnswer, ValidateAnswer
from personatree.judge.prompts import load_prompt
from personatree.judge.structured import FormLadder, refuses_form, response_format
from personatree.judge.wire import PSI_GRID, extract_schema, route_schema, summary_schema, validate_schema
from personatree.types import Level, Message, Node, Observation

from .conftest import T0
from .test_llm_judge import open_tree, say, seed_hiking
from .test_llm_judge_fakes import ScriptedModel

MODEL = "openai/local-model"


class Refusing(ScriptedModel):
    """A server that answers only in some response formats (like llama-cpp-python's,
    which reads ``{"type": "json_object", "schema"}`` and fails on ``json_schema``)."""

    def __init__(self, accepted: set[str | None], error: type = litellm.InternalServerError, **kw: Any) -> None:
        super().__init__(**kw)
        self.accepted = accepted
        self.error = error
        self.formats: list[str | None] = []

    def __call__(self, *, model: str, messages: list[dict[str, str]], **kwargs: Any) -> Any:
        rf = kwargs.get("response_format")
        form = None if rf is None else ("json_object_schema" if "schema" in rf else rf["type"])
        self.formats.append(form)
        if form not in self.accepted:
            args: dict[str, Any] = {"message": "response_format: Input should be 'text' or 'json_object'",
                                    "llm_provider": "openai", "model": model}
            if self.error is litellm.UnprocessableEntityError:
                args["response"] = httpx.Response(422, request=httpx.Request("POST", "http://127.0.0.1/v1"))
            return litellm.completion(model=model, messages=messages, mock_response=self.error(**args))
        return super().__call__(model=model, messages=messages, **kwargs)


@pytest.fixture(scope="module")
def offline(embedder, registry) -> OfflineJudge:
    return OfflineJudge(embedder, registry)


def judge_of(embedder, registry, offline, model: Any, **kw: Any) -> LLMJudge:
    return LLMJudge(MODEL, embedder=embedder, registry=registry, offline=offline, completion=model,
                    sleep=lambda s: None, timeout_s=0.05, **kw)


def obs(*texts: str) -> Observation:
    return Observation(id="o1", user_id="ana", session_id="s", at=T0,
                       messages=tuple(Message("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts)),
                       metadata={})


# -- the schemas ----------------------------------------------------------------------------------


def test_extract_schema_allows_only_quotes_of_user_sentences(registry) -> None:
    o = obs('I love hiking. I said "no" to sushi.', "Nice!", "I work as a nurse.")
    leaf_types = [t.name for t in registry.types_at(Level.LEAF)]
    schema = extract_schema([o], [0], leaf_types)
    jsonschema.Draft202012Validator.check_schema(schema)
    good = {"leaves": [
        {"interaction": 0, "message": 0, "text": "I love hiking.", "type": leaf_types[0], "polarity": 1,
         "stance": "positive"},
        # The quote marks are replaced in the enum; the judge still finds the sentence.
        {"interaction": 0, "message": 0, "text": "I said 'no' to sushi.", "type": leaf_types[0], "polarity": -1,
         "stance": "negative"},
        {"interaction": 0, "message": 2, "text": "I work as a nurse.", "type": leaf_types[0], "polarity": 0,
         "stance": "neutral"},
    ]}
    jsonschema.validate(good, schema)
    job = extract_job(load_prompt("extract"), "", leaf_types, MODEL, [o], [0], 400)
    drafts = job.check(ExtractAnswer.model_validate(good))[0]
    # The stored text is the message's own (its quote marks; the word match ends at "sushi").
    assert [d.content for d in drafts] == ["I love hiking.", 'I said "no" to sushi', "I work as a nurse."]
    for bad in (
        {"interaction": 0, "message": 0, "text": "I love sushi.", "type": leaf_types[0], "polarity": 1,
         "stance": "positive"},  # not a sentence of the message
        {"interaction": 0, "message": 1, "text": "Nice!", "type": leaf_types[0], "polarity": 0,
         "stance": "neutral"},  # the assistant's message
        {"interaction": 0, "message": 0, "text": "I love hiking.", "type": "not-a-type", "polarity": 1,
         "stance": "positive"},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({"leaves": [bad]}, schema)
    with pytest.raises(jsonschema.ValidationError):  # bounded: one statement per sentence
        jsonschema.validate({"leaves": good["leaves"] * 2}, schema)


def test_validate_schema_ties_psi_to_the_label(embedder) -> None:
    schema = validate_schema(2)
    jsonschema.Draft202012Validator.check_schema(schema)
    leaf = Node(id="lf", user_id="ana", level=Level.LEAF, schema_type="preference", content="I hate hiking.",
                attributes={}, t_first=T0, t_last=T0, logit=0.0)
    mid = Node(id="md", user_id="ana", level=Level.MID, schema_type="preference", content="Loves hiking",
               attributes={}, t_first=T0, t_last=T0, logit=0.0)
    job = validate_job(load_prompt("validate"), [(leaf, mid, 0.8), (leaf, mid, 0.7)], [0, 1])
    for label, grid in PSI_GRID.items():
        for psi in grid:
            answer = {"verdicts": [{"pair": 0, "label": label, "psi": psi}, {"pair": 1, "label": label, "psi": psi}]}
            jsonschema.validate(answer, schema)
            assert set(job.check(ValidateAnswer.model_validate(answer))) == {0, 1}
    for bad in ({"pair": 0, "label": "support", "psi": -0.6}, {"pair": 2, "label": "conflict", "psi": -1.0},
                {"pair": 0, "label": "unrelated", "psi": 0.6}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({"verdicts": [bad]}, schema)


def test_route_and_summary_schemas(registry) -> None:
    names = [t.name for t in registry]
    route = route_schema(names)
    jsonschema.validate({"probabilities": {"leaf": 0.2, "mid": 0.3, "root": 0.5}, "schema_types": names[:2]}, route)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"probabilities": {"leaf": 2.0, "mid": 0.0, "root": 0.0}, "schema_types": []}, route)
    summary = summary_schema(3)
    jsonschema.validate({"claim": "Enjoys hiking", "polarity": 1, "topic": "hiking", "evidence": [0, 2]}, summary)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"claim": "x", "polarity": 1, "topic": "", "evidence": [3]}, summary)


# -- sending them ---------------------------------------------------------------------------------


def test_each_request_sends_its_schema_as_json_schema(tmp_path, embedder, registry, offline) -> None:
    model = ScriptedModel()
    judge = judge_of(embedder, registry, offline, model)
    tree = open_tree(tmp_path, embedder, judge)
    try:
        seed_hiking(tree, "ana")
        tree.observe("ana", say("I love hiking in the mountains."), at=T0)
        sent = [c["kwargs"]["response_format"] for c in model.calls]
        assert {c["op"] for c in model.calls} == {"extract", "validate"}
        for rf in sent:
            assert rf["type"] == "json_schema" and rf["json_schema"]["name"] in ("extract", "validate")
            jsonschema.Draft202012Validator.check_schema(rf["json_schema"]["schema"])
        assert judge.output_forms() == {MODEL: "json_schema"}
        total = judge.usage().total()
        assert (total.calls, total.answered, total.answered_share) == (2, 2, 1.0)
        assert tree.judge_usage().to_dict()["total"]["answered_share"] == 1.0
    finally:
        tree.close()


@pytest.mark.parametrize(("accepted", "error", "settles_on"), [
    ({"json_object_schema"}, litellm.InternalServerError, "json_object_schema"),  # llama-cpp-python
    ({"json_object", None}, litellm.BadRequestError, "json_object"),
    ({None}, litellm.UnprocessableEntityError, "none"),
])
def test_a_refused_form_steps_down_once_per_model(tmp_path, embedder, registry, offline, accepted, error,
                                                  settles_on) -> None:
    model = Refusing(accepted, error)
    judge = judge_of(embedder, registry, offline, model)
    tree = open_tree(tmp_path, embedder, judge)
    try:
        seed_hiking(tree, "ana")
        rep = tree.observe("ana", say("I love hiking in the mountains."), at=T0)
        tree.observe("ana", say("I went hiking in the Alps last week."), at=T0 + timedelta(days=1))
        assert rep.attached == 1 and judge.output_forms() == {MODEL: settles_on}
        refused = [f for f in model.formats if f not in accepted]
        # Each refused form was tried once, before the first answer; never again after it.
        assert len(refused) == len(set(refused)) and model.formats[len(refused):] == \
            [None if settles_on == "none" else settles_on] * (len(model.formats) - len(refused))
        total = judge.usage().total()
        assert total.answered == total.calls and total.failures == 0 and not judge.stats().fallbacks
    finally:
        tree.close()


def test_errors_after_a_form_worked_are_not_refusals(embedder, registry, offline) -> None:
    ladder = FormLadder("auto")
    assert ladder.form("m") == "json_schema"
    ladder.settle("m")
    bad = litellm.BadRequestError(message="bad", llm_provider="openai", model="m")
    assert not ladder.step_down("m", "json_schema", bad) and ladder.form("m") == "json_schema"
    # A connection failure or a timeout says nothing about the format.
    fresh = FormLadder("auto")
    down = litellm.InternalServerError(message="Connection error.", llm_provider="openai", model="m")
    assert not refuses_form(down) and not fresh.step_down("m", "json_schema", down)
    assert not refuses_form(litellm.Timeout(message="slow", llm_provider="openai", model="m"))
    assert refuses_form(bad)
    # A named form is used alone.
    only = FormLadder("json_object")
    assert only.form("m") == "json_object" and not only.step_down("m", "json_object", bad)
    assert FormLadder("off").form("m") is None
    with pytest.raises(ConfigError):
        FormLadder("xml")
    with pytest.raises(ConfigError):
        response_format("yaml", {}, "x")


def test_the_callers_response_format_wins_and_failures_lower_the_share(tmp_path, embedder, registry,
                                                                      offline) -> None:
    model = ScriptedModel(failures={"extract": ["invalid"] * 3})
    judge = judge_of(embedder, registry, offline, model, completion_kwargs={"response_format": {"type": "text"}})
    tree = open_tree(tmp_path, embedder, judge)
    try:
        seed_hiking(tree, "ana")
        tree.observe("ana", say("I love hiking in the mountains."), at=T0)
        assert all(c["kwargs"]["response_format"] == {"type": "text"} for c in model.calls)
        usage = judge.usage().by_operation()
        # extract: one call, three unusable answers, answered by the offline judge.
        assert (usage["extract"].calls, usage["extract"].answered, usage["extract"].requests) == (1, 0, 3)
        assert usage["validate"].answered == usage["validate"].calls == 1
        assert judge.usage().total().answered_share == 0.5
    finally:
        tree.close()


def test_the_import_command_shows_the_share_the_model_answered(tmp_path, embedder, registry, offline,
                                                               monkeypatch) -> None:
    import json

    from typer.testing import CliRunner

    from personatree.cli import app, chat_import

    judge = judge_of(embedder, registry, offline, Refusing({"json_object_schema"}))
    # The command line opens stores with the offline judge; an LLM-judged tree stands in.
    monkeypatch.setattr(chat_import, "open_tree", lambda *a, **k: open_tree(tmp_path, embedder, judge))
    export = tmp_path / "chat.jsonl"
    export.write_text(json.dumps({"id": "c1", "messages": [{"role": "human", "content": "I love sailing."},
                                                           {"role": "ai", "content": "Fair winds!"}]}) + "\n")
    res = CliRunner().invoke(app, ["import", "ana", str(export), "--store", str(tmp_path / "unused.db"), "--json"],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["judge"] == {"calls": 1, "answered_by_model": 1, "answered_share": 1.0,
                                              "fallbacks": 0}
