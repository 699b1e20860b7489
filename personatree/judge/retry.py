"""The retry policy of the LLM judge: how often a request is repeated, how long to wait,
and what the model is told after an unusable answer.

Everything here is pure; the request loop that applies it is
:meth:`personatree.judge.runner.RequestRunner.run`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .parsing import AnswerError

__all__ = ["Failure", "RetryPolicy", "retry_messages"]

# The part of a rejected answer shown back to the model: enough to see the mistake,
# bounded so that a runaway answer cannot blow up the next prompt.
_ANSWER_ECHO_CHARS = 4000


class Failure(Exception):
    """A request that failed for good (converted to a fallback or a JudgeError).

    Parameters
    ----------
    kind : str
        ``"timeout"``, ``"rate_limit"``, ``"provider"``, ``"context_window"``, an
        :class:`~personatree.judge.parsing.AnswerError` kind, or ``"incomplete"``.
    detail : str
        The last error message, shortened.
    """

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many times a request is sent and the backoff after transport errors.

    Attributes
    ----------
    max_retries : int
        Extra attempts after the first, for transport errors and unusable answers.
    backoff_s, max_backoff_s : float
        Backoff before retry k (k = 1, 2...) after a transport error:
        ``min(max_backoff_s, backoff_s · 2^(k-1))``.
    """

    max_retries: int
    backoff_s: float
    max_backoff_s: float

    @property
    def attempts(self) -> int:
        """Requests sent at most for one job."""
        return self.max_retries + 1

    def backoff(self, transport_failures: int) -> float:
        """Seconds to wait after the ``transport_failures``-th transport error (1-based)."""
        return min(self.max_backoff_s, self.backoff_s * 2 ** (transport_failures - 1))


def retry_messages(messages: list[dict[str, str]], answer: str, error: AnswerError) -> list[dict[str, str]]:
    """The prompt of the retry after an unusable answer: the original messages, the
    answer, and a note saying what was wrong with it.

    Parameters
    ----------
    messages : list of dict
        The original request (its cache key stays the one of these messages).
    answer : str
        The rejected answer.
    error : AnswerError
        Why it was rejected.

    Returns
    -------
    list of dict
    """
    return [*messages, {"role": "assistant", "content": answer[:_ANSWER_ECHO_CHARS]}, {
        "role": "user",
        "content": f"Your answer could not be used ({error.kind}: {error.detail}). Answer again with "
                   "only the JSON object, in exactly the shape the instructions give.",
    }]
