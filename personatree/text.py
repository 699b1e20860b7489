"""Small pure text utilities used by the offline judge.

Everything here is a pure function of its input (no models, no downloads, no global
state beyond precompiled regexes, fixed word lists and a memo cache for lemmas), so
the offline judge stays deterministic and cheap on the ingestion hot path. The word
lists and phrase patterns live in :mod:`personatree.lexicons`; this module keeps the
functions and the structural regexes (sentence ends, tokens, entities, times).

The pieces:

- :func:`split_sentences` and :func:`chunk_text`: a regex sentence splitter that
  knows abbreviations ("Dr.", "e.g."), decimals, initials, ellipses, "!?" runs,
  emoji and newlines.
- :func:`tokenize`, :func:`lemma`, :func:`content_lemmas`: lower-case word tokens and
  a crude stemmer that maps "hike/hikes/hiked/hiking" to one key.
- :func:`is_informative`: keeps what a speaker says about themself and their life,
  drops greetings, fillers, reactions and questions to the other party.
- :func:`analyze_stance`: polarity from a small stance/affect lexicon with negation
  and cessation ("stopped", "no longer", "used to") handling.
- :func:`find_time`, :func:`find_entities`, :func:`key_topic`: attributes of a leaf.
- :func:`pattern_phrase`, :func:`format_span`, :func:`strip_summary_suffix`: turning a
  first-person statement into a pattern phrase for summaries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

# The vocabulary lives in .lexicons, imported under the private names the code below
# uses.
from .lexicons import ADVERBS as _ADVERBS
from .lexicons import AFFECT_NEG as _AFFECT_NEG
from .lexicons import AFFECT_POS as _AFFECT_POS
from .lexicons import CESSATION_CANCEL_RE as _CESSATION_CANCEL_RE
from .lexicons import CESSATION_RE as _CESSATION_RE
from .lexicons import CESSATION_TRIGGERS as _CESSATION_TRIGGERS
from .lexicons import COMPOUND_NOT_AFFECT_RE as _COMPOUND_NOT_AFFECT_RE
from .lexicons import HYPOTHETICAL_RE as _HYPOTHETICAL_RE
from .lexicons import INTENT_FRAME_RE as _INTENT_FRAME_RE
from .lexicons import RARE_WORDS as _RARE_WORDS
from .lexicons import STANCE_PHRASE_NEG_RE as _STANCE_PHRASE_NEG_RE
from .lexicons import STANCE_PHRASE_POS_RE as _STANCE_PHRASE_POS_RE
from .lexicons import START_RE as _START_RE
from .lexicons import STOP_EXTRA_RE as _STOP_EXTRA_RE
from .lexicons import DISPOSITION_MARKERS as _DISPOSITION_MARKERS
from .lexicons import FILLERS as _FILLERS
from .lexicons import HABIT_VERBS as _HABIT_VERBS
from .lexicons import NEGATED_AUXILIARIES as _NEGATED_AUX
from .lexicons import STANDING_NEGATORS as _STANDING_NEGATORS
from .lexicons import FILLER_PHRASE_RE as _FILLER_PHRASE_RE
from .lexicons import FIRST_PERSON as _FIRST_PERSON
from .lexicons import FIRST_PERSON_SUBJECT as _FIRST_PERSON_SUBJECT
from .lexicons import INTENSIFIERS as _INTENSIFIERS
from .lexicons import IRREGULAR_3SG as _IRREGULAR_3SG
from .lexicons import LEADING_FILLER_RE as _LEADING_FILLER_RE
from .lexicons import LIKE_FORMS as _LIKE_FORMS
from .lexicons import LIKE_SUBJECTS as _LIKE_SUBJECTS
from .lexicons import NEGATORS as _NEGATORS
from .lexicons import NEG_EXEMPT as _NEG_EXEMPT
from .lexicons import NO_SPLIT_ABBR as _NO_SPLIT_ABBR
from .lexicons import PAST_IRREGULAR as _PAST_IRREGULAR
from .lexicons import POSITIVE_NEGATED as _POSITIVE_NEGATED
from .lexicons import PRONOUN_CAPS as _PRONOUN_CAPS
from .lexicons import REQUEST_LEADS as _REQUEST_LEADS
from .lexicons import REQUEST_MODAL_EXEMPT as _REQUEST_MODAL_EXEMPT
from .lexicons import REQUEST_MODALS as _REQUEST_MODALS
from .lexicons import REQUEST_VERBS as _REQUEST_VERBS
from .lexicons import SECOND_PERSON as _SECOND_PERSON
from .lexicons import STANCE_NEG as _STANCE_NEG
from .lexicons import STANCE_POS as _STANCE_POS
from .lexicons import STOPWORDS
from .lexicons import TIME_WORDS as _TIME_WORDS
from .lexicons import TOPIC_SKIP as _TOPIC_SKIP

__all__ = [
    "Stance",
    "STOPWORDS",
    "split_sentences",
    "chunk_text",
    "normalize",
    "tokenize",
    "lemma",
    "content_lemmas",
    "has_first_person",
    "is_request",
    "is_disposition",
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
    "key_topic",
    "pattern_phrase",
    "strip_summary_suffix",
    "format_span",
]

# --------------------------------------------------------------------------------------
# Sentence splitting
# --------------------------------------------------------------------------------------

# Emoji and pictographs, plus the variation selector and zero-width joiner that glue
# emoji sequences together. Built from real characters so the class is portable.
_EMOJI_CLASS = (
    "\U0001F000-\U0001FAFF"  # pictographs, emoticons, transport, symbols & pictographs ext.
    "\u2600-\u27BF"  # misc symbols, dingbats
    "\u2B00-\u2BFF"  # arrows, stars
    "\uFE0F\u200D"
)
_CLOSERS = "\"'\u201d\u2019)\\]"

# A boundary candidate: a run of terminators (. ! ? …), optional closing quotes or
# brackets and trailing emoji (they belong to the sentence they end), followed by
# whitespace or the end; or an emoji run on its own followed by whitespace.
_END_RE = re.compile(
    rf"(?P<term>[.!?\u2026]+)[{_CLOSERS}]*(?:\s*[{_EMOJI_CLASS}]+)*(?=\s|$)"
    rf"|(?P<emo>[{_EMOJI_CLASS}]+)(?=\s)"
)
_BULLET_RE = re.compile(r"^\s*(?:[-*\u2022>]+|\d{1,3}[.)])\s+")

_LETTER_RE = re.compile(r"[A-Za-z\u00C0-\u024F]")


def _is_abbreviation(line: str, dot: int) -> bool:
    """Whether the period at ``line[dot]`` closes an abbreviation or an initial."""
    start = line.rfind(" ", 0, dot) + 1
    word = line[start:dot].lstrip("(\"'\u201c\u2018")
    if not word:
        return False
    low = word.lower()
    if low in _NO_SPLIT_ABBR:
        return True
    # Dotted acronyms ("U.S.", "a.m.") rarely end a chat sentence; keep them whole.
    if "." in low and all(len(part) == 1 for part in low.split(".")):
        return True
    # A single capital letter is an initial ("J. K. Rowling"), not a sentence end.
    return len(word) == 1 and word.isupper()


def _split_line(line: str) -> list[str]:
    out: list[str] = []
    start = 0
    n = len(line)
    for m in _END_RE.finditer(line):
        end = m.end()
        nxt = end
        while nxt < n and line[nxt].isspace():
            nxt += 1
        if nxt >= n:
            break  # the rest is the final sentence
        following = line[nxt]
        term = m.group("term")
        if term is None:
            # A bare emoji ends a sentence only when a capitalised word follows.
            if not following.isupper():
                continue
        elif following.islower():
            # "e.g. the", "I was thinking... maybe": a lower-case continuation.
            # After ! or ? informal chat often goes on in lower case; split anyway.
            if "!" not in term and "?" not in term:
                continue
        elif term == "." and _is_abbreviation(line, m.start("term")):
            continue
        piece = line[start:end].strip()
        if piece:
            out.append(piece)
        start = end
    piece = line[start:].strip()
    if piece:
        out.append(piece)
    return out


def split_sentences(text: str) -> list[str]:
    """Split text into sentences with a regex splitter (no model, no data downloads).

    Lines are split first (chat messages use newlines as separators), list bullets are
    removed, then each line is cut after sentence terminators (``.``, ``!``, ``?``,
    ``…`` and runs of them) that are followed by whitespace. A period does not end a
    sentence after a known abbreviation ("Dr.", "e.g.", "vs.") or an initial ("J."), nor
    when a lower-case word follows; decimals ("3.5") never match because no whitespace
    follows the period. Emoji after a terminator stay with the sentence they close; a
    bare emoji ends a sentence when a capitalised word follows.

    Parameters
    ----------
    text : str
        Any text.

    Returns
    -------
    list of str
        The sentences, stripped, in order; empty pieces are dropped.

    Examples
    --------
    >>> split_sentences("I met Dr. Smith today! He's nice... We talked e.g. about 3.5 km runs.")
    ['I met Dr. Smith today!', "He's nice...", 'We talked e.g. about 3.5 km runs.']
    """
    out: list[str] = []
    for raw in text.splitlines():
        line = _BULLET_RE.sub("", raw, count=1).strip()
        if line:
            out.extend(_split_line(line))
    return out


def chunk_text(sentence: str, max_chars: int = 600) -> list[str]:
    """Cut an overlong sentence into pieces of at most ``max_chars`` characters.

    Cuts prefer the last clause separator (``;``, ``,``, `` - ``) before the limit,
    then the last space, and only then a hard cut, so pieces stay readable.

    Parameters
    ----------
    sentence : str
        A sentence, possibly very long (run-on text without punctuation).
    max_chars : int
        The longest piece.

    Returns
    -------
    list of str
        One or more non-empty pieces (the sentence itself when short enough).
    """
    s = sentence.strip()
    if len(s) <= max_chars:
        return [s] if s else []
    pieces: list[str] = []
    pos, n = 0, len(s)
    # Walk an index instead of re-slicing the tail, so a huge message stays linear.
    while n - pos > max_chars:
        lo, hi = pos + max_chars // 3, pos + max_chars + 1
        cut = max(s.rfind("; ", lo, hi), s.rfind(", ", lo, hi), s.rfind(" - ", lo, hi))
        if cut < 0:
            cut = s.rfind(" ", lo, hi)
        cut = pos + max_chars if cut < 0 else cut + 1
        head = s[pos:cut].strip()
        if head:
            pieces.append(head)
        pos = cut
        while pos < n and s[pos].isspace():
            pos += 1
    tail = s[pos:].strip()
    if tail:
        pieces.append(tail)
    return pieces


# --------------------------------------------------------------------------------------
# Tokens and lemmas
# --------------------------------------------------------------------------------------

_APOS_TABLE = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})
_TOKEN_RE = re.compile(r"[a-z0-9]+(?:'[a-z]+)*")
# The same words with the apostrophe as a separator ("can't" -> "can", "t").
_SPLIT_TOKEN_RE = re.compile(r"[a-z0-9]+")


def normalize(text: str) -> str:
    """Lower-case ``text`` and map typographic apostrophes to ``'``.

    Parameters
    ----------
    text : str

    Returns
    -------
    str
    """
    return text.translate(_APOS_TABLE).lower()


def tokenize(text: str, *, contractions: bool = True) -> list[str]:
    """Lower-case word tokens, keeping contractions whole ("can't", "i'm").

    Parameters
    ----------
    text : str
    contractions : bool
        Keep contractions and possessives as one token ("can't", "anna's"). With
        ``False`` the apostrophe separates words ("can", "t"; "anna", "s"): the
        tokens the BM25 baselines (:func:`personatree.bench.packing.lexical_tokens`)
        index.

    Returns
    -------
    list of str
    """
    pattern = _TOKEN_RE if contractions else _SPLIT_TOKEN_RE
    return pattern.findall(normalize(text))


_KEEP_S = ("ss", "us", "is", "os", "as")


@lru_cache(maxsize=65536)
def lemma(word: str) -> str:
    """A crude lemma: strip possessive, plural ``s``, ``ing`` and ``ed``, a final ``e``
    and a doubled final consonant, so "hike", "hikes", "hiked" and "hiking" (and "run",
    "running") share one key.

    It is not linguistics: it only has to make the same word in different forms
    compare equal, cheaply and deterministically.

    Parameters
    ----------
    word : str
        A lower-case token.

    Returns
    -------
    str
    """
    w = word
    if w.endswith("'s"):
        w = w[:-2]
    if len(w) <= 3:
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("ing") and len(w) >= 6:
        w = w[:-3]
    elif w.endswith("ed") and len(w) >= 5:
        w = w[:-2]
    elif w.endswith("es") and len(w) >= 5 and w[-3] in "sxz":
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(_KEEP_S):
        w = w[:-1]
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]
    return w


# --------------------------------------------------------------------------------------
# Person, questions, informativeness
# --------------------------------------------------------------------------------------


def has_first_person(tokens: list[str]) -> bool:
    """Whether the tokens contain a first-person pronoun ("I", "my", "we", "I'm", ...).

    Parameters
    ----------
    tokens : list of str
        Output of :func:`tokenize`.

    Returns
    -------
    bool
    """
    return not _FIRST_PERSON.isdisjoint(tokens)


_TRAIL_RE = re.compile(rf"[\s{_CLOSERS}{_EMOJI_CLASS}.!]+$")


def is_question(sentence: str) -> bool:
    """Whether a sentence is a question (ends with ``?``, ignoring emoji and quotes).

    Parameters
    ----------
    sentence : str

    Returns
    -------
    bool
    """
    s = sentence.rstrip()
    if s.endswith("?"):
        return True
    return "?" in s[-6:] and _TRAIL_RE.sub("", s).endswith("?")


# Lines of source code pasted into a chat: a statement keyword with code punctuation,
# a comment marker, or a line ending in a bracket or semicolon.
_CODE_RE = re.compile(
    r"^\s*(?:(?:def|class|import|from|return|elif|except|public|private|protected|static|"
    r"function|const|var|let|#include|SELECT|INSERT|UPDATE)\b.*[:;{(=]|(?://|/\*|#!|<\?|</?\w+>))"
    r"|[;{}]\s*$|^\s*[\w.\[\]]+\s*(?:[-+*/]?=|==)\s*\S|\w\([^()]*\)\s*[:{]\s*$"
)


def looks_like_code(sentence: str) -> bool:
    """Whether a sentence is a line of source code or markup rather than prose.

    Parameters
    ----------
    sentence : str

    Returns
    -------
    bool
    """
    return _CODE_RE.search(sentence) is not None


# "I'd like you to take this code ...", "I want you to act as ...": a task for the
# other party phrased in the first person ("I want you to know ..." is not one).
_WANT_YOU_TO_RE = re.compile(
    r"^\W*(?:(?:first|now|so|ok|okay|please|next|then),?\s+)*"
    r"i(?:'d| would)?\s+(?:like|want|need)\s+you\s+to\s+(?!know\b|understand\b|meet\b|be\b)",
    re.I,
)


# "I'd like some ideas for dinner", "I need recommendations for a hotel", "I'm looking
# for suggestions": a request phrased in the first person, asking for options.
_ASK_FOR_OPTIONS_RE = re.compile(
    r"^\W*(?:(?:so|ok|okay|now|hi|hey|also),?\s+)*(?:i|we)(?:'d| would| really)?\s+"
    r"(?:like|love|want|need|could use|'m looking for|am looking for|are looking for)\s+"
    r"(?:some|a few|a couple of|an?|your|any|more|good)?\s*(?:[\w'-]+\s+){0,2}?"
    r"(?:ideas?|suggestions?|recommendations?|tips|options|inspiration|recipes?)\b",
    re.I,
)


def _is_framed_request(sentence: str) -> bool:
    """A task whose payload follows a colon ("Make this formal: I loved the dinner"),
    that asks the other party in the first person ("I'd like you to list ..."), or that
    asks for options ("I'd like some ideas for a vegetarian dinner")."""
    if _WANT_YOU_TO_RE.search(sentence) is not None or _ASK_FOR_OPTIONS_RE.search(sentence) is not None:
        return True
    head, colon, _ = sentence.partition(":")
    return bool(colon) and is_request(tokenize(head), head)


def is_request(tokens: list[str], sentence: str | None = None) -> bool:
    """Whether a sentence is a task given to the other party ("List five ...").

    It opens (after "please", "now"...) with a task verb such as "list", "write",
    "compare", "suggest", or with a polite modal and "you" ("Could you make this
    formal", not "Can you believe ..."); and the speaker is not the subject of a clause
    of its own ("Write me a poem" and "Suggest a recipe I could make" are requests;
    "Write it down, I always forget" says something about the speaker). Without
    ``sentence`` any first-person subject makes it a statement.

    Parameters
    ----------
    tokens : list of str
        Output of :func:`tokenize`.
    sentence : str, optional
        The sentence, to tell a first-person subject of the task's own words ("a
        recipe I could make") from one of a clause after a comma.

    Returns
    -------
    bool
    """
    i = 0
    while i < len(tokens) and tokens[i] in _REQUEST_LEADS:
        i += 1
    if i >= len(tokens):
        return False
    if tokens[i] in _REQUEST_MODALS and i + 1 < len(tokens) and tokens[i + 1] == "you":
        j = i + 2
        while j < len(tokens) and tokens[j] in _REQUEST_LEADS:
            j += 1
        if j >= len(tokens) or tokens[j] in _REQUEST_MODAL_EXEMPT:
            return False
    elif tokens[i] not in _REQUEST_VERBS:
        return False
    if _FIRST_PERSON_SUBJECT.isdisjoint(tokens):
        return True
    if sentence is None:
        return False
    # The speaker speaks for themself only in a clause after a break ("..., I always forget").
    _, sep, tail = _split_first_clause(sentence)
    return not sep or _FIRST_PERSON_SUBJECT.isdisjoint(tokenize(tail))


_CLAUSE_SEP_RE = re.compile(r"[,;]|\s[-\u2013\u2014]\s")


def _split_first_clause(sentence: str) -> tuple[str, str, str]:
    """(head, separator, tail) at the first clause break; ("sentence", "", "") without one."""
    m = _CLAUSE_SEP_RE.search(sentence)
    if m is None:
        return sentence, "", ""
    return sentence[: m.start()], m.group(0), sentence[m.end():]


# A stated habit or choice is one sentence; a "sentence" longer than this is pasted
# text without punctuation (a transcript, a log), whose "I like" is no disposition.
_DISPOSITION_MAX_TOKENS = 48

_FOLLOW = frozenset({"follow", "follows"})
_AS_FOLLOWS_RE = re.compile(r"\bas follows?\b", re.I)

# A choice among offered options reveals a preference ("I'll go with the second one",
# "The salad sounds perfect for me").
_CHOICE_RE = re.compile(
    r"\b(?:i|we|let's)(?:'ll| will| would| think i'll)?\s+(?:go|going|stick|opt)\s+(?:with|for)\b"
    r"|\b(?:i|we)(?:'ll| will)?\s+(?:choose|chose|pick|picked|take)\b"
    r"|\b(?:sounds?|works?|seems?|looks?|is|would be)\b[^.?!]{0,30}?"
    r"\b(?:good|great|perfect|best|ideal|right|better|effective|suitable)\b[^.?!]{0,30}?"
    r"\bfor (?:me|us)\b",
    re.I,
)
# A reply that picks an enumerated option needs no pronoun ("Option 2 sounds good").
_PICK_RE = re.compile(
    r"^\W*(?:i think\s+|i'd say\s+)?(?:option|choice|number)\s*#?\d+\b[^.?!]{0,40}?"
    r"\b(?:sounds?|works?|seems?|looks?|is|would be)\b[^.?!]{0,20}?"
    r"\b(?:good|great|perfect|best|ideal|right|better|fine)\b",
    re.I,
)
# Self-knowledge about what comes hard or easy: "I find it difficult to focus alone".
_FIND_IT_RE = re.compile(
    r"\b(?:i|we)\s+(?:\w+\s+)?find\s+it\s+(?:\w+\s+)?"
    r"(?:hard|harder|difficult|easy|easier|impossible|tough|draining|exhausting)\b",
    re.I,
)


def is_disposition(sentence: str, tokens: list[str] | None = None) -> bool:
    """Whether a sentence states a lasting disposition of the speaker.

    The speaker is its subject ("I", "we", or "me" in "... don't appeal to me") and it
    carries a habit, like, aversion, standing constraint, self-knowledge or choice ("I
    usually...", "I avoid loud crowded bars", "I keep a nut-free diet", "Those plans
    don't work for me", "I find it hard to focus alone", "I'll go with the second
    one", "The cabin sounds ideal for me"); a reply picking a numbered option ("Option
    2 sounds best") needs no pronoun. Such evidence matters to a request for advice
    even when it shares few words with it: a recommendation should respect it. A
    negation, contracted or spelled out, counts only on a habit verb ("I don't eat
    meat", "I will not fly", not "I can't go today"); questions and run-ons of pasted
    text never count.

    Parameters
    ----------
    sentence : str
    tokens : list of str, optional
        ``tokenize(sentence)`` when the caller already has it.

    Returns
    -------
    bool
    """
    toks = tokens if tokens is not None else tokenize(sentence)
    if len(toks) > _DISPOSITION_MAX_TOKENS or sentence.rstrip().endswith("?"):
        return False
    if _PICK_RE.search(sentence) is not None:
        return True
    if _FIRST_PERSON_SUBJECT.isdisjoint(toks) and "me" not in toks and "my" not in toks:
        return False
    markers = _DISPOSITION_MARKERS.intersection(toks)
    if markers and markers <= _FOLLOW and _AS_FOLLOWS_RE.search(sentence) is not None:
        markers = set()  # "as follows" introduces a list, not a habit
    if markers or _negated_habit(toks):
        return True
    if _CHOICE_RE.search(sentence) is not None or _FIND_IT_RE.search(sentence) is not None:
        return True
    return analyze_stance(sentence, toks).stance != 0


def _negated_habit(toks: list[str]) -> bool:
    """"I don't eat meat", "I will not fly", "that doesn't work for me": a negated habit verb."""
    for i, t in enumerate(toks):
        if t in _STANDING_NEGATORS or (t == "not" and i > 0 and toks[i - 1] in _NEGATED_AUX):
            j = i + 1
            while j < len(toks) and toks[j] in _ADVERBS:
                j += 1  # "I don't really eat ..."
            if j < len(toks) and toks[j] in _HABIT_VERBS:
                return True
    return False


def is_informative(sentence: str, tokens: list[str] | None = None) -> bool:
    """Whether a sentence says something about the speaker or their life.

    Rules, applied in order (inclusive on purpose: a dropped sentence is lost evidence,
    a kept one only costs a leaf):

    1. No letters (emoji only, numbers only) → drop.
    2. A question is dropped, whoever it is about: it asks ("How have you been?",
       "What should I cook tonight?", "Any dessert ideas for me?") rather than tells.
       A statement before it in the same message is a sentence of its own and is kept
       ("I'm vegan. Any dessert ideas?"); see :func:`informative_part` for one joined
       by a comma.
    3. A statement led by "you"/"your" without any first-person pronoun is about the
       other party ("You'd be a great counselor!") → drop. So is a task given to the
       other party (:func:`is_request`: "Write me a packing list for Iceland", "Could
       you make this formal"; also with its payload after a colon, "Make this formal:
       I loved the dinner", asked in the first person, "I'd like you to refactor this",
       or asking for options, "I'd like some ideas for dinner") and a line of pasted
       source code (:func:`looks_like_code`): like a question to the
       other party, they describe the task, not the speaker.
    4. Greeting/politeness phrases ("good to see you", "take care") are removed; the
       remaining content words are the tokens that are not stopwords, fillers
       ("wow", "thanks", "lol", "cool") or intensifiers. Keep when there is at least
       one content word and either a first-person pronoun, a stance or affect word
       ("Swimming is fun."), or at least two content words ("The kids loved the beach
       trip."). So "Hey Mari!", "Thanks!", "That's so cool!" are dropped.

    Parameters
    ----------
    sentence : str
    tokens : list of str, optional
        ``tokenize(sentence)`` when the caller already has it.

    Returns
    -------
    bool
    """
    if _LETTER_RE.search(sentence) is None:
        return False
    toks = tokens if tokens is not None else tokenize(sentence)
    if not toks:
        return False
    first_person = has_first_person(toks)
    if is_question(sentence):
        return False
    if toks[0] in _SECOND_PERSON and not first_person:
        return False
    if is_request(toks, sentence) or looks_like_code(sentence) or _is_framed_request(sentence):
        return False
    low = normalize(sentence)
    if _FILLER_PHRASE_RE.search(low) is not None:
        toks = tokenize(_FILLER_PHRASE_RE.sub(" ", low))
        first_person = has_first_person(toks)
    n_content = 0
    sentiment = False
    last = ""
    for t in toks:
        if t in _STANCE_POS or t in _STANCE_NEG or t in _AFFECT_NEG:
            sentiment = True
            n_content += 1
        elif t in STOPWORDS or t in _FILLERS or t in _INTENSIFIERS:
            # "Swimming is fun.": a positive reaction word still marks an opinion.
            sentiment = sentiment or t in _AFFECT_POS
        else:
            sentiment = sentiment or t in _AFFECT_POS
            n_content += 1
            last = t
    if n_content == 0:
        return False
    if first_person or n_content >= 2:
        return True
    # A lone capitalised content word is a vocative ("Great, Marisol!"), not content.
    return sentiment and not (last and last[:1].upper() + last[1:] in sentence[1:])


def informative_part(sentence: str, tokens: list[str] | None = None) -> str | None:
    """The part of a sentence that is evidence about the speaker, or ``None``.

    The sentence itself when :func:`is_informative` keeps it. A question or request
    that opens with a statement of the speaker's own, joined by a comma, semicolon or
    dash ("I'm vegan, any dessert ideas?", "I just moved to Oslo - what should I see
    first?"), gives that statement; anything else gives ``None``.

    Parameters
    ----------
    sentence : str
    tokens : list of str, optional
        ``tokenize(sentence)`` when the caller already has it.

    Returns
    -------
    str or None
    """
    if is_informative(sentence, tokens):
        return sentence
    head, sep, tail = _split_first_clause(sentence)
    if not sep or not tail.strip():
        return None
    head = head.strip()
    htoks = tokenize(head)
    if _FIRST_PERSON_SUBJECT.isdisjoint(htoks[:2]):
        return None  # only a clause the speaker opens as its subject stands alone
    return head if is_informative(head, htoks) else None


# --------------------------------------------------------------------------------------
# Stance: polarity, negation, cessation
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Stance:
    """The speaker's stance in one sentence.

    Attributes
    ----------
    polarity : int
        -1, 0 or +1: the overall stance (explicit stance words weigh double the
        general affect words; cessation forces -1).
    stance : int
        Net explicit like/dislike after negation ("don't like" → -1), clipped to ±1.
    affect : int
        Net general affect after negation ("not happy" → -1), clipped to ±1.
    negated : bool
        Any negation word occurs (exempt phrases like "I don't know" excluded).
    free_negation : bool
        A negation that did not flip a stance/affect word and is not part of a
        cessation phrase: it negates the statement itself ("I don't have kids").
    cessation : bool
        A cessation phrase occurs ("stopped", "quit", "gave up", "no longer",
        "anymore", "used to"), not cancelled by a negator ("never stopped").
    """

    polarity: int
    stance: int
    affect: int
    negated: bool
    free_negation: bool
    cessation: bool


def find_cessation(text: str) -> str | None:
    """The first cessation phrase in ``text``, or ``None``.

    Cessation verbs flip the stance toward an ongoing pattern: "I stopped hiking",
    "I don't hike anymore", "I used to love hiking", "I quit my job". A negator right
    before the verb cancels it ("I never stopped running", "I can't quit coffee").

    Parameters
    ----------
    text : str
        Any text (normalised internally).

    Returns
    -------
    str or None
        The matched phrase, lower-case.
    """
    low = normalize(text)
    for m in _CESSATION_RE.finditer(low):
        if not _cancelled(low, m):
            return m.group(0)
    return None


# "anymore" needs a negator before it ("I don't hike anymore"): a negator there is
# part of the cessation, not a cancellation of it.
_NEEDS_NEGATOR = frozenset({"anymore", "any more"})


def _cancelled(low: str, m: re.Match[str]) -> bool:
    if m.group(0) in _NEEDS_NEGATOR:
        return False
    start = m.start()
    return _CESSATION_CANCEL_RE.search(low[max(0, start - 24):start]) is not None


def _cessation_state(low: str) -> tuple[bool, bool]:
    # (an uncancelled cessation phrase occurs, a cancelled one occurs)
    cancelled = False
    for m in _CESSATION_RE.finditer(low):
        if _cancelled(low, m):
            cancelled = True
        else:
            return True, cancelled
    return False, cancelled


# How many tokens before a stance or affect word a negator still flips it.
_NEG_WINDOW = 3


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


def analyze_stance(text: str, tokens: list[str] | None = None) -> Stance:
    """Polarity of a sentence from a small stance/affect lexicon with negation.

    Explicit stance words ("love", "enjoy", "prefer", "fan", "hate", "dislike",
    "can't stand", "sick of") count ±2, general affect words ("happy", "stressed",
    "awful") ±1. A negator within three tokens before a word flips it ("don't like",
    "not happy", "not a fan"); negations of "know/think/mind/worry..." are ignored and
    "can't wait" counts as positive. A cessation phrase (:func:`find_cessation`)
    forces polarity -1: "I used to love hiking" is a negative stance toward hiking now.

    Parameters
    ----------
    text : str
    tokens : list of str, optional
        ``tokenize(text)`` when the caller already has it.

    Returns
    -------
    Stance
    """
    toks = tokens if tokens is not None else tokenize(text)
    stance = 0
    affect = 0
    negated = False
    free_neg = False
    last_neg = -100
    neg_used = True
    prev = ""
    for i, t in enumerate(toks):
        if t in _NEGATORS:
            nxt = toks[i + 1] if i + 1 < len(toks) else ""
            if nxt in _NEG_EXEMPT:
                if nxt in _POSITIVE_NEGATED:
                    affect += 1
                prev = t
                continue
            if not neg_used:
                free_neg = True  # the previous negator flipped nothing
            negated = True
            last_neg = i
            neg_used = False
            prev = t
            continue
        s = 0
        is_stance = False
        if t in _STANCE_POS:
            s, is_stance = 1, True
        elif t in _STANCE_NEG:
            s, is_stance = -1, True
        elif t in _LIKE_FORMS and prev in _LIKE_SUBJECTS:
            s, is_stance = 1, True
        elif t == "stand" and prev in ("can't", "cannot", "cant", "couldn't"):
            s, is_stance = -1, True
            neg_used = True  # the negator is part of the phrase, not a flip
            last_neg = -100
        elif t in ("sick", "tired") and i + 1 < len(toks) and toks[i + 1] == "of":
            s, is_stance = -1, True
        elif t in _AFFECT_POS:
            s = 1
        elif t in _AFFECT_NEG:
            s = -1
        if s:
            if i - last_neg <= _NEG_WINDOW and not neg_used:
                s = -s
                neg_used = True
            if is_stance:
                stance += s
            else:
                affect += s
        prev = t
    if not neg_used:
        free_neg = True
    cessation = False
    if "used" in toks or _maybe_cessation(toks):
        found, cancelled = _cessation_state(normalize(text))
        cessation = found
        if cancelled and not cessation:
            stance += 1  # "I never stopped running": a positive stance toward it
        if cessation or cancelled:
            # "no longer"/"not anymore" negators belong to the cessation phrase, and a
            # cancelled cessation ("never stopped") is a double negative: continuation.
            free_neg = False
    stance = _sign(stance)
    affect = _sign(affect)
    polarity = -1 if cessation else _sign(2 * stance + affect)
    return Stance(polarity, stance, affect, negated, free_neg, cessation)


STANCE_LABELS: tuple[str, ...] = ("positive", "negative", "neutral", "stopped", "started")


def stance_label(text: str, tokens: list[str] | None = None) -> str:
    """The speaker's stance toward what a sentence is about, as one of five labels.

    ``"stopped"`` when it ends something (an uncancelled cessation phrase of
    :func:`find_cessation`, "I'm over spin classes", "I haven't played tennis since I
    moved"); ``"started"`` when it takes something up ("I've started swimming", "I took
    up yoga", "I've gone vegan"); else the polarity of :func:`analyze_stance` plus
    stance idioms ("can't bear", "drives me up the wall", "means the world to me"):
    ``"positive"`` or ``"negative"``; a negation of the statement itself or a frequency
    word that denies a habit ("I don't own a car", "I rarely watch TV") is
    ``"negative"``; else ``"neutral"``.

    Two frames change the reading. In a hypothetical ("If I ever quit my job, I'd open
    a studio") nothing has stopped or started. After an intention or wish ("I'm trying
    to quit smoking", "I'd like to get better at chess") what follows is wanted, not
    held: only the words before the frame carry a stance, so a goal reads neutral
    unless its speaker says how they feel ("I'd love to visit Patagonia").

    Parameters
    ----------
    text : str
    tokens : list of str, optional
        ``tokenize(text)`` when the caller already has it.

    Returns
    -------
    str
        One of :data:`STANCE_LABELS`.
    """
    low = normalize(text)
    hypothetical = _HYPOTHETICAL_RE.search(low) is not None
    frame = _INTENT_FRAME_RE.search(low)
    if frame is not None:
        low = low[: frame.start()]
    elif not hypothetical:
        if find_cessation(low) is not None or _STOP_EXTRA_RE.search(low) is not None:
            return "stopped"
        toks_all = tokens if tokens is not None else tokenize(low)
        if _START_RE.search(low) is not None and has_first_person(toks_all):
            return "started"
    else:
        # "If I had time I would ...": a wish; its stance is that of a goal.
        frame_like = _INTENT_FRAME_RE.search(low)
        low = low[: frame_like.start()] if frame_like is not None else low
    pos = _STANCE_PHRASE_POS_RE.search(low) is not None
    neg = _STANCE_PHRASE_NEG_RE.search(low) is not None
    if pos != neg:
        return "positive" if pos else "negative"
    low = _COMPOUND_NOT_AFFECT_RE.sub(" ", low)
    toks = tokenize(low)
    st = analyze_stance(low, toks)
    # In a hypothetical a cessation verb ended nothing ("If I ever quit ..."): only the
    # stance and affect words count.
    polarity = _sign(2 * st.stance + st.affect) if hypothetical and st.cessation else st.polarity
    if polarity > 0:
        return "positive"
    if polarity < 0:
        return "negative"
    if st.free_negation or not _RARE_WORDS.isdisjoint(toks):
        return "negative"
    return "neutral"


def _maybe_cessation(tokens: list[str]) -> bool:
    # Cheap pre-check so the cessation regex only runs when a trigger word occurs.
    return not _CESSATION_TRIGGERS.isdisjoint(tokens)


# --------------------------------------------------------------------------------------
# Time expressions and entities
# --------------------------------------------------------------------------------------

_NUM = (
    r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"a few|few|a couple(?: of)?|couple of|several)"
)
_UNIT = r"(?:days?|weeks?|months?|years?|hours?|minutes?|decades?)"
_MONTH = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|"
    r"december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)"
)
_DAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_PERIOD = (
    r"(?:night|week|weekend|month|year|summer|winter|spring|fall|autumn|morning|afternoon|"
    r"evening|semester|time)"
)
_YEAR = r"(?:19|20)\d{2}"
_TIME_RE = re.compile(
    r"\b(?:"
    rf"{_NUM}\s+{_UNIT}\s+ago"
    r"|the day before yesterday|the other day|over the weekend|earlier today"
    rf"|(?:last|this|next|past|previous)\s+(?:{_PERIOD}|{_DAY})"
    rf"|(?:in|on|since|during|by|until|from|early|late|mid|last|this|next)\s+{_MONTH}"
    rf"(?:\s+\d{{1,2}}(?:st|nd|rd|th)?)?(?:,?\s+{_YEAR})?"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?"
    rf"|(?:january|february|april|june|july|august|september|october|november|december)"
    rf"(?:\s+\d{{1,2}}(?:st|nd|rd|th)?)?(?:,?\s+{_YEAR})?"
    rf"|(?:on\s+)?{_DAY}(?:\s+(?:morning|afternoon|evening|night))?"
    rf"|(?:every|each)\s+(?:other\s+)?(?:day|morning|night|evening|week|weekend|month|year|{_DAY})"
    r"|yesterday|today|tonight|tomorrow|recently|lately|these days|nowadays"
    r"|when i was (?:a kid|a child|young|little|younger|a teenager|\d+)"
    rf"|(?:in|since|during|by|from|until)\s+{_YEAR}|{_YEAR}"
    r")\b",
    re.IGNORECASE,
)


def find_time(text: str) -> str | None:
    """The first time expression in ``text``, verbatim, or ``None``.

    Recognises relative expressions ("yesterday", "last week", "two weeks ago", "the
    other day", "this summer"), months with optional day and year ("in March",
    "May 7, 2023", "7 May 2023"), weekdays ("on Friday"), frequencies ("every
    morning"), life periods ("when I was a kid") and years ("2022", "since 2019").
    The bare months "may" and "march" need a preposition or a day so that the verbs
    do not match.

    Parameters
    ----------
    text : str

    Returns
    -------
    str or None
    """
    m = _TIME_RE.search(text.translate(_APOS_TABLE))
    return m.group(0) if m else None


_ENTITY_RE = re.compile(
    r"(?<![\w'])(?:[A-Z][\w'&\-]*(?:\s+[A-Z][\w'&\-]*)*)"
    r"|(?<![\w.])\d+(?:[.,:/]\d+)*(?:st|nd|rd|th|k|%)?(?![\w])"
)
_POSSESSIVE_RE = re.compile(r"'s$|'$")


def find_entities(text: str) -> list[str]:
    """Capitalised names and places, and numbers, in order of appearance, deduplicated.

    A capitalised run of words is a candidate ("Anna", "New York", "NAMI"). "I" and
    its contractions are skipped, possessive "'s" is stripped, and the sentence-initial
    word, which is capitalised anyway, is dropped when it is a function word, filler or
    time word, or a lone word that is not all-caps (so "The kids", "Painting's fun" give
    nothing but "Hey Anna" gives "Anna" and "NAMI groups" gives "NAMI"). Numbers
    ("10k", "3.5", "2022", "7th") are kept as they are.

    Parameters
    ----------
    text : str

    Returns
    -------
    list of str
    """
    s = text.translate(_APOS_TABLE)
    lead = len(s) - len(s.lstrip(" \"'([*-\u201c"))
    out: list[str] = []
    seen: set[str] = set()
    for m in _ENTITY_RE.finditer(s):
        ent = m.group(0)
        if ent[0].isdigit():
            pass
        else:
            words = [_POSSESSIVE_RE.sub("", w) for w in ent.split()]
            if m.start() <= lead:
                # The sentence-initial word is capitalised anyway: keep it only when it
                # starts a multi-word name or is an acronym.
                first = words[0]
                low = first.lower()
                if (low in STOPWORDS or low in _FILLERS or low in _TIME_WORDS
                        or low in _INTENSIFIERS or first in _PRONOUN_CAPS):
                    words = words[1:]
                elif len(words) == 1 and not (first.isupper() and len(first) > 1):
                    words = []
            words = [w for w in words if w and w not in _PRONOUN_CAPS]
            # Function words stranded inside a run ("Thanks Mari And") are not names.
            while words and words[-1].lower() in STOPWORDS:
                words.pop()
            if not words:
                continue
            ent = " ".join(words)
            if ent.lower() in _FILLERS:
                continue
        if ent not in seen:
            seen.add(ent)
            out.append(ent)
    return out


# --------------------------------------------------------------------------------------
# Topic
# --------------------------------------------------------------------------------------


def key_topic(tokens: list[str], max_words: int = 3) -> str:
    """A short lower-case key phrase naming what a sentence is about.

    Heuristic, no parser: split the tokens into runs of consecutive content words,
    where stopwords, stance/affect words, light verbs ("go", "have", "feel"), time
    words, intensifiers, negators and predicate adjectives ("allergic", "keen") break
    runs; numbers are ignored. The longest run wins, the first on ties, cut to
    ``max_words``. This picks the object of the stance verb ("I love hiking in the
    mountains" → "hiking"), the governed noun ("I'm allergic to peanuts" →
    "peanuts") or the main noun phrase ("I went to a NAMI support group" →
    "nami support group").

    Parameters
    ----------
    tokens : list of str
        Output of :func:`tokenize`.
    max_words : int
        Longest phrase.

    Returns
    -------
    str
        The phrase, or ``""`` when the sentence has no content word.
    """
    best: list[str] = []
    run: list[str] = []
    for t in tokens:
        if t in _TOPIC_SKIP or t.isdigit() or len(t) < 2:
            if len(run) > len(best):
                best = run
            run = []
        else:
            run.append(t)
    if len(run) > len(best):
        best = run
    return " ".join(best[:max_words])


def content_lemmas(tokens: list[str]) -> frozenset[str]:
    """Lemmas of the content words: what two statements can share topically.

    Stopwords, stance/affect words, light verbs, time words, intensifiers, negators and
    pronouns are left out, so "I love hiking" and "I stopped hiking" share exactly
    ``{"hik"}``.

    Parameters
    ----------
    tokens : list of str
        Output of :func:`tokenize`.

    Returns
    -------
    frozenset of str
    """
    return frozenset(lemma(t) for t in tokens if t not in _TOPIC_SKIP and not t.isdigit() and len(t) > 1)


# --------------------------------------------------------------------------------------
# Pattern phrasing for summaries
# --------------------------------------------------------------------------------------

_SUFFIX_RE = re.compile(r"\s*\(\d+ mentions?(?:,[^)]*)?\)\s*$")
_TRAILING_PUNCT_RE = re.compile(rf"[\s.!?,;:\u2026{_EMOJI_CLASS}]+$")
_OBJECT_PRONOUNS = (
    (re.compile(r"\bmy\b", re.IGNORECASE), "their"),
    (re.compile(r"\bmyself\b", re.IGNORECASE), "themself"),
    (re.compile(r"\bmine\b", re.IGNORECASE), "theirs"),
    (re.compile(r"\bme\b"), "them"),
    (re.compile(r"\bI'm\b"), "they're"),
    (re.compile(r"\bI've\b"), "they've"),
    (re.compile(r"\bI'd\b"), "they'd"),
    (re.compile(r"\bI'll\b"), "they'll"),
    (re.compile(r"\bI was\b"), "they were"),
    (re.compile(r"\bI\b"), "they"),
)
_SUBJECT_RE = re.compile(
    r"^(?:i\s+am|i'm|im)\s+(?:(?:currently|still|really|so|very|just|now)\s+)*"
    r"|^(?:i've|i\s+have)\s+been\s+"
    r"|^(?:i've|i\s+have)\s+(?=\w+ed\b|got\b|gotten\b|had\b|done\b|seen\b|made\b|taken\b|been\b|become\b|grown\b|run\b|never\b|always\b|just\b|finally\b|recently\b)"
    r"|^i\s+",
    re.IGNORECASE,
)


def _third_person(verb: str) -> str:
    low = verb.lower()
    if low in _IRREGULAR_3SG:
        return _IRREGULAR_3SG[low]
    if "'" in low or low.endswith("ed") or not low.isalpha():
        return verb
    if low in _PAST_IRREGULAR:
        return verb
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(low) > 2 and low.endswith("y") and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def strip_summary_suffix(text: str) -> str:
    """Remove a trailing "(N mentions, span)" suffix from a summary.

    Parameters
    ----------
    text : str

    Returns
    -------
    str
    """
    return _SUFFIX_RE.sub("", text)


def pattern_phrase(sentence: str) -> str:
    """Turn a first-person statement into a subject-less pattern phrase.

    Strips leading discourse fillers ("Well,", "Yeah,") and the first-person subject,
    conjugating the verb to the third person: "I love hiking in the mountains." →
    "Loves hiking in the mountains"; "I'm allergic to peanuts" → "Allergic to
    peanuts"; "I'm a nurse" → "Is a nurse"; "I've been feeling stressed" → "Feeling
    stressed"; "I really enjoy jazz" → "Really enjoys jazz"; "I went to Paris" →
    "Went to Paris". Remaining first-person words become neutral third person ("my"
    → "their", "me" → "them"). Statements without a first-person subject ("The kids
    loved the beach trip.") are kept as they are. Trailing punctuation and emoji are
    removed and the first letter capitalised.

    Parameters
    ----------
    sentence : str

    Returns
    -------
    str
    """
    s = _TRAILING_PUNCT_RE.sub("", strip_summary_suffix(sentence.translate(_APOS_TABLE).strip()))
    s = _LEADING_FILLER_RE.sub("", s)
    m = _SUBJECT_RE.match(s)
    if m is not None:
        subject = m.group(0).lower().split()
        rest = s[m.end():]
        if subject[0] in ("i'm", "im", "am") or subject[:2] == ["i", "am"]:
            first = rest.split(" ", 1)[0].lower()
            if first in ("a", "an", "the", "one", "not", "no", "from", "in", "at", "on"):
                rest = "is " + rest  # "I'm a nurse" → "Is a nurse"
        elif subject == ["i"]:
            words = rest.split(" ")
            # Skip adverbs ("I really love") and conjugate the verb that follows.
            for j, w in enumerate(words):
                if w.lower() in _ADVERBS and j + 1 < len(words):
                    continue
                words[j] = _third_person(w)
                break
            rest = " ".join(words)
        elif subject[-1] != "been":
            rest = "has " + rest  # "I've got two kids" → "Has got two kids"
        s = rest
    for pattern, repl in _OBJECT_PRONOUNS:
        s = pattern.sub(repl, s)
    s = s.strip()
    return s[:1].upper() + s[1:] if s else s


def format_span(t_first: datetime, t_last: datetime) -> str:
    """A compact month span: "Mar 2024", "Mar–Jun 2024" or "Nov 2023–Feb 2024".

    Parameters
    ----------
    t_first, t_last : datetime
        The first and last time (order-insensitive).

    Returns
    -------
    str
    """
    a, b = (t_first, t_last) if t_first <= t_last else (t_last, t_first)
    if (a.year, a.month) == (b.year, b.month):
        return f"{a:%b %Y}"
    if a.year == b.year:
        return f"{a:%b}\u2013{b:%b %Y}"
    return f"{a:%b %Y}\u2013{b:%b %Y}"
