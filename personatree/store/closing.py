"""The context-manager protocol every store shares: a ``with`` block closes the store."""

from __future__ import annotations

from types import TracebackType
from typing import Self

__all__ = ["Closing"]


class Closing:
    """Base class of the stores: ``with store: ...`` calls :meth:`close` at the end.

    Subclasses implement :meth:`close` (idempotent); exceptions from the block are
    never suppressed.
    """

    def close(self) -> None:
        """Release what the store holds (implemented by each store)."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
