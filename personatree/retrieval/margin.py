"""What a token of context is worth as evidence, at the margin of a budget (pure).

A claim line (a pattern or a durable claim) names no turn of its own: every token
it takes is a token the evidence no longer has. Under a budget that the evidence
alone would fill, showing a claim pushes the weakest evidence lines out, so a
claim is worth its tokens only when its value per token beats that of the
evidence it displaces. That rate is the *evidence rate*: the value per token of
the last evidence line that a budget filled with evidence alone, best first,
would still show. Where the evidence does not fill the budget, nothing is
displaced and the rate is 0 (a claim then costs only λ).
"""

from __future__ import annotations

from typing import Iterable, Mapping

__all__ = ["evidence_rate"]


def evidence_rate(
    lines: Iterable[tuple[float, int, tuple[str, ...]]],
    budget: int,
    group_tokens: Mapping[str, int] | None = None,
) -> float:
    """Value per token of the marginal evidence line under ``budget``.

    Parameters
    ----------
    lines : iterable of (value, tokens, groups)
        Every evidence line that may be shown on its own: its value, the cost of its
        line in tokens and the headers it needs (a section, a date).
    budget : int
        Tokens available.
    group_tokens : mapping, optional
        Cost of each header, paid by the first line that needs it (unknown: 0).

    Returns
    -------
    float
        ``value / tokens`` (headers it opened included) of the last line that fits
        when lines are taken best value first and skipped when they no longer fit;
        0 when every line fits (the evidence leaves room to spare) or none does.

    Examples
    --------
    >>> evidence_rate([(0.9, 10, ()), (0.5, 10, ()), (0.2, 10, ())], 20)
    0.05
    >>> evidence_rate([(0.9, 10, ()), (0.5, 10, ())], 100)
    0.0
    """
    headers = group_tokens or {}
    opened: set[str] = set()
    room = budget
    last = None
    left_out = False
    for value, own, groups in sorted(lines, key=lambda vt: (-vt[0], vt[1])):
        tokens = own + sum(headers.get(g, 0) for g in set(groups) - opened)
        if value <= 0.0 or tokens <= 0:
            continue
        if tokens > room:
            left_out = True
            continue
        room -= tokens
        opened.update(groups)
        last = (value, tokens)
    if last is None or not left_out:
        return 0.0
    return last[0] / last[1]
