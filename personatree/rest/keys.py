"""Bearer-token API keys, each restricted to a set of users (or to all of them).

A key file (``personatree serve --keys-file``) and the environment variable
``PERSONATREE_API_KEYS`` hold the same text: one key per line (or per ``;`` in the
variable), then the users it may read and write, then optionally a name::

    # key                                users        name
    3q2-ZgYl0d9wP1sYcW4m2Jt7vXk5bQe8   ana,bo       support-bot
    sha256:5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8   *   admin

``*`` grants every user. A key is either the token itself (at least 16 characters) or
``sha256:`` and the hex SHA-256 of the token, so a key file need not hold the secret.
Only digests are kept in memory; a presented token is hashed and compared with every
key's digest in constant time (no early exit), and keys are never logged: a key is
known to the rest of the server by its name (default ``key-<line>``).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from ..errors import ConfigError

__all__ = ["ApiKey", "ApiKeys", "KEYS_ENV", "MIN_KEY_CHARS", "load_keys"]

#: The environment variable that holds keys (in the key file's format).
KEYS_ENV = "PERSONATREE_API_KEYS"
#: Shortest token accepted as a key: shorter ones are guessable.
MIN_KEY_CHARS = 16
_ALL = "*"


@dataclass(frozen=True, slots=True)
class ApiKey:
    """One key: its name, the SHA-256 of its token, and the users it may act for.

    Attributes
    ----------
    name : str
        What logs and errors call the key (never the token).
    digest : bytes
        SHA-256 of the token.
    users : frozenset of str or None
        The users this key may read and write; ``None`` for every user.
    """

    name: str
    digest: bytes
    users: frozenset[str] | None

    def allows(self, user_id: str) -> bool:
        """Whether this key may act for ``user_id``."""
        return self.users is None or user_id in self.users

    def __repr__(self) -> str:  # never the digest: it is as good as the key for a guesser
        users = "*" if self.users is None else ",".join(sorted(self.users))
        return f"ApiKey(name={self.name!r}, users={users!r})"


class ApiKeys:
    """The keys a server accepts.

    Parameters
    ----------
    keys : sequence of ApiKey
        At least one; names must be distinct.

    Raises
    ------
    ConfigError
        For no keys, or two keys with one name or one token.
    """

    def __init__(self, keys: "list[ApiKey] | tuple[ApiKey, ...]") -> None:
        if not keys:
            raise ConfigError(f"no API keys: give --keys-file or set {KEYS_ENV}")
        names = [k.name for k in keys]
        if len(set(names)) != len(names):
            raise ConfigError("two API keys have the same name")
        if len({k.digest for k in keys}) != len(keys):
            raise ConfigError("the same API key is listed twice")
        self.keys: tuple[ApiKey, ...] = tuple(keys)

    def __len__(self) -> int:
        return len(self.keys)

    def find(self, token: str) -> ApiKey | None:
        """The key whose token this is, or ``None``.

        Every key is compared, whether or not an earlier one matched, so the time taken
        says nothing about which key (or how much of one) a guess got right.
        """
        digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
        found: ApiKey | None = None
        for key in self.keys:
            if hmac.compare_digest(digest, key.digest):
                found = key
        return found

    @classmethod
    def parse(cls, text: str, *, source: str = "keys") -> "ApiKeys":
        """Keys from the key-file format (see the module docstring).

        Raises
        ------
        ConfigError
            For a malformed line (the message names the line, never its token), or no key.
        """
        return cls(_parse_text(text, source))


def _parse_text(text: str, source: str) -> list[ApiKey]:
    keys: list[ApiKey] = []
    for number, raw in enumerate(text.replace(";", "\n").splitlines(), start=1):
        # A comment is a line starting with '#' or a '#' after a space (tokens may hold '#').
        line = "" if raw.lstrip().startswith("#") else re.sub(r"\s#.*$", "", raw).strip()
        if line:
            keys.append(_parse_line(line, f"{source} entry {number}", f"key-{number}"))
    return keys


def _parse_line(line: str, where: str, default_name: str) -> ApiKey:
    fields = line.split()
    if len(fields) not in (2, 3):
        raise ConfigError(f"{where}: expected '<key> <users> [name]', got {len(fields)} fields")
    token, users_text = fields[0], fields[1]
    name = fields[2] if len(fields) == 3 else default_name
    if token.lower().startswith("sha256:"):
        hexdigest = token[7:]
        try:
            digest = bytes.fromhex(hexdigest)
        except ValueError:
            digest = b""
        if len(digest) != 32:
            raise ConfigError(f"{where}: sha256: must be followed by 64 hex digits")
    else:
        if len(token) < MIN_KEY_CHARS:
            raise ConfigError(f"{where}: a key must have at least {MIN_KEY_CHARS} characters")
        digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
    if users_text == _ALL:
        users: frozenset[str] | None = None
    else:
        listed = [u for u in users_text.split(",") if u]
        if not listed or _ALL in listed:
            raise ConfigError(f"{where}: users must be '*' or a comma-separated list of user ids")
        users = frozenset(listed)
    return ApiKey(name, digest, users)


def load_keys(path: str | os.PathLike[str] | None = None, *, environ: Mapping[str, str] | None = None) -> ApiKeys:
    """The keys of a key file and of ``PERSONATREE_API_KEYS``, together.

    Parameters
    ----------
    path : path, optional
        A key file.
    environ : mapping, optional
        Where to read the variable (default ``os.environ``).

    Raises
    ------
    ConfigError
        If neither gives a key, the file cannot be read, or an entry is malformed.
    """
    env = os.environ if environ is None else environ
    keys: list[ApiKey] = []
    if path is not None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read the key file {path}: {exc.strerror or exc}") from None
        keys.extend(_parse_text(text, str(path)))
    if env.get(KEYS_ENV, "").strip():
        found = _parse_text(env[KEYS_ENV], KEYS_ENV)
        # Names of the variable's keys must not collide with the file's default names.
        keys.extend(ApiKey(f"env-{k.name}" if k.name.startswith("key-") else k.name, k.digest, k.users)
                    for k in found)
    return ApiKeys(keys)
