"""The output schema each LLM-judge request sends as structured output.

A server that decodes under a JSON schema (OpenAI's ``json_schema`` response format,
llama.cpp's grammar, Ollama's ``format``) can only produce what the schema allows, so
the schema sent with a request is cut to that request: the statement of an extraction
is one of the user sentences of the named message (a verbatim quote by construction,
for every sentence an enum can carry),
the pair ids of a validation are the ids shown, the strength ψ is a value on a grid
whose sign agrees with the label, the schema types are the registry's names. A small
local model then answers with JSON the judge can use; the judge still checks every
answer as before (:mod:`personatree.judge.parsing`, the checks in
:mod:`personatree.judge.jobs`), so a server that ignores the schema loses nothing.

The schemas use only what every one of those decoders reads: ``type``, ``properties``,
``required``, ``additionalProperties: false``, ``enum``, ``const``, ``anyOf``,
``minItems``/``maxItems`` and ``maxLength`` (no ``$ref``, no numeric bounds, which
llama.cpp's grammar conversion ignores). The optional fields of the response models
are left out: a shorter answer fits the token limit of a small model.

Everything here is pure.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..text import split_sentences
from ..types import Observation

__all__ = [
    "PSI_GRID",
    "extract_schema",
    "validate_schema",
    "route_schema",
    "summary_schema",
    "update_schema",
]

#: The ψ values a constrained verdict may carry, per label: the strengths the prompt
#: names (1 explicit, 0.6 clear, 0.3 weak), signed by the label; "unrelated" is 0.
PSI_GRID: dict[str, tuple[float, ...]] = {
    "support": (0.3, 0.6, 1.0),
    "conflict": (-1.0, -0.6, -0.3),
    "unrelated": (0.0,),
}
#: Level probabilities a constrained route may give (tenths).
_PROBABILITY_GRID = tuple(round(k / 10, 1) for k in range(11))
_POLARITY = {"enum": [-1, 0, 1]}
_STANCES = {"enum": ["positive", "negative", "neutral", "stopped", "started"]}


def _obj(properties: dict[str, Any], required: Sequence[str] | None = None) -> dict[str, Any]:
    """A closed object schema (every property required unless ``required`` says)."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties if required is None else required),
        "additionalProperties": False,
    }


def _list_of(items: dict[str, Any], max_items: int, min_items: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "array", "items": items, "maxItems": max_items}
    if min_items:
        out["minItems"] = min_items
    return out


def extract_schema(
    obs: Sequence[Observation], batch: Sequence[int], leaf_types: Sequence[str]
) -> dict[str, Any]:
    """The extraction answer for one batch: ``{"leaves": [...]}`` where each leaf names
    an interaction id and the index of one of its user messages, and quotes one
    sentence of that message.

    Parameters
    ----------
    obs : sequence of Observation
    batch : sequence of int
        Indices into ``obs`` of the request's interactions, in the order shown (the
        interaction ids of the prompt are positions in ``batch``).
    leaf_types : sequence of str
        The leaf-level schema type names.

    Returns
    -------
    dict
        A JSON schema. With no user sentence at all, only ``{"leaves": []}`` fits.
    """
    choices: list[dict[str, Any]] = []
    n_sentences = 0
    for k, i in enumerate(batch):
        for t, m in enumerate(obs[i].messages):
            if m.role != "user":
                continue
            sentences = list(dict.fromkeys(s.strip() for s in split_sentences(m.content) if s.strip()))
            if sentences:
                n_sentences += len(sentences)
                choices.append(_obj({
                    "interaction": {"const": k},
                    "message": {"const": t},
                    "text": _quote_of(sentences),
                    "type": {"enum": list(leaf_types)},
                    "polarity": _POLARITY,
                    "stance": _STANCES,
                }))
    # At most one statement per sentence: every answer the judge can use fits, and a
    # small model that repeats itself stops there instead of at its token limit.
    leaf: dict[str, Any] = choices[0] if len(choices) == 1 else {"anyOf": choices}
    return _obj({"leaves": _list_of(leaf, n_sentences) if choices else {"type": "array", "maxItems": 0}})


#: Characters an enum string cannot carry to every decoder: llama.cpp's schema
#: conversion (llama-cpp-python 0.3) writes a quote or a backslash inside an enum value
#: as a broken grammar literal (the server then fails to parse the grammar), and a
#: control character would come out raw, which JSON does not allow in a string.
_UNSAFE = str.maketrans({'"': "'", "\\": "/", **{chr(c): " " for c in range(32)}})


def _quote_of(sentences: Sequence[str]) -> dict[str, Any]:
    """The schema of a verbatim quote of one of ``sentences``.

    An unsafe character is replaced by a safe one of the same class (a quote by an
    apostrophe, a backslash by a slash, a control character by a space): the judge
    locates a quote in its message by its words, ignoring punctuation and spacing, and
    stores the message's own text, so the replaced character is never stored.
    """
    return {"enum": list(dict.fromkeys(s.translate(_UNSAFE) for s in sentences))}


def validate_schema(n_pairs: int) -> dict[str, Any]:
    """The validation answer for ``n_pairs`` pairs: one verdict per pair id, each a
    label with a ψ whose sign agrees with it."""
    verdicts = [
        _obj({"pair": {"enum": list(range(n_pairs))}, "label": {"const": label}, "psi": {"enum": list(grid)}})
        for label, grid in PSI_GRID.items()
    ]
    return _obj({"verdicts": _list_of({"anyOf": verdicts}, max(1, n_pairs), min_items=1)})


def route_schema(type_names: Sequence[str]) -> dict[str, Any]:
    """The route answer: a probability (in tenths) for each level and up to three of
    the registry's schema types."""
    prob = {"enum": list(_PROBABILITY_GRID)}
    return _obj({
        "probabilities": _obj({"leaf": prob, "mid": prob, "root": prob}),
        "schema_types": _list_of({"enum": list(type_names)}, 3),
    })


def summary_schema(n_shown: int) -> dict[str, Any]:
    """The summary answer: a one-line claim citing ids among the ``n_shown`` members."""
    return _obj({
        "claim": {"type": "string", "maxLength": 200},
        "polarity": _POLARITY,
        "topic": {"type": "string", "maxLength": 40},
        "evidence": _list_of({"enum": list(range(n_shown))}, max(1, n_shown), min_items=1),
    })


def update_schema(sizes: Sequence[int]) -> dict[str, Any]:
    """The update answer for groups of ``sizes`` earlier statements: per group id, the
    ids among its own earlier statements that the later one changes."""
    links = [
        _obj({"group": {"const": g}, "changes": _list_of({"enum": list(range(n))}, max(1, n))})
        for g, n in enumerate(sizes)
    ]
    # One entry per group: a small model otherwise stops after the first few.
    return _obj({"links": _list_of({"anyOf": links}, max(1, len(sizes)), min_items=max(1, len(sizes)))})
