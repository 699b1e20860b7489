"""The requests of the LLM judge: how each operation's input is batched, shown to the
model (inside the ``<data>`` block of its versioned prompt), and how the answer is
checked against the request.

Each ``*_job`` function is pure: it renders the prompt and returns a
:class:`~personatree.judge.runner.Job` whose check turns a validated answer into the
operation's result, raising :class:`~personatree.judge.parsing.AnswerError` when the
answer does not fit (ids out of range, an ungrounded claim, a label that contradicts ψ).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from ..schema import SchemaRegistry
from ..text import strip_summary_suffix
from ..types import LeafDraft, Level, Node, Observation, Route, Summary, Verdict
from .grounding import drafts_of
from .parsing import AnswerError, ExtractAnswer, RouteAnswer, SummaryAnswer, UpdateAnswer, ValidateAnswer, one_line
from .prompts import PromptTemplate, data_block
from .runner import Job
from .summaries import mentions_and_span, with_mentions
from .wire import extract_schema, route_schema, summary_schema, update_schema, validate_schema

__all__ = [
    "UNRELATED_MAX_PSI",
    "type_lists",
    "extract_batches",
    "extract_job",
    "validate_chunks",
    "validate_job",
    "route_job",
    "summarize_job",
    "sized_batches",
    "update_job",
]

#: ``|ψ|`` an "unrelated" verdict may carry; more is an inconsistent answer.
UNRELATED_MAX_PSI = 0.3


def type_lists(registry: SchemaRegistry) -> dict[str, str]:
    """The schema types as the prompts list them: ``"leaf"`` types for extraction,
    ``"all"`` (with their levels) for routing."""
    return {
        "leaf": "\n".join(f"- {t.name}: {t.description}" for t in registry.types_at(Level.LEAF)),
        "all": "\n".join(
            f"- {t.name} ({', '.join(lv.value for lv in t.levels)}): {t.description}" for t in registry
        ),
    }


# -- extraction -------------------------------------------------------------------------------


def sized_batches(
    users: Sequence[str], sizes: Sequence[int], todo: Sequence[int], max_items: int, max_chars: int
) -> list[list[int]]:
    """Group item indices into requests: at most ``max_items`` and (softly) ``max_chars``
    characters per request, one user per request, in order.

    ``users[i]`` and ``sizes[i]`` are the user and the characters of item ``i``.
    """
    batches: list[list[int]] = []
    cur: list[int] = []
    chars = 0
    for i in todo:
        if cur and (len(cur) >= max_items or chars + sizes[i] > max_chars or users[cur[0]] != users[i]):
            batches.append(cur)
            cur, chars = [], 0
        cur.append(i)
        chars += sizes[i]
    if cur:
        batches.append(cur)
    return batches


def extract_batches(
    obs: Sequence[Observation], todo: Sequence[int], max_items: int, max_chars: int
) -> list[list[int]]:
    """Group observation indices into requests: at most ``max_items`` and (softly)
    ``max_chars`` characters per request, one user per request, in order."""
    sizes = [sum(len(m.content) for m in o.messages) for o in obs]
    return sized_batches([o.user_id for o in obs], sizes, todo, max_items, max_chars)


def extract_job(
    prompt: PromptTemplate,
    types: str,
    leaf_types: Sequence[str],
    model: str,
    obs: Sequence[Observation],
    batch: Sequence[int],
    context_chars: int,
) -> Job[ExtractAnswer, dict[int, list[LeafDraft]]]:
    """The extraction request of one batch; non-user messages are shown as context, cut
    to ``context_chars``. Its check grounds the answer (:func:`~.grounding.drafts_of`)."""
    payload = []
    for k, i in enumerate(batch):
        msgs = []
        for t, m in enumerate(obs[i].messages):
            text = m.content if m.role == "user" else m.content[:context_chars]
            entry: dict[str, Any] = {"index": t, "role": m.role, "text": text}
            if m.name:
                entry["speaker"] = m.name
            msgs.append(entry)
        payload.append({"id": k, "date": obs[i].at.date().isoformat(), "messages": msgs})
    messages = prompt.render(types=types, data=data_block(payload))

    def check(answer: ExtractAnswer) -> dict[int, list[LeafDraft]]:
        return drafts_of(answer, obs, batch, leaf_types, model)

    return Job("extract", obs[batch[0]].user_id, messages, ExtractAnswer, check,
               wire=extract_schema(obs, batch, leaf_types))


# -- validation -------------------------------------------------------------------------------


def validate_chunks(pairs: Sequence[tuple[Node, Node, float]], todo: Sequence[int], size: int) -> list[list[int]]:
    """Group pair indices into requests of at most ``size`` pairs of one user, in order."""
    chunks: list[list[int]] = []
    for i in todo:
        if chunks and len(chunks[-1]) < size and pairs[chunks[-1][0]][0].user_id == pairs[i][0].user_id:
            chunks[-1].append(i)
        else:
            chunks.append([i])
    return chunks


def validate_job(
    prompt: PromptTemplate, pairs: Sequence[tuple[Node, Node, float]], chunk: Sequence[int]
) -> Job[ValidateAnswer, dict[int, Verdict]]:
    """The validation request of one chunk; its check keeps, per pair id of the chunk,
    the first verdict whose label agrees with the sign of ψ."""
    payload = []
    for k, i in enumerate(chunk):
        child, parent, _sim = pairs[i]
        payload.append({
            "pair": k,
            "evidence": {"type": child.schema_type, "text": strip_summary_suffix(child.content)},
            "pattern": {"type": parent.schema_type, "level": parent.level.value,
                        "text": strip_summary_suffix(parent.content)},
        })
    messages = prompt.render(data=data_block(payload))

    def check(answer: ValidateAnswer) -> dict[int, Verdict]:
        got: dict[int, Verdict] = {}
        for v in answer.verdicts:
            if v.pair >= len(chunk) or v.pair in got:
                continue
            consistent = (
                (v.label == "support" and v.psi > 0)
                or (v.label == "conflict" and v.psi < 0)
                or (v.label == "unrelated" and abs(v.psi) <= UNRELATED_MAX_PSI)
            )
            if consistent:
                reason = one_line(f"{v.label}: {v.reason or 'no reason given'}")
                got[v.pair] = Verdict(v.label, float(v.psi), reason)
        if chunk and not got:
            raise AnswerError("invalid_schema", "no verdict named a pair id with a label matching the sign of psi")
        return got

    return Job("validate", pairs[chunk[0]][0].user_id, messages, ValidateAnswer, check,
               wire=validate_schema(len(chunk)))


# -- routing ----------------------------------------------------------------------------------


def route_job(
    prompt: PromptTemplate, types: str, registry: SchemaRegistry, query: str, user_id: str | None
) -> Job[RouteAnswer, Route]:
    """The routing request of one query; its check normalizes the level probabilities
    (the level is the argmax) and drops unknown schema types."""
    messages = prompt.render(types=types, data=data_block({"question": query}))

    def check(answer: RouteAnswer) -> Route:
        probs = {Level(k): max(0.0, float(v)) for k, v in answer.probabilities.items()}
        total = sum(probs.values())
        if not math.isfinite(total) or total <= 0.0:
            raise AnswerError("invalid_schema", "probabilities must be positive and sum to 1")
        full = {lv: probs.get(lv, 0.0) / total for lv in Level}
        level = max(Level, key=lambda lv: (full[lv], -lv.rank))
        types = tuple(dict.fromkeys(t for t in answer.schema_types if t in registry))
        return Route(level=level, probabilities=full, schema_types=types)

    return Job("route", user_id, messages, RouteAnswer, check, wire=route_schema([t.name for t in registry]))


# -- summarization ----------------------------------------------------------------------------


def summarize_job(
    prompt: PromptTemplate,
    registry: SchemaRegistry,
    members: Sequence[Node],
    shown: Sequence[Node],
    level: Level,
    schema_type: str,
    base: Summary,
    model: str,
) -> Job[SummaryAnswer, Summary]:
    """The summary request of ``shown`` (the members in the prompt).

    Its check requires a claim citing at least one shown id; a MID claim gets the
    "(N mentions, span)" suffix computed from all ``members``, so counts and dates never
    come from the model. The other attributes are ``base``'s (the offline summary), with
    the model's ``polarity`` and ``topic`` and the cited node ids as ``evidence``.
    """
    payload = [
        {"id": k, "type": n.schema_type, "date": n.t_first.date().isoformat(),
         "text": strip_summary_suffix(n.content)}
        for k, n in enumerate(shown)
    ]
    st = registry[schema_type] if schema_type in registry else None
    messages = prompt.render(
        level=level.value, type=schema_type, description=st.description if st else schema_type,
        data=data_block(payload),
    )

    def check(answer: SummaryAnswer) -> Summary:
        cited = [k for k in dict.fromkeys(answer.evidence) if k < len(shown)]
        if not cited:
            raise AnswerError("ungrounded", "evidence must cite at least one given id")
        claim = one_line(answer.claim, 300).rstrip(" .")
        if not claim:
            raise AnswerError("invalid_schema", "claim is empty")
        attrs = dict(base.attributes)
        content = with_mentions(claim, *mentions_and_span(members)) if level is Level.MID else claim
        attrs.update({
            "polarity": int(answer.polarity),
            "topic": one_line(answer.topic, 80).lower() or attrs.get("topic", ""),
            "evidence": [shown[k].id for k in cited],
            "judge": model,
            "named": True,  # the model wrote the claim from the evidence it cites
        })
        return Summary(content=content, schema_type=schema_type, attributes=attrs)

    return Job("summarize", members[0].user_id, messages, SummaryAnswer, check, wire=summary_schema(len(shown)))


# -- updates ----------------------------------------------------------------------------------


def _dated(node: Node) -> str:
    # The day the statement was made (its observation's time, else its first time).
    at = node.provenance[0].at if node.provenance else node.t_first
    return at.date().isoformat()


def update_job(
    prompt: PromptTemplate, groups: Sequence[tuple[Node, Sequence[Node]]], chunk: Sequence[int]
) -> Job[UpdateAnswer, dict[int, list[int]]]:
    """The update request of one chunk of groups (a later statement and earlier ones of
    the same person); its check keeps, per group id of the chunk, the ids in range of
    that group's earlier statements, in order, without repeats."""
    payload = []
    for k, i in enumerate(chunk):
        later, earlier = groups[i]
        payload.append({
            "group": k,
            "later": {"date": _dated(later), "text": later.content},
            "earlier": [{"id": j, "date": _dated(e), "text": e.content} for j, e in enumerate(earlier)],
        })
    messages = prompt.render(data=data_block(payload))

    def check(answer: UpdateAnswer) -> dict[int, list[int]]:
        got: dict[int, list[int]] = {}
        for link in answer.links:
            if link.group >= len(chunk) or link.group in got:
                continue
            n = len(groups[chunk[link.group]][1])
            got[link.group] = list(dict.fromkeys(j for j in link.changes if j < n))
        if chunk and not got:
            raise AnswerError("invalid_schema", "no entry named a group id of the request")
        return got

    return Job("update", groups[chunk[0]][0].user_id, messages, UpdateAnswer, check,
               wire=update_schema([len(groups[i][1]) for i in chunk]))
