"""Cues: what kind of sentence this is, and whether it is evidence about the speaker.

The offline judge keeps a sentence as a leaf when it says something about the speaker
or their life (:func:`is_informative`, :func:`informative_part`) and drops questions
(:func:`is_question`), tasks for the other party (:func:`is_request`), pasted code
(:func:`looks_like_code`), greetings and fillers. :func:`is_disposition` marks a
lasting habit, like or constraint, which matters to advice even with few shared words.
"""

from __future__ import annotations

import re

from ..lexicons import (
    ADVERBS,
    AFFECT_NEG,
    AFFECT_POS,
    CHANGE_OF_STATE_RE,
    DISPOSITION_MARKERS,
    ELIDED_SUBJECT_OPENERS,
    FILLERS,
    FILLER_PHRASE_RE,
    FIRST_PERSON_SUBJECT,
    HABIT_VERBS,
    INTENSIFIERS,
    NEGATED_AUXILIARIES,
    OTHER_PEOPLE,
    REQUEST_LEADS,
    REQUEST_MODALS,
    REQUEST_MODAL_EXEMPT,
    REQUEST_VERBS,
    SECOND_PERSON,
    STANCE_NEG,
    STANCE_POS,
    STANDING_NEGATORS,
    STOPWORDS,
    THIRD_PERSON_FORMS,
    TIME_WORDS,
)
from .sentences import CLOSERS, EMOJI_CLASS
from .stance import analyze_stance, speaker_change, told_by_time
from .tokens import has_first_person, normalize, tokenize

__all__ = [
    "is_question", "looks_like_code", "is_request", "is_disposition", "is_informative",
    "informative_part",
]

_LETTER_RE = re.compile(r"[A-Za-z\u00C0-\u024F]")
_TRAIL_RE = re.compile(rf"[\s{CLOSERS}{EMOJI_CLASS}.!]+$")


def is_question(sentence: str) -> bool:
    """Whether a sentence is a question (ends with ``?``, ignoring emoji and quotes).

    Parameters
    ----------
    sentence : str
        One sentence.

    Returns
    -------
    bool
        True for a question.
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

# Every form of code above holds one of these characters; prose mostly has none.
_CODE_CHAR_RE = re.compile(r"[:;{}(=/#<]")


def looks_like_code(sentence: str) -> bool:
    """Whether a sentence is a line of source code or markup rather than prose.

    Parameters
    ----------
    sentence : str
        One sentence or line.

    Returns
    -------
    bool
        True for code or markup.
    """
    # The pattern's unanchored parts would be tried at every position of the line.
    return _CODE_CHAR_RE.search(sentence) is not None and _CODE_RE.search(sentence) is not None


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
        Output of :func:`~personatree.text.tokenize`.
    sentence : str, optional
        The sentence, to tell a first-person subject of the task's own words ("a
        recipe I could make") from one of a clause after a comma.

    Returns
    -------
    bool
        True when it opens with a task verb or a polite modal and "you".
    """
    i = 0
    while i < len(tokens) and tokens[i] in REQUEST_LEADS:
        i += 1
    if i >= len(tokens):
        return False
    if tokens[i] in REQUEST_MODALS and i + 1 < len(tokens) and tokens[i + 1] == "you":
        j = i + 2
        while j < len(tokens) and tokens[j] in REQUEST_LEADS:
            j += 1
        if j >= len(tokens) or tokens[j] in REQUEST_MODAL_EXEMPT:
            return False
    elif tokens[i] not in REQUEST_VERBS:
        return False
    if FIRST_PERSON_SUBJECT.isdisjoint(tokens):
        return True
    if sentence is None:
        return False
    # The speaker speaks for themself only in a clause after a break ("..., I always forget").
    _, sep, tail = _split_first_clause(sentence)
    return not sep or FIRST_PERSON_SUBJECT.isdisjoint(tokenize(tail))


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
        The sentence to classify; pasted run-ons never count.
    tokens : list of str, optional
        ``tokenize(sentence)`` when the caller already has it.

    Returns
    -------
    bool
        True for a habit, like, aversion, constraint, self-knowledge or choice.
    """
    toks = tokens if tokens is not None else tokenize(sentence)
    if len(toks) > _DISPOSITION_MAX_TOKENS or sentence.rstrip().endswith("?"):
        return False
    if _PICK_RE.search(sentence) is not None:
        return True
    if FIRST_PERSON_SUBJECT.isdisjoint(toks) and "me" not in toks and "my" not in toks:
        return False
    markers = DISPOSITION_MARKERS.intersection(toks)
    if markers and markers <= _FOLLOW and _AS_FOLLOWS_RE.search(sentence) is not None:
        markers = frozenset()  # "as follows" introduces a list, not a habit
    if markers or _negated_habit(toks):
        return True
    if _CHOICE_RE.search(sentence) is not None or _FIND_IT_RE.search(sentence) is not None:
        return True
    return analyze_stance(sentence, toks).stance != 0


def is_change(sentence: str, stance: str | None = None, tokens: list[str] | None = None) -> bool:
    """Whether a sentence tells a change in the speaker's own circumstances or habits.

    A stop or a start ("I gave up chess", "I took up rowing"), or a change of state in
    the speaker's life: a move, a job or relationship begun or ended, a diagnosis or
    injury, a habit dropped ("We moved to the coast in spring", "I got promoted to
    team lead", "Turns out I'm allergic to nuts"), or a contrast with before told by
    time words alone ("I'm my own boss now", "no more alarms at six", "since I
    collected my pension"), though not the present moment ("right now") nor a
    duration ("for a while now"). Questions and sentences without the speaker in them
    never count; a statement that leaves its subject out ("Started at a new studio on
    Monday") has the speaker in it, and so has one that names no one at all when its
    words name the change ("A slipped disc means no lifting for months"). A change
    denied ("we're not moving") or gone through by someone else ("my cousin got
    married") is not the speaker's, unless it changes the speaker's life whoever it
    befalls ("my granny passed away") or is done to the speaker ("he broke up with me").

    Parameters
    ----------
    sentence : str
    stance : str, optional
        The sentence's stance label when the caller already has it (a leaf's stored
        stance); else only the words are read.
    tokens : list of str, optional
        ``tokenize(sentence)`` when the caller already has it.

    Returns
    -------
    bool
    """
    if sentence.rstrip().endswith("?"):
        return False
    # The cheap tests first: recall's state asks this of every leaf of a user.
    matches: list[re.Match[str]] | None = None
    if stance not in ("stopped", "started"):
        matches = _speaker_changes(sentence)
        if not matches:
            return False
    toks = tokens if tokens is not None else tokenize(sentence)
    if has_first_person(toks) or (bool(toks) and toks[0] in ELIDED_SUBJECT_OPENERS):
        return True
    # A statement that names no one at all is the speaker's ("A slipped disc means no
    # lifting", "Teetotal for months now") when its words name the change: time words
    # alone name none ("a lot has happened since then").
    if matches is None:
        matches = _speaker_changes(sentence)
    return any(not told_by_time(m) for m in matches) and _names_no_one(sentence, toks)


def _speaker_changes(sentence: str) -> list[re.Match[str]]:
    """The change phrases of a sentence that tell a change of the speaker's own."""
    low = normalize(sentence)
    return [m for m in CHANGE_OF_STATE_RE.finditer(low) if speaker_change(low, m)]


# Someone other than the speaker, by a word for them.
_SOMEONE_ELSE = OTHER_PEOPLE | SECOND_PERSON | THIRD_PERSON_FORMS
# Capitalised without naming anyone: days, months, holidays.
_NOT_NAMES = TIME_WORDS | frozenset("may march christmas easter".split())


def _names_no_one(sentence: str, toks: list[str]) -> bool:
    """No person but the speaker in it: no word for someone else, no name."""
    if not _SOMEONE_ELSE.isdisjoint(toks):
        return False
    return all(m.group(0).lower() in _NOT_NAMES for m in _NAME_RE.finditer(sentence))


# A capitalised word inside a sentence, not at its start nor opening a quotation: a
# name, most likely. Narrower than :func:`~personatree.text.find_entities` on purpose:
# an acronym or a capitalised run at the start of a statement ("Dry January") is no
# person.
_NAME_RE = re.compile(r"(?<!^)(?<![.!?:;\"'] )(?<![.!?:;\"'])\b(?!I\b|I'|OK\b)[A-Z][a-z]+")


def _negated_habit(toks: list[str]) -> bool:
    """"I don't eat meat", "I will not fly", "that doesn't work for me": a negated habit verb."""
    for i, t in enumerate(toks):
        if t in STANDING_NEGATORS or (t == "not" and i > 0 and toks[i - 1] in NEGATED_AUXILIARIES):
            j = i + 1
            while j < len(toks) and toks[j] in ADVERBS:
                j += 1  # "I don't really eat ..."
            if j < len(toks) and toks[j] in HABIT_VERBS:
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
        One sentence of a message (:func:`~personatree.text.split_sentences`).
    tokens : list of str, optional
        ``tokenize(sentence)`` when the caller already has it.

    Returns
    -------
    bool
        True to keep the sentence as evidence.
    """
    if _LETTER_RE.search(sentence) is None:
        return False
    toks = tokens if tokens is not None else tokenize(sentence)
    if not toks:
        return False
    first_person = has_first_person(toks)
    if is_question(sentence):
        return False
    if toks[0] in SECOND_PERSON and not first_person:
        return False
    if is_request(toks, sentence) or looks_like_code(sentence) or _is_framed_request(sentence):
        return False
    low = normalize(sentence)
    if FILLER_PHRASE_RE.search(low) is not None:
        toks = tokenize(FILLER_PHRASE_RE.sub(" ", low))
        first_person = has_first_person(toks)
    n_content = 0
    sentiment = False
    last = ""
    for t in toks:
        if t in STANCE_POS or t in STANCE_NEG or t in AFFECT_NEG:
            sentiment = True
            n_content += 1
        elif t in STOPWORDS or t in FILLERS or t in INTENSIFIERS:
            # "Swimming is fun.": a positive reaction word still marks an opinion.
            sentiment = sentiment or t in AFFECT_POS
        else:
            sentiment = sentiment or t in AFFECT_POS
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
        A sentence that may join a statement to a question or request.
    tokens : list of str, optional
        Its tokens, when the caller already has them (else tokenized here).

    Returns
    -------
    str or None
        The sentence or its opening statement, stripped of the rest.
    """
    if is_informative(sentence, tokens):
        return sentence
    head, sep, tail = _split_first_clause(sentence)
    if not sep or not tail.strip():
        return None
    head = head.strip()
    htoks = tokenize(head)
    if FIRST_PERSON_SUBJECT.isdisjoint(htoks[:2]):
        return None  # only a clause the speaker opens as its subject stands alone
    return head if is_informative(head, htoks) else None
