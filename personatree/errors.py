"""The exception tree of personatree.

Every error the library raises on purpose derives from :class:`PersonaTreeError`,
so a caller can catch one type at the edge of its application::

    PersonaTreeError
    ├── ConfigError                 a configuration value or preset is invalid
    ├── SchemaError                 the schema-type registry file is broken
    ├── InputError                  bad input to a public call (also a ValueError)
    │   ├── MessageError            a message is empty, malformed, too large or not text
    │   ├── ChatFormatError         a chat export of no known format
    │   └── QueryError              a search / recall query is empty or malformed
    ├── NotFoundError               an id that does not exist (also a KeyError)
    │   ├── UnknownUserError        no data stored for this user id
    │   └── UnknownNodeError        no node with this id for this user
    ├── InvariantError              a mutation would break the tree invariants
    ├── StoreError                  the storage backend failed
    │   ├── StoreBusyError          the store stayed locked past the configured wait
    │   │   └── VacuumPendingError  a delete is committed; its vacuum waits for a free store
    │   ├── StaleStateError         a write or plan was based on an out-of-date tree
    │   └── MigrationError          the store's schema version cannot be used
    ├── EmbedderError               the embedding model could not be loaded or run
    └── JudgeError                  the LLM judge failed and the fallback is off
        ├── RateLimitError          still rate-limited after the retries
        ├── JudgeTimeoutError       requests kept timing out
        ├── ProviderError           auth, bad request, unknown model, 5xx, context window
        └── JudgeOutputError        unusable answers (bad JSON, schema echo, wrong schema)

Expected outcomes are values, not exceptions: a validator that rejects a candidate
returns a verdict with label ``"unrelated"``; an insertion that leaves a leaf orphaned
is reported in the :class:`~personatree.types.InsertReport`.
"""

from __future__ import annotations

__all__ = [
    "PersonaTreeError",
    "ConfigError",
    "SchemaError",
    "InputError",
    "MessageError",
    "ChatFormatError",
    "QueryError",
    "NotFoundError",
    "UnknownUserError",
    "UnknownNodeError",
    "InvariantError",
    "StoreError",
    "StoreBusyError",
    "VacuumPendingError",
    "StaleStateError",
    "MigrationError",
    "EmbedderError",
    "JudgeError",
    "RateLimitError",
    "JudgeTimeoutError",
    "ProviderError",
    "JudgeOutputError",
]


class PersonaTreeError(Exception):
    """Base class of every error raised on purpose by personatree."""


class ConfigError(PersonaTreeError, ValueError):
    """A configuration value or preset is invalid."""


class SchemaError(PersonaTreeError):
    """The schema-type registry file is broken.

    Parameters
    ----------
    message : str
        What is wrong.
    path : str, optional
        The file that was being read.
    type_name : str, optional
        The schema type whose entry is broken.
    field : str, optional
        The field of that entry that is broken.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        type_name: str | None = None,
        field: str | None = None,
    ) -> None:
        self.path = path
        self.type_name = type_name
        self.field = field
        where = []
        if path:
            where.append(f"file {path}")
        if type_name:
            where.append(f"type {type_name!r}")
        if field:
            where.append(f"field {field!r}")
        prefix = f"{', '.join(where)}: " if where else ""
        super().__init__(f"{prefix}{message}")


class InputError(PersonaTreeError, ValueError):
    """Bad input to a public call; nothing was stored."""


class MessageError(InputError):
    """A message is empty, malformed, too large or not valid text."""


class ChatFormatError(InputError):
    """A chat export (or a conversation, message or part of one) is not of a known format."""


class QueryError(InputError):
    """A search or recall query is empty or malformed."""


class NotFoundError(PersonaTreeError, KeyError):
    """An id that does not exist."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want the plain message
        return str(self.args[0]) if self.args else ""


class UnknownUserError(NotFoundError):
    """No data is stored for this user id."""


class UnknownNodeError(NotFoundError):
    """No node with this id exists for this user."""


class InvariantError(PersonaTreeError):
    """A mutation would break the tree invariants (levels, single parent, acyclicity)."""


class StoreError(PersonaTreeError):
    """The storage backend failed."""


class StoreBusyError(StoreError):
    """The store stayed locked by another writer past the configured wait."""


class VacuumPendingError(StoreBusyError):
    """A deletion is committed, but the vacuum that removes its bytes from disk could not
    run because other connections were reading; it is recorded as pending and finishes on
    the next open, write or ``vacuum()`` of the store once it is free.

    Attributes
    ----------
    user_id : str or None
        The user whose rows were deleted (``None`` for a plain ``vacuum()`` call).
    """

    def __init__(self, message: str, *, user_id: str | None = None) -> None:
        super().__init__(message)
        self.user_id = user_id


class StaleStateError(StoreError):
    """A write or a consolidation plan was based on an out-of-date tree."""


class MigrationError(StoreError):
    """The store's schema version is newer than this library or a migration failed."""


class EmbedderError(PersonaTreeError):
    """The embedding model could not be loaded or failed to embed."""


class JudgeError(PersonaTreeError):
    """The LLM judge failed and the offline fallback is off.

    Attributes
    ----------
    operation : str
        ``extract``, ``validate``, ``route``, ``summarize`` or ``update``.
    kind : str
        ``timeout``, ``rate_limit``, ``provider``, ``context_window``, or an answer
        problem (``empty``, ``invalid_json``, ``schema_echo``, ``invalid_schema``,
        ``ungrounded``).
    model : str
    """

    def __init__(self, message: str, *, operation: str = "", kind: str = "", model: str = "") -> None:
        super().__init__(message)
        self.operation = operation
        self.kind = kind
        self.model = model


class RateLimitError(JudgeError):
    """The provider kept refusing requests for rate limits after the retries."""


class JudgeTimeoutError(JudgeError):
    """Requests kept timing out after the retries."""


class ProviderError(JudgeError):
    """The provider failed (authentication, bad request, unknown model, server error)."""


class JudgeOutputError(JudgeError):
    """The model kept answering with unusable output (bad JSON, schema echo, wrong schema)."""
