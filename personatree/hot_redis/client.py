"""A user's hot-tier entry in Redis: one hash per user, written whole, versioned, with a TTL.

The hash holds the fields of one :class:`~personatree.hot_redis.entry.HotEntry`
(``v``: the store version the entry was built from, then the tier lists, the
nodes and their embeddings). It is replaced in one Lua script, so a reader never
sees half of one entry and half of another, and a replacement built from an older
version than the one stored is refused: two processes writing one user cannot
leave the older tree in Redis. Reading an entry renews its TTL, so the users that
fall out are those nobody asked about for ``ttl_s``.

Redis being down is not an error for the library's callers: every call here
raises :class:`HotTierUnavailable`, and after a failure the client does not try
the server again for ``retry_after_s`` (a dead server would otherwise cost a
connection timeout on every request).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Iterator

import redis

from ..errors import ConfigError, PersonaTreeError

__all__ = ["HotTierUnavailable", "RedisHot"]


class HotTierUnavailable(PersonaTreeError):
    """The Redis hot tier could not be reached (the caller falls back to the store)."""


# Replace the entry unless the stored one was built from a newer version. KEYS[1]:
# the user's hash; ARGV: version, TTL in seconds, then field/value pairs.
_PUT = """
local cur = redis.call('HGET', KEYS[1], 'v')
if cur and tonumber(cur) > tonumber(ARGV[1]) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'v', ARGV[1], unpack(ARGV, 3))
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]))
return 1
"""

# Remove the entry only if it is still the write ``ARGV[1]`` (its ``eid``): a writer
# taking back what it wrote never removes a later writer's entry.
_DELETE_IF = """
if redis.call('HGET', KEYS[1], 'eid') == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class RedisHot:
    """The Redis side of the shared hot tier.

    Parameters
    ----------
    client : redis.Redis
        A client that returns bytes (``decode_responses=False``).
    ttl_s : int
        Seconds an entry lives without being read or written.
    prefix : str
        Prefix of every key this tier writes.
    retry_after_s : float
        After a failed call, calls fail at once for this long.
    """

    def __init__(self, client: "redis.Redis", *, ttl_s: int = 7 * 24 * 3600, prefix: str = "personatree:hot:",
                 retry_after_s: float = 5.0) -> None:
        if not isinstance(ttl_s, int) or isinstance(ttl_s, bool) or ttl_s < 1:
            raise ConfigError("ttl_s must be a positive number of seconds")
        self.client = client
        self.ttl_s = ttl_s
        self.prefix = prefix
        self.retry_after_s = retry_after_s
        self._down_until = 0.0
        self._lock = threading.Lock()
        self._put = client.register_script(_PUT)
        self._delete_if = client.register_script(_DELETE_IF)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> "RedisHot":
        """A tier on the Redis at ``url`` (``redis://host:port/db``), short timeouts.

        Parameters
        ----------
        url : str
        **options
            ``ttl_s``, ``prefix``, ``retry_after_s`` (see the class).

        Returns
        -------
        RedisHot
        """
        # Short timeouts: a recall waits on Redis at most this long before it goes to
        # the store, which holds the same answer.
        client = redis.Redis.from_url(url, socket_timeout=2.0, socket_connect_timeout=0.5,
                                      decode_responses=False)
        return cls(client, **options)

    def key(self, user_id: str) -> str:
        """The key of a user's entry."""
        return f"{self.prefix}u:{user_id}"

    # -- the calls; each raises HotTierUnavailable when Redis cannot be reached ----------

    def _call(self, fn: Any, *args: Any) -> Any:
        with self._lock:
            if time.monotonic() < self._down_until:
                raise HotTierUnavailable("the Redis hot tier failed recently; not retried yet")
        try:
            return fn(*args)
        except redis.RedisError as exc:
            with self._lock:
                self._down_until = time.monotonic() + self.retry_after_s
            raise HotTierUnavailable(f"Redis hot tier unavailable: {type(exc).__name__}: {exc}") from exc

    def put(self, user_id: str, version: int, fields: dict[str, bytes]) -> bool:
        """Replace the user's entry with ``fields`` built from ``version``.

        Returns
        -------
        bool
            ``False`` when the stored entry was built from a newer version (kept).
        """
        args: list[Any] = [version, self.ttl_s]
        for k, v in fields.items():
            args.extend((k, v))
        return bool(self._call(self._put, [self.key(user_id)], args))

    def get(self, user_id: str, names: tuple[str, ...]) -> dict[str, bytes] | None:
        """Fields ``names`` of the user's entry (renewing its TTL), or ``None`` when
        there is no entry. A missing field is left out."""

        def run() -> dict[str, bytes] | None:
            pipe = self.client.pipeline(transaction=True)
            pipe.hmget(self.key(user_id), ["v", *names])
            pipe.expire(self.key(user_id), self.ttl_s)
            raw, _ = pipe.execute()
            if raw[0] is None:
                return None
            return {k: v for k, v in zip(("v", *names), raw) if v is not None}

        out: dict[str, bytes] | None = self._call(run)
        return out

    def fields(self, user_id: str, *names: str) -> list[bytes | None]:
        """Some fields of the user's entry (``None`` for a missing one)."""
        out: list[bytes | None] = self._call(self.client.hmget, self.key(user_id), list(names))
        return out

    def version(self, user_id: str) -> int | None:
        """The store version the user's entry was built from, or ``None``."""
        v = self.fields(user_id, "v")[0]
        return None if v is None else int(v)

    def delete(self, user_id: str) -> None:
        """Remove the user's entry (every text of the user this tier holds)."""
        self._call(self.client.delete, self.key(user_id))

    def delete_if(self, user_id: str, eid: bytes) -> bool:
        """Remove the user's entry if it is still the one written with ``eid``.

        Returns
        -------
        bool
            Whether it was removed.
        """
        return bool(self._call(self._delete_if, [self.key(user_id)], [eid]))

    def memory(self, user_id: str) -> int:
        """Bytes Redis uses for the user's entry (``MEMORY USAGE``; 0 when absent)."""
        n = self._call(self.client.memory_usage, self.key(user_id), 0)
        return int(n or 0)

    def users(self) -> Iterator[str]:
        """User ids with an entry (``SCAN``, so it never blocks the server)."""
        head = len(self.prefix) + 2
        for k in self._call(lambda: list(self.client.scan_iter(match=f"{self.prefix}u:*", count=500))):
            yield k.decode()[head:]

    def close(self) -> None:
        """Close the client's connections."""
        self.client.close()
