"""The statements the offline judge keeps from an observation, and their leaf drafts.

Only ``role == "user"`` messages are read; each is split into sentences (sentences
over ``max_chars`` are chunked) and a sentence is kept when it is about the speaker or
their life (:func:`~personatree.text.informative_part`). The attributes of a draft are
read from its text alone by the pure functions of :mod:`personatree.text`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..text import (
    analyze_stance,
    chunk_text,
    find_entities,
    find_time,
    informative_part,
    key_topic,
    split_sentences,
    stance_label,
    tokenize,
)
from ..types import LeafDraft, Observation, Provenance

__all__ = ["Statement", "statements_of", "draft_of"]


@dataclass(frozen=True, slots=True)
class Statement:
    """One kept sentence (or chunk) of one user message, before embedding.

    Attributes
    ----------
    obs : int
        Index of the observation in the call.
    turn : int
        Index of the message in the observation.
    sentence : int
        Index of the sentence (or chunk) in the message, counting the dropped ones too,
        so it points at the same place whatever is kept.
    text : str
        The kept part of the sentence.
    tokens : list of str
    speaker : str or None
        The message name.
    """

    obs: int
    turn: int
    sentence: int
    text: str
    tokens: list[str]
    speaker: str | None


def statements_of(observations: Sequence[Observation], max_chars: int) -> list[Statement]:
    """The kept statements of every user message of ``observations``, in reading order."""
    units: list[Statement] = []
    for oi, obs in enumerate(observations):
        for ti, msg in enumerate(obs.messages):
            if msg.role != "user" or not msg.content:
                continue
            k = 0
            for sent in split_sentences(msg.content):
                pieces = chunk_text(sent, max_chars) if len(sent) > max_chars else (sent,)
                for piece in pieces:
                    idx = k
                    k += 1
                    toks = tokenize(piece)
                    kept = informative_part(piece, toks)
                    if kept is not None:
                        units.append(Statement(
                            oi, ti, idx, kept, toks if kept == piece else tokenize(kept), msg.name))
    return units


def draft_of(
    u: Statement, obs: Observation, schema_type: str, type_score: float, embedding: np.ndarray
) -> LeafDraft:
    """The leaf draft of a typed, embedded statement of ``obs``."""
    st = analyze_stance(u.text, u.tokens)
    attrs: dict[str, Any] = {
        "polarity": st.polarity,
        "negated": st.negated,
        "cessation": st.cessation,
        "stance": stance_label(u.text, u.tokens),
        "topic": key_topic(u.tokens),
        "time": find_time(u.text),
        "entities": find_entities(u.text),
        "speaker": u.speaker,
        "type_score": type_score,
        "role": "user",
    }
    return LeafDraft(
        content=u.text,
        schema_type=schema_type,
        attributes=attrs,
        provenance=Provenance(obs.id, u.turn, u.sentence, obs.at, obs.session_id),
        embedding=embedding,
    )
