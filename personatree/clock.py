"""Clocks: the system clock and a settable one for deterministic tests."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from .types import utc

__all__ = ["SystemClock", "FixedClock"]


class SystemClock:
    """The wall clock, in UTC."""

    def now(self) -> datetime:
        """The current UTC time."""
        return datetime.now(timezone.utc)


class FixedClock:
    """A clock that only moves when told to.

    Parameters
    ----------
    start : datetime
        The initial time (naive values are taken as UTC).
    """

    def __init__(self, start: datetime) -> None:
        self._now = utc(start)

    def now(self) -> datetime:
        """The current (fixed) time."""
        return self._now

    def set(self, value: datetime) -> None:
        """Jump to ``value``."""
        self._now = utc(value)

    def advance(self, **delta: float) -> datetime:
        """Move forward by ``timedelta(**delta)`` and return the new time."""
        self._now = self._now + timedelta(**delta)
        return self._now
