"""Tests of the pure text utilities used by the offline judge."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from personatree.text import (
    analyze_stance,
    chunk_text,
    content_lemmas,
    find_cessation,
    find_entities,
    find_time,
    format_month_span,
    is_disposition,
    informative_part,
    is_informative,
    looks_like_code,
    is_question,
    key_topic,
    lemma,
    pattern_phrase,
    split_sentences,
    stance_label,
    strip_summary_suffix,
    tokenize,
)

# -- sentence splitting -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I met Dr. Smith today! He is nice.", ["I met Dr. Smith today!", "He is nice."]),
        ("We ran 3.5 km. Then we ate.", ["We ran 3.5 km.", "Then we ate."]),
        ("I like fruit, e.g. apples. Bananas too.", ["I like fruit, e.g. apples.", "Bananas too."]),
        ("Really?! Yes!! Wow.", ["Really?!", "Yes!!", "Wow."]),
        ("Well... I went there. It was fine…", ["Well...", "I went there.", "It was fine…"]),
        ("I was thinking... maybe not.", ["I was thinking... maybe not."]),
        ("Great day! 😊 I went hiking.", ["Great day! 😊", "I went hiking."]),
        ("I love it 😍 We should go again", ["I love it 😍", "We should go again"]),
        ("First line\nSecond line.\n\n- a bullet item", ["First line", "Second line.", "a bullet item"]),
        ("J. K. Rowling wrote it. I read it.", ["J. K. Rowling wrote it.", "I read it."]),
        ("We moved to the U.S. Army base. it was big.", ["We moved to the U.S. Army base. it was big."]),
        ("  ", []),
        ("no punctuation at all", ["no punctuation at all"]),
    ],
)
def test_split_sentences(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


_ALPHABET = st.sampled_from(list("abcXYZ .!?,'\n") + ["😊", "…", "Dr.", "e.g.", "3.5"])


@settings(max_examples=200, deadline=None)
@given(st.lists(_ALPHABET, max_size=60).map("".join))
def test_split_sentences_keeps_every_character(text: str) -> None:
    parts = split_sentences(text)
    assert all(p and p == p.strip() for p in parts)
    squash = re.compile(r"\s+")
    assert squash.sub("", "".join(parts)) == squash.sub("", text)


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("abc ,;-")), max_size=400), st.integers(10, 80))
def test_chunk_text_bounds_and_keeps_text(text: str, limit: int) -> None:
    pieces = chunk_text(text, limit)
    assert all(0 < len(p) <= limit for p in pieces)
    assert "".join(pieces).replace(" ", "") == text.replace(" ", "")


def test_chunk_text_prefers_clause_breaks() -> None:
    text = ", ".join(["I walked the dog in the park"] * 40)
    pieces = chunk_text(text, 100)
    assert len(pieces) > 1
    assert all(p.endswith(",") for p in pieces[:-1])


# -- tokens and lemmas --------------------------------------------------------------------


def test_tokenize_keeps_contractions_and_normalises_apostrophes() -> None:
    assert tokenize("I can’t stand it, I'm OUT") == ["i", "can't", "stand", "it", "i'm", "out"]


@pytest.mark.parametrize("group", [("hike", "hikes", "hiked", "hiking"), ("run", "runs", "running"),
                                   ("love", "loves", "loved", "loving"), ("story", "stories")])
def test_lemma_merges_word_forms(group: tuple[str, ...]) -> None:
    assert len({lemma(w) for w in group}) == 1


def test_content_lemmas_leave_out_stance_and_function_words() -> None:
    a = content_lemmas(tokenize("I love hiking"))
    b = content_lemmas(tokenize("I stopped hiking after my knee injury"))
    assert a == {"hik"}
    assert a & b == {"hik"}


# -- informativeness ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "sentence",
    ["Hey Mari!", "Good to see you!", "Thanks!", "lol", "Wow", "How have you been?", "What about you?",
     "That's so cool!", "You'd be a great counselor!", "Talk to you soon!", "Thanks, Marisol!",
     "😊😊", "Totally agree, Mari.", "Great, Marisol!"],
)
def test_drops_greetings_fillers_and_questions(sentence: str) -> None:
    assert not is_informative(sentence)


@pytest.mark.parametrize(
    "sentence",
    ["Any dessert ideas for me?", "What should I cook tonight?", "Should I move to Berlin?",
     "Could you make this sound formal: we are late.", "Could you make this sound formal",
     "Help me plan a surprise party for my son.", "Suggest a recipe I could make with leftover rice.",
     "I'd like some ideas for a vegetarian dinner.", "I need recommendations for a quiet hotel in Rome.",
     "Can you list three podcasts about gardening", "What's a good gift for my wife?"],
)
def test_requests_and_questions_are_not_evidence(sentence: str) -> None:
    # A question asks and a request sets a task: neither tells what the speaker is like,
    # even when it mentions them ("for me", "my wife", "I could make").
    assert not is_informative(sentence)
    assert informative_part(sentence) is None


@pytest.mark.parametrize(
    ("sentence", "part"),
    [("I'm vegan, any dessert ideas for me?", "I'm vegan"),
     ("I just moved to Oslo - what should I see first?", "I just moved to Oslo"),
     ("Write it down, I always forget.", "Write it down, I always forget."),
     ("Can you believe I ran 10k today!", "Can you believe I ran 10k today!"),
     ("I'd like to run a marathon next spring.", "I'd like to run a marathon next spring.")],
)
def test_a_statement_before_a_question_is_kept(sentence: str, part: str) -> None:
    assert informative_part(sentence) == part


@pytest.mark.parametrize(
    "sentence",
    ["I love hiking.", "The kids loved the beach trip.", "It's special to me.", "Swimming is fun.",
     "I went to a NAMI support group yesterday and found it moving.",
     "Lost my job at the bakery on Friday.", "I'm buried in school runs & work."],
)
def test_keeps_statements_about_the_speaker_and_their_life(sentence: str) -> None:
    assert is_informative(sentence)


def test_is_question_ignores_trailing_emoji() -> None:
    assert is_question("Are you coming? 😊")
    assert not is_question("I am coming 😊")


# -- stance -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "polarity", "negated", "cessation"),
    [
        ("I love hiking", 1, False, False),
        ("I don't like hiking anymore", -1, True, True),
        ("I hate hiking now", -1, False, False),
        ("I stopped hiking after my knee injury", -1, False, True),
        ("I can't stand horror movies", -1, True, False),
        ("I'm not a fan of jazz", -1, True, False),
        ("I'm not happy at work", -1, True, False),
        ("I used to live in Sweden", -1, False, True),
        ("I got used to the cold", 0, False, False),
        ("I never stopped running", 1, True, False),
        ("I can't wait to go", 1, False, False),
        ("I don't know, I loved it", 1, False, False),
        ("I don't have kids", 0, True, False),
        ("I live in Lisbon", 0, False, False),
    ],
)
def test_analyze_stance(sentence: str, polarity: int, negated: bool, cessation: bool) -> None:
    s = analyze_stance(sentence)
    assert (s.polarity, s.negated, s.cessation) == (polarity, negated, cessation)


def test_free_negation_only_when_nothing_was_flipped() -> None:
    assert analyze_stance("I don't have kids").free_negation
    assert not analyze_stance("I don't like hiking").free_negation
    assert not analyze_stance("I no longer hike").free_negation


@pytest.mark.parametrize(
    "sentence",
    ["We want to foster teenagers who haven't known a stable home.",
     "Our school has a garden and most others don't.",
     "At the meetup I talked to people who weren't into board games at all.",
     "My brother doesn't own a car."],
)
def test_someone_elses_denial_is_no_free_negation(sentence: str) -> None:
    # Denied of others, not of the speaker: no side taken on the topic.
    assert not analyze_stance(sentence).free_negation
    assert stance_label(sentence) == "neutral"


def test_someone_elses_negator_still_flips_a_stance_word() -> None:
    assert analyze_stance("My kids don't like broccoli").polarity == -1


@pytest.mark.parametrize(
    ("sentence", "phrase"),
    [("I quit smoking", "quit"), ("I gave up on running", "gave up"), ("I no longer eat meat", "no longer"),
     ("I never stopped painting", None), ("I can't quit coffee", None), ("I'm used to it", None),
     # Another person's stop ends nothing of the speaker's, whatever the clause.
     ("My uncle used to take us fishing every summer.", None),
     ("She quit the choir when her knee went.", None),
     ("My neighbour no longer walks her terrier.", None),
     ("Grandpa loved the allotment, and used to grow leeks there.", None),
     ("It's strange to think he's not at the bakery anymore.", None),
     # The speaker's own, with the subject shared, left out or beside someone else.
     ("My brother and I stopped speaking in March.", "stopped"),
     ("I loved the choir, but stopped going after the move.", "stopped"),
     ("Gave up on the crossword this spring.", "gave up"),
     ("I don't visit my cousins anymore.", "anymore"),
     ("Gardening used to be my thing.", "used to"),
     # Ends in other words, and a visit that ends nothing.
     ("I've gone right off pickles.", "gone right off"),
     ("I packed in the cycling club after the winter.", "packed in the cycling"),
     ("I packed it in after two seasons.", "packed it in"),
     ("I stopped by the library after work.", None),
     ("We stopped off in York on the way north.", None),
     # A halt or being accustomed ends nothing; a stop that names what it ends does.
     ("I stopped beside the old fountain to catch my breath.", None),
     ("The drizzle had just stopped.", None),
     ("We stopped dead in our tracks.", None),
     ("By then I was used to the noise of the trams.", None),
     ("I stopped for good after the second season.", "stopped"),
     ("I stopped the piano lessons when we moved.", "stopped"),
     # A scene the speaker only heard or saw ends nothing of theirs; a stop of their
     # own that they noticed does.
     ("I heard the landlord announce that the parties had to stop.", None),
     ("[kitchen] I saw the old baker no longer opened on Mondays.", None),
     ("I noticed I'd stopped reaching for my phone at night.", "stopped")],
)
def test_find_cessation(sentence: str, phrase: str | None) -> None:
    assert find_cessation(sentence) == phrase


# -- time, entities, topic ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "time"),
    [
        ("I went to the museum yesterday.", "yesterday"),
        ("We met last week at the park.", "last week"),
        ("In March I ran a 10k.", "In March"),
        ("I painted that in 2022.", "in 2022"),
        ("We adopted a puppy two weeks ago.", "two weeks ago"),
        ("It was on 7 May 2023.", "7 May 2023"),
        ("I go running every morning.", "every morning"),
        ("I may go to the party.", None),
        ("I love hiking.", None),
    ],
)
def test_find_time(sentence: str, time: str | None) -> None:
    assert find_time(sentence) == time


# Words and joins that make and unmake time expressions: every alternative of the
# pattern, the word characters that break a boundary ("_", digits), typographic
# apostrophes and a non-ASCII letter that case-folds to "s".
_TIME_PIECES = st.sampled_from(
    "last this next every each other day days week weekend month year morning night time "
    "ago two few a couple of in on since may March mar sept Friday friday ſunday yesterday "
    "today tonight recently lately these nowadays when i was kid 7 7th 2023 1999 the "
    "over earlier before".split()
)
_TIME_JOINS = st.sampled_from([" ", " ", " ", "", "_", "-", ", ", ".", "\u2019", "'s "])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(_TIME_PIECES, _TIME_JOINS), min_size=1, max_size=8))
def test_find_time_skips_only_sentences_the_pattern_cannot_match(parts: list[tuple[str, str]]) -> None:
    # The pre-check on words and digits never changes an answer of the full pattern.
    from personatree.text.entities import _TIME_RE
    from personatree.text.tokens import APOSTROPHES

    sentence = "".join(w + j for w, j in parts)
    m = _TIME_RE.search(sentence.translate(APOSTROPHES))
    assert find_time(sentence) == (m.group(0) if m else None)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab(){};:=/#<>?!_ \n.,-x1", max_size=40))
def test_the_code_check_skips_only_lines_the_pattern_cannot_match(line: str) -> None:
    from personatree.text.cues import _CODE_RE

    assert looks_like_code(line) == (_CODE_RE.search(line) is not None)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="aZB 1.2,'&-_:/%kst\u00e9\u0663\u00c9", max_size=40))
def test_the_entity_pattern_matches_where_its_lookbehind_form_does(text: str) -> None:
    # The pattern with its lookbehinds first, as it reads most plainly.
    plain = re.compile(
        r"(?<![\w'])(?:[A-Z][\w'&\-]*(?:\s+[A-Z][\w'&\-]*)*)"
        r"|(?<![\w.])\d+(?:[.,:/]\d+)*(?:st|nd|rd|th|k|%)?(?![\w])"
    )
    from personatree.text.entities import _ENTITY_RE

    assert [m.span() for m in _ENTITY_RE.finditer(text)] == [m.span() for m in plain.finditer(text)]


@pytest.mark.parametrize(
    ("sentence", "entities"),
    [
        ("Hey Mari! I met Anna in New York.", ["Mari", "Anna", "New York"]),
        ("The kids loved it.", []),
        ("NAMI groups helped me.", ["NAMI"]),
        ("I ran 10k in 2022 with Marisol's sister.", ["10k", "2022", "Marisol"]),
        ("Yesterday Tom and I went out.", ["Tom"]),
    ],
)
def test_find_entities(sentence: str, entities: list[str]) -> None:
    assert find_entities(sentence) == entities


@pytest.mark.parametrize(
    ("sentence", "topic"),
    [
        ("I love hiking in the mountains.", "hiking"),
        ("I'm allergic to peanuts", "peanuts"),
        ("I go running every morning", "running"),
        ("I went to a NAMI support group yesterday", "nami support group"),
        ("I stopped hiking after my knee injury", "hiking"),
        ("Thanks!", ""),
    ],
)
def test_key_topic(sentence: str, topic: str) -> None:
    assert key_topic(tokenize(sentence)) == topic


# -- summaries ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "phrase"),
    [
        ("I love hiking in the mountains.", "Loves hiking in the mountains"),
        ("I'm allergic to peanuts", "Allergic to peanuts"),
        ("I'm a nurse.", "Is a nurse"),
        ("I've been feeling stressed at work.", "Feeling stressed at work"),
        ("I really enjoy jazz!", "Really enjoys jazz"),
        # An adverb no list names is still no verb ("Wholeheartedlies agree").
        ("I wholeheartedly agree with my brother.", "Wholeheartedly agrees with their brother"),
        ("I fly home every winter.", "Flies home every winter"),
        ("Well, I try to call my mom every day", "Tries to call their mom every day"),
        ("I go running every morning 😊", "Goes running every morning"),
        ("I don't eat meat.", "Doesn't eat meat"),
        ("I went to Paris with my sister.", "Went to Paris with their sister"),
        ("I held a garage sale for my aunt.", "Held a garage sale for their aunt"),
        ("The kids loved the beach trip.", "The kids loved the beach trip"),
        ("Our little dog keeps us busy, we walk him twice a day.",
         "Their little dog keeps them busy, they walk him twice a day"),
        ("I moved to the US with our two cats.", "Moved to the US with their two cats"),
        ("Loves hiking (5 mentions, Mar–Jun 2024)", "Loves hiking"),
    ],
)
def test_pattern_phrase(sentence: str, phrase: str) -> None:
    assert pattern_phrase(sentence) == phrase


def test_format_month_span_and_suffix() -> None:
    d = lambda y, m: datetime(y, m, 3, tzinfo=timezone.utc)  # noqa: E731
    assert format_month_span(d(2024, 3), d(2024, 3)) == "Mar 2024"
    assert format_month_span(d(2024, 3), d(2024, 6)) == "Mar–Jun 2024"
    assert format_month_span(d(2024, 2), d(2023, 11)) == "Nov 2023–Feb 2024"
    assert strip_summary_suffix("Loves hiking (1 mention, Mar 2024)") == "Loves hiking"
    assert strip_summary_suffix("Loves hiking (with friends)") == "Loves hiking (with friends)"


@pytest.mark.parametrize(
    "sentence",
    [
        "Give me a list of board games that play well with two people",
        "List me 15 rainy-day projects for my flat with my sewing machine",
        "Please compare two spreadsheet apps for household budgets.",
        "Enumerate the modules this service needs, without writing the code yet.",
        "def area(self):",
        "// look up the account and its owner",
        "x = compute(3)",
        "return total;",
        # framed: the payload after a colon, or the task asked in the first person
        "Make this sound more formal: I loved the dinner.",
        "Translate into French: I love my garden.",
        "First I'd like you to go through this function and rename its variables.",
        "I want you to act as a travel guide for Lisbon.",
    ],
)
def test_tasks_for_the_other_party_and_pasted_code_are_not_about_the_speaker(sentence: str) -> None:
    assert not is_informative(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "Write it down, I always forget.",
        "Check out my quilt for the county fair!",
        "I keep to a strict nut-free and egg-free diet because of severe allergies.",
        "Node 18 with the standard library and no frameworks.",
        "I painted a sunset: it was beautiful.",
        "I want you to know how much your support means to me.",
        "Update: I finally finished the marathon!",
    ],
)
def test_statements_that_open_like_requests_or_code_are_kept(sentence: str) -> None:
    assert is_informative(sentence)
    assert not looks_like_code(sentence)


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("I keep to a strict nut-free and egg-free diet because of severe allergies.", True),
        ("I tend to avoid loud crowded venues because of my migraines.", True),
        ("Those other plans don't work for me.", True),
        ("I'll go with the second one, the folding bike.", True),
        ("The subscription plans are not really my preference right now.", True),
        ("I went to the beach yesterday.", False),
        ("We went with friends to the lake.", False),
        ("Their warehouse ships orders twice a week.", False),
        ("I refuse to use beauty products that were tested on animals.", True),
        ("I don't really eat meat.", True),
        ("I can't stand loud music.", True),
        ("Let's go with option 3, the folk playlist; pop is too loud for my taste.", True),
        ("I can't go today, the car broke down.", False),
        ("I cannot open the attachment you sent.", False),
        ("Why can't I usually sleep past six?", False),
        ("I can plan the week as follows: mornings for study.", False),
        ("so I was like yeah " * 12 + "I always love it", False),
        ("I have a deep aversion to horror films and will not watch them.", True),
        ("I do not drink coffee after noon.", True),
        ("I did not drink anything at the party.", False),
        ("Option 3 sounds best.", True),
        ("Option 3 is deprecated in the newer release.", False),
        ("The quiet cabin by the lake sounds ideal for me.", True),
        ("I find it hard to focus in open-plan offices.", True),
        ("The louder venues are a bit much for my liking.", True),
        ("I want to taste the local wine tomorrow.", False),
    ],
)
def test_dispositions_are_first_person_habits_likes_constraints_and_choices(
    sentence: str, expected: bool
) -> None:
    assert is_disposition(sentence) is expected


# -- stance labels ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I hate cold showers.", ("negative", "stance")),
        ("I can't stand cold showers.", ("negative", "idiom")),
        ("I gave up cold showers in May.", ("stopped", "change")),
        ("The shower at the gym was freezing and awful.", ("negative", "affect")),
        ("A rough week at the pool, honestly.", ("negative", "affect")),
        ("I hurt my shoulder badly and the physio says no swimming for a month.", ("negative", "negation")),
        ("I don't own a swimsuit.", ("negative", "negation")),
        # How one time went: a past episode denied, no side taken on swimming.
        ("Rough gala, I didn't make the relay final.", ("negative", "episode")),
        ("I couldn't get a lane at the pool on Sunday.", ("negative", "episode")),
        ("I didn't go and I don't want to.", ("negative", "negation")),
        ("That must have been hard for you.", ("neutral", "listener")),
        ("The pool opens at seven.", ("neutral", "none")),
        # What the speaker heard or saw others start or stop takes no side of theirs.
        ("I watched as the swimmers began their warm-up.", ("neutral", "none")),
        ("I heard the lifeguard had quit for good.", ("neutral", "none")),
        ("I saw the swimmers begin, and I started my own laps.", ("started", "change")),
        # A start is the speaker's when they are its subject, said or left out; a thing,
        # another person or a reaction of a moment starts nothing of theirs.
        ("The kettle started whistling while I read.", ("neutral", "none")),
        ("My brother joined a rowing club last spring.", ("neutral", "none")),
        ("I stared at the letter and began to weep.", ("neutral", "none")),
        ("We both started giggling at the back of the hall.", ("neutral", "none")),
        ("Sold my car and started cycling to the office.", ("started", "change")),
        ("When I first started rowing, my knees ached.", ("started", "change")),
        ("I slowly started painting again after the move.", ("started", "change")),
        ("Our neighbour gradually stopped waving at us.", ("neutral", "none")),
    ],
)
def test_stance_reading_says_what_the_label_rests_on(text: str, expected: tuple[str, str]) -> None:
    from personatree.text import stance_label, stance_reading

    assert stance_reading(text) == expected
    assert stance_label(text) == expected[0]


@pytest.mark.parametrize(
    ("sentence", "stance"),
    [
        ("I adore long train journeys.", "positive"),
        ("I can't bear loud bars.", "negative"),
        ("Cold porridge is not my thing.", "negative"),
        ("I don't own a bike.", "negative"),
        ("I rarely cook at home.", "negative"),
        ("I don't paint anymore.", "stopped"),
        ("I gave up chess when the club closed.", "stopped"),
        ("I no longer drink coffee.", "stopped"),
        ("I'm over team sports.", "stopped"),
        ("I haven't surfed since the accident.", "stopped"),
        ("I haven't touched my violin in years.", "stopped"),
        ("We haven't gone climbing for months.", "stopped"),
        ("I never took up knitting, it looks fiddly.", "negative"),
        ("I haven't joined a choir.", "negative"),
        ("I've started rowing on Sundays.", "started"),
        ("I took up the cello in the autumn.", "started"),
        ("I've gone vegetarian.", "started"),
        ("If I ever quit teaching, I'd run a bookshop.", "neutral"),
        ("I'm trying to quit sugar.", "neutral"),
        ("I'd like to spend more time outdoors.", "neutral"),
        ("I'd love to see the northern lights.", "positive"),
        ("I never stopped drawing.", "positive"),
        ("I'm over the moon about the new flat.", "positive"),
        ("I live in a small flat near the harbour.", "neutral"),
        ("My best friend lives in Leeds.", "neutral"),
        ("Since the move to the coast I've never felt better.", "positive"),
        ("We couldn't be happier with the allotment.", "positive"),
        ("The pottery class couldn't have gone better.", "positive"),
        ("Nothing beats a cold lemonade after a ride.", "positive"),
        ("I can't complain about the night shifts.", "positive"),
        ("Winter on the island is no joke.", "neutral"),
        ("My wrist doesn't feel better after the splint.", "negative"),
        ("I never get better at parallel parking.", "negative"),
        ("We've completely cut out fizzy drinks.", "stopped"),
        ("I'm not cut out for night shifts.", "negative"),
        ("I cut out a pattern for the skirt.", "neutral"),
        ("Since the diagnosis, cheese is off the menu.", "stopped"),
        ("I've sworn off online poker.", "stopped"),
        ("After the fall I'm banned from climbing for a year.", "stopped"),
        ("The physio told me to stay off the bike.", "stopped"),
        ("I'm so done with crowded festivals.", "stopped"),
        ("My old tortoise passed away last week.", "stopped"),
        ("I want to swear off sugar.", "neutral"),
        # Negators of an idiom deny nothing about the speaker.
        ("Hi Tom, long time no speak!", "neutral"),
        ("No worries, I'll bring the chairs.", "neutral"),
        ("Oh no, poor thing.", "neutral"),
        ("Remember you're not alone with this.", "neutral"),
        ("Training a puppy isn't always easy.", "neutral"),
        ("The exam wasn't easy and the essay wasn't either.", "neutral"),
        ("Fixing up the boat has been no picnic.", "neutral"),
        ("I haven't been to the new bakery yet.", "neutral"),
        ("We haven't decided where to go in June.", "neutral"),
        ("Don't let the critics put you off!", "neutral"),
        ("The pool isn't open on Mondays.", "neutral"),
        ("I just can't stop knitting these days!", "neutral"),
        ("I can't let go of the dream of a little bookshop.", "neutral"),
        ("My old bike never lets me down.", "neutral"),
        ("I never knew chess could be this fun.", "positive"),
        ("I never thought I would quit running.", "stopped"),
        ("We haven't spoken in ages, so much to tell you!", "neutral"),
        ("Not much new here, the allotment keeps me busy.", "neutral"),
        ("Nothing going on this week apart from the pottery class.", "neutral"),
        ("Baking saved my sanity last winter, so why not sell a few loaves.", "neutral"),
        ("I haven't spoken to my brother since the funeral.", "stopped"),
        ("I don't own a bike.", "negative"),
        ("I don't like it either.", "negative"),
        # Praise and gratitude told with a negator.
        ("You can't beat a picnic by the river.", "positive"),
        ("Long walks and good company, can't beat it!", "positive"),
        ("Rowing is my stress relief.", "positive"),
        ("There's nothing like the smell of fresh bread.", "positive"),
        ("I couldn't have moved flats without my cousins.", "positive"),
        ("I can't imagine Sundays without a long walk.", "positive"),
        ("I won't let a sore ankle stop me from dancing.", "positive"),
        ("My neighbours helped me through a lonely winter.", "positive"),
        ("Knitting helps me de-stress after work.", "positive"),
        ("The view from the ridge was stunning.", "positive"),
        # A hardship conceded before "but" is no stance against what follows it.
        ("It's been exhausting, but I'm keeping at it.", "neutral"),
        ("Running the shop isn't easy, but I'm sure it'll work out.", "neutral"),
        ("The first week was awful but the team is lovely.", "positive"),
        ("I love the town but the parking is terrible.", "positive"),
        ("I hate early starts but the bakery is worth it.", "negative"),
        ("It was hard, but I quit smoking in March.", "stopped"),
        ("I used to love cycling, but my knees can't take it.", "stopped"),
        # Said to the listener about the listener: no stance of the speaker's own.
        ("That must have been so stressful for you, Sam.", "neutral"),
        ("Your garden looks amazing, Tom!", "neutral"),
        ("I love your garden, Tom!", "positive"),
        # Into a hobby is a start; into a crash is not.
        ("I left the newsroom for good, I'm a gardener now.", "stopped"),
        ("We settled in Cork for good.", "neutral"),
        ("I got into birdwatching last year.", "started"),
        ("We got into a minor crash on the way home.", "neutral"),
        # A liking that grew or wore out, in idioms of its own.
        ("Folk music has really grown on me.", "positive"),
        ("I've come around to anchovies.", "positive"),
        ("I'm hooked on bouldering lately.", "positive"),
        ("I've warmed to the idea of a smaller flat.", "positive"),
        ("Board games grate on me now.", "negative"),
        ("The commute has become a real slog.", "negative"),
        ("My enthusiasm for marathons has worn thin.", "negative"),
        ("The rug was worn thin by the door.", "neutral"),
        ("Cruises have lost their appeal for me.", "negative"),
        ("I dread the Sunday league matches now.", "negative"),
        ("I've fallen out of love with jigsaws.", "negative"),
        ("I've gone cold on the idea of a camper van.", "negative"),
        ("I've had enough of five-a-side on icy pitches.", "negative"),
        ("Darts? I can take it or leave it nowadays.", "negative"),
        ("Line dancing makes me cringe.", "negative"),
        ("I've outgrown the pub quiz crowd.", "stopped"),
        ("I've caught the sailing bug.", "positive"),
        ("I'm a total convert to oat milk.", "positive"),
        ("Sourdough is my latest obsession.", "positive"),
        # Disgust and relish are sides too.
        ("Mushy peas again at the canteen, yuck.", "negative"),
        ("The smell of fish sauce makes me gag.", "negative"),
        ("That lentil stew was so yummy.", "positive"),
    ],
)
def test_stance_label(sentence: str, stance: str) -> None:
    assert stance_label(sentence) == stance
