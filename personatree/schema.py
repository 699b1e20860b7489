"""The schema-type registry: schema types as data, loaded from ``schemas/types.toml``.

A schema type says at which levels it may occur, how fast confidence in it decays,
its prior, example sentences for offline classifiers, and which parent types it may
support (the compatibility predicate κ of ARCHITECTURE.md). The registry is validated when
loaded; a broken file raises :class:`~personatree.errors.SchemaError` naming the file,
the type and the field.
"""

from __future__ import annotations

import math
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .confidence import logit_of
from .errors import SchemaError
from .types import Level

__all__ = ["SchemaType", "SchemaRegistry", "default_schema_dir"]


def default_schema_dir() -> Path:
    """The directory holding the shipped schema files.

    An installed wheel carries them as ``personatree/_schemas``; a source checkout
    (editable install) keeps them in the top-level ``schemas/`` folder.
    """
    packaged = Path(str(resources.files("personatree"))) / "_schemas"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "schemas"


class SchemaType(BaseModel):
    """One schema type.

    Attributes
    ----------
    name : str
        The type name.
    levels : tuple of Level
        Levels the type may occur at.
    description : str
        Human-readable meaning.
    examples : tuple of str
        Example first-person sentences.
    cues : tuple of str
        Lower-case lexical cues.
    half_life_days : float or None
        Decay half-life; ``None`` means no decay.
    prior : float
        Prior probability in (0, 1).
    parents : Mapping[Level, tuple of str]
        For each level the type occurs at, the parent types it may support.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    levels: tuple[Level, ...] = Field(min_length=1)
    description: str = Field(min_length=1)
    examples: tuple[str, ...] = ()
    cues: tuple[str, ...] = ()
    half_life_days: float | None = Field(default=None, gt=0)
    prior: float = Field(default=0.5, gt=0.0, lt=1.0)
    parents: Mapping[Level, tuple[str, ...]] = Field(default_factory=dict)

    @field_validator("levels", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("half_life_days")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and math.isinf(value):
            return None
        return value

    @property
    def prior_logit(self) -> float:
        """The prior as log-odds ℓ₀."""
        return logit_of(self.prior)


class SchemaRegistry:
    """The validated set of schema types and the compatibility predicate κ.

    Parameters
    ----------
    types : iterable of SchemaType
        The types; parents must name types of the next level up.
    source : str
        Where the types came from (used in error messages).
    """

    def __init__(self, types: Iterable[SchemaType], source: str = "<memory>") -> None:
        self.source = source
        self._types: dict[str, SchemaType] = {}
        for t in types:
            if t.name in self._types:
                raise SchemaError("duplicate type", path=source, type_name=t.name)
            self._types[t.name] = t
        self._check_parents()
        self._kappa: dict[tuple[str, Level], frozenset[str]] = {
            (t.name, level): frozenset(t.parents.get(level, ())) for t in self._types.values()
            for level in t.levels
        }

    def _check_parents(self) -> None:
        for t in self._types.values():
            for level, parents in t.parents.items():
                if level not in t.levels:
                    raise SchemaError(
                        f"parents given for level {level.value!r} but the type does not occur there",
                        path=self.source, type_name=t.name, field="parents",
                    )
                if level is Level.ROOT and parents:
                    raise SchemaError("roots have no parents", path=self.source,
                                      type_name=t.name, field="parents")
                want = Level.MID if level is Level.LEAF else Level.ROOT
                for p in parents:
                    parent = self._types.get(p)
                    if parent is None:
                        raise SchemaError(f"unknown parent type {p!r}", path=self.source,
                                          type_name=t.name, field=f"parents.{level.value}")
                    if want not in parent.levels:
                        raise SchemaError(
                            f"parent type {p!r} does not occur at level {want.value!r}",
                            path=self.source, type_name=t.name, field=f"parents.{level.value}",
                        )

    # -- loading -----------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | Path | None = None) -> "SchemaRegistry":
        """Load and validate a registry file (TOML).

        Parameters
        ----------
        path : str or Path, optional
            A ``types.toml`` file or a directory containing one; default: the shipped one.

        Returns
        -------
        SchemaRegistry

        Raises
        ------
        SchemaError
            If the file is missing, not TOML, or an entry is invalid.
        """
        p = Path(path) if path is not None else default_schema_dir()
        if p.is_dir():
            p = p / "types.toml"
        try:
            raw = p.read_bytes()
        except OSError as exc:
            raise SchemaError(f"cannot read schema file: {exc.strerror or exc}", path=str(p)) from None
        try:
            data = tomllib.loads(raw.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise SchemaError(f"not valid TOML: {exc}", path=str(p)) from None
        return cls.from_mapping(data, source=str(p))

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str = "<memory>") -> "SchemaRegistry":
        """Build a registry from the parsed form of a registry file.

        Raises
        ------
        SchemaError
            Naming the source, the type and the field of the first problem.
        """
        types_table = data.get("types") if isinstance(data, Mapping) else None
        if not isinstance(types_table, Mapping) or not types_table:
            raise SchemaError("missing or empty [types] table", path=source)
        types: list[SchemaType] = []
        for name, entry in types_table.items():
            if not isinstance(entry, Mapping):
                raise SchemaError("entry must be a table", path=source, type_name=str(name))
            try:
                types.append(SchemaType.model_validate({"name": name, **entry}))
            except ValidationError as exc:
                err = exc.errors()[0]
                field = ".".join(str(x) for x in err["loc"]) or None
                raise SchemaError(err["msg"], path=source, type_name=str(name), field=field) from None
        reg = cls(types, source=source)
        for level in Level:
            if not reg.types_at(level):
                raise SchemaError(f"no type occurs at level {level.value!r}", path=source)
        return reg

    # -- queries -----------------------------------------------------------------------

    def __contains__(self, name: object) -> bool:
        return name in self._types

    def __getitem__(self, name: str) -> SchemaType:
        try:
            return self._types[name]
        except KeyError:
            raise SchemaError(f"unknown schema type {name!r}", path=self.source) from None

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._types.values())

    def __len__(self) -> int:
        return len(self._types)

    @property
    def names(self) -> tuple[str, ...]:
        """All type names, in file order."""
        return tuple(self._types)

    def types_at(self, level: Level) -> tuple[SchemaType, ...]:
        """The types that may occur at ``level``."""
        return tuple(t for t in self._types.values() if level in t.levels)

    def kappa(self, child_type: str, child_level: Level, parent_type: str) -> bool:
        """κ: whether a ``child_type`` node at ``child_level`` may support a ``parent_type`` node.

        Parameters
        ----------
        child_type : str
            Schema type of the child.
        child_level : Level
            Level of the child (leaf or mid).
        parent_type : str
            Schema type of the would-be parent (at the next level up).

        Returns
        -------
        bool
        """
        return parent_type in self._kappa.get((child_type, child_level), frozenset())

    def half_life(self, name: str) -> float | None:
        """Decay half-life of a type in days (``None``: no decay)."""
        return self[name].half_life_days

    def prior_logit(self, name: str) -> float:
        """Prior log-odds ℓ₀ of a type."""
        return self[name].prior_logit
