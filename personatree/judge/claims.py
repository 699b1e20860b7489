"""Offline claim phrasing: a pattern or a root written from what its members share.

A claim names what holds across its members, not what one of them said: the topic
they share, the side they take on it and the kind of claim it is, in the third person
and without one episode's dates, places or counters ("Enjoys hiking", "Dislikes sushi",
"Stopped running after a knee injury"). :func:`claim_phrase` is a small phrase
generator: a verb chosen by (claim type, stance) in front of the shared topic phrase
(:func:`shared_topic`). Types whose claims are statements rather than sides ("Lives in
Porto", "Has a sister in Leeds") read from their most typical member, stripped of its
episodic details (:func:`general_phrase`), or from another member when that one tells a
single episode ("Went to a council meeting") or points at something ("Here's the
agency I picked"); when every member does, or when one member's
words are not what enough of a big pattern's members say, the claim is the topic the
person keeps coming back to ("Often talks about adoption"). A claim over patterns names
a theme enough of them share, or is not made. Nor is a claim that takes no side over
members that mostly tell past scenes ("I pushed the gate open", "I saw him lean on
the gate"): their type alone makes no habit, state or trigger of the person's (runs
told one by one, the person doing what a habit names, still make one).

Everything here is a pure function of its input.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Sequence

from ..lexicons import (
    ACTIVITY_PASTS, ADVERBS, DOING_VERBS, HARDSHIPS, PAST_IRREGULAR, PERCEIVING_VERBS, SECOND_PERSON, TRIGGER_FEELINGS,
)
from ..text import (
    STANCE_LABELS,
    TOPIC_CLAIM,
    addresses,
    can_head,
    can_name,
    count_plural,
    content_lemmas,
    find_entities,
    find_time,
    has_first_person,
    is_change,
    key_topic,
    lemma,
    normalize,
    pattern_phrase,
    stance_label,
    strip_summary_suffix,
    to_listener,
    tokenize,
)

__all__ = [
    "MIN_TOPIC_SHARE", "SMALL_PATTERN", "claim_phrase", "general_phrase",
    "majority_stance", "member_stance", "shared_topic",
]

# Verb frames by claim type and stance; "{t}" is the shared topic phrase. A type not
# listed reads from its most typical member (general_phrase). The words are chosen so
# the offline validator reads the same stance back from the claim ("Dislikes",
# "No longer", "Stopped" are in its lexicon).
_FRAMES: dict[str, dict[str, str]] = {
    "preference": {"positive": "Enjoys {t}", "negative": "Dislikes {t}", "stopped": "No longer enjoys {t}",
                   "started": "Has taken up {t}", "neutral": "Interested in {t}"},
    "routine": {"positive": "Enjoys {t} regularly", "negative": "Avoids {t}", "stopped": "Stopped {t}",
                "started": "Has taken up {t}", "neutral": "Makes a habit of {t}"},
    # "{f}": the feeling the members name (_feeling).
    "trigger": {"positive": "Finds {t} {f}", "negative": "Finds {t} {f}",
                "stopped": "No longer bothered by {t}", "started": "Has become sensitive to {t}",
                "neutral": "Reacts strongly to {t}"},
    "state": {"positive": "Doing well with {t}", "negative": "Struggling with {t}", "stopped": "No longer troubled by {t}",
              "started": "Recently started {t}", "neutral": "Going through {t}"},
    "goal": {"positive": "Wants {t}", "negative": "Dislikes {t}", "stopped": "Gave up on {t}",
             "started": "Has started working on {t}", "neutral": "Working toward {t}"},
    "trend": {"positive": "Increasingly into {t}", "negative": "Increasingly dislikes {t}",
              "stopped": "Stopped {t}", "started": "Has taken up {t}", "neutral": "Changing habits around {t}"},
    # Roots: a durable reading of two or more patterns.
    "personality": {"positive": "Drawn to {t}", "negative": "Dislikes {t}", "stopped": "No longer into {t}",
                    "started": "Increasingly drawn to {t}", "neutral": "Engaged with {t}"},
    "value": {"positive": "Values {t}", "negative": "Dislikes {t}", "stopped": "No longer values {t}",
              "started": "Has come to value {t}", "neutral": "Cares about {t}"},
    "identity": {"positive": "Identifies with {t}", "negative": "Dislikes {t}", "stopped": "No longer identifies with {t}",
                 "started": "Has come to identify with {t}", "neutral": "Defined in part by {t}"},
    "principle": {"positive": "Holds to {t}", "negative": "Avoids {t}", "stopped": "Stopped {t}",
                  "started": "Has committed to {t}", "neutral": "Keeps a rule about {t}"},
    "boundary": {"positive": "Keeps a limit around {t}", "negative": "Avoids {t}", "stopped": "No longer avoids {t}",
                 "started": "Has started avoiding {t}", "neutral": "Keeps a limit around {t}"},
}

# Claim types that episodes of the person doing their topic support (runs told one by
# one make a habit of running); a state or a trigger is nothing one does.
_DONE = frozenset({"routine", "goal", "preference", "trend"})

# Claim types about one thing of the person's, whose topic keeps its number.
_ONE_THING = frozenset({"goal", "state", "routine"})

# A pattern is named by a topic at least this share of its members hold: a word that
# a few members of a loose cluster happen to use does not say what the cluster is.
MIN_TOPIC_SHARE = 0.3
# Up to this many members, a pattern whose members share no word is named by its most
# typical member's topic: clustering put them together by meaning, and a few
# paraphrases of one habit rarely repeat a word. A bigger cluster without a shared
# word is a loose one.
SMALL_PATTERN = 5

# Words after which a word is a verb, whatever else it can be: "something to read", "I
# haven't read them", "it boosts my mood" name no reading or boosting. A topic must be
# used as a noun at least once.
_VERB_BEFORE = frozenset(
    """to will would can could should must might may shall don't didn't doesn't won't
    can't couldn't haven't hasn't i we you they he she it who i'll we'll you'll they'll
    i'd we'd i've we've you've they've""".split()
)
# What a thing was like, said of "it" with an adjective ("It's been a bumpy ride!", "it
# was such a fun night"): the noun says how something went, not what the person has or
# does, so "Enjoys rides" would be false. Group 1 is the noun.
_DESCRIBED_RE = re.compile(
    r"\b(?:it|that)(?:'s|\s+is|\s+was|\s+has)(?:\s+(?:been|[a-z]+ly|such|quite|so|just))*"
    r"\s+(?:a|an)\s+(?:[a-z'-]+\s+){1,2}([a-z'-]+)"
    # ... where the noun phrase ends: punctuation, a conjunction, a preposition or a clause.
    r"\s*(?:[.!?,;:\u2026-]|$|\s+(?:but|and|so|though|since|this|lately|for|from|with|at|in|on|of|to|when|as"
    r"|because|[a-z]+ing)\b)"
)
# Words after which a word in "-ing" is the verb of a progressive ("I've been working
# hard", "keep pushing"), not an activity named: "Wants working" says nothing. Not "is"
# or "was": "my favourite is painting" names one.
_PROGRESSIVE_BEFORE = frozenset(
    """am be been being i'm we're you're they're he's she's keep keeps kept""".split()
)
# "It helps me trust my abilities", "made us feel at home": after a verb that makes
# someone do something and its object, the bare verb ("trust", "feel") names nothing.
_CAUSATIVE = frozenset("help helps helped make makes made let lets watch watched".split())
_OBJECT = frozenset("me us you him her them".split())

# The speaker alone in the first person ("we" may be anyone).
_I = frozenset("i me my mine myself i'm i've i'd i'll im ive".split())
# First words of a line that points at something rather than saying what holds.
_POINTING = frozenset("here here's this that these those it it's they they're there's".split())
# First words of a proposal ("Let's keep in touch more"): a plan put to the listener, not
# what holds of the person.
_PROPOSING = frozenset("let's lets shall".split())
# Words ending in "ed" that tell no past episode: not verbs, or states ("Married to Tom").
_ED_PRESENT = frozenset(
    """need needs feed speed bleed breed succeed proceed exceed married engaged divorced retired
    related interested excited based located named called involved attached obsessed used
    scared worried tired bored pleased""".split())
# Hardships as the topic counter reads them (its lemmas).
_HARDSHIPS = frozenset(lemma(w) for w in HARDSHIPS)
# The feelings a trigger names: never what sets the feeling off ("Finds joy
# uplifting", "Finds calm calming" say nothing).
_FEELING_WORDS = frozenset(lemma(w) for _, word, cues in TRIGGER_FEELINGS for w in (word, *cues))

# The cause of a stop or a start, when the members share one ("after a knee injury").
_CAUSE_RE = re.compile(r"\b(after|because of|due to|since)\s+(?:my|the|a|an|our|his|her)\s+((?:[a-z'-]+\s+){0,2}[a-z'-]+)", re.I)
_FREE_RE = re.compile(r"\b[a-z]+(?:-|\s)free\b", re.I)
_PAREN_RE = re.compile(r"\s*\([^)]*\)|\s*\[[^\]]*\]")
_NOTE_RE = re.compile(r"\b(?:note|entry|day|item|#)\s*\d+\b|#\d+", re.I)
_WE_RE = re.compile(r"^\W*(we're|we are|we)\b", re.I)
_SPACES_RE = re.compile(r"\s{2,}")
_DANGLING_RE = re.compile(r"(?:[,;:]\s*|\s+(?:and|but|so|with|in|at|on|to|for|of|from|the|a|an|especially|this|last))+$", re.I)
# "in Porto", "at Lakeside Park": a one-off place, dropped from claims of types whose
# content is not the place itself.
_PLACE_RE = re.compile(r"\s*,?\s*\b(?:especially |mostly |usually )?(?:in|at|near|around|to)\s+(?:the\s+)?"
                       r"(?:[A-Z][\w'\u00C0-\u024F-]*)(?:\s+[A-Z][\w'\u00C0-\u024F-]*)*")


def majority_stance(stances: Sequence[str]) -> str:
    """The stance most members take; a side (not ``neutral``) wins a tie with neutral.

    Parameters
    ----------
    stances : sequence of str
        One of :data:`~personatree.text.STANCE_LABELS` per member.

    Returns
    -------
    str
    """
    counts = Counter(s for s in stances if s in STANCE_LABELS)
    if not counts:
        return "neutral"
    # Sides before neutral on ties, then the fixed label order, so the choice is stable.
    return max(counts, key=lambda s: (counts[s], s != "neutral", -STANCE_LABELS.index(s)))


def shared_topic(texts: Sequence[str], max_words: int = 3, *, min_share: float = 0.0,
                 names: bool = False, avoid: frozenset[str] = frozenset()) -> str:
    """The topic phrase the texts share, lower-case ("hiking", "mountain hiking"), or "".

    The content lemmas (:func:`~personatree.text.content_lemmas`) are counted by how
    many texts hold them; numbers are left out, and so are names unless ``names`` (a
    one-off place or counter is not the topic of a preference; a fact's place is its
    topic). Only a lemma that can name a pattern (:func:`~personatree.text.can_head`),
    used at least once where it is no verb (not after "to", a modal or a subject
    pronoun: "something to read" names no reading; not in "-ing" after a form of "be" or
    "keep": "I've been working" names no work; not after "helps me" and the like: "it
    helps me trust myself" names no trust; nor as what "it" was like: "it's been a bumpy
    ride" names no ride), held by at least two texts (one for
    one text) and by ``min_share`` of them qualifies; the most widely held picks the
    phrase: the most common key topic (:func:`~personatree.text.key_topic`) among the
    texts that contains it, cut to the words that at least two texts share (all words
    for one text). Notes in brackets
    ("(note 12)", "[shares a photo]") are not read, nor is a thing left out ("dairy-free
    cake" names no dairy).

    Parameters
    ----------
    texts : sequence of str
    max_words : int
    min_share : float
        Share of the texts that must hold the topic.
    names : bool
        Names count as topic words.
    avoid : frozenset of str
        Lemmas (:func:`~personatree.text.lemma`) that may not be the topic (a positive
        claim is not about a hardship).

    Returns
    -------
    str
        "" when no word qualifies.
    """
    cleaned = [_PAREN_RE.sub("", strip_summary_suffix(t)) for t in texts]
    # "dairy-free brownies" are no dairy: a thing named only as what is left out
    # is not what the members share.
    cleaned = [_FREE_RE.sub(" ", t) for t in cleaned]
    toks = [tokenize(t) for t in cleaned]
    skip = set() if names else {w.lower() for t in cleaned for e in find_entities(t) for w in e.split()}
    df: Counter[str] = Counter()
    first: dict[str, int] = {}
    nameable: set[str] = set()
    for k, ts in enumerate(toks):
        for lm in content_lemmas([w for w in ts if w not in skip]):
            df[lm] += 1
            first.setdefault(lm, k * 1000 + next(i for i, w in enumerate(ts) if lemma(w) == lm))
        described = {m.group(1) for m in _DESCRIBED_RE.finditer(normalize(cleaned[k]))}
        nameable.update(lemma(w) for i, w in enumerate(ts)
                        if w not in skip and w not in described and can_head(w)
                        and not _verb_after(ts[max(0, i - 2):i], w))
    need = 2 if len(texts) > 1 else 1
    floor = max(need, math.ceil(min_share * len(texts) - 1e-9))
    held = [lm for lm in df if lm in nameable and df[lm] >= floor and lm not in avoid]
    if not held:
        return ""
    top = max(held, key=lambda lm: (df[lm], -first[lm]))
    phrases: Counter[str] = Counter()
    for ts in toks:
        kt = key_topic([w for w in ts if w not in skip], max_words=max_words)
        words = kt.split()
        if not any(lemma(w) == top and can_head(w) for w in words):
            continue
        kept = [w for w in words if (lemma(w) == top or df[lemma(w)] >= need) and lemma(w) not in avoid]
        # "writing write": one word of the phrase a lemma.
        kept = [w for i, w in enumerate(kept) if all(lemma(v) != lemma(w) for v in kept[:i])]
        # "encouragement means" → "encouragement": the phrase ends on words that name.
        while kept and not can_head(kept[-1]):
            kept.pop()
        while kept and not can_name(kept[0]):
            kept.pop(0)
        if kept:
            phrases[" ".join(kept)] += 1
    if phrases:
        return _unpossessed(max(phrases, key=lambda p: (phrases[p], -len(p), p)))
    forms = Counter(w for ts in toks for w in ts if lemma(w) == top and can_head(w))
    return _unpossessed(max(forms, key=lambda w: (forms[w], w.endswith("ing"), w)))


def _verb_after(before: list[str], word: str) -> bool:
    """Whether ``word``, said right after the words ``before`` (up to two), is a verb
    (see :data:`_VERB_BEFORE`, :data:`_PROGRESSIVE_BEFORE` and :data:`_CAUSATIVE`)."""
    if not before:
        return False
    last = before[-1]
    return (last in _VERB_BEFORE or (word.endswith("ing") and last in _PROGRESSIVE_BEFORE)
            or (len(before) == 2 and before[0] in _CAUSATIVE and last in _OBJECT))


def _in_general(topic: str, said: Sequence[str]) -> str:
    """``topic`` with each part's last noun in the plural where English only counts it
    and ``said`` uses that plural ("book" → "books", "feelings and book" → "feelings and
    books"; "art" stays). The lexicon alone would count what a speaker does not
    ("adoptions", "atmospheres")."""
    words = {w for t in said for w in tokenize(t)}
    parts = []
    for part in topic.split(" and "):
        *head, last = part.split(" ")
        plural = count_plural(last)
        parts.append(" ".join([*head, plural if plural in words else last]))
    return " and ".join(parts)


def _unpossessed(phrase: str) -> str:
    """The phrase without a closing possessive ("nature's" → "nature"): it names a
    thing, not whose the next word was."""
    return phrase.removesuffix("'s")


def general_phrase(sentence: str, *, keep_places: bool = True) -> str:
    """A first-person statement as a third-person pattern without one episode's details.

    :func:`~personatree.text.pattern_phrase` ("I love hiking" → "Loves hiking"), then
    time expressions ("last weekend", "in March"), parenthesised notes ("(note 167)"),
    counters ("#3") and, unless ``keep_places``, one-off places ("in Porto") are removed.

    Parameters
    ----------
    sentence : str
    keep_places : bool
        Keep "in Porto" (a fact's place is the fact: "Lives in Porto").

    Returns
    -------
    str
    """
    s = _PAREN_RE.sub("", strip_summary_suffix(sentence))
    # "We live in Porto": the speaker is one of "we"; the claim is about them.
    s = _WE_RE.sub(lambda m: "I'm" if m.group(1).lower() in ("we're", "we are") else "I", s)
    s = _NOTE_RE.sub("", s)
    for _ in range(4):
        t = find_time(s)
        if t is None:
            break
        s = s.replace(t, " ", 1)
    if not keep_places:
        s = _PLACE_RE.sub("", s)
    s = _SPACES_RE.sub(" ", s).strip(" ,;")
    out = pattern_phrase(s)
    out = _DANGLING_RE.sub("", out).strip()
    return out or pattern_phrase(sentence)


def _cause(texts: Sequence[str]) -> str:
    """A cause phrase two or more members share ("after a knee injury"), or ""."""
    found: Counter[str] = Counter()
    for t in texts:
        for m in _CAUSE_RE.finditer(t):
            # "after my knee injury" and "since my knee injury" name the same cause.
            phrase = f"after a {m.group(2).lower()}"
            if find_time(m.group(0)) is None:
                found[phrase] += 1
    if not found:
        return ""
    best, n = max(found.items(), key=lambda kv: (kv[1], kv[0]))
    return best if n >= 2 or len(texts) == 1 else ""


def _theme(texts: Sequence[str], avoid: frozenset[str] = frozenset()) -> str:
    """What two or more patterns share, held by :data:`MIN_TOPIC_SHARE` of them, or "".

    A word two of ten patterns share is not what the other eight are about. Patterns
    that share none get no claim: their topics joined ("kettle and violin", "chess and
    umbrellas") would state no trait, only repeat the patterns, and an agent would read it
    as one.
    """
    return shared_topic(texts, min_share=MIN_TOPIC_SHARE, avoid=avoid)


def _topic(texts: Sequence[str], representative: str, i_lines: int, *, names: bool,
           avoid: frozenset[str] = frozenset()) -> str:
    """The topic the members share; for a few members that say one thing in different
    words ("my evening jog", "I run along the canal"), the most typical member's own.
    ``i_lines``: how many of ``texts`` say "I" (:func:`_says_i`)."""
    topic = shared_topic(texts, min_share=MIN_TOPIC_SHARE, names=names, avoid=avoid)
    # Paraphrases of the person's own habit say "I" or "my"; a few remarks that share
    # no word and speak of no one ("Finding those moments and holding on to them is
    # key", "We can face anything together!") are chat, not a pattern to name.
    if not topic and len(texts) <= SMALL_PATTERN and 2 * i_lines > len(texts):
        topic = shared_topic([representative], names=names, avoid=avoid)
    return topic


def _says_i(text: str) -> bool:
    return not _I.isdisjoint(tokenize(text))


def _feeling(texts: Sequence[str], side: str) -> str:
    """The feeling word of a trigger claim on ``side``: the one whose words the members
    use most ("calming", "uplifting", "stressful", ...); the side's first without any."""
    words = Counter(w for t in texts for w in tokenize(t))
    best, most = "", -1
    for s, word, cues in TRIGGER_FEELINGS:
        if s == side and (n := sum(words[c] for c in cues)) > most:
            best, most = word, n
    return best


def claim_phrase(
    texts: Sequence[str], stances: Sequence[str], schema_type: str, representative: str, *, root: bool = False,
    said: Sequence[str] = (),
) -> tuple[str, str]:
    """The claim text for members with these texts and stances, and the topic it names.

    A claim is only written when the members share a topic that can name it (held by
    :data:`MIN_TOPIC_SHARE` of them, see :func:`shared_topic`), or, for at most
    :data:`SMALL_PATTERN` members most of which say "I", when their most typical member
    names one: a bigger cluster that shares none is not a pattern the offline judge can
    state truthfully, and ("", "") says so; so do members mostly said to the listener
    (they say "you" or call the listener by name), and members none of which says "I".
    A framed claim that takes no side (most members neutral) says what holds on the
    strength of its type alone, so it is made only when enough members say what holds
    rather than tell a past scene; for a habit, a goal, a taste or a trend an episode of
    the person doing the topic counts (:func:`_say_what_holds`).
    A positive claim never names a hardship (:data:`~personatree.lexicons.HARDSHIPS`):
    "art got me through my struggles" is about art. A trigger names the feeling its
    members name (:data:`~personatree.lexicons.TRIGGER_FEELINGS`), and no feeling word
    names what sets it off. A fact or a relationship of more than :data:`SMALL_PATTERN`
    members reads from one member only when enough members say its words
    (:func:`_said_by_enough`). A type without a
    verb frame reads from its most typical member, which must state the topic and speak
    of the person, not to a listener ("Your support means a lot" is no claim about the
    speaker), and from a member that states what holds when that one tells an episode
    (see the module's docstring). A claim other than a goal, a state or a routine names
    a kind of thing in the plural when English only counts it and the members say it so
    ("Enjoys novels").

    Parameters
    ----------
    texts : sequence of str
        The members' contents (leaf sentences), or for a root the topics of its
        patterns (or their summaries).
    stances : sequence of str
        The members' stances (:data:`~personatree.text.STANCE_LABELS`).
    schema_type : str
        The claim's type; picks the verb frame.
    representative : str
        The most typical member's content, for types without a frame.
    root : bool
        The members are patterns: the claim names their common theme
        (:func:`_theme`).
    said : sequence of str
        What the members say in full, where a topic's plural is looked for (for a root,
        its patterns' claims); ``texts`` when empty.

    Returns
    -------
    (str, str)
        The claim, third-person, capitalised, without a trailing period or mention
        suffix, and its topic; both "" when the members share no nameable topic.
    """
    if not root and 2 * sum(map(to_listener, texts)) > len(texts):
        # Mostly said to the listener ("That bowl is awesome, Mel!", "glad you had a
        # blast"): praise of the listener's things is no pattern of the speaker's own.
        return "", ""
    i_lines = sum(map(_says_i, texts))
    frames = _FRAMES.get(schema_type)
    if frames is not None:
        if not root and not i_lines:
            # "We can face anything together!", "Pets bring such joy": a claim about the
            # person rests on at least one line where they speak of themself.
            return "", ""
        stance = majority_stance(stances)
        # A positive claim, or a goal worked toward, names what helps or is wanted, never
        # the hardship the members speak of ("art got me through my struggles").
        avoid = _HARDSHIPS if stance == "positive" or (schema_type == "goal" and stance == "neutral") \
            else frozenset()
        if "{f}" in frames[stance]:
            avoid = avoid | _FEELING_WORDS
        topic = _theme(texts, avoid) if root else _topic(texts, representative, i_lines, names=False, avoid=avoid)
        if not topic:
            return "", ""
        if not root and stance == "neutral" and not _say_what_holds(
                texts, frozenset(lemma(w) for w in topic.split()) if schema_type in _DONE else frozenset()):
            # Without a side taken, a frame's verb ("Makes a habit of", "Going through",
            # "Reacts strongly to") rests on the type alone, and a type read from scenes
            # told in the past ("I pushed the gate open", "I smelled toast burning next
            # door") is no habit, state or trigger of the person's: an agent would be told
            # what no member says.
            return "", ""
        frame = frames[stance]
        # A taste, a trigger or a trait is for a kind of thing ("Enjoys books"); a goal, a
        # state or a routine is about one thing of the person's (their shop, their novel).
        shown = topic if schema_type in _ONE_THING else _in_general(topic, said or texts)
        phrase = frame.format(t=shown, f=_feeling(texts, stance) if "{f}" in frame else "")
        if stance in ("stopped", "started"):
            cause = _cause(texts)
            if cause and topic not in cause:
                phrase = f"{phrase} {cause}"
        return phrase[:1].upper() + phrase[1:], topic
    topic = _topic(texts, representative, i_lines, names=True)
    keep_places = schema_type in ("fact", "relationship", "identity")
    phrase = _statement(representative, topic, keep_places)
    if not topic or not phrase:
        return "", ""
    # Of more than SMALL_PATTERN members, what each says, to check that a claim read
    # from one of them is said by enough of them (_said_by_enough).
    held = [content_lemmas(tokenize(t)) for t in texts] if len(texts) > SMALL_PATTERN else None
    if _holds(phrase, representative) and _said_by_enough(phrase, topic, held):
        return phrase, topic
    # The most typical member tells one episode ("Went to a pride parade last week")
    # or points at something shown ("Here's the agency I picked"): a member that states
    # what holds names the pattern, else the topic the person keeps coming back to.
    for text in texts:
        other = _statement(text, topic, keep_places)
        if other and _holds(other, text) and _said_by_enough(other, topic, held):
            return other, topic
    return f"{TOPIC_CLAIM} {_as_said(topic, texts)}", topic


def _said_by_enough(phrase: str, topic: str, held: Sequence[frozenset[str]] | None) -> bool:
    """Whether a claim read from one member says what the pattern's members say.

    ``held``: each member's content lemmas, or ``None`` for a few members (up to
    :data:`SMALL_PATTERN`), which say one thing in other words and rarely repeat one
    (see :func:`_topic`), so that any of their statements names them. Of a bigger
    pattern, one member's words beyond the topic ("giggled with Tomas on the bus",
    "works nights at the bakery") must be shared: at least half of them held by
    :data:`MIN_TOPIC_SHARE` of the members. Otherwise the claim would copy one
    sentence and show it with every member's mentions.
    """
    if held is None:
        return True
    own = content_lemmas(tokenize(phrase)) - {lemma(w) for w in tokenize(topic)}
    if not own:
        return True
    need = math.ceil(len(own) / 2)
    return sum(len(own & h) >= need for h in held) >= MIN_TOPIC_SHARE * len(held)


def _as_said(topic: str, texts: Sequence[str]) -> str:
    """``topic`` (lower-case) as the members write it inside a sentence ("sister Lena"),
    not at its start, where any word is capitalised; lower-case when none does."""
    pattern = re.compile(r"\b" + r"\s+".join(map(re.escape, topic.split())) + r"\b", re.I)
    forms = Counter(m.group(0) for t in texts for m in pattern.finditer(t) if t[:m.start()].strip(" \"'"))
    return max(forms, key=lambda f: (forms[f], f)) if forms else topic


def _statement(text: str, topic: str, keep_places: bool) -> str:
    """``text`` as a third-person claim naming ``topic``, or "" when it cannot be one:
    a statement about the speaker says "I" or "we" ("Woohoo, John" and "Your support
    means a lot" are said to someone, not about oneself)."""
    said = tokenize(text)
    if not topic or not has_first_person(said) or SECOND_PERSON & set(said) or addresses(text):
        return ""
    phrase = general_phrase(text, keep_places=keep_places)
    if not {lemma(w) for w in topic.split()} & {lemma(w) for w in tokenize(phrase)}:
        return ""
    return phrase


def _holds(phrase: str, text: str) -> bool:
    """Whether a claim read from one member states what holds: not a past episode
    ("Went to a council meeting") unless it changed the person's life ("Moved to
    Porto", :func:`~personatree.text.is_change`), nor a line pointing at something
    ("Here's the agency they picked", "They were great"), nor a proposal ("Let's
    visit their parents more"), nor a scene they perceived ("Heard the neighbours agree
    the noise had to stop")."""
    words = tokenize(phrase)
    if not words or words[0] in _POINTING or words[0] in _PROPOSING or words[0] in PERCEIVING_VERBS:
        return False
    return not _told_in_past(words) or is_change(text)


def _told_in_past(words: Sequence[str]) -> bool:
    """Whether the words tell what happened rather than what holds: an irregular past
    anywhere ("One memory for them was …"); a regular one as the verb, first or after a
    short subject ("Attended …", "Our club hosted …"): later, a word in "-ed" is as
    often an adjective ("their reclaimed desk")."""
    return any(w in PAST_IRREGULAR for w in words) or any(
        w.endswith("ed") and len(w) >= 4 and w not in _ED_PRESENT for w in words[:3])


def _say_what_holds(texts: Sequence[str], done: frozenset[str]) -> bool:
    """Whether :data:`MIN_TOPIC_SHARE` of the members say what holds of the person
    rather than tell a past scene (:func:`_told_in_past`). A change in their life
    (:func:`~personatree.text.is_change`) counts as what holds, and so does an episode
    of the person doing the topic (:func:`_does`), when ``done`` holds its lemmas: runs
    told one by one make a habit of running."""
    holding = 0
    for t in texts:
        clean = _PAREN_RE.sub("", t)
        words = tokenize(clean)
        holding += (not _told_in_past(words) or is_change(clean, tokens=words)
                    or (bool(done) and _does(words, done)))
    return holding >= MIN_TOPIC_SHARE * len(texts)


def _does(words: Sequence[str], topic: frozenset[str]) -> bool:
    """Whether the words tell the speaker doing the topic (lemmas): its verb right after
    "I" or "we" ("I climbed the slab", "we ran the canal loop"), or a verb one does an
    activity with followed by it within three words ("went for a run", "did yoga", "had
    a swim"); the subject may be left out at the start ("Did a long run on Sunday").
    Adverbs between subject and verb are skipped. "I pushed the gate open" does no
    gate."""
    starts = [i + 1 for i, w in enumerate(words) if w in ("i", "we")]
    if words and (words[0] in DOING_VERBS or words[0] in ACTIVITY_PASTS or words[0].endswith("ed")):
        starts.append(0)
    for j in starts:
        while j < len(words) and words[j] in ADVERBS:
            j += 1
        if j >= len(words):
            continue
        verb = words[j]
        if lemma(ACTIVITY_PASTS.get(verb, verb)) in topic:
            return True
        if verb in DOING_VERBS and any(lemma(w) in topic for w in words[j + 1:j + 4]):
            return True
    return False


def member_stance(content: str, attributes: dict | None) -> str:
    """A member's stance: its ``stance`` attribute, else read from its text."""
    st = (attributes or {}).get("stance")
    if isinstance(st, str) and st in STANCE_LABELS:
        return st
    return stance_label(strip_summary_suffix(content))
