"""PostgreSQL URLs: the ``?schema=`` parameter, the libpq scheme, masked passwords."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ...errors import ConfigError

__all__ = ["mask", "split_url"]


def split_url(url: str) -> tuple[str, str | None]:
    """Split ``?schema=name`` off a PostgreSQL URL and normalise the scheme for libpq.

    Parameters
    ----------
    url : str
        ``postgresql://``, ``postgres://`` or ``postgresql+driver://`` URL.

    Returns
    -------
    (str, str or None)
        The libpq connection URL and the schema (``None``: the server's search_path).
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower().split("+", 1)[0]
    if scheme not in ("postgresql", "postgres"):
        raise ConfigError(f"not a PostgreSQL URL: {mask(url)!r}")
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = None
    kept = []
    for key, value in query:
        if key == "schema":
            schema = value
        else:
            kept.append((key, value))
    return urlunsplit(("postgresql", parts.netloc, parts.path, urlencode(kept), parts.fragment)), schema


def mask(url: str) -> str:
    """The URL with any password replaced (for messages and repr)."""
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)
