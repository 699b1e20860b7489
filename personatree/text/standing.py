"""Standing circumstances: goals, values, ongoing conditions and causes the speaker holds.

A person's later situations are read in the light of what they hold for a while: a
goal they are working towards ("I'm putting money aside for a flat"), a value they
live by ("Being honest with friends matters a lot to me"), an ongoing condition
("I'm still getting over a sprained ankle", "I'm on a strict budget until spring") or
a cause they found in their own life ("Whenever I skip lunch I get migraines"). A
later remark that depends on one rarely shares its words ("Lunch meeting ran over
again and my head is pounding"), so recall needs to know which leaves state such a
thing to reach them by meaning alone. :func:`is_standing` tells them.

The phrase patterns are kept here, beside the one function that reads them, in the
way :mod:`~personatree.text.cues` keeps its structural patterns; they match text
that has been through :func:`~personatree.text.tokens.normalize`.
"""

from __future__ import annotations

import re

from ..lexicons import DETERMINERS, FIRST_PERSON, FIRST_PERSON_SUBJECT
from .cues import is_question, is_request
from .entities import tells_the_past
from .sentences import split_sentences
from .tokens import APOSTROPHES, has_first_person, normalize, tokenize

__all__ = ["is_standing", "standing_patterns", "tells_own_situation"]

# A statement of a goal is one sentence; longer "sentences" are pasted text.
_MAX_TOKENS = 48

# Something worked towards over time: plans, aims, savings, training, resolutions.
_GOAL_RE = re.compile(
    r"\b(?:my|our) (?:\w+ )?(?:goal|aim|plan|dream|target|resolution|ambition|mission|challenge)"
    r"s? (?:\w+ ){0,3}?(?:is|are|was|for)\b"
    r"|\b(?:i|we)(?:'m| am|'re| are|'ve been| have been)? (?:\w+ )?"
    r"(?:trying|working|aiming|planning|hoping|determined|committed|saving|saving up|training|"
    r"studying|preparing|practising|practicing|budgeting|pushing|striving|building up|putting money) "
    r"(?:hard |really )?(?:to|towards?|for|toward|aside|up)\b"
    r"|\b(?:i|we)(?:'ve| have)? (?:set|given) (?:myself|ourselves)\b"
    r"|\b(?:i|we)(?:'ve| have)? (?:promised|vowed|sworn|resolved|pledged|decided) (?:myself |ourselves )?to\b"
    r"|\b(?:i|we)(?:'m| am|'re| are) (?:\w+ )?(?:on track|in training|on a mission)\b"
    r"|\bsaving (?:\w+ ){0,3}?for\b"
    # A wish with a deadline is a goal: "I want to be fluent before the trip".
    r"|\b(?:i|we) (?:really |badly |desperately |so )?(?:want|hope|need|wish|have) to\b[^.!?;]{0,60}?"
    r"\b(?:by|before|until|in time for|this year|next year|one day|someday)\b"
)

# What the speaker holds dear or will not do: values, principles, lines not crossed.
_VALUE_RE = re.compile(
    r"\b(?:matters?|mean[st]?|counts?|is important|are important|is essential|is sacred|"
    r"is non-negotiable|is a (?:big|huge) deal|is everything|is central|is precious) "
    r"(?:\w+ ){0,3}(?:to|for) (?:me|us)\b"
    r"|\b(?:important|essential|precious|central|sacred|non-negotiable) to (?:me|us)\b"
    r"|\b(?:i|we) (?:strongly |really |firmly |deeply |truly )?"
    r"(?:believe|value|treasure|cherish|stand for)\b"
    r"|\b(?:i|we) (?:really |deeply |truly )?care (?:\w+ )?(?:a lot |deeply |so much )?about\b"
    r"|\b(?:i|we)(?:'d| would| will|'ll)? (?:never|not ever|refuse to|won't ever|wouldn't ever)\b"
    r"|\b(?:on|as a matter of) principle\b|\bprinciples?\b|\b(?:a|my|our|one) (?:\w+ )?rule\b"
    r"|\b(?:rules?|things?|way) (?:i|we) (?:live|stick|go) by\b"
    r"|\b(?:it's|it is|it's just) (?:really |so |very |always )?(?:important|essential|vital|crucial|"
    r"right|wrong) to\b"
    r"|\ba line (?:i|we) (?:don't|won't|never)\b|\bdeal-?breaker\b"
    r"|\b(?:i|we) (?:always )?(?:make a point of|insist on)\b"
)

# An ongoing condition of the speaker's life: health, recovery, money, constraints,
# someone close in trouble, and states that last ("still", "for months").
_CONDITION_RE = re.compile(
    r"\b(?:recovering|recovery|healing|rehab|physio|getting over|convalescing)\b"
    r"|\b(?:allergic|intolerant|diabetic|asthmatic|pregnant|expecting|sober|in remission|"
    r"on medication|on meds|on antibiotics|in a cast|on crutches|in a brace|on leave|"
    r"between jobs|out of work|unemployed|grieving|in mourning|burned out|burnt out)\b"
    r"|\bdiagnosed\b|\b(?:i|we)(?:'ve| have)? (?:got )?(?:a |an )?(?:bad|chronic|dodgy|weak|"
    r"sore|bum|injured|broken|recurring) \w+\b"
    r"|\b(?:i|we) (?:suffer|struggle|live|deal|cope) with\b"
    r"|\b(?:i'm|i am|we're|we are) (?:\w+ )?(?:struggling|dealing|living|coping) with\b"
    r"|\bon a (?:\w+ ){0,2}budget\b|\b(?:money|cash|funds) (?:is|are) (?:\w+ )?tight\b"
    r"|\b(?:i'm|i am|we're|we are) (?:not allowed|banned|forbidden|told not|under orders)\b"
    r"|\b(?:doctor|dentist|physio|surgeon|nurse|therapist)\b[^.!?]{0,40}\b(?:said|says|told|wants|"
    r"advised|ordered)\b"
    r"|\b(?:my|our) (?:\w+ )?(?:mum|mom|dad|father|mother|son|daughter|wife|husband|partner|"
    r"brother|sister|gran|grandma|grandmother|grandad|granddad|grandpa|grandfather|aunt|uncle|friend|"
    r"kid|child|baby)"
    r"(?:'s)? (?:is |has been |was )?(?:\w+ )?(?:in hospital|in the hospital|ill|sick|unwell|"
    r"in care|having surgery|having treatment)\b"
    r"|\b(?:i|we)(?:'ve| have) been \w+ (?:for|since) (?:\w+ ){0,2}"
    r"(?:days|weeks|months|years|ages|a while|a year|a month)\b"
    r"|\b(?:i'm|i am|we're|we are) still\b"
)

# A cause the speaker found in their own life: "whenever I skip lunch I get a
# headache", "ever since I started X, Y stopped", "loud music makes me anxious".
_CAUSE_RE = re.compile(
    r"\b(?:ever since|whenever|every time|each time|any time|anytime) (?:i|we)\b"
    r"|\b(?:makes?|made|keeps?|gives?|leaves?|sets?) (?:me|us) (?:\w+ )?"
    r"(?:feel|anxious|sick|ill|tired|calm|happy|nervous|dizzy|sleepy|stressed|on edge|off)\b"
    r"|\b(?:gives?|gave) (?:me|us) (?:a |an )?(?:\w+ )?(?:headache|migraine|rash|hives|nightmares|"
    r"heartburn|anxiety|cramps|the creeps)\b"
    r"|\b(?:helps?|helped) (?:me|us) (?:\w+ )?(?:sleep|focus|relax|cope|calm|concentrate|breathe)\b"
    r"|\b(?:triggers?|triggered|sets? off) (?:my|our)\b"
    # Something in their life got better or worse because of something they did:
    # "my knee stopped hurting once I changed shoes", "... is how I lost weight".
    r"|\b(?:better|worse|easier|calmer|healthier|happier|went away|gone away|calmed down|cleared up|"
    r"improved|disappeared|vanished|eased|stopped hurting|sleep|slept)\b[^.!?;]{0,60}?"
    r"\b(?:since|once|after|when|because|thanks to|ever since) (?:i|we)\b"
    r"|\b(?:since|once|after|ever since) (?:i|we) \w+[^.!?;]{0,60}?"
    r"\b(?:better|worse|easier|calmer|went away|gone|calmed down|cleared up|improved|disappeared|"
    r"vanished|eased)\b"
    r"|\b(?:is|was) (?:how|why) (?:i|we)\b"
    r"|\b(?:started|stopped|began|quit) \w+(?: \w+)? (?:when|once|after|since) (?:i|we)\b"
)

# Every alternative of a pattern holds one of its anchor words, so a pattern is run
# only on a sentence that has one: the same verdicts, at a fraction of the cost (the
# retrieval state asks this of every leaf of a user when it is built).
_PATTERNS: tuple[tuple[frozenset[str], re.Pattern[str]], ...] = (
    (frozenset("""goal goals aim aims plan plans dream dreams target targets resolution
        resolutions ambition ambitions mission missions challenge challenges trying working
        aiming planning hoping determined committed saving training studying preparing
        practising practicing budgeting pushing striving building putting myself ourselves
        promised vowed sworn resolved pledged decided track want hope need wish have""".split()),
     _GOAL_RE),
    (frozenset("""matter matters mean means meant count counts important essential sacred non
        deal everything central precious believe value treasure cherish stand care never
        ever refuse principle principles rule rules by vital crucial right wrong line
        dealbreaker point insist""".split()),
     _VALUE_RE),
    (frozenset("""recovering recovery healing rehab physio over convalescing allergic intolerant
        diabetic asthmatic pregnant expecting sober remission medication meds antibiotics
        cast crutches brace leave jobs work unemployed grieving mourning burned burnt
        diagnosed bad chronic dodgy weak sore bum injured broken recurring suffer struggle
        live deal cope struggling dealing living coping budget tight allowed banned
        forbidden told orders doctor dentist physio surgeon nurse therapist hospital ill
        sick unwell care surgery treatment days weeks months years ages while year month
        still""".split()),
     _CONDITION_RE),
    (frozenset("""since whenever time anytime feel anxious sick ill tired calm happy nervous dizzy
        sleepy stressed edge off headache migraine rash hives nightmares heartburn anxiety
        cramps creeps help helps helped trigger triggers triggered once after when because
        thanks how why""".split()),
     _CAUSE_RE),
)

# A question whose clause opens with one of these, then "I" or "we", asks about the
# speaker's own course ("Should I ...", "Am I ...", "..., can we ..."). Only the
# auxiliaries that take "I" or "we": "Does I ..." names someone called "I".
_YES_NO_OPENERS = frozenset(
    "should shall could can would will do did am are was were have had may might must".split()
)
_CLAUSE_RE = re.compile(r"[,;:]\s+|\s[-\u2013\u2014]\s")
# Quoted words (double quotes, or single quotes around words with apostrophes
# inside: 'I'm fine') are someone's speech.
_QUOTED_RE = re.compile(r"\"[^\"]*\"|\u201c[^\u201d]*\u201d|(?<!\w)'(?:[^']|'(?=\w))+'(?!\w)")
_YEAR_RE = re.compile(r"\b(?:1[89]|20)\d\d\b")


def is_standing(sentence: str, tokens: list[str] | None = None) -> bool:
    """Whether a sentence states a goal, value, ongoing condition or cause of the speaker.

    The speaker is in it ("I", "we", "me", "my") and it says something that holds for
    a while and bears on later situations: a goal worked towards ("I'm training for a
    half marathon"), a value or a line not crossed ("Keeping my word means a lot to
    me", "I'd never lend money to family"), an ongoing condition ("I'm still
    recovering from the flu", "We're on a tight budget", "My dad is in hospital") or
    a cause in their own life ("Whenever I drink coffee late I can't sleep").
    Questions and pasted run-ons never count. A habit or a like is a disposition
    (:func:`~personatree.text.cues.is_disposition`), not this.

    Parameters
    ----------
    sentence : str
        The sentence to classify.
    tokens : list of str, optional
        ``tokenize(sentence)`` when the caller already has it.

    Returns
    -------
    bool
        True for a standing goal, value, condition or cause of the speaker.
    """
    toks = tokens if tokens is not None else tokenize(sentence)
    if len(toks) > _MAX_TOKENS or sentence.rstrip().endswith("?"):
        return False
    if not has_first_person(toks):
        return False
    words = set(toks)
    text = normalize(sentence)
    return any(not anchors.isdisjoint(words) and p.search(text) is not None for anchors, p in _PATTERNS)


def standing_patterns() -> tuple[re.Pattern[str], ...]:
    """The patterns :func:`is_standing` reads, for fingerprints of data derived from it.

    Returns
    -------
    tuple of re.Pattern
    """
    return tuple(p for _, p in _PATTERNS)


def tells_own_situation(text: str) -> bool:
    """Whether a query is the person telling a situation of their own.

    One of its sentences is a statement with the speaker in it, not a task for the
    assistant ("The trains are on strike, so I'm stuck at home all week"), or a
    yes/no question about themself ("Should I take the job?"): a remark whose
    meaning depends on what the person holds, unlike a question about what happened
    ("When did Sam move?", "Did Sam go?"), a statement about someone else (words in
    quotes are someone's speech), a memory ("In 2009 I lived in Oslo", "when I was
    ten") or a task ("List three hotels").

    Parameters
    ----------
    text : str
        The query.

    Returns
    -------
    bool
    """
    for s in split_sentences(_QUOTED_RE.sub(" ", text.translate(APOSTROPHES))):
        toks = tokenize(s)
        if not toks:
            continue
        if not is_question(s):
            if _speaks_of_self(toks) and not is_request(toks, s) and not _recalls(s):
                return True
        elif any(_asks_own_course(tokenize(c)) for c in _CLAUSE_RE.split(s)):
            return True
    return False


def _recalls(sentence: str) -> bool:
    """A memory rather than a situation: it tells of years back or names a year."""
    return tells_the_past(sentence) or _YEAR_RE.search(sentence) is not None


def _speaks_of_self(toks: list[str]) -> bool:
    """The speaker is in the sentence: a first-person pronoun, not a word named ("the "I" of the poem")."""
    return any(t in FIRST_PERSON and (i == 0 or toks[i - 1] not in DETERMINERS) for i, t in enumerate(toks))


def _asks_own_course(toks: list[str]) -> bool:
    """"should I ...", "am I ...": a yes/no question with the speaker as its subject."""
    return bool(toks) and toks[0] in _YES_NO_OPENERS and not FIRST_PERSON_SUBJECT.isdisjoint(toks[1:3])
