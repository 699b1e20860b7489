"""The Redis side of the shared hot tier (adapters): the client and the entry's wire form.

What goes into an entry and how recall uses it is tiering's business
(:mod:`personatree.tiering.shared`); this package only stores and reads entries.
Needs the ``redis`` extra (redis-py).
"""

from __future__ import annotations

from .client import HotTierUnavailable, RedisHot
from .rows import EntryRows
from .entry import HOT_FIELDS, PROFILE_FIELDS, HotEntry, decode_entry, decode_gate, decode_heads, encode_entry

__all__ = ["HotTierUnavailable", "RedisHot", "EntryRows", "HotEntry", "HOT_FIELDS", "PROFILE_FIELDS", "encode_entry", "decode_entry", "decode_gate",
           "decode_heads"]
