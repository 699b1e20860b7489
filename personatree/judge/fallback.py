"""When the offline judge takes over from the LLM judge, and how.

A call (or the part of one) whose request failed for good is answered by the offline
judge: the fallback is counted, logged and kept in the fallback log
(:class:`~personatree.judge.accounting.JudgeStats`). With the fallback turned off, the
failure is raised instead as the typed :class:`~personatree.errors.JudgeError` of its
kind.
"""

from __future__ import annotations

import logging
import time
from typing import Mapping, Sequence

from ..errors import JudgeError, JudgeOutputError, JudgeTimeoutError, ProviderError, RateLimitError
from ..ports import Judge
from ..types import LeafDraft, Node, Observation, Verdict
from .accounting import FallbackEvent, RobustnessCounters, UsageLedger
from .parsing import one_line
from .retry import Failure

__all__ = ["ERROR_OF_KIND", "FallbackPolicy"]

# Logged under the judge's name, where users filter the LLM judge's messages.
_log = logging.getLogger("personatree.judge.llm")

#: The error raised for each failure kind when the fallback is off (answer kinds:
#: :class:`JudgeOutputError`).
ERROR_OF_KIND: Mapping[str, type[JudgeError]] = {
    "timeout": JudgeTimeoutError,
    "rate_limit": RateLimitError,
    "provider": ProviderError,
    "context_window": ProviderError,
}


class FallbackPolicy:
    """Records fallbacks (or raises, when they are off) and answers with the offline judge.

    Parameters
    ----------
    offline : Judge
        The judge that takes over.
    enabled : bool
        False: a failure raises a :class:`~personatree.errors.JudgeError` subclass.
    models : Mapping[str, str]
        The litellm model of each LLM-answered operation (named in events and errors).
    ledger : UsageLedger
    counters : RobustnessCounters
    """

    def __init__(
        self,
        offline: Judge,
        enabled: bool,
        models: Mapping[str, str],
        ledger: UsageLedger,
        counters: RobustnessCounters,
    ) -> None:
        self.offline = offline
        self._enabled = enabled
        self._models = models
        self._ledger = ledger
        self._counters = counters

    def record(self, op: str, failure: Failure, user_id: str | None, items: int) -> None:
        """Record that ``items`` of a call of ``op`` go to the offline judge.

        Raises
        ------
        JudgeError
            The subclass of ``failure.kind`` when the fallback is off.
        """
        model = self._models.get(op, "offline")
        if not self._enabled:
            cls = ERROR_OF_KIND.get(failure.kind, JudgeOutputError)
            raise cls(f"LLM judge {op} with {model} failed ({failure.kind}): {failure.detail}",
                      operation=op, kind=failure.kind, model=model)
        event = FallbackEvent(op, failure.kind, failure.detail, model, user_id or "", items, time.time())
        self._counters.fell_back(event)
        self._ledger.add(user_id, op, fallbacks=items)
        _log.warning("LLM judge %s fell back to the offline judge for %d item(s): %s: %s",
                     op, items, failure.kind, failure.detail)

    def extract_into(self, out: list[list[LeafDraft]], obs: Sequence[Observation], failed: Sequence[int]) -> None:
        """Fill ``out[i]`` for each failed observation index with the offline extraction."""
        if not failed:
            return
        for i, drafts in zip(failed, self.offline.extract([obs[i] for i in failed])):
            out[i] = list(drafts)

    def validate_into(
        self,
        out: list[Verdict | None],
        pairs: Sequence[tuple[Node, Node, float]],
        leftover: Sequence[tuple[int, Failure]],
    ) -> None:
        """Fill ``out[i]`` for each left-over pair index with the offline verdict, its
        reason saying why the fallback answered."""
        if not leftover:
            return
        idx = [i for i, _ in leftover]
        kinds = {i: f.kind for i, f in leftover}
        verdicts = self.offline.validate([pairs[i] for i in idx])
        for i, v in zip(idx, verdicts):
            out[i] = Verdict(v.label, v.psi, one_line(f"offline fallback ({kinds[i]}): {v.reason}", 300))
