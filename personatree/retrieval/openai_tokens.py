"""The token counts litellm gives for the gpt-4o family, without importing litellm.

Recall and the profile count the tokens of what they render with the configured
model's tokenizer (``gpt-4o-mini`` by default). ``litellm.token_counter`` counts such a
model with tiktoken's ``o200k_base`` encoding, but importing litellm costs several
seconds, paid by the first recall of every process even when no LLM judge is
configured. For these models the count is made here with tiktoken itself, the way
litellm makes it: the text encoded in chunks of 1,024 characters (litellm's default,
which bounds tiktoken's worst case on long repeated runs) with special-token text
counted as plain text. Any other model, a text past litellm's exact-count length, or
an environment that changes either setting still goes through litellm, so a count
never differs from the one litellm would give.
"""

from __future__ import annotations

import importlib.util
import os
import re
import threading
from pathlib import Path
from typing import Any, Callable

__all__ = ["direct_counter", "encoding_of"]

# What litellm resolves a gpt-4o model name to (its ``openai_tokenizer_encoding_name``
# returns o200k_base for any name containing "gpt-4o"); kept narrow on purpose: only
# plain or ``openai/``-prefixed names, which no other tokenizer of litellm claims.
_GPT_4O = re.compile(r"(?:openai/)?gpt-4o[\w.:-]*")

# litellm's defaults for chunked and exact counting; either set in the environment
# changes its counts, so the direct path is then not taken.
_CHUNK = 1024
_MAX_EXACT = 4_000_000
_SETTINGS = ("TIKTOKEN_ENCODE_CHUNK_SIZE_CHARS", "TOKEN_COUNTER_MAX_EXACT_CHARS")

_LOCK = threading.Lock()
_ENCODINGS: dict[str, Any] = {}


def encoding_of(model: str) -> str | None:
    """The tiktoken encoding litellm counts ``model`` with, when it is counted here.

    Parameters
    ----------
    model : str

    Returns
    -------
    str or None
        ``"o200k_base"`` for the gpt-4o family; ``None`` for a model left to litellm.
    """
    return "o200k_base" if _GPT_4O.fullmatch(model) else None


def _cache_dir() -> str | None:
    # Where litellm points tiktoken for its bundled, offline encoding files (it sets
    # TIKTOKEN_CACHE_DIR to this on import); found without importing the package.
    custom = os.getenv("CUSTOM_TIKTOKEN_CACHE_DIR")
    if custom:
        return custom
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "litellm_core_utils" / "tokenizers"
    return str(path) if path.is_dir() else None


def _encoding(name: str) -> Any | None:
    # tiktoken's encoding, loaded from litellm's bundled files (never the network).
    with _LOCK:
        if name in _ENCODINGS:
            return _ENCODINGS[name]
        enc = None
        folder = _cache_dir()
        if folder is not None:
            try:
                import tiktoken  # noqa: PLC0415 - only a process that counts tokens loads it

                before = os.environ.get("TIKTOKEN_CACHE_DIR")
                os.environ["TIKTOKEN_CACHE_DIR"] = folder
                try:
                    enc = tiktoken.get_encoding(name)
                finally:
                    if before is None:
                        os.environ.pop("TIKTOKEN_CACHE_DIR", None)
                    else:
                        os.environ["TIKTOKEN_CACHE_DIR"] = before
            except Exception:  # noqa: BLE001 - no tiktoken or no file: litellm counts instead
                enc = None
        _ENCODINGS[name] = enc
        return enc


def direct_counter(model: str, fallback: Callable[[], Callable[[str], int]]) -> Callable[[str], int] | None:
    """A count function giving litellm's counts for ``model`` without litellm, if possible.

    Parameters
    ----------
    model : str
    fallback : callable
        Makes litellm's own count function; called (once) only for a text the direct
        path does not count the way litellm does (longer than its exact-count limit).

    Returns
    -------
    callable or None
        ``count(text) -> int``; ``None`` when ``model`` is left to litellm.
    """
    name = encoding_of(model)
    if name is None or any(os.getenv(s) for s in _SETTINGS):
        return None
    enc = _encoding(name)
    if enc is None:
        return None
    slow: list[Callable[[str], int]] = []

    def count(text: str) -> int:
        if len(text) > _MAX_EXACT:  # litellm extrapolates from samples past this length
            if not slow:
                slow.append(fallback())
            return slow[0](text)
        return sum(len(enc.encode(text[i:i + _CHUNK], disallowed_special=())) for i in range(0, len(text), _CHUNK))

    return count
