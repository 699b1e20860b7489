"""When the personatree engine consolidates while it replays a stream."""

from __future__ import annotations

__all__ = ["parse_schedule", "consolidation_due"]


def parse_schedule(text: str) -> tuple[str, int]:
    """A consolidation schedule as (kind, every): ``session``, ``every-N``, ``once``, ``none``.

    Parameters
    ----------
    text : str
        ``session`` (after every session), ``every-N`` (after every N sessions, and
        at the end), ``once`` or its older name ``end`` (once, after the last
        session: a history imported and consolidated in one pass), ``none``.

    Returns
    -------
    (str, int)
        ``("every", n)`` for the periodic schedules (``session`` is ``("every", 1)``),
        ``("once", 0)`` or ``("none", 0)``.

    Raises
    ------
    ValueError
        For anything else.
    """
    t = text.strip().lower()
    if t == "session":
        return "every", 1
    if t in ("once", "end"):
        return "once", 0
    if t == "none":
        return "none", 0
    head, sep, n = t.partition("-")
    if head == "every" and sep and n.isdigit() and int(n) >= 1:
        return "every", int(n)
    raise ValueError(f"consolidate must be session, every-N (N >= 1), once or none, got {text!r}")


def consolidation_due(schedule: tuple[str, int], sessions_since: int, turns_since: int, last: bool,
                      min_turns: int = 1) -> bool:
    """Whether to consolidate after a session.

    Parameters
    ----------
    schedule : (str, int)
        From :func:`parse_schedule`.
    sessions_since, turns_since : int
        Sessions and turns ingested since the last pass (this session included).
    last : bool
        Whether this is the stream's last session (every schedule but ``none``
        consolidates there, so questions always meet a consolidated tree).
    min_turns : int
        A periodic pass also waits for this many new turns.
    """
    kind, every = schedule
    if kind == "none":
        return False
    if last:
        return True
    return kind == "every" and sessions_since >= every and turns_since >= min_turns
