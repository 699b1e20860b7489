"""The Redis side of the shared hot tier (adapters): the client and the entry's wire form.

What goes into an entry and how recall uses it is tiering's business
(:mod:`personatree.tiering.shared`); this package only stores and reads entries.
Needs the ``redis`` extra (redis-py).
"""

from __future__ import annotations

from .client import HotTierUnavailable, RedisHot
from .entry import (DEEP_FIELDS, HOT_FIELDS, PROBE_FIELDS, PROFILE_FIELDS, REST_FIELDS, HotEntry, decode_entry,
                    decode_gate, decode_heads, encode_entry)
from .rows import EntryRows

__all__ = ["HotTierUnavailable", "RedisHot", "EntryRows", "HotEntry", "HOT_FIELDS", "PROBE_FIELDS", "REST_FIELDS",
           "DEEP_FIELDS", "PROFILE_FIELDS", "encode_entry", "decode_entry", "decode_gate", "decode_heads"]
