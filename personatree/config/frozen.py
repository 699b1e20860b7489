"""The base of every configuration model: frozen, closed, and failing as ConfigError."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import ConfigError

__all__ = ["Frozen"]


class Frozen(BaseModel):
    """A frozen pydantic model that rejects unknown fields and raises :class:`ConfigError`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def __init__(self, **data: Any) -> None:
        # One exception tree: invalid settings surface as ConfigError, not pydantic's type.
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise ConfigError(f"{type(self).__name__}: {exc}") from None
