"""Word classes from an English lexicon: whether a word can be read as a noun, whether
only as an adverb, and whether English counts it.

A claim names what the person keeps coming back to, a thing or an activity ("art",
"dance", "hiking"). A word that English only uses as an adjective ("strong") or only as
a verb ("met", "assist", "gives") names nothing, however many members use it: "Often
talks about strong" and "Working toward assist" tell an agent nothing true. An adverb
between "I" and the verb ("I completely agree") is no verb to conjugate. A taste is
for a kind of thing: "Enjoys books", not "Enjoys book". The readings
come from LemmInflect's lexicon (derived from the NLM SPECIALIST lexicon and shipped in
its wheel, so nothing is downloaded), looked up lazily on first use.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Mapping

__all__ = ["adverb_only", "count_plural", "noun_reading"]


@lru_cache(maxsize=1)
def _lookup() -> Callable[[str], Mapping[str, tuple[str, ...]]]:
    # Imported on first use: reading commands and ingestion never phrase a claim.
    from lemminflect import getAllLemmas

    return getAllLemmas  # type: ignore[no-any-return]


@lru_cache(maxsize=1)
def _inflect() -> Callable[[str, str], tuple[str, ...]]:
    from lemminflect import getInflection

    return getInflection  # type: ignore[no-any-return]


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


@lru_cache(maxsize=65536)
def adverb_only(word: str) -> bool:
    """Whether the lexicon reads ``word`` as an adverb and never as a verb.

    "I completely agree", "I genuinely enjoy": the word between the subject and its
    verb is no verb to conjugate ("Completelies agree").

    Parameters
    ----------
    word : str
        A lower-case token.

    Returns
    -------
    bool
        ``False`` for a word the lexicon does not know, or one it also reads as a verb.
    """
    readings = _lookup()(word)
    return "ADV" in readings and "VERB" not in readings


@lru_cache(maxsize=65536)
def count_plural(word: str) -> str:
    """The plural of a noun English only counts, else ``word`` itself.

    A claim names a kind of thing in general: "Enjoys books", not "Enjoys book". A noun
    that is also a mass noun keeps its form ("art", "nature", "pottery", "dance": the
    lexicon lists the bare form among its plurals), and so do a word already plural
    ("kids"), one with no noun reading ("hiking") and one the lexicon does not know.

    Parameters
    ----------
    word : str
        A lower-case token.

    Returns
    -------
    str
    """
    readings = _lookup()(word)
    if word not in readings.get("NOUN", ()):
        return word
    plurals = _inflect()(word, "NNS")
    return plurals[0] if plurals and word not in plurals else word
