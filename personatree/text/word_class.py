"""Word classes from an English lexicon: whether a word can be read as a noun.

A claim names what the person keeps coming back to, a thing or an activity ("art",
"dance", "hiking"). A word that English only uses as an adjective ("strong") or only as
a verb ("met", "assist", "gives") names nothing, however many members use it: "Often
talks about strong" and "Working toward assist" tell an agent nothing true. The readings
come from LemmInflect's lexicon (derived from the NLM SPECIALIST lexicon and shipped in
its wheel, so nothing is downloaded), looked up lazily on first use.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Mapping

__all__ = ["noun_reading"]


@lru_cache(maxsize=1)
def _lookup() -> Callable[[str], Mapping[str, tuple[str, ...]]]:
    # Imported on first use: reading commands and ingestion never phrase a claim.
    from lemminflect import getAllLemmas

    return getAllLemmas  # type: ignore[no-any-return]


@lru_cache(maxsize=65536)
def noun_reading(word: str) -> bool | None:
    """Whether the lexicon reads ``word`` as a noun, or as the gerund of a verb.

    Parameters
    ----------
    word : str
        A lower-case token.

    Returns
    -------
    bool or None
        ``True`` for "art", "dance", "painting" and gerunds such as "hiking" (the
        lexicon lists them as verb forms only); ``False`` for a word with only adjective,
        adverb or non-gerund verb readings ("strong", "met", "assist", "gives");
        ``None`` for a word the lexicon does not know (names, slang, misspellings), on
        which it has no say.
    """
    readings = _lookup()(word)
    if not readings:
        return None
    return "NOUN" in readings or (word.endswith("ing") and "VERB" in readings)
