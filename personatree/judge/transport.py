"""The litellm call of the LLM judge: sending one request (with its output schema as
structured output, see :mod:`personatree.judge.structured`), reading the text of the
answer, and classifying what a failed call raised.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Mapping

from ..offline_litellm import import_litellm
from .structured import FormLadder, response_format

__all__ = ["Transport", "classify", "response_text"]

#: A chat completion function with ``litellm.completion``'s signature.
Completion = Callable[..., Any]
#: Sends chat messages with an optional output schema and its name; returns the response.
Sender = Callable[[list[dict[str, str]], "dict[str, Any] | None", str], Any]


class Transport:
    """Sends chat requests through litellm, at most ``max_concurrency`` at once.

    Parameters
    ----------
    completion : callable, optional
        ``litellm.completion`` (the default) or anything with its signature.
    completion_kwargs : Mapping, optional
        Passed to every completion (``api_base``, ``mock_response``...).
    temperature : float
    timeout_s : float
        Per-request timeout passed to litellm as ``timeout=``.
    max_concurrency : int
        Requests in flight at once, across threads.
    structured_output : str
        How output schemas are sent (:data:`~personatree.judge.structured.STRUCTURED_OUTPUT`).
    """

    def __init__(
        self,
        completion: Completion | None,
        completion_kwargs: Mapping[str, Any] | None,
        *,
        temperature: float,
        timeout_s: float,
        max_concurrency: int,
        structured_output: str = "auto",
    ) -> None:
        self._completion = completion
        self._kwargs = dict(completion_kwargs or {})
        self.temperature = temperature
        self._timeout = timeout_s
        self._slots = threading.BoundedSemaphore(max_concurrency)
        self.forms = FormLadder(structured_output)
        # The caller's own response_format wins over the output schemas.
        self._own_format = "response_format" in self._kwargs

    def sender(self, model: str) -> Sender:
        """A function sending chat messages (and an output schema) to ``model`` and
        returning the raw response.

        The completion function is resolved here, once per job, so that a failure to
        import litellm is not mistaken for a provider error of one request. A server
        refusing the response format gets the request again in the next form (see
        :class:`~personatree.judge.structured.FormLadder`).
        """
        completion = self._completion or import_litellm().completion

        def send(messages: list[dict[str, str]], schema: dict[str, Any] | None = None, name: str = "answer") -> Any:
            while True:
                form = None if schema is None or self._own_format else self.forms.form(model)
                extra = {} if form is None or schema is None else {"response_format": response_format(form, schema, name)}
                try:
                    with self._slots:
                        response = completion(
                            model=model, messages=messages, timeout=self._timeout,
                            temperature=self.temperature, **self._kwargs, **extra,
                        )
                except Exception as exc:
                    if form is not None and self.forms.step_down(model, form, exc):
                        continue
                    raise
                if form is not None:
                    self.forms.settle(model)
                return response

        return send


def classify(exc: BaseException) -> tuple[str, bool]:
    """(kind, retryable) of an exception raised by a completion call."""
    lt = import_litellm()
    if isinstance(exc, (getattr(lt, "Timeout", ()), TimeoutError)):
        return "timeout", True
    if isinstance(exc, getattr(lt, "RateLimitError", ())):
        return "rate_limit", True
    if isinstance(exc, getattr(lt, "ContextWindowExceededError", ())):
        return "context_window", False
    transient = tuple(
        t for t in (getattr(lt, n, None) for n in (
            "APIConnectionError", "InternalServerError", "ServiceUnavailableError", "BadGatewayError",
        )) if isinstance(t, type)
    )
    if transient and isinstance(exc, transient):
        return "provider", True
    # Authentication, bad request, unknown model, or anything unexpected: retrying
    # the same request cannot help.
    return "provider", False


def response_text(response: Any) -> str:
    """The text of a chat completion (litellm ``ModelResponse`` or a plain dict)."""
    try:
        choice = response["choices"][0] if isinstance(response, Mapping) else response.choices[0]
        msg = choice["message"] if isinstance(choice, Mapping) else choice.message
        text = msg["content"] if isinstance(msg, Mapping) else msg.content
    except (AttributeError, IndexError, KeyError, TypeError):
        return ""
    return text if isinstance(text, str) else ""
