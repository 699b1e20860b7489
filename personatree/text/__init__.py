"""Small pure text utilities used by the offline judge.

Everything here is a pure function of its input (no models, no downloads, no global
state beyond precompiled regexes, fixed word lists and a memo cache for lemmas), so
the offline judge stays deterministic and cheap on the ingestion hot path. The word
lists and phrase patterns live in :mod:`personatree.lexicons`; this package keeps the
functions and the structural regexes (sentence ends, tokens, entities, times).

One module a concept, each importing only the ones above it in this list:

- :mod:`~personatree.text.sentences`: :func:`split_sentences` and :func:`chunk_text`,
  a regex sentence splitter that knows abbreviations ("Dr.", "e.g."), decimals,
  initials, ellipses, "!?" runs, emoji and newlines.
- :mod:`~personatree.text.tokens`: :func:`normalize`, :func:`tokenize`, :func:`lemma`
  (a crude stemmer that maps "hike/hikes/hiked/hiking" to one key) and
  :func:`has_first_person`.
- :mod:`~personatree.text.stance`: :class:`Stance`, :func:`analyze_stance`
  (polarity from a small stance/affect lexicon with negation and cessation: "stopped",
  "no longer", "used to"), :func:`find_cessation`, :func:`stance_label` (and what
  it rests on: :func:`stance_reading`), :data:`STANCE_LABELS`, and :func:`speaker_change`
  (whether a change phrase is the speaker's own). It reads a stance
  from words; what a stance means for the tree is the data model in
  :mod:`personatree.stance`.
- :mod:`~personatree.text.address`: :func:`addresses`, :func:`to_listener` (a line
  said to the listener rather than about the speaker) and :func:`about_listener` (a
  line that tells of the listener only).
- :mod:`~personatree.text.cues`: :func:`is_informative` and :func:`informative_part`
  (keep what a speaker says about themself and their life, drop greetings, fillers,
  reactions and questions to the other party), :func:`is_question`,
  :func:`is_request`, :func:`looks_like_code`, :func:`is_disposition`, :func:`is_change`.
- :mod:`~personatree.text.entities`: :func:`find_time`, :func:`find_entities`,
  :func:`tells_the_past`.
- :mod:`~personatree.text.standing`: :func:`is_standing` (a goal, value, ongoing
  condition or cause the speaker holds, which later situations are read against),
  :func:`tells_own_situation` (a query that is the person telling one) and
  :func:`standing_patterns`.
- :mod:`~personatree.text.reach`: :func:`~personatree.text.reach.reach_of` and
  :func:`~personatree.text.reach.words_of`, the habits and plans a change of life
  reaches by its kind (a knee in a brace reaches running).
- :mod:`~personatree.text.word_class`: :func:`~personatree.text.word_class.noun_reading`,
  :func:`~personatree.text.word_class.adverb_only` and :func:`count_plural`, how an
  English lexicon reads a word.
- :mod:`~personatree.text.topic`: :func:`key_topic`, :func:`content_lemmas`,
  :func:`can_name`, :func:`can_head`.
- :mod:`~personatree.text.scope`: :func:`~personatree.text.scope.takes_side_on`, the
  clause a stance is taken in, by whom, and what it is about ("The lifeguard yelled
  'No diving!'" denies diving, not the lifeguard).
- :mod:`~personatree.text.phrasing`: :func:`pattern_phrase`,
  :func:`strip_summary_suffix`, :func:`with_mentions` and :func:`format_month_span`,
  turning a first-person statement into a pattern phrase for summaries;
  :func:`is_topic_claim`, whether a claim only says a topic keeps coming up.

:data:`STOPWORDS` is re-exported from :mod:`personatree.lexicons`.
"""

from __future__ import annotations

from ..lexicons import STOPWORDS
from .address import about_listener, addresses, to_listener
from .cues import (
    informative_part,
    is_change,
    is_disposition,
    is_informative,
    is_question,
    is_request,
    looks_like_code,
)
from .entities import find_entities, find_time, tells_the_past
from .phrasing import TOPIC_CLAIM, format_month_span, is_topic_claim, pattern_phrase, strip_summary_suffix, with_mentions
from .sentences import chunk_text, split_sentences
from .standing import is_standing, standing_patterns, tells_own_situation
from .stance import (
    STANCE_LABELS,
    Stance,
    analyze_stance,
    find_cessation,
    stance_label,
    stance_reading,
)
from .tokens import has_first_person, lemma, normalize, tokenize
from .topic import can_head, can_name, content_lemmas, key_topic, share_a_topic
from .word_class import count_plural

__all__ = [
    "Stance",
    "stance_reading",
    "about_listener",
    "addresses",
    "to_listener",
    "STOPWORDS",
    "split_sentences",
    "chunk_text",
    "normalize",
    "tokenize",
    "with_mentions",
    "lemma",
    "can_head",
    "can_name",
    "count_plural",
    "content_lemmas",
    "share_a_topic",
    "has_first_person",
    "is_request",
    "is_change",
    "is_disposition",
    "is_standing",
    "standing_patterns",
    "tells_own_situation",
    "looks_like_code",
    "is_question",
    "is_informative",
    "informative_part",
    "find_cessation",
    "analyze_stance",
    "STANCE_LABELS",
    "stance_label",
    "find_time",
    "find_entities",
    "tells_the_past",
    "key_topic",
    "pattern_phrase",
    "TOPIC_CLAIM",
    "is_topic_claim",
    "strip_summary_suffix",
    "format_month_span",
]
