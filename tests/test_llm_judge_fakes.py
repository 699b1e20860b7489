"""A scripted model for the LLM-judge tests: answers through litellm's ``mock_response``.

``ScriptedModel`` is a ``completion`` callable with litellm's signature. It reads the
data block of the prompt like a well-behaved model would and answers in a chosen style
(plain, fenced, prose-wrapped, trailing commas), or misbehaves on the first requests of
an operation (invalid JSON, a schema echo, a timeout, a rate limit, a malicious answer).
Every answer goes through ``litellm.completion(mock_response=...)``, so the real
response objects and exceptions of litellm are exercised; nothing touches the network.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import defaultdict
from typing import Any

import litellm

__all__ = ["ScriptedModel", "operation_of", "data_of"]

_DATA_RE = re.compile(r"<data>\n(.*)\n</data>", re.DOTALL)
_SENT_RE = re.compile(r"[^.!?]+[.!?]?")


def operation_of(messages: list[dict[str, str]]) -> str:
    """Which judge operation a prompt is for (from its system message)."""
    system = messages[0]["content"]
    for op, marker in (("extract", "You extract"), ("validate", "You check"), ("route", "You route"),
                       ("summarize", "You write one claim"), ("update", "You read what one person said")):
        if system.startswith(marker):
            return op
    raise AssertionError("unknown prompt")


def data_of(messages: list[dict[str, str]]) -> Any:
    """The JSON payload between the data delimiters of the (first) user message."""
    m = _DATA_RE.search(messages[1]["content"])
    assert m, "the user message must carry the data between <data> delimiters"
    return json.loads(m.group(1))


def _type_of(sentence: str) -> tuple[str, int]:
    low = sentence.lower()
    if re.search(r"\b(hate|can't stand|dislike|stopped)\b", low):
        return "preference", -1
    if re.search(r"\b(love|like|enjoy|prefer)\b", low):
        return "preference", 1
    if re.search(r"\b(yesterday|last week|went)\b", low):
        return "event", 0
    return "fact", 0


def behaving_answer(op: str, data: Any) -> dict[str, Any]:
    """What a good model answers for ``data``."""
    if op == "extract":
        leaves = []
        for inter in data:
            for msg in inter["messages"]:
                if msg["role"] != "user":
                    continue
                for s in _SENT_RE.findall(msg["text"]):
                    s = s.strip()
                    if len(s.split()) < 3:
                        continue
                    kind, pol = _type_of(s)
                    leaves.append({"interaction": inter["id"], "message": msg["index"], "text": s, "type": kind,
                                   "polarity": pol, "negated": False, "topic": s.split()[-1].strip(".!?").lower(),
                                   "time": None, "entities": []})
        return {"leaves": leaves}
    if op == "validate":
        out = []
        for p in data:
            ev = p["evidence"]["text"].lower()
            if re.search(r"\b(hate|stopped|can't stand)\b", ev):
                out.append({"pair": p["pair"], "label": "conflict", "psi": -0.8, "reason": "the evidence reverses the pattern"})
            elif set(re.findall(r"\w{4,}", ev)) & set(re.findall(r"\w{4,}", p["pattern"]["text"].lower())):
                out.append({"pair": p["pair"], "label": "support", "psi": 0.9, "reason": "same activity, same stance"})
            else:
                out.append({"pair": p["pair"], "label": "unrelated", "psi": 0.0, "reason": "different topic"})
        return {"verdicts": out}
    if op == "route":
        return {"probabilities": {"leaf": 0.1, "mid": 0.8, "root": 0.1}, "schema_types": ["preference", "nonsense"]}
    if op == "summarize":
        return {"claim": "Loves hiking in the mountains.", "polarity": 1, "topic": "hiking",
                "evidence": [d["id"] for d in data]}
    if op == "update":
        # A later statement that stops or turns against something changes the earlier
        # statements it shares a word with.
        links = []
        for g in data:
            later = g["later"]["text"].lower()
            words = set(re.findall(r"\w{4,}", later))
            ends = re.search(r"\b(hate|stopped|quit|sold|gave up|can't stand)\b", later)
            links.append({"group": g["group"], "changes": [
                e["id"] for e in g["earlier"] if ends and words & set(re.findall(r"\w{4,}", e["text"].lower()))]})
        return {"links": links}
    raise AssertionError(op)


def styled(answer: dict[str, Any], style: str) -> str:
    """Render an answer the way models wrap JSON."""
    text = json.dumps(answer)
    if style == "plain":
        return text
    if style == "fenced":
        return f"```json\n{json.dumps(answer, indent=2)}\n```"
    if style == "prose":
        return f"Sure! Here is the JSON you asked for:\n{text}\nHappy to help further."
    if style == "trailing_comma":
        return text[:-1] + ",}" if text.endswith("}") else text
    raise AssertionError(style)


ECHO = {
    "extract": '{"type": "object", "properties": {"leaves": {"type": "array"}}, "required": ["leaves"]}',
    "validate": '{"verdicts": [{"pair": 0, "label": "unrelated", "psi": 0.0, "reason": "<one short line>"}]}',
    "route": '{"properties": {"probabilities": {}}, "required": ["probabilities"]}',
    "summarize": '{"claim": "...", "polarity": 0, "topic": "...", "evidence": [0]}',
    "update": '{"links": [{"group": 0, "changes": [1, 3]}]}',
}


class ScriptedModel:
    """A litellm-compatible ``completion`` callable.

    Parameters
    ----------
    style : str
        How good answers are wrapped: ``plain``, ``fenced``, ``prose``, ``trailing_comma``.
    failures : dict, optional
        operation → list of failure modes used for its first requests, in order:
        ``"invalid"``, ``"echo"``, ``"timeout"``, ``"rate_limit"``, ``"auth"``, or a raw
        answer string (e.g. a malicious one).
    delay : float
        Seconds each request takes (to observe concurrency).
    """

    def __init__(self, style: str = "plain", failures: dict[str, list[str]] | None = None, delay: float = 0.0):
        self.style = style
        self.failures = {k: list(v) for k, v in (failures or {}).items()}
        self.delay = delay
        self.calls: list[dict[str, Any]] = []
        self.by_op: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0

    def __call__(self, *, model: str, messages: list[dict[str, str]], **kwargs: Any) -> Any:
        op = operation_of(messages)
        with self._lock:
            self.calls.append({"op": op, "model": model, "messages": messages, "kwargs": kwargs})
            self.by_op[op] += 1
            mode = self.failures[op].pop(0) if self.failures.get(op) else None
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                time.sleep(self.delay)
            base = {"model": model, "messages": messages}
            if mode == "timeout":
                return litellm.completion(**base, mock_timeout=True, timeout=kwargs.get("timeout", 1.0))
            if mode == "rate_limit":
                return litellm.completion(**base, mock_response=litellm.RateLimitError(
                    message="rate limited", llm_provider="openai", model=model))
            if mode == "auth":
                return litellm.completion(**base, mock_response=litellm.AuthenticationError(
                    message="bad key", llm_provider="openai", model=model))
            if mode == "invalid":
                text = "I think the user likes hiking, but I am not sure what format you want."
            elif mode == "echo":
                text = ECHO[op]
            elif mode is not None:
                text = mode
            else:
                text = styled(behaving_answer(op, data_of(messages)), self.style)
            return litellm.completion(**base, mock_response=text)
        finally:
            with self._lock:
                self.in_flight -= 1
