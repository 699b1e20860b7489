"""The litellm call of the LLM judge: sending one request, reading the text of the
answer, and classifying what a failed call raised.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Mapping

from ..offline_litellm import import_litellm

__all__ = ["Transport", "classify", "response_text"]

#: A chat completion function with ``litellm.completion``'s signature.
Completion = Callable[..., Any]


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
    """

    def __init__(
        self,
        completion: Completion | None,
        completion_kwargs: Mapping[str, Any] | None,
        *,
        temperature: float,
        timeout_s: float,
        max_concurrency: int,
    ) -> None:
        self._completion = completion
        self._kwargs = dict(completion_kwargs or {})
        self.temperature = temperature
        self._timeout = timeout_s
        self._slots = threading.BoundedSemaphore(max_concurrency)

    def sender(self, model: str) -> Callable[[list[dict[str, str]]], Any]:
        """A function sending chat messages to ``model`` and returning the raw response.

        The completion function is resolved here, once per job, so that a failure to
        import litellm is not mistaken for a provider error of one request.
        """
        completion = self._completion or import_litellm().completion

        def send(messages: list[dict[str, str]]) -> Any:
            with self._slots:
                return completion(
                    model=model, messages=messages, timeout=self._timeout,
                    temperature=self.temperature, **self._kwargs,
                )

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
