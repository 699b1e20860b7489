"""Structured output: how the output schema of a request is sent to the model server.

Servers spell structured output differently:

* ``json_schema``: OpenAI's ``{"type": "json_schema", "json_schema": {"name",
  "schema", "strict"}}``, read by OpenAI, vLLM, LM Studio, llama.cpp's ``llama-server``
  and, through litellm, Ollama (as its ``format``) and the providers litellm maps it to;
* ``json_object_schema``: ``{"type": "json_object", "schema": ...}``, the form of
  llama-cpp-python's server (and ``llama-server``), which turns the schema into a
  grammar;
* ``json_object``: plain JSON mode, no schema;
* none: no ``response_format`` at all.

With ``structured_output="auto"`` (the default) each model starts at ``json_schema``;
a server that refuses the form (a 400, 422 or 500 status answer to a model whose form
has not been seen to work yet) moves that model one step down, and the request is sent
again at once. The first answer in a form settles it for the model: later errors are
then ordinary errors (retried, or answered by the offline judge), never a reason to
drop the schema. A named form is used alone; ``"off"`` sends none. A
``response_format`` given in ``completion_kwargs`` is the caller's choice and is sent
as is, in place of these.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from ..errors import ConfigError
from ..offline_litellm import import_litellm

__all__ = ["FORMS", "STRUCTURED_OUTPUT", "response_format", "FormLadder", "refuses_form"]

_log = logging.getLogger("personatree.judge.llm")

#: The forms, most precise first.
FORMS: tuple[str, ...] = ("json_schema", "json_object_schema", "json_object")
#: What ``LLMJudge(structured_output=...)`` accepts.
STRUCTURED_OUTPUT: tuple[str, ...] = ("auto", *FORMS, "off")
#: Status codes with which servers refuse a response format they do not read
#: (llama-cpp-python answers an unknown form with a 500).
_REFUSAL_STATUS = frozenset({400, 422, 500})


def response_format(form: str, schema: dict[str, Any], name: str) -> dict[str, Any]:
    """The ``response_format`` value of ``form`` for ``schema``.

    Parameters
    ----------
    form : str
        One of :data:`FORMS`.
    schema : dict
        A JSON schema (see :mod:`personatree.judge.wire`).
    name : str
        The schema's name (the operation), for the ``json_schema`` form.

    Returns
    -------
    dict
    """
    if form == "json_schema":
        # strict=False: OpenAI's strict mode refuses some of the keywords the schemas use
        # (sizes of arrays and strings); the server still decodes under the schema.
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}
    if form == "json_object_schema":
        return {"type": "json_object", "schema": schema}
    if form == "json_object":
        return {"type": "json_object"}
    raise ConfigError(f"unknown structured output form {form!r}; use one of {', '.join(FORMS)}")


def refuses_form(exc: BaseException) -> bool:
    """Whether a completion error can be a server refusing the response format:
    a bad request, an unprocessable entity or an internal error (not a timeout, a
    rate limit, an authentication or a connection failure)."""
    lt = import_litellm()
    if isinstance(exc, (getattr(lt, "Timeout", ()), TimeoutError, getattr(lt, "RateLimitError", ()),
                        getattr(lt, "APIConnectionError", ()))):
        return False
    # litellm reports a server that closed the connection (or crashed) as a 500 too:
    # that is no answer about the format.
    causes = (exc, exc.__cause__, exc.__context__)
    if any(isinstance(c, getattr(lt, "APIConnectionError", ())) or type(c).__name__ == "APIConnectionError"
           for c in causes if c is not None) or "connection error" in str(exc).lower():
        return False
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and status in _REFUSAL_STATUS


class FormLadder:
    """The structured output form in use for each model, thread-safe.

    Parameters
    ----------
    setting : str
        One of :data:`STRUCTURED_OUTPUT`.

    Raises
    ------
    ConfigError
        For another value.
    """

    def __init__(self, setting: str) -> None:
        if setting not in STRUCTURED_OUTPUT:
            raise ConfigError(f"structured_output must be one of {', '.join(STRUCTURED_OUTPUT)}, got {setting!r}")
        self.setting = setting
        if setting == "auto":
            self._steps: tuple[str | None, ...] = (*FORMS, None)
        else:
            self._steps = (None if setting == "off" else setting,)
        self._lock = threading.Lock()
        self._at: dict[str, int] = {}
        self._settled: set[str] = set()
        self._asked: set[str] = set()

    def form(self, model: str) -> str | None:
        """The form to send to ``model`` now (``None``: no response format)."""
        with self._lock:
            self._asked.add(model)
            return self._steps[self._at.get(model, 0)]

    def settle(self, model: str) -> None:
        """Record that ``model`` answered in its current form."""
        with self._lock:
            self._settled.add(model)

    def step_down(self, model: str, tried: str, exc: BaseException) -> bool:
        """Move ``model`` below ``tried`` if ``exc`` may be a refusal of that form.

        Returns
        -------
        bool
            True when the request should be sent again (in the next form).
        """
        if self.setting != "auto" or not refuses_form(exc):
            return False
        with self._lock:
            if model in self._settled:
                return False
            at = self._at.get(model, 0)
            if self._steps[at] != tried:
                return True  # another thread stepped down meanwhile: send in the new form
            if at + 1 >= len(self._steps):
                return False
            self._at[model] = at + 1
            nxt = self._steps[at + 1]
        _log.info("LLM judge: %s refused response_format %s (%s); trying %s", model, tried,
                  type(exc).__name__, nxt or "no response_format")
        return True

    def forms(self) -> dict[str, str]:
        """The form each model that has been asked uses (``"none"`` for no format)."""
        with self._lock:
            return {m: self._steps[self._at.get(m, 0)] or "none" for m in sorted(self._asked)}
