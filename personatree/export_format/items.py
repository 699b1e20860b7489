"""How an export item is decoded: the target's settings, field validators, and the
first-failure rule that turns pydantic's collected errors into the library's own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, ClassVar, TypeVar, cast

from pydantic import BaseModel, ConfigDict, PlainSerializer, PlainValidator, ValidationError, ValidationInfo

from ..config import InputLimits
from ..errors import InputError
from ..inputs import check_id
from ..schema import SchemaRegistry
from .values import check_int, check_object, check_text, check_time, encode_time

__all__ = [
    "Count",
    "DecodeContext",
    "Deferred",
    "ExportItem",
    "Id",
    "OptionalTime",
    "Text",
    "Time",
    "checked",
    "context_of",
]

# -- decoding machinery -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DecodeContext:
    """What decoding checks an export against: the target tree's settings.

    Attributes
    ----------
    limits : InputLimits
        Id and message limits (as ``observe`` applies them).
    registry : SchemaRegistry
        Known schema types (decay and priors are looked up by type on read).
    embedder_dim : int or None
        The embedder's dimension, which every embedding must have.
    logit_clip : float
        Logits are clipped to ``[-clip, clip]`` by every update, so anything outside
        is forged.
    check_payload : callable
        ``(kind, payload, where)``: refuses a journal event this version could not replay.
    """

    limits: InputLimits
    registry: SchemaRegistry
    embedder_dim: int | None
    logit_clip: float
    check_payload: Callable[[str, dict[str, Any], str], None]


class Deferred(ValueError):
    """Carries a check's own error through pydantic, which collects ``ValueError``s."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


Item = TypeVar("Item", bound="ExportItem")


def context_of(info: ValidationInfo) -> dict[str, Any]:
    """The ``{"where", "ctx"}`` that :meth:`ExportItem.decode` passes to every validator."""
    return cast(dict[str, Any], info.context)


def checked(check: Callable[[Any, str, DecodeContext], Any]) -> PlainValidator:
    """A field validator running ``check(value, "<where>.<field>", context)``."""

    def validate(value: Any, info: ValidationInfo) -> Any:
        context = context_of(info)
        try:
            return check(value, f"{context['where']}.{info.field_name}", context["ctx"])
        except Exception as exc:  # re-raised as is by ExportItem.decode if it comes first
            raise Deferred(exc) from None

    return PlainValidator(validate)


class ExportItem(BaseModel):
    """Base of the export's objects: fields are domain values, dumped as export JSON."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    #: The order in which a decode checks the fields (the first failure is reported);
    #: ``"<field>:present"`` places the presence check of a field apart from its value check.
    check_order: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def decode(cls: type[Item], item: object, where: str, ctx: DecodeContext) -> Item:
        """Decode one JSON object of an export.

        Raises
        ------
        InputError
            For a missing, unknown or malformed field, named with ``where``.
        """
        obj = check_object(item, where)
        extra = set(obj) - set(cls.model_fields)
        if extra:
            raise InputError(f"{where} has unknown fields {sorted(map(str, extra))}")
        try:
            return cls.model_validate(dict(obj), context={"where": where, "ctx": ctx})
        except ValidationError as exc:
            raise cls._first_error(exc, where) from None

    @classmethod
    def _first_error(cls, exc: ValidationError, where: str) -> Exception:
        order = cls.check_order or tuple(cls.model_fields)

        def rank(error: Any) -> int:
            name = str(error["loc"][0])
            present = f"{name}:present"
            return order.index(present if error["type"] == "missing" and present in order else name)

        first = min(exc.errors(), key=rank)
        if first["type"] == "missing":
            return InputError(f"{where} has no {first['loc'][0]!r}")
        cause = first.get("ctx", {}).get("error")
        return cause.error if isinstance(cause, Deferred) else InputError(f"{where}: {first['msg']}")


# -- field types ------------------------------------------------------------------------------


def _text(value: Any, where: str, ctx: DecodeContext) -> str:
    return check_text(value, where)


def _count(value: Any, where: str, ctx: DecodeContext) -> int:
    return check_int(value, where)


def _id(value: Any, where: str, ctx: DecodeContext) -> str:
    return check_id(value, where, ctx.limits)


def _time(value: Any, where: str, ctx: DecodeContext) -> datetime:
    return check_time(value, where)


def _optional_time(value: Any, where: str, ctx: DecodeContext) -> datetime | None:
    return None if value is None else check_time(value, where)


def _optional_time_text(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


Text = Annotated[str, checked(_text)]
Count = Annotated[int, checked(_count)]
Id = Annotated[str, checked(_id)]
Time = Annotated[datetime, checked(_time), PlainSerializer(encode_time)]
OptionalTime = Annotated[datetime | None, checked(_optional_time), PlainSerializer(_optional_time_text)]
