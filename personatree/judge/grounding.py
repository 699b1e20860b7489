"""Grounding an extraction answer: every statement the model gives must be quoted from
a user message, or it is dropped.

The model names the interaction and the message of each statement and quotes it; the
quote is looked up in that message (ignoring case, spacing and punctuation), and the
leaf draft is built from the located text, never from the model's words, so a
paraphrase or an invented statement cannot enter the tree.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from ..text import is_question, is_request, stance_label, tokenize
from ..types import LeafDraft, Observation, Provenance
from .parsing import AnswerError, ExtractAnswer, LeafOut, one_line

__all__ = ["locate", "drafts_of"]

_WORD_RE = re.compile(r"\w+", re.UNICODE)
_CESSATION_RE = re.compile(r"\b(stopped|quit|no longer|anymore|used to)\b", re.IGNORECASE)

#: (message index, start, end) of a located quote → (schema type, the model's leaf).
_Spans = dict[tuple[int, int, int], tuple[str, LeafOut]]


def locate(quote: str, message: str) -> tuple[int, int] | None:
    """Where ``quote`` occurs in ``message`` (ignoring case, spacing and punctuation)."""
    q = quote.strip().strip("\"'“”")
    if not q:
        return None
    i = message.find(q)
    if i >= 0:
        return i, i + len(q)
    words = _WORD_RE.findall(q)
    if not words:
        return None
    m = re.search(r"\W+".join(re.escape(w) for w in words), message, re.IGNORECASE)
    return (m.start(), m.end()) if m else None


def drafts_of(
    answer: ExtractAnswer,
    obs: Sequence[Observation],
    batch: Sequence[int],
    leaf_types: Sequence[str],
    model: str,
) -> dict[int, list[LeafDraft]]:
    """The leaf drafts of an extraction answer, per observation index of ``batch``.

    ``provenance.turn`` is the message index; ``provenance.sentence`` numbers the
    statements of a message in reading order.

    Parameters
    ----------
    answer : ExtractAnswer
    obs : sequence of Observation
    batch : sequence of int
        The indices into ``obs`` of the request's interactions, in the order shown.
    leaf_types : sequence of str
        The leaf-level schema type names.
    model : str
        Recorded as the ``judge`` attribute of each draft.

    Returns
    -------
    dict of int to list of LeafDraft

    Raises
    ------
    AnswerError
        ``invalid_schema`` for an unknown type; ``ungrounded`` when statements were given
        but none was quoted from a user message.
    """
    found = _grounded_spans(answer, obs, batch, leaf_types)
    return {i: _drafts(obs[i], spans, model) for i, spans in found.items()}


def _grounded_spans(
    answer: ExtractAnswer, obs: Sequence[Observation], batch: Sequence[int], leaf_types: Sequence[str]
) -> dict[int, _Spans]:
    found: dict[int, _Spans] = {i: {} for i in batch}
    asked = False  # a quoted question or request: grounded, but no evidence
    for leaf in answer.leaves:
        kind = leaf.type.strip().lower()
        if kind not in leaf_types:
            raise AnswerError("invalid_schema", f"type {leaf.type!r} is not one of {', '.join(leaf_types)}")
        if leaf.interaction >= len(batch):
            continue
        o = obs[batch[leaf.interaction]]
        if leaf.message >= len(o.messages) or o.messages[leaf.message].role != "user":
            continue
        span = locate(leaf.text, o.messages[leaf.message].content)
        if span is None:
            continue  # not a quote: the model made it up
        quote = o.messages[leaf.message].content[span[0]:span[1]]
        if is_question(quote) or is_request(tokenize(quote), quote):
            # A question or a task for the assistant is not evidence about the user,
            # whichever judge reads it. It still counts as grounded.
            asked = True
            continue
        found[batch[leaf.interaction]][(leaf.message, *span)] = (kind, leaf)
    if answer.leaves and not any(found.values()) and not asked:
        raise AnswerError("ungrounded", "no statement was quoted verbatim from a user message")
    return found


def _drafts(o: Observation, spans: _Spans, model: str) -> list[LeafDraft]:
    drafts: list[LeafDraft] = []
    per_turn: dict[int, int] = {}
    for (turn, a, b), (kind, leaf) in sorted(spans.items()):
        msg = o.messages[turn]
        k = per_turn.get(turn, 0)
        per_turn[turn] = k + 1
        drafts.append(LeafDraft(
            content=msg.content[a:b].strip(),
            schema_type=kind,
            attributes=_attributes(leaf, msg.content[a:b], msg.name, model),
            provenance=Provenance(o.id, turn, k, o.at, o.session_id),
        ))
    return drafts


def _attributes(leaf: LeafOut, text: str, speaker: str | None, model: str) -> dict[str, Any]:
    """The draft attributes: the model's reading, with the offline judge's meanings."""
    attrs: dict[str, Any] = {
        "polarity": int(leaf.polarity),
        "negated": bool(leaf.negated),
        "cessation": False,
        # The model's stance when it gives one, else the offline reading.
        "stance": leaf.stance or stance_label(text),
        "topic": one_line(leaf.topic, 80).lower(),
        "time": leaf.time,
        "entities": [one_line(e, 80) for e in leaf.entities if e.strip()],
        "speaker": speaker,
        "role": "user",
        "judge": model,
    }
    if leaf.polarity < 0 and not leaf.negated:
        # The offline fallback validator reads cessation from the text; keep the
        # attribute present with the same meaning ("stopped", "no longer").
        attrs["cessation"] = bool(_CESSATION_RE.search(text))
    if attrs["stance"] == "stopped":
        attrs["cessation"] = True
    return attrs
