"""Lexical stance analysis: the speaker's stance in one sentence, read from its words.

This is the *reading* side of stance. :func:`analyze_stance` scores a sentence with
the stance/affect lexicon of :mod:`personatree.lexicons` (negation within a window,
cessation phrases such as "stopped", "no longer", "used to"); :func:`stance_label`
turns that, with stance idioms and the hypothetical and intention frames, into one
of the five labels of :data:`personatree.stance.StanceName`. What a label *means*
for the tree (its side, which evidence supports or conflicts with which pattern) is
the stance data model in :mod:`personatree.stance`, which knows nothing of words;
:data:`STANCE_LABELS` is that model's label set, so the two cannot drift apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal, get_args

from ..lexicons import (
    AFFECT_NEG,
    AFFECT_POS,
    CESSATION_CANCEL_RE,
    CESSATION_RE,
    CESSATION_TRIGGERS,
    COMPOUND_NOT_AFFECT_RE,
    DETERMINERS,
    ELIDED_SUBJECT_OPENERS,
    FIRST_PERSON_SUBJECT,
    HYPOTHETICAL_RE,
    INTENT_FRAME_RE,
    LIKE_FORMS,
    LIKE_SUBJECTS,
    MOMENT_REACTIONS,
    NEG_EXEMPT,
    NEGATED_START_RE,
    NEGATION_IDIOM_RE,
    NEGATORS,
    OTHER_PEOPLE,
    PERCEIVING_VERBS,
    POSITIVE_NEGATED,
    RARE_WORDS,
    STANCE_NEG,
    STANCE_PHRASE_NEG_RE,
    STANCE_PHRASE_POS_RE,
    STANCE_POS,
    UNBEATEN,
    UNBEATEN_LINKS,
    UNBEATEN_NEGATORS,
    START_RE,
    STOP_EXTRA_RE,
)
from ..stance import StanceName
from .address import to_listener
from .tokens import has_first_person, normalize, tokenize

__all__ = [
    "Stance", "StanceSource", "find_cessation", "analyze_stance", "STANCE_LABELS", "stance_label",
    "stance_reading", "speaker_change", "told_by_time",
]


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
    episodic_negation : bool
        The free negation denies one past episode only ("didn't", "couldn't",
        "wasn't": "I didn't get a lane at the pool"), not a standing state or habit.
    """

    polarity: int
    stance: int
    affect: int
    negated: bool
    free_negation: bool
    cessation: bool
    episodic_negation: bool = False


def find_cessation(text: str) -> str | None:
    """The first cessation phrase in ``text``, or ``None``.

    Cessation verbs flip the stance toward an ongoing pattern: "I stopped hiking",
    "I don't hike anymore", "I used to love hiking", "I quit my job". A negator right
    before the verb cancels it ("I never stopped running", "I can't quit coffee"), and
    a verb whose subject is another person ends nothing of the speaker's ("my uncle used
    to take us sailing", "he quit last year"), nor does one in a scene the speaker only
    heard or saw ("I heard Dad say the arguing had to stop").

    Parameters
    ----------
    text : str
        Any text (normalised internally).

    Returns
    -------
    str or None
        The matched phrase, lower-case.
    """
    match, _ = _first_cessation(normalize(text))
    return match.group(0) if match is not None else None


# "anymore" needs a negator before it ("I don't hike anymore"): a negator there is
# part of the cessation, not a cancellation of it.
_NEEDS_NEGATOR = frozenset({"anymore", "any more"})


def _cancelled(low: str, m: re.Match[str]) -> bool:
    """Whether a negator just before the cessation phrase ``m`` cancels it ("never stopped")."""
    if m.group(0) in _NEEDS_NEGATOR:
        return False
    start = m.start()
    return CESSATION_CANCEL_RE.search(low[max(0, start - 24):start]) is not None


# Words that may stand between a cessation verb and its subject ("she has finally quit").
_BEFORE_VERB = frozenset(
    """just finally recently actually totally completely eventually basically also both all
    even really officially literally already first have has had was were is are been""".split()
)
# Where the clause of a cessation verb starts, looking back from it; a conjunction
# there may leave its subject out ("my uncle loved the sea, and used to sail").
_CLAUSE_START_RE = re.compile(
    r"[.,;:!?]|\b(and|but|so|because|when|while|after|before|since|though|although|then)\b"
)
_SENTENCE_START_RE = re.compile(r"[.!?;]")
_SHARED_SUBJECT = frozenset({"and", "but", "then"})
# Phrases told after a negated verb, whose subject comes before the negator: "I don't
# see my friends anymore", "she isn't in the choir anymore".
_NO_SUBJECT = frozenset({"anymore", "any more", "not anymore"})


def _negator_at(words: list[str]) -> int | None:
    """The index of the last negator (:data:`~personatree.lexicons.NEGATORS`) among
    ``words``, or ``None``."""
    return next((i for i in range(len(words) - 1, -1, -1) if words[i] in NEGATORS), None)


def _change_subject(low: str, m: re.Match[str]) -> str | None:
    """The word that stands as the subject of the change phrase ``m`` (a cessation or
    a start), or ``None`` when the clause leaves it out and no clause before gives it
    ("Gave up sugar")."""
    head = low[:m.start()]
    starts = list(_CLAUSE_START_RE.finditer(head))
    clause = head[starts[-1].end():] if starts else head
    words = tokenize(clause)
    if m.group(0) in _NO_SUBJECT:
        neg = _negator_at(words)
        if neg is None:
            return None
        words = words[:neg]
    # An adverb of manner stands between a subject and its verb as the words above do
    # ("we slowly began").
    words = [w for w in words if w not in _BEFORE_VERB and not (len(w) > 4 and w.endswith("ly"))]
    if words:
        return words[-1]
    if not starts or starts[-1].group(1) not in _SHARED_SUBJECT:
        return None
    # "My uncle loved the sea, and used to sail": the subject of the clause before.
    before = head[:starts[-1].start()]
    sentences = list(_SENTENCE_START_RE.finditer(before))
    lead = tokenize(before[sentences[-1].end():] if sentences else before)
    return next((w for w in lead if w not in DETERMINERS), None)


def _told_of_other(low: str, m: re.Match[str]) -> bool:
    """Whether another person is the subject of the cessation phrase ``m``: "my uncle
    used to take us sailing", "he quit last year", "she isn't in the choir anymore". A
    cessation with the speaker as subject, or with none ("Gave up sugar in May"), is
    the speaker's."""
    return _change_subject(low, m) in OTHER_PEOPLE


# Changes told by time words alone ("I'm my own boss now", "no more alarms", "since
# then") have no verb whose negator or subject could be read.
_TIME_TOLD_RE = re.compile(
    r"(?:[.;,:!] )?(?:now|since|no more|no longer|these days|nowadays|anymore|any more|for good|"
    r"from now on)\b"
)

# Events in a family that change the speaker's own life too, whoever they befall:
# "my dad passed away", "my wife is pregnant", "my mum was diagnosed with dementia", "our
# daughter was born on Tuesday" (a birth told by the child's word opens the phrase).
_FAMILY_EVENT_RE = re.compile(
    r"passed away|pregnant|gave birth|(?:had|welcomed) (?:a|an|our) |diagnosed"
    r"|(?:son|daughter|baby|twins|triplets|little|grandson|granddaughter|grandchild|firstborn) "
)
# A change another person made with the speaker as its object: "she broke up with me".
_TO_SPEAKER_RE = re.compile(r" (?:with )?(?:me|us)\b")


def told_by_time(m: re.Match[str]) -> bool:
    """Whether a change phrase ``m`` is time words alone ("now", "since then", "no more").

    Parameters
    ----------
    m : re.Match
        A match of :data:`~personatree.lexicons.CHANGE_OF_STATE_RE`.

    Returns
    -------
    bool
    """
    return _TIME_TOLD_RE.match(m.group(0)) is not None


def speaker_change(low: str, m: re.Match[str]) -> bool:
    """Whether the change phrase ``m`` in normalised text ``low`` is one the speaker
    went through: no negator just before its verb ("we're not divorcing", "I never
    moved") and no other person as its subject ("Dad had stepped down", "my sister got
    married"), unless it is an event that changes the speaker's life whoever it
    befalls (a death, a birth, a diagnosis in the family) or one done to the speaker
    ("she broke up with me"). A change told by time words alone ("we live on a boat
    now") has neither to read and counts. No change in a scene the speaker only heard
    or saw ("I heard Dad say the arguing had to stop") is theirs.

    Parameters
    ----------
    low : str
        Normalised text (:func:`~personatree.text.tokens.normalize`).
    m : re.Match
        A match of :data:`~personatree.lexicons.CHANGE_OF_STATE_RE` in ``low``.

    Returns
    -------
    bool
    """
    if _perceived(low):
        return False
    if told_by_time(m):
        return True
    if _cancelled(low, m):
        return False
    if _FAMILY_EVENT_RE.match(m.group(0)) is not None or _TO_SPEAKER_RE.match(low, m.end()) is not None:
        return True
    if has_first_person(tokenize(m.group(0))):
        return True  # the phrase names its subject: "my wife and I are separating"
    return _change_subject(low, m) not in OTHER_PEOPLE


# "I heard", "I saw", ... opening a sentence, after a bracketed label ("[kitchen]").
_PERCEIVED_RE = re.compile(r"(?:\[[^\]]*\]\s*)?i (?:" + "|".join(sorted(PERCEIVING_VERBS)) + r")\b")


def _perceived(low: str) -> bool:
    """Whether normalised text tells a scene the speaker perceived and is not in: it
    opens with "I" and a verb of perceiving, and no first-person word follows ("I heard
    Dad say the arguing had to stop", "I saw the bakery had closed for good"). A change
    in it is someone else's; "I noticed I'd stopped craving sugar" is the speaker's."""
    m = _PERCEIVED_RE.match(low)
    return m is not None and not has_first_person(tokenize(low[m.end():]))


def _first_cessation(low: str) -> tuple[re.Match[str] | None, bool]:
    """The first uncancelled cessation phrase in normalised text with the speaker as
    subject, and whether a cancelled one came before it (none in a scene the speaker
    only perceived)."""
    cancelled = False
    if _perceived(low):
        return None, cancelled
    for m in CESSATION_RE.finditer(low):
        if _told_of_other(low, m):
            continue
        if not _cancelled(low, m):
            return m, cancelled
        cancelled = True
    return None, cancelled


def _elided_lead(word: str) -> bool:
    # A verb where a subject would stand: the sentence left the speaker out ("Handed
    # in my notice and started a course"). Past forms only, long enough not to be a
    # name or a noun ("Ted", "bread").
    return word in ELIDED_SUBJECT_OPENERS or (len(word) >= 6 and word.endswith("ed"))


def _speaker_start(low: str, toks: list[str]) -> bool:
    """Whether normalised text tells a start of the speaker's own.

    A start phrase (:data:`~personatree.lexicons.START_RE`) whose subject is the
    speaker ("I've started swimming", "so we joined the club"), or left out
    ("Started pottery in May, I love it", "Handed in my notice and started a
    course"). Another subject starts nothing of the speaker's ("it started to
    drizzle", "Dad started the van", "my pulse began to climb", "my son joined the
    scouts"), and neither does a reaction of a moment ("I began to weep", "we both
    started giggling"): a scene, not something taken up.
    """
    for m in START_RE.finditer(low):
        subject = _change_subject(low, m)
        if subject is None:
            if not has_first_person(toks):
                continue
        elif subject not in FIRST_PERSON_SUBJECT and not _elided_lead(subject):
            continue
        after = low[m.end():].split(None, 2)
        verb = after[1] if after[:1] == ["to"] and len(after) > 1 else after[0] if after else ""
        if verb.strip(".,;:!?'\"") not in MOMENT_REACTIONS:
            return True
    return False


def _maybe_cessation(tokens: list[str]) -> bool:
    # Cheap pre-check so the cessation regex only runs when a trigger word occurs.
    return not CESSATION_TRIGGERS.isdisjoint(tokens)


# How many tokens before a stance or affect word a negator still flips it.
_NEG_WINDOW = 3
# "can't stand": the negator belongs to the idiom, it does not flip "stand".
_CANT = ("can't", "cannot", "cant", "couldn't")
# "can't beat it": praise, where "can't feel better" is not.
_BEAT = frozenset({"beat", "beats", "top", "tops"})


def _against(span: str) -> bool:
    """Whether a positive idiom's words would read against it: a negator or "stress"."""
    words = tokenize(span)
    return not NEGATORS.isdisjoint(words) or "stress" in words


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


def _polarity(stance: int, affect: int) -> int:
    """The overall sign: an explicit stance word weighs double a general affect word."""
    return _sign(2 * stance + affect)


def _word_value(toks: list[str], i: int, prev: str) -> tuple[int, bool, bool]:
    """What token ``i`` says in the lexicon: (sign, is a stance word, takes the negator).

    The sign is +1, -1 or 0 before any negation. "takes the negator" is True for
    "can't stand", whose negator is part of the idiom rather than a flip of it.
    """
    t = toks[i]
    if t in STANCE_POS:
        return 1, True, False
    if t in STANCE_NEG:
        return -1, True, False
    if t in LIKE_FORMS and prev in LIKE_SUBJECTS:
        return 1, True, False
    if t == "stand" and prev in _CANT:
        return -1, True, True
    if t in ("sick", "tired") and i + 1 < len(toks) and toks[i + 1] == "of":
        return -1, True, False
    if t in AFFECT_POS:
        return 1, False, False
    if t in AFFECT_NEG:
        return -1, False, False
    return 0, False, False


# Every word :func:`_word_value` can score: most tokens are none of them, and one set
# lookup skips the call for those.
_SCORED = STANCE_POS | STANCE_NEG | LIKE_FORMS | AFFECT_POS | AFFECT_NEG | {"stand", "sick", "tired"}


def _scored_within(toks: list[str], neg: int) -> bool:
    """Whether a stance or affect word, or a comparison nothing wins ("couldn't be
    happier"), follows the negator at ``neg`` within reach."""
    window = toks[neg + 1:neg + 1 + _NEG_WINDOW]
    return not (_SCORED.isdisjoint(window) and UNBEATEN.isdisjoint(window))


def _unbeaten(toks: list[str], neg: int, i: int) -> bool:
    """Whether the negator at ``neg`` and the comparison at ``i`` say nothing beats it."""
    return (
        i - neg <= _NEG_WINDOW
        and (toks[neg] in UNBEATEN_NEGATORS or (toks[neg] in _CANT and toks[i] in _BEAT))
        and all(t in UNBEATEN_LINKS for t in toks[neg + 1:i])
    )


@dataclass(slots=True)
class _WordScan:
    """The running sums of :func:`_scan_words` (unclipped)."""

    stance: int = 0
    affect: int = 0
    negated: bool = False
    # The negators that flipped nothing: each a free negation of the statement.
    free_negators: list[str] = field(default_factory=list)

    @property
    def free_negation(self) -> bool:
        return bool(self.free_negators)

    @property
    def episodic_negation(self) -> bool:
        """Every free negation denies one past episode ("we didn't reach the summit")."""
        return bool(self.free_negators) and all(n in _EPISODE_NEGATORS for n in self.free_negators)


# Subjects of a negator that deny something of others, not of the speaker: "kids who
# never had a garden", "plenty of people don't".
_OTHERS_DENY = OTHER_PEOPLE | {"who", "others", "people", "someone", "somebody", "folks"}
# Negators of one past episode: "we didn't reach the summit", "I couldn't get a lane"
# tell how one time went, not a side the speaker takes ("I don't own a car" does).
_EPISODE_NEGATORS = frozenset("didn't couldn't wasn't weren't didnt couldnt wasnt werent".split())


def _scan_words(toks: list[str]) -> _WordScan:
    """Sum the stance and affect words, each flipped by a negator up to
    :data:`_NEG_WINDOW` tokens before it; a negator flips at most one word, and one
    that flips none is a free negation of the statement itself, unless its subject is
    someone else ("children who never had a garden", "plenty of people don't"); one
    that denies a past episode only ("we didn't reach the summit") is marked as such.
    A comparison nothing wins ("never felt better", "nothing beats") counts as praise."""
    out = _WordScan()
    last_neg = -100
    neg_used = True
    prev = ""
    for i, t in enumerate(toks):
        if t in UNBEATEN and not neg_used and _unbeaten(toks, last_neg, i):
            out.affect += 1  # "never felt better": praise, not a negation
            neg_used = True
            prev = t
            continue
        if t in NEGATORS:
            nxt = toks[i + 1] if i + 1 < len(toks) else ""
            if nxt in NEG_EXEMPT:
                if nxt in POSITIVE_NEGATED:
                    out.affect += 1  # "can't wait"
            else:
                if not neg_used:
                    out.free_negators.append(toks[last_neg])  # it flipped nothing
                out.negated = True
                last_neg = i
                # Someone else's "haven't" denies nothing of the speaker's; it still
                # flips a stance word or praise after it ("my kids don't like it").
                neg_used = prev in _OTHERS_DENY and not _scored_within(toks, i)
            prev = t
            continue
        if t not in _SCORED:
            prev = t
            continue
        s, is_stance, takes_negator = _word_value(toks, i, prev)
        if takes_negator:
            neg_used = True
            last_neg = -100
        if s:
            if i - last_neg <= _NEG_WINDOW and not neg_used:
                s = -s
                neg_used = True
            if is_stance:
                out.stance += s
            else:
                out.affect += s
        prev = t
    if not neg_used:
        out.free_negators.append(toks[last_neg])
    return out


# "nothing but", "all but", "not only ... but also": no concession.
_NOT_CONCESSIVE_BEFORE = frozenset({"nothing", "all", "anything", "only"})


def _conceded(toks: list[str]) -> _WordScan | None:
    """The scan of the clause after a concession, when the sentence concedes a hardship.

    "It's been tough, but I'm staying focused", "Running a business isn't easy, but
    I'm determined": a hardship told before "but" and nothing against it after is
    not a stance against what the sentence is about. When the words before the first
    "but" carry only negative affect or a negation (no stance word) and the words
    after it carry nothing negative, the sentence is read from the words after it.
    Else ``None``: the whole sentence is read ("I love the city but the rent is
    awful" keeps its love).
    """
    try:
        i = toks.index("but")
    except ValueError:
        return None
    if i == 0 or i + 1 >= len(toks) or toks[i + 1] == "also" or toks[i - 1] in _NOT_CONCESSIVE_BEFORE:
        return None
    before = _scan_words(toks[:i])
    if before.stance or not (before.affect < 0 or before.free_negation):
        return None
    after = _scan_words(toks[i + 1:])
    if after.stance < 0 or after.affect < 0 or after.free_negation:
        return None
    return after


def analyze_stance(text: str, tokens: list[str] | None = None) -> Stance:
    """Polarity of a sentence from a small stance/affect lexicon with negation.

    Explicit stance words ("love", "enjoy", "prefer", "fan", "hate", "dislike",
    "can't stand", "sick of") count ±2, general affect words ("happy", "stressed",
    "awful") ±1. A negator within three tokens before a word flips it ("don't like",
    "not happy", "not a fan"); negations of "know/think/mind/worry..." are ignored and
    "can't wait" counts as positive, and the negators of an idiom that denies nothing
    ("long time no see", "no worries", "you're not alone", "moving isn't easy",
    "I haven't tried it yet") are not read, nor are those of praise told with a negator
    or a hardship ("can't picture life without it", "ain't nothing like it", "my stress
    fix"), which counts as a positive stance word. A hardship conceded before "but" with
    nothing against it after ("it's been tough, but I'm staying focused") is read
    from the words after "but". A cessation phrase (:func:`find_cessation`)
    forces polarity -1: "I used to love hiking" is a negative stance toward hiking now.

    Parameters
    ----------
    text : str
        One sentence (stance is read per sentence).
    tokens : list of str, optional
        ``tokenize(text)`` when the caller already has it.

    Returns
    -------
    Stance
        Polarity and the parts it was computed from.
    """
    toks = tokens if tokens is not None else tokenize(text)
    praise = False
    if not NEGATORS.isdisjoint(toks) or "stress" in toks:
        # Negators of an idiom deny nothing ("no worries", "moving isn't easy"), and
        # praise may be told with a negator or a hardship ("can't picture life without
        # it", "ain't nothing like it", "my stress fix"): the sentence is read without
        # them, and such praise counts as a stance word.
        low = normalize(text)
        blanked = NEGATION_IDIOM_RE.sub(" ", low)
        unpraised = STANCE_PHRASE_POS_RE.sub(lambda m: " " if _against(m.group(0)) else m.group(0), blanked)
        praise = unpraised != blanked
        if unpraised != low:
            text, toks = unpraised, tokenize(unpraised)
    scan = _conceded(toks) or _scan_words(toks)
    stance, free_neg = scan.stance + (1 if praise else 0), scan.free_negation
    cessation = False
    if "used" in toks or _maybe_cessation(toks):
        match, cancelled = _first_cessation(normalize(text))
        cessation = match is not None
        if cancelled and not cessation:
            stance += 1  # "I never stopped running": a positive stance toward it
        if cessation or cancelled:
            # "no longer"/"not anymore" negators belong to the cessation phrase, and a
            # cancelled cessation ("never stopped") is a double negative: continuation.
            free_neg = False
    stance = _sign(stance)
    affect = _sign(scan.affect)
    polarity = -1 if cessation else _polarity(stance, affect)
    return Stance(polarity, stance, affect, scan.negated, free_neg, cessation,
                  free_neg and scan.episodic_negation)


#: The labels :func:`stance_label` gives: the stance model's names, in its order.
STANCE_LABELS: tuple[StanceName, ...] = get_args(StanceName)


def stance_label(text: str, tokens: list[str] | None = None) -> StanceName:
    """The speaker's stance toward what a sentence is about, as one of five labels.

    ``"stopped"`` when it ends something (an uncancelled cessation phrase of
    :func:`find_cessation`, "I'm over spin classes", "I haven't played tennis since I
    moved", "I haven't played chess in years"); ``"started"`` when it takes something
    up ("I've started swimming", "I took up yoga", "I've gone vegan") and no negation
    denies it ("I never took up golf" is not a start); else the polarity of :func:`analyze_stance` plus
    stance idioms ("can't bear", "drives me up the wall", "means the world to me"):
    ``"positive"`` or ``"negative"``; a negation of the statement itself or a frequency
    word that denies a habit ("I don't own a car", "I rarely watch TV") is
    ``"negative"`` when the speaker is in the sentence ("The pool isn't open on
    Mondays" is no stance of theirs); else ``"neutral"``.

    A line said to the listener without "I" or "we" ("That must have been tough for
    you", "Your garden looks amazing, Tom") is ``"neutral"``: it is about them.

    Two frames change the reading. In a hypothetical ("If I ever quit my job, I'd open
    a studio") nothing has stopped or started. After an intention or wish ("I'm trying
    to quit smoking", "I'd like to get better at chess") what follows is wanted, not
    held: only the words before the frame carry a stance, so a goal reads neutral
    unless its speaker says how they feel ("I'd love to visit Patagonia").

    Parameters
    ----------
    text : str
        One sentence; the intention and hypothetical frames are found in it.
    tokens : list of str, optional
        Its tokens, when the caller already has them (else tokenized here).

    Returns
    -------
    str
        One of :data:`STANCE_LABELS`.
    """
    return stance_reading(text, tokens)[0]


#: What a stance label rests on (:func:`stance_reading`).
StanceSource = Literal["listener", "change", "idiom", "stance", "affect", "negation", "episode", "none"]


def stance_reading(text: str, tokens: list[str] | None = None) -> tuple[StanceName, StanceSource]:
    """The stance label of :func:`stance_label` and what it rests on.

    ``"change"``: a cessation or a start; ``"idiom"``: a stance idiom ("can't bear");
    ``"stance"``: a like/dislike word ("love", "hate"), with or without general affect;
    ``"affect"``: general affect words alone ("It was a tough week", "the hike was
    lovely"), a feeling about an episode rather than a side taken on its topic;
    ``"negation"``: a denial ("I don't own a car", "a bad fall, and no skiing for a
    month"); ``"episode"``: a denial of one past episode only ("Tough match, didn't
    make the final"), how one time went rather than a side taken;
    ``"listener"``: said about the listener; ``"none"``: neutral on its own.

    Parameters
    ----------
    text : str
    tokens : list of str, optional

    Returns
    -------
    (str, str)
        The label (:data:`STANCE_LABELS`) and its source.
    """
    low = normalize(text)
    toks_all = tokens if tokens is not None else tokenize(low)
    if (not has_first_person(toks_all) and to_listener(text, toks_all)
            and STANCE_PHRASE_POS_RE.search(low) is None and STANCE_PHRASE_NEG_RE.search(low) is None):
        # Said to the listener about the listener ("That must have been tough for
        # you", "Your studio looks awesome, Mel"): the speaker takes no stance of
        # their own. An idiom keeps its stance ("you can't beat a swim": generic "you").
        return "neutral", "listener"
    hypothetical = HYPOTHETICAL_RE.search(low) is not None
    frame = INTENT_FRAME_RE.search(low)
    if frame is not None:
        low = low[: frame.start()]
    elif not hypothetical and not _perceived(low):
        if find_cessation(low) is not None or STOP_EXTRA_RE.search(low) is not None:
            return "stopped", "change"
        # The start phrases first: most statements have none, and then the negated
        # start pattern need not run.
        if _speaker_start(low, toks_all) and NEGATED_START_RE.search(low) is None:
            return "started", "change"
    pos = STANCE_PHRASE_POS_RE.search(low) is not None
    neg = STANCE_PHRASE_NEG_RE.search(low) is not None
    if pos != neg:
        return ("positive" if pos else "negative"), "idiom"
    low = COMPOUND_NOT_AFFECT_RE.sub(" ", low)
    toks = tokenize(low)
    st = analyze_stance(low, toks)
    # In a hypothetical a cessation verb ended nothing ("If I ever quit ..."): only the
    # stance and affect words count.
    polarity = _polarity(st.stance, st.affect) if hypothetical and st.cessation else st.polarity
    # A feeling alone ("a rough match") takes no side; with a denial beside it ("the
    # doctor says no hiking for a while") the denial is the side taken.
    source: StanceSource = ("stance" if st.stance or (st.cessation and not hypothetical)
                            else "episode" if st.episodic_negation
                            else "negation" if st.free_negation else "affect")
    if polarity > 0:
        return "positive", source
    if polarity < 0:
        return "negative", source
    # A negation that flips no stance word denies something: the speaker's own habit
    # or state ("I don't own a car") is a stance; a shop's hours are not.
    if not RARE_WORDS.isdisjoint(toks):
        return "negative", "negation"
    if st.free_negation and has_first_person(toks):
        return "negative", "episode" if st.episodic_negation else "negation"
    return "neutral", "none"
