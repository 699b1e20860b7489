"""The fixed English vocabulary of the offline judge: word lists and phrase patterns.

This module is data, not logic. The functions that read it live in
:mod:`personatree.text` (which re-exports :data:`STOPWORDS`); keeping the vocabulary
here lets those functions be read without paging through word lists, and lets a change
to a list be reviewed on its own.

Every word set holds lower-case tokens in the form :func:`personatree.text.tokenize`
produces (typographic apostrophes already mapped to ``'``), so a membership test needs
no further normalisation. The phrase patterns match text that has been through
:func:`personatree.text.normalize` unless they say otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = [
    "DISPOSITION_MARKERS",
    "HABIT_VERBS",
    "NEGATED_AUXILIARIES",
    "STANDING_NEGATORS",
    "FIRST_PERSON_SUBJECT",
    "REQUEST_LEADS",
    "REQUEST_VERBS",
    "REQUEST_MODALS",
    "REQUEST_MODAL_EXEMPT",
    "ACTIVITY_PASTS",
    "ADVERBS",
    "DOING_VERBS",
    "AFFECT_NEG",
    "AFFECT_POS",
    "CESSATION_CANCEL_RE",
    "CESSATION_RE",
    "CESSATION_TRIGGERS",
    "CHANGE_REACH",
    "CHANGE_REACH_ANCHORS",
    "START_RE",
    "INTENT_FRAME_RE",
    "HYPOTHETICAL_RE",
    "RARE_WORDS",
    "STANCE_PHRASE_POS_RE",
    "STANCE_PHRASE_NEG_RE",
    "COMPOUND_NOT_AFFECT_RE",
    "NEGATION_IDIOM_RE",
    "STOP_EXTRA_RE",
    "NEGATED_START_RE",
    "NOT_NAMING",
    "CHANGE_OF_STATE_RE",
    "OTHER_PEOPLE",
    "DETERMINERS",
    "FILLERS",
    "FILLER_PHRASE_RE",
    "FIRST_PERSON",
    "ELIDED_SUBJECT_OPENERS",
    "PERCEIVING_VERBS",
    "HARDSHIPS",
    "INTENSIFIERS",
    "IRREGULAR_3SG",
    "LEADING_FILLER_RE",
    "LIGHT_VERBS",
    "LIKE_FORMS",
    "LIKE_SUBJECTS",
    "MOMENT_REACTIONS",
    "NEGATORS",
    "NEG_EXEMPT",
    "NO_SPLIT_ABBR",
    "PAST_IRREGULAR",
    "POSITIVE_NEGATED",
    "PRED_ADJ",
    "PRONOUN_CAPS",
    "THIRD_PERSON_FORMS",
    "SECOND_PERSON",
    "STANCE_NEG",
    "STANCE_POS",
    "STOPWORDS",
    "TIME_WORDS",
    "TOPIC_SKIP",
    "TRIGGER_FEELINGS",
    "UNBEATEN",
    "UNBEATEN_LINKS",
    "UNBEATEN_NEGATORS",
]

# --------------------------------------------------------------------------------------
# Sentence splitting
# --------------------------------------------------------------------------------------

# Abbreviations after which a period never ends a sentence (titles and Latin forms
# are nearly always followed by more of the same sentence).
NO_SPLIT_ABBR: frozenset[str] = frozenset(
    """dr mr mrs ms mx prof sr jr st mt ft rev gen col capt lt sgt vs v e.g eg i.e ie
    cf no nos fig approx ca al dept est vol pp""".split()
)


# --------------------------------------------------------------------------------------
# Function words, pronouns and fillers
# --------------------------------------------------------------------------------------

STOPWORDS: frozenset[str] = frozenset(
    """a an the and or but if so as of at by for with about against between into through
    during before after above below to from up down in out on off over under again further
    then once here there when where why how all any both each few more most other some such
    nor only own same than too very s t can will just don should now this that these those
    is are was were be been being have has had having do does did doing would could might
    must shall may it its it's itself he him his himself she her hers herself they them their
    theirs themselves what which who whom whose i me my mine myself we us our ours ourselves
    you your yours yourself yourselves i'm i've i'd i'll we're we've we'd we'll you're you've
    you'd you'll he's she's they're they've that's what's there's here's who's let's it'll
    that'll there'll also even still just really quite pretty much many lot lots bit kind sort
    thing things stuff something anything everything nothing someone anyone everyone one ones
    like yeah yes no not gonna wanna gotta got get gets getting u ur im ive id dont cant isn't
    aren't wasn't weren't don't doesn't didn't can't couldn't won't wouldn't shouldn't haven't
    hasn't hadn't via per etc way ways well oh ah cause 'cause because since while""".split()
)

# Pronouns, for telling what the speaker says about themself from what they say to
# the other party.
FIRST_PERSON: frozenset[str] = frozenset(
    "i me my mine myself we us our ours ourselves i'm i've i'd i'll we're we've we'd we'll im ive".split()
)
# Verbs of perceiving that open a scene the speaker heard or saw ("I heard Dad say the
# arguing had to stop", "Saw a heron take off"): what happens in it is someone else's.
PERCEIVING_VERBS: frozenset[str] = frozenset("heard overheard saw watched noticed witnessed smelled".split())
# Words that open a statement whose subject chat leaves out, which is then the
# speaker: "Started at a new studio on Monday", "Haven't touched a cigarette since May",
# "Just moved into the new flat".
ELIDED_SUBJECT_OPENERS: frozenset[str] = frozenset(
    """started moved quit got gave left switched stopped retired signed joined sold bought
    handed packed finally just recently been went gone haven't havent hadn't turned""".split()
)
# Third-person forms that :data:`OTHER_PEOPLE` leaves out (it lists subjects). A
# statement of change with no word for anyone else (these, those, the second person)
# and no name tells the speaker's ("A slipped disc means no lifting").
THIRD_PERSON_FORMS: frozenset[str] = frozenset("him her them his their hers theirs they're".split())
# The pronouns that make the speaker the subject: "me"/"my" in "Give me my schedule"
# do not turn a request into a statement about the speaker.
FIRST_PERSON_SUBJECT: frozenset[str] = frozenset(
    "i we i'm i've i'd i'll we're we've we'd we'll im ive".split()
)
# Verbs that open a task for the other party when a sentence starts with them
# ("List ...", "Write ...", "Compare ..."): requests to an assistant, which describe the
# task, not the person. Social imperatives ("look", "check out", "guess") are left out
# on purpose: between people they usually share something about the speaker.
REQUEST_VERBS: frozenset[str] = frozenset(
    """list give write tell show explain describe compare create generate make summarize
    summarise translate rewrite complete continue enumerate provide suggest recommend find
    draft design build implement fix debug convert calculate compute solve answer classify
    extract identify analyze analyse evaluate rank sort define outline propose improve
    edit correct paraphrase format add remove replace insert return print output act
    pretend assume simulate respond reply rephrase proofread shorten expand elaborate
    brainstorm prepare compose produce modify refactor optimize optimise debug test
    visualize plot draw sketch illustrate detail clarify specify determine estimate
    predict review critique help plan""".split()
)
# Modals that open a polite request to the other party ("Could you make this formal",
# "Can you list ..."); after them "you" is the subject of the task.
REQUEST_MODALS: frozenset[str] = frozenset("could can would will".split())
# Verbs after "can you ..." that share something rather than ask for a task ("Can you
# believe I ran 10k?").
REQUEST_MODAL_EXEMPT: frozenset[str] = frozenset("believe imagine guess tell".split())
# Words that make a first-person sentence a lasting disposition rather than an event:
# habits ("I usually..."), likes and aversions ("I avoid..."), and standing constraints
# ("I keep a nut-free diet", "... doesn't suit me").
DISPOSITION_MARKERS: frozenset[str] = frozenset(
    """usually always never rarely seldom often typically generally normally tend tends
    prefer prefers preference rather avoid avoids follow follows allergic allergy
    intolerant intolerance diet vegan vegetarian
    dislike dislikes hate hates love loves enjoy enjoys appeal appeals favorite
    favourite fan sensitive refuse refuses objection boycott aversion averse liking
    tastes preferences""".split()
)
# A negated verb of these is a standing constraint ("I don't eat meat", "I can't
# drink milk", "I won't fly"); other negations are mostly events or problems ("I
# can't go today", "I cannot open the attachment").
STANDING_NEGATORS: frozenset[str] = frozenset(
    "don't doesn't can't cannot won't never".split()
)
# Auxiliaries whose spelled-out negation is one of those ("I will not fly", "I do not
# eat meat").
NEGATED_AUXILIARIES: frozenset[str] = frozenset("do does will would can could should".split())
HABIT_VERBS: frozenset[str] = frozenset(
    """eat eats drink drinks use uses wear wears buy buys like likes enjoy enjoys watch
    watches play plays fly flies drive drives travel travels handle handles tolerate
    tolerates stand touch touches consume consumes smoke smokes cook cooks read reads
    listen listens care cares do does own owns work works suit suits fit fits""".split()
)
# Words that may precede the verb of a request ("Please list ...", "Now write ...").
REQUEST_LEADS: frozenset[str] = frozenset("please pls plz kindly now also then and so ok okay".split())
SECOND_PERSON: frozenset[str] = frozenset(
    "you your yours yourself yourselves you're you've you'd you'll u ur ya".split()
)

# Reactions, greetings and politeness: words that carry no information about the
# speaker's life on their own ("Wow, that's so cool!").
FILLERS: frozenset[str] = frozenset(
    """hey hi hello hiya heya yo howdy thanks thank thx ty lol lmao haha hahaha hehe wow omg
    ok okay k yep yup nope sure cool great awesome nice good glad amazing sweet fun
    interesting see talk soon later bye goodbye congrats congratulations agree totally
    absolutely definitely indeed exactly right true sounds sound sounded wonderful fantastic
    brilliant aw aww hmm um uh anyway anyways welcome pleasure luck wish wishes cheers
    incredible impressive lovely beautiful happy hear heard guess suppose mean tbh btw
    whoa yay hooray gosh jeez wonder guts look looks looked seem seems seemed must've idea
    pic pics photo photos picture pictures""".split()
)

# Capitalised words that are never names: "I" and its contractions, "OK".
PRONOUN_CAPS: frozenset[str] = frozenset({"I", "I'm", "I've", "I'd", "I'll", "OK", "Ok"})

# Greeting and politeness phrases removed before counting content words.
FILLER_PHRASE_RE: re.Pattern[str] = re.compile(
    r"\b(?:take care|talk (?:to you )?soon|see (?:you|ya)(?: (?:soon|later|around))?|"
    r"by the way|good to (?:see|hear from) you|nice to (?:see|meet) you|how are you|"
    r"how have you been|how's it going|what's up|take a look|check (?:it|this) out|"
    r"no worries|my pleasure|you're welcome|good luck|best of luck|have fun|"
    r"great job|good job|well done|nice work|keep it up|thanks? (?:so much|a lot)|"
    r"of course|for sure|i know right|me too|same here|i agree|i hope so|i think so|"
    r"that's (?:so |really |very )?(?:great|cool|awesome|amazing|nice|sweet|wonderful)|"
    r"i'm (?:so )?(?:glad|happy) (?:to hear|for you))\b"
)

# Discourse fillers stripped from the start of a statement before it becomes a
# pattern phrase ("Well, I love hiking" -> "Loves hiking"). Case-insensitive because
# it runs on the statement as written, not on the lower-cased form.
LEADING_FILLER_RE: re.Pattern[str] = re.compile(
    r"^(?:(?:well|so|yeah|yes|oh|honestly|actually|anyway|and|but|also|haha|lol|ok|okay|"
    r"you know|to be honest|tbh|btw|by the way)\b[,!.]?\s+)+",
    re.IGNORECASE,
)


# --------------------------------------------------------------------------------------
# Words that do not name a topic
# --------------------------------------------------------------------------------------

# Degree and frequency words: they modify a statement but are never its topic.
INTENSIFIERS: frozenset[str] = frozenset(
    """really very so too quite pretty super totally absolutely just still even always usually
    often sometimes never ever actually definitely kinda sorta lot lots much more most less
    bit little all some truly honestly seriously literally basically probably maybe perhaps
    especially mostly almost already again""".split()
)

# High-frequency verbs that rarely name the topic of a sentence.
LIGHT_VERBS: frozenset[str] = frozenset(
    """go goes going went gone get gets got getting gotten have has had having do does did
    doing done make makes made making take takes took taken taking be been being am is are
    was were feel feels felt feeling think thinks thought thinking want wants wanted wanting
    need needs needed try tries tried trying keep keeps kept start starts started starting
    come comes came coming know knew known say says said tell told see saw seen look looks
    looked looking seem seems seemed let put gonna wanna gotta use using give gave find found
    help helped helps plan plans planned planning hope hoped hoping decided decide able""".split()
)

TIME_WORDS: frozenset[str] = frozenset(
    """yesterday today tonight tomorrow last next week weeks weekend weekends month months year
    years day days morning mornings night nights evening afternoon ago recently lately time
    times every each monday tuesday wednesday thursday friday saturday sunday january february
    march april june july august september october november december summer winter spring
    autumn fall currently now nowadays soon earlier later once twice hour hours minute minutes
    daily weekly monthly yearly""".split()
)

# Predicate adjectives that govern the real topic through a preposition
# ("allergic to peanuts", "keen on counseling").
PRED_ADJ: frozenset[str] = frozenset(
    """allergic afraid scared keen interested fond proud tired sick addicted good bad great
    used close excited nervous worried passionate busy thankful grateful""".split()
)


# --------------------------------------------------------------------------------------
# Stance, affect and negation
# --------------------------------------------------------------------------------------

# Stance verbs and nouns: an explicit like/dislike of something.
STANCE_POS: frozenset[str] = frozenset(
    """love loves loved loving adore adores adored enjoy enjoys enjoyed enjoying prefer prefers
    preferred favorite favourite favorites favourites fan fans passionate obsessed fond keen
    appreciate appreciates appreciated""".split()
)
STANCE_NEG: frozenset[str] = frozenset(
    """hate hates hated hating dislike dislikes disliked detest detests loathe loathes despise
    despises""".split()
)
# "like" is also a preposition ("feels like"); it is a stance verb only after these.
LIKE_SUBJECTS: frozenset[str] = frozenset(
    """i we they really also do don't didn't doesn't dont didnt still totally actually always
    kinda definitely genuinely truly to would i'd we'd just honestly""".split()
)
LIKE_FORMS: frozenset[str] = frozenset("like likes liked".split())

AFFECT_POS: frozenset[str] = frozenset(
    """happy glad excited exciting proud great amazing awesome wonderful fantastic fun
    enjoyable beautiful inspiring inspired grateful thankful relaxed relaxing calm calming
    peaceful good better best thrilled blessed lucky joy joyful nice cool powerful accepted
    supportive helpful delighted pleased content satisfied comfortable confident healthy
    fine special cheerful rewarding fulfilling refreshing excellent incredible perfect
    lovely stoked pumped motivated energized hopeful free relief calms soothes soothing
    relaxes cheers smile smiles laugh laughs peace energy healthier rested supporter
    uplifting comforting
    gorgeous stunning breathtaking delicious brilliant superb terrific glorious fabulous
    yum yummy tasty scrumptious""".split()
)
AFFECT_NEG: frozenset[str] = frozenset(
    """sad unhappy angry upset anxious anxiety stressed stressful stress worried nervous scared
    afraid frustrated frustrating annoyed annoying tired exhausted lonely bored boring awful
    terrible horrible bad worse worst painful pain hurt hurts sick ill injury injured sore
    miserable depressed depressing difficult tough struggling struggle struggled
    disappointed disappointing overwhelmed swamped fear scary broke heartbroken grief
    crying cried rough exhausting drained burnt burned sucks hated stresses upsets upsetting
    furious irritable grumpy tense dizzy panic panicky terrify terrifies terrified freeze
    overthink headache headaches migraine migraines nasty grieving badly bore bores
    miss missed distant argue argued clash clashes crutches shake frightening dread dreading
    dreaded
    yuck yuk ew eww gross icky vile revolting disgusting disgusted nauseating repulsive horrid
    gagging cringe cringey nightmare burden""".split()
)

# The feeling a trigger pattern names, read from the words its members use for it
# ("painting calms me down" -> calming, "the dogs bring me so much joy" -> uplifting,
# "crowds make me anxious" -> stressful): (side, the word the claim uses, the words that
# call for it). A pattern whose members name no feeling takes the first of its side.
TRIGGER_FEELINGS: tuple[tuple[str, str, frozenset[str]], ...] = (
    ("positive", "uplifting", frozenset(
        """joy joyful happy happier happiness smile smiles uplifting uplift uplifts cheer
        cheers cheerful delight delighted thrilled alive energized energy motivated
        inspiring inspired hopeful hope""".split())),
    ("positive", "calming", frozenset(
        """calm calms calming calmer relax relaxed relaxing relaxes peace peaceful soothe
        soothes soothing unwind unwinds serene tranquil destress relief""".split())),
    ("positive", "comforting", frozenset(
        """comfort comforts comforting comfortable cozy safe reassuring reassured
        accepted belong belonged""".split())),
    ("negative", "upsetting", frozenset(
        """sad sadness upset upsets upsetting cry crying cried hurt hurts lonely depressed
        heartbroken grief down""".split())),
    ("negative", "stressful", frozenset(
        """stress stressed stresses stressful anxious anxiety nervous tense overwhelmed
        overwhelming panic worry worried""".split())),
    ("negative", "frustrating", frozenset(
        """angry anger annoyed annoying annoys frustrated frustrating frustrates irritated
        irritating furious mad""".split())),
    ("negative", "frightening", frozenset(
        """scared scary afraid fear fears terrified terrifies frightening frightened""".split())),
)
# Hardships: what a positive claim cannot be about ("art helps me with my struggles"
# makes no "Finds struggles calming"); the claim names what helps, not what it helps with.
HARDSHIPS: frozenset[str] = frozenset(
    """struggle struggles stress anxiety pain grief fear fears challenge challenges problem
    problems difficulty difficulties hardship hardships loss illness trauma depression
    loneliness worry worries setback setbacks obstacle obstacles pressure burnout injury
    injuries""".split()
)

NEGATORS: frozenset[str] = frozenset(
    """not no never don't doesn't didn't can't cannot won't isn't aren't wasn't weren't haven't
    hasn't hadn't wouldn't shouldn't couldn't nor neither nobody none nothing dont doesnt didnt
    cant wont isnt arent wasnt werent havent hasnt wouldnt shouldnt couldnt ain't""".split()
)
# Negations of these verbs say nothing about the topic ("I don't know", "can't wait").
NEG_EXEMPT: frozenset[str] = frozenset(
    """know think wait believe mind worry forget sure only doubt just mean matter remember
    lie kidding help joke complain""".split()
)
# "can't wait" is eager anticipation, "can't complain" mild content: positive.
POSITIVE_NEGATED: frozenset[str] = frozenset({"wait", "complain"})
# A comparison nothing wins is the top of the scale: "never felt better", "couldn't be
# happier", "nothing beats a swim" praise; after these negators the word is not flipped.
# ("I don't feel better" is still a negation: only these negators make the idiom.)
UNBEATEN_NEGATORS: frozenset[str] = frozenset("never couldn't couldnt nothing".split())
UNBEATEN: frozenset[str] = frozenset(
    """better happier healthier fitter calmer nicer beats beat compares tops top""".split()
)
# The only words that may stand between such a negator and the comparison: "never
# been better", "couldn't have gone better" (not "I never get better at chess").
UNBEATEN_LINKS: frozenset[str] = frozenset(
    """be been is have felt feel looked look tasted sounded seemed gone slept ever""".split()
)


# --------------------------------------------------------------------------------------
# Cessation
# --------------------------------------------------------------------------------------

# Cessation: the speaker no longer does / holds what a pattern says. The fixed-width
# lookbehinds keep "got used to it" / "I'm used to" from counting, and "any more" counts
# only at the end of a clause ("I don't swim any more", not "any more questions").
CESSATION_RE: re.Pattern[str] = re.compile(
    # "I stopped by the bakery", "stopped off in Leeds": a visit, not an end; "I stopped
    # at the gate", "stopped dead", "the drizzle had stopped.": a halt, nothing given up
    # (a stop that ends a habit names it: "stopped running", "stopped the lessons").
    r"\b(?:stopped(?! (?:by|off|at|beside|behind|before|in front|in my tracks|in our tracks|dead|short"
    r"|outside|there|here|and|to|for(?! good)|near|next to|on the|in the|mid|halfway)\b)"
    r"(?!\s*(?:[.,;:!?)\u2014\u2013-]|$))"
    r"|(?:had|have had|was forced) to stop|quit|quitting|quits|gave up|give up|"
    r"given up|giving up|no longer|not anymore|anymore|any more(?=\s*(?:[.,;:!?)]|$))|"
    # "I was used to the cold", "she's used to it": accustomed, not a past habit.
    r"(?<!got )(?<!get )(?<!gets )(?<!i'm )(?<!am )(?<!be )(?<!getting )(?<!was )(?<!were )(?<!is )"
    r"(?<!are )(?<!been )(?<!'s )(?<!'re )used to|"
    r"lost interest|lose interest|grew out of|grown out of|"
    r"got tired of|sick of|fed up|over it|broke up|broken up|split up|cut ties|"
    r"retired|gone (?:right |completely |totally |rather )?off|dropped out|"
    # "I packed in the running", "I packed it in": British for giving up.
    r"packed (?:it|that|them) in|packed in (?:my |the )?(?:job|course|gym|band|team|\w+ing))\b"
)
# Determiners: the word after one is named, not acting ("the 'I' of the poem", "my
# aunt ... used to help": the aunt is the subject).
DETERMINERS: frozenset[str] = frozenset("the a an this that his her their our my your".split())
# People other than the speaker, as the subject of a cessation verb: "my uncle used to
# take us sailing" and "he quit last year" end nothing of the speaker's own.
OTHER_PEOPLE: frozenset[str] = frozenset(
    """he she they he's she's they've he'd she'd they'd mum mom dad father mother parents son
    daughter wife husband partner boyfriend girlfriend brother sister sibling gran grandma
    grandmother grandad granddad grandpa grandfather aunt uncle cousin niece nephew friend
    friends kid kids child children baby neighbour neighbor boss colleague coworker
    roommate flatmate teacher coach everyone everybody nobody""".split()
)
# A negator right before a cessation verb cancels it ("I never stopped", "can't quit").
CESSATION_CANCEL_RE: re.Pattern[str] = re.compile(
    r"(?:\b(?:not|never|don't|didn't|can't|cannot|won't|couldn't|wouldn't|dont|didnt|cant|wont)"
    r"\s+(?:\w+\s+)?)$"
)
# Every cessation phrase above but "used to" (which the judge checks for on its own)
# contains one of these words. The judge runs the regex only when one of them occurs,
# so a phrase added above needs its trigger word added here.
CESSATION_TRIGGERS: frozenset[str] = frozenset(
    """stopped quit quitting quits gave give given giving longer anymore more lost lose grew
    grown tired sick fed over broke broken split cut retired gone dropped stop packed""".split()
)


# --------------------------------------------------------------------------------------
# Stance labels: starts, intentions, hypotheticals, idioms
# --------------------------------------------------------------------------------------

# A start: the speaker took something up ("I've started swimming", "I took up yoga",
# "I've recently got into jazz", "we just got engaged", "I've gone vegan"). Only past
# and perfect forms: "I want to start a business" is a goal, not a start.
START_RE: re.Pattern[str] = re.compile(
    r"\b(?:started|begun|began|took up|taken up|picked up|"
    # "got into" a hobby, not into an accident, a fight, trouble or one's car, nor the
    # damp into one's bones or a tune into one's head.
    r"(?:got|gotten|getting) into(?! (?:(?:a|an|the|some|big|real|bad|serious|minor|car|my|our|"
    r"his|her|their|your) )*"
    r"(?:accident|crash|fight|argument|row|trouble|debt|mess|car|taxi|bed|traffic|bones|head|skin|"
    r"system|blood)s?\b)|"
    r"got engaged|gone (?:vegan|vegetarian|veggie|plant-based)|"
    r"went (?:vegan|vegetarian)|developed a taste for|made a new friend|"
    r"signed up for|joined)\b"
)
# Reactions of a moment: "started" or "began" before one of these tells a scene ("I
# began to weep", "we both started giggling"), not something the speaker took up.
MOMENT_REACTIONS: frozenset[str] = frozenset(
    """cry crying sob sobbing weep weeping laugh laughing giggle giggling chuckle chuckling
    scream screaming yell yelling shout shouting shake shaking tremble trembling shiver
    shivering sweat sweating panic panicking blush blushing wonder wondering grin grinning
    smile smiling""".split()
)
# An intention or wish frame: what follows it is wanted, not held ("I'm trying to quit
# smoking", "I'd like to spend more time...", "I want to be debt-free"). The stance of
# such a sentence is read from the words before the frame only.
INTENT_FRAME_RE: re.Pattern[str] = re.compile(
    r"\b(?:want(?:s|ed)? to|hop(?:e|es|ing) to|try(?:ing)? to|plan(?:ning)? to|aim(?:ing)? to|"
    r"(?:would|i'd|we'd) like to|working (?:on|toward|towards)|determined to|"
    r"need to|wish i could|my (?:goal|dream|plan) is)\b"
)
# A hypothetical: nothing in it has happened ("If I ever quit my job, I'd ...").
HYPOTHETICAL_RE: re.Pattern[str] = re.compile(r"^\W*(?:even )?if\b|\bif (?:i|we) (?:ever|had|could|were)\b")
# Frequency words that deny a habit without a negator ("I rarely watch TV").
RARE_WORDS: frozenset[str] = frozenset("rarely seldom hardly barely".split())
# Idioms whose stance the word lists cannot see.
STANCE_PHRASE_POS_RE: re.Pattern[str] = re.compile(
    r"\b(?:mean(?:s)? (?:the world|everything|a lot|so much) to (?:me|us)|there for (?:me|us)|"
    r"(?:are|is|'re|am|'m) (?:really |very |so |super )?close|close friends?|"
    r"cheers? (?:me|us) up|lifts? (?:my|our) (?:mood|spirits)|clears? my head|"
    r"(?:'m|am|'re|are|really|so) into\b|(?:i'd|i would|we'd) (?:rather|choose|pick)|"
    r"i'd take .{1,40} over|makes? (?:me|us) laugh|over the moon|"
    # Praise and gratitude told with a negator: nothing beats it, nobody could have
    # done without it, nothing will stop the speaker doing it.
    r"(?:can't|cannot|couldn't) (?:\w+ )?(?:beat|top)\b|(?:there's|there is|ain't|is) nothing (?:quite )?like\b|"
    r"^nothing (?:quite )?like\b|nothing (?:relaxes|calms|soothes|cheers|settles|lifts|delights|excites|thrills"
    r"|comforts|grounds|motivates|energises|energizes) (?:me|us)(?: up| down)? (?:quite )?(?:like|as much as)\b|"
    r"(?:doesn't|does not) get (?:much |any )?better|can't get enough of|"
    r"couldn't have (?:\w+ ){1,3}without|can't (?:imagine|picture) (?:\w+ ){0,3}without|"
    r"(?:won't|will not|not going to|not gonna|never) let (?:\w+ ){0,3}(?:stop|hold|get|bring|keep) (?:me|us)\b|"
    r"nothing(?:'s| is| will)? (?:going to |gonna )?(?:stop|hold) (?:me|us)\b|"
    r"(?:got|gets|get|getting|helped|helps|help|helping|pulled|carried|saw|boosted) (?:me|us) through|"
    r"de-?stress|(?:relieves?|relieving|eases?|easing) (?:my |the )?stress|stress (?:fix|relief|reliever|buster)|"
    # A liking that grew: "jazz has grown on me", "I've come round to olives", "hooked
    # on bouldering", "developed a taste for chilli", "I've warmed to the idea", "I
    # actually look forward to my run".
    r"(?:grown|grew|grows|growing) on (?:me|us)\b|c(?:o|a)me (?:a)?round to|hooked on|"
    r"(?:developed|acquired|got|getting) (?:a|the) (?:real |proper |bit of a )?taste for|"
    r"(?:i've|i have|we've|we have|i|we) (?:really |slowly )?warmed (?:up )?to|"
    r"(?:i|we) (?:actually |really )?look forward to|"
    # "I've caught the climbing bug", "I'm a convert to audiobooks", "my new obsession".
    r"caught the (?:[\w-]+ )?bug\b|(?:i'm|i am|we're|we are) (?:now )?(?:a |an )?(?:total |complete |real |full )?"
    r"converts? to|(?:my|our) (?:new |latest |current )?obsession)"
)
STANCE_PHRASE_NEG_RE: re.Pattern[str] = re.compile(
    r"\b(?:can't bear|cannot bear|can't stand|drives? me (?:up the wall|crazy|mad|nuts|insane)|"
    r"gets? to me|throws? me off|not (?:really )?my thing|hits? me hard|lose my temper|"
    r"hard to (?:deal|get along|talk|live) with|never again|"
    # A liking worn out: "it grates on me", "turns my stomach", "a real slog", "my
    # patience has worn thin", "I've soured on it", "it has lost its charm".
    r"grates? on (?:me|us|my)|turns? my stomach|makes? me (?:gag|retch|heave)\b|"
    # Gone cold: "I've fallen out of love with baking", "gone cold on the idea", "I've
    # had enough of late nights", "I can take it or leave it".
    r"(?:fallen|fell|falling) out of love with|gone cold on|(?:had|have) (?:more than )?enough of|"
    r"take (?:it|them) or leave (?:it|them)|"
    r"(?:feels?|felt|become|is) (?:like )?a (?:real |bit of a |total )?(?:chore|slog|drag)|"
    r"(?:patience|enthusiasm|interest|novelty|appeal|charm|fun)\b[^.,;!?]{0,40}?(?:worn|wearing) thin|"
    r"soured on|(?:my|our) idea of (?:torture|hell)|"
    r"lost (?:its|their|all its) (?:charm|appeal|shine|magic|sparkle))"
)
# Cessations the main pattern leaves out because they need more context: "I'm over
# spin classes" (not "over the moon", "over 40"), "I haven't played tennis since I
# moved"; and ends told in other words, which name the stance of a sentence but are
# not the plain cessation the judge's polarity reads: a thing cut out or sworn off
# ("I've cut out caffeine", not "cut out for"), off the menu, a ban or being told to
# stop by someone with the standing to, being done with a thing, a death, a thing left
# "for good" ("I left the classroom for good"; the "good" in it is no praise), a period
# of one's life said to be over ("my rowing days are behind me", "that's all behind
# us now"), a membership let run out ("I let my gym pass lapse").
STOP_EXTRA_RE: re.Pattern[str] = re.compile(
    r"\b(?:i'm|i am) over (?!the moon|it\b)[a-z]|\b(?:haven't|hasn't|have not|has not) "
    # Not the greeting "we haven't spoken in months" (talking to someone since is a stop).
    r"(?!(?:talked|spoken|chatted|caught up|seen each other) (?:in|for|since)\b)"
    r"(?:\w+ ){1,5}(?:since\b|(?:in|for) (?:months|weeks|years|ages|a (?:long )?while|a long time)\b)"
    r"|\b(?:i've|we've|i have|we have) (?:\w+ )?cut out (?!for\b)|\b(?:swore|sworn|swear) off\b"
    r"|\boff the menu\b|\bkicked the (?:[\w-]+ ){0,2}habit\b"
    r"|\b(?:i'm|i am|we're|we are|i've been|we've been) banned from\b"
    r"|\b(?:told|advised|ordered) (?:me|us) to (?:stop|quit|give up|hand in|avoid|stay off|lay off)\b"
    r"|\b(?:i'm|i am|we're|we are) (?:\w+ )?(?:done|through) with\b|\bpassed away\b"
    r"|\b(?:left|leaving|quit|gave up|given up) (?:\w+ ){0,4}for good\b"
    r"|\b(?:those|(?:my|our|the) [\w-]+) (?:days|years) (?:are|were) (?:now |long |well |all )?"
    r"(?:behind (?:me|us)|over)\b"
    r"|\b(?:that's|that is|it's|it is) (?:all )?behind (?:me|us)\b"
    r"|\b(?:i've|i have|we've|we have|i|we) (?:\w+ )?outgr(?:own|ew)\b"
    r"|\blet (?:my|our|the) (?:[\w-]+ ){0,2}(?:membership|subscription|licen[cs]e|pass|contract) "
    r"(?:lapse|expire|run out)\b"
)
# A change in the speaker's circumstances told in one statement: a move, a job or
# relationship that began or ended, a diagnosis or injury that rules something out,
# a habit given up. Recall treats such statements as pivotal evidence about the person
# (retrieval.scoring), since what they change is asked about in other words later.
CHANGE_OF_STATE_RE: re.Pattern[str] = re.compile(
    r"\b(?:moved (?:to|into|onto|out|back|away|abroad|overseas|house|in with|in together)|relocat(?:ed|ing)|emigrated|"
    r"sold up|(?<!to a )new (?:job|role|position|flat|house|apartment|place)|got the keys (?:to|for)|"
    r"(?:quit|left) (?:my|the) (?:job|post|company|firm|team|band|choir|club|orchestra|army|navy|"
    r"course|programme|program|church|union|league)|"
    # Work begun or ended in other words: "I handed in my notice", "I was made
    # redundant", "stepped down as captain", "started at a new agency".
    r"(?:handed|gave|put) in (?:my|our) notice|handed (?:my|our) notice in|resigned|made redundant|"
    r"stepped down|(?:started|starting) (?:at|with) (?:a|an) new|"
    # "last day at the school was Friday, I start as a curator on Monday".
    r"last day (?:at|in|of) (?:the |my )?(?:office|school|job|work|company|firm|shop|hospital|bank|"
    r"practice|agency|studio|store|restaurant)\b|(?:i|i'll|i will) (?:start|started) as (?:a|an)\b|"
    # "the bakery let me go", "took redundancy", "going freelance", "retraining as a
    # nurse", "dropped to three days a week".
    r"let (?:me|us) go\b|took (?:voluntary )?redundancy|(?:going|gone|went) (?:freelance|self-employed)|"
    r"retrain(?:ing|ed)? as|(?:dropped|dropping|cut|went) (?:down |back )?to (?:\w+ ){1,2}days a week|"
    r"got (?:promoted|hired|fired|laid off|divorced|engaged|married|dumped|hitched)|promoted to|retired|"
    r"laid off|tied the knot|switched (?:to|from|jobs|careers|teams)|divorc(?:e|ed|ing)|"
    r"broke up|breaking up with|split(?:ting)? up|separated|(?:we're|we are|i'm|i am|and i are) separating|"
    r"proposed|pregnant|single again|"
    # A child born: "we had a little boy in April", "I gave birth in May".
    r"(?:had|welcomed) (?:a|our) (?:(?:first|second|third) )?(?:baby|little (?:boy|girl)|son|daughter|child)\b|"
    # "our daughter was born on Tuesday", "the baby arrived early", "I became a dad".
    r"(?:son|daughter|baby|twins|triplets|little one|little boy|little girl|grandson|granddaughter|"
    r"grandchild|firstborn) (?:was|were|has been|had been) born|"
    r"(?:baby|twins|little one) (?:arrived|came)\b(?! (?:home|back|to|from|over|round|with)\b)|"
    r"became (?:a |an )?(?:dad|daddy|mum|mom|mother|father|parents?|grandparents?|grandad|grandma|grandpa|"
    r"granny|grandmother|grandfather|auntie|aunt|uncle|stepmum|stepmom|stepdad)\b|"
    r"gave birth|(?:we're|we are|i'm|i am) expecting (?:a baby|twins|triplets|a (?:little )?(?:boy|girl)|"
    r"our (?:first|second|third)|again)\b|(?:we're|we are|i'm|i am) expecting(?=\s*(?:[.!,;]|$))|"
    # A body that now rules things out, or a thing of life lost: "my arm is in a cast",
    # "on crutches for weeks", "off work with burnout", "the doctor put me on statins",
    # "I lost my sense of smell", "I lost my job".
    r"(?:i'm|i am|was|been|be|is|are) (?:\w+ )?in a (?:cast|sling|wheelchair|neck brace|brace)|on crutches|"
    r"(?:weeks|months) in a (?:cast|sling|brace|boot|walking boot|moon boot)|(?:stress|hairline) fracture|"
    # A body that no longer goes along: "my stomach has turned on me", "my knees gave out".
    r"(?:my|the) (?:stomach|body|gut|knees?|back|hips?|eyes|eyesight|ears|hearing|heart) "
    r"(?:has |have |had )?(?:turned on me|given up on me|gave up on me|gave out|given out|packed in|"
    r"gone downhill|went downhill|got worse|gotten worse)|"
    # A habit left off for a while: "it's been five months without a drink".
    r"(?:been|gone|went|going) (?:\w+ ){1,3}(?:days|weeks|months|years) without\b|"
    r"^(?:\w+ ){0,2}(?:days|weeks|months|years) without (?:a |any )?(?:single )?[a-z]+|"
    # An event of the body, and a diet it brings: "I had a heart attack in June",
    # "I've had to change what I eat", "a new diet for me".
    r"(?:had|suffered) (?:a|my) (?:\w+ )?(?:heart attack|stroke|seizure|miscarriage|breakdown)|"
    r"(?:had|have) to change (?:my (?:diet|lifestyle|routine|habits)|what i eat|how i eat|the way i (?:eat|live))|"
    r"new diet|"
    r"(?:i'm|i am|i was|been) (?:\w+ )?off work|signed off (?:work|sick)|"
    r"on (?:sick|maternity|paternity|parental|medical) leave|"
    r"put (?:me|us) on (?:\w+ ){0,3}?(?:tablets|pills|medication|meds|insulin|antidepressants|statins|"
    r"steroids|antibiotics|an inhaler|a drip)|"
    r"lost my (?:sense of (?:smell|taste)|hearing|sight|eyesight|job|licen[cs]e|appetite|voice)|"
    r"passed away|diagnosed|turns out i(?:'m| am| have)|"
    # A diagnosis told by who made it: "the doctor says I'm coeliac", "the scan showed I have".
    r"(?:doctors?|gp|consultant|specialist|surgeon|physio|optician|dentist|nurse|audiologist|dermatologist|"
    r"neurologist|cardiologist|scan|tests?|results|bloods) "
    r"(?:says|said|say|show|showed|shows|confirmed|confirm|found) (?:that )?i(?:'m| am| have|'ve got)\b|"
    r"(?:developed|have) an? (?:\w+ )?allergy|allergic to|"
    r"(?:gluten|lactose|dairy|wheat|fructose) intoleran(?:t|ce)|banned (?:me|us) from|"
    r"passed my driving test|got my (?:driving |driver's |drivers )?licen[cs]e\b|"
    r"(?:off|quit|given up|gave up|kicked) the (?:booze|drink|sauce|fags|cigs|cigarettes|smokes)\b|"
    r"(?:broke|tore|injured|hurt) my|(?:tore|sprained|twisted|fractured|ruptured|dislocated) (?:a|an|my)|surgery|"
    # An injury or operation named by its noun: "a slipped disc means no lifting", "the
    # shoulder op", "a torn ligament", "my hip replacement", "a bad concussion".
    r"slipped disc|herniated|concussion|(?:knee|hip|shoulder|joint) replacement|"
    r"(?:hip|knee|shoulder|back|heart|eye|foot|hand|wrist|ankle|spine|spinal|hernia) op\b|"
    r"had (?:my|an?) (?:[\w-]+ ){0,2}(?:teeth|tooth|appendix|tonsils|gallbladder|cyst|lump) (?:out|removed)\b|"
    r"(?:broken|fractured|sprained|torn|twisted|dislocated|ruptured) (?:\w+ )?(?:ankle|wrist|arm|leg|knee|hip|"
    r"shoulder|collarbone|rib|ribs|foot|toe|finger|hand|elbow|ligament|tendon|achilles|acl|meniscus|cartilage)|"
    r"(?:my|the|an?) (?:\w+ )?op(?= (?:means|was|went|is|has|left))|"
    r"sober|teetotal|cut out|cut back on|gave up|given up|had to stop|(?:step|stepped|stepping) away from|"
    r"adopted|came round to|come round to|"
    # A membership let go: "let my gym membership lapse", "cancelled my subscription".
    r"let (?:my|our|the) (?:[\w-]+ ){0,2}(?:membership|subscription|season ticket|pass|licen[cs]e) "
    r"(?:(?:at|with|of|for) (?:the |my |our )?(?:[\w-]+ ){1,2})?(?:lapse|run out|expire)|"
    r"cancell?ed (?:my|our) (?:[\w-]+ ){0,2}(?:membership|subscription|season ticket)|"
    # Someone new, or a couple ended: "I've been seeing Ana for three months", "Mark and I
    # are officially finished", "the papers were signed".
    r"(?:i've|i have|i've been|i'm|i am|started|been) (?:dating|seeing) (?:someone|somebody|a guy|a girl|"
    r"a man|a woman)|been (?:dating|seeing) [a-z]+ (?:for|since) (?:\w+ ){0,2}(?:weeks|months|years|a while|"
    r"christmas|spring|summer|autumn|winter)\b|"
    r"(?:and i|we)(?:'re| are) (?:officially |well and truly )?(?:over|finished|through)\b(?! with)|"
    r"(?:divorce )?papers (?:were |are |have been |got )?signed|"
    r"removal (?:van|lorry|men|truck)|first night in (?:the |our |my )?new|"
    # A kind of person one has found oneself to be: "I've decided I'm a hotel person".
    r"(?:decided|realised|realized|accepted|admitted|figured out)(?: that)? (?:i'm|i am) (?:not |really |more of )?"
    r"(?:a|an) [\w-]+ (?:person|girl|guy|type)\b|"
    # A liking that wore off: "the club has lost all its charm for me", "the novelty wore off".
    r"(?:lost|losing) (?:all |most |much )?(?:its|their|the|of its|of the) (?:charm|appeal|magic|shine|spark|allure)|"
    r"(?:novelty|magic|shine|spark|appeal)(?: of(?: [\w-]+){1,3}?)? (?:has |had |soon )?"
    r"(?:worn off|wore off|gone|faded|fizzled out)\b|"
    r"(?:went|gone|going|switched|turned) (?:fully |completely )?(?:vegetarian|vegan|gluten-free|dairy-free|"
    r"plant-based|pescatarian|keto|paleo|sugar-free|alcohol-free|meat-free)|"
    # One thing of life traded for another: "I've swapped the gym for long walks".
    r"(?:swapped|traded|switched|exchanged) (?:my |the |our )?(?:[\w-]+ ){1,3}for\b|"
    # A pet taken on: "got a puppy last week, so travel is on hold".
    r"(?:got|rescued|brought home) (?:a|our|my) (?:new )?(?:dog|puppy|kitten|cat|rescue dog|rescue cat)\b|"
    r"(?:got|rescued|brought home|adopted) (?:a|our|my) (?:new )?(?:[\w-]+ )?(?:puppy|kitten|pup)\b|"
    r"on a (?:\w+ )?(?:strict )?(?:\w+-)?(?:\w+ )?diet|"
    r"no longer|anymore|any more(?=\s*(?:[.,;:!?)]|$))|these days|nowadays|for good|from now on|"
    # Since a life event: "since the operation I can't run", "since the divorce".
    r"since (?:the|my|our) (?:[\w-]+ )?(?:operation|surgery|op|accident|crash|injury|fall|diagnosis|"
    r"stroke|heart attack|baby|birth|wedding|divorce|break-?up|split|move|redundancy|layoff|disc|"
    r"breakdown|burnout|relapse|flare-?up|concussion|migraines|"
    r"lockdown|pandemic|funeral|miscarriage|chemo|transplant)\b|"
    # Done with a thing, or become someone else: "I'm done with nights outdoors",
    # "I've become a real homebody".
    r"(?:i'm|i am|we're|we are) (?:\w+ )?(?:done|finished|through) with|(?:i've|i have|we've|we have) become|"
    # A thing of one's life parted with: "I deleted all my games", "we sold our car".
    r"(?:deleted|sold|got rid of|gave away|given away) (?:all )?(?:of )?(?:my|our)|"
    # Apps and screens left: "I deleted Instagram", "came off social media", "boxed up the Xbox".
    r"(?:deleted|quit|left|came off|come off|got off) (?:social media|instagram|facebook|tiktok|twitter|snapchat|"
    r"all the apps)\b|boxed up (?:the|my|our)|gave (?:it|them) (?:all )?away|"
    r"(?:sold|got rid of) the (?:[\w-]+ )?(?:car|house|flat|boat|sailboat|yacht|bike|motorbike|van|piano|"
    r"business|shop|caravan|camper|horse|allotment)\b|"
    # A home bought or taken, a contract signed: a move, a new job.
    r"(?:bought|took|rented|taken) (?:a|an|the|our|my) (?:[\w-]+ ){0,2}"
    r"(?:house|flat|apartment|home|farmhouse|cottage|place|job|position|post|role|offer)\b"
    r"(?! (?:shirt|kit|jersey|strip|game|match|page|screen|button|printer|speaker|assistant|decor)\b)|"
    # A liking lost: "I've gone off football" (not "the milk has gone off").
    r"(?:i've|i have|we've|we have|i'd|i) (?:\w+ )?gone off\b|"
    r"(?:signed|accepted) (?:a|an|the|my) (?:[\w-]+ ){0,2}(?:contract|offer|lease)|"
    # Told to stop by someone with the standing to: "the doctor told me to hand in my licence".
    r"(?:told|advised|ordered) (?:me|us) to (?:stop|quit|give up|hand in|avoid|cut|stay off|lay off|limit|"
    r"reduce|rest|go easy on)|"
    r"(?:warned|ordered|banned|told) (?:me|us) off\b|"
    r"(?:doctor|physio|physiotherapist|gp|surgeon|dentist|consultant)'?s? (?:says|said) no (?:more )?[a-z]+|"
    # A condition that began weeks or months ago: "I've had terrible insomnia for weeks".
    r"(?:i've|i have) (?:had|been having) (?:[\w-]+ ){1,3}?for (?:weeks|months|a few weeks|a few months|"
    r"the (?:past|last) (?:few )?(?:weeks|months))|"
    # A contrast with before, told by time words alone: "I'm my own boss now", "we now
    # live on a boat", "no more alarms at six", "nobody has slept since", "since I
    # collected my pension". Not the present moment or a duration ("right now", "for
    # now", "a while now", "now and then"), not a sentence opened by "Now," (a turn in
    # the talk), and not a greeting's "since we talked" or a lifelong "since I was a kid".
    r"(?<!right )(?<!just )(?<!for )(?<!by )(?<!until )(?<!till )(?<!even )(?<!years )(?<!months )"
    r"(?<!weeks )(?<!days )(?<!while )(?<!ages )(?<!^)now(?! and (?:then|again))|"
    r"since (?:then|(?:i|we|they) (?!was\b|were\b|first\b|(?:last )?(?:talked|spoke|chatted|caught up|met|saw)\b)"
    r"[a-z']+)|since(?=\s*(?:[.,;:!)]|$))|(?:^|[.;,:!] )no more)\b"
)
# A start verb under a negation took nothing up ("I never started", "I haven't joined").
NEGATED_START_RE: re.Pattern[str] = re.compile(
    r"\b(?:never|not|n't|haven't|hasn't|didn't|don't|won't)\s+(?:\w+\s+){0,2}?"
    r"(?:started|begun|began|took up|taken up|picked up|got into|gotten into|getting into|"
    r"signed up for|joined)\b"
)
# Affect words inside a compound noun carry no stance ("my best friend", "good
# morning"): they are blanked before the stance is read.
COMPOUND_NOT_AFFECT_RE: re.Pattern[str] = re.compile(
    r"\b(?:best friends?|good morning|free time|cool down|fun runs?|for good)\b"
)
# Negators that deny nothing about the speaker's life, blanked before the stance is
# read: greetings and politeness ("long time no see", "no worries", "oh no"),
# reassurance ("you're not alone"), a thing said to be hard and kept up ("moving
# isn't easy", "no walk in the park"; with its echo "... and the test wasn't
# either"), a thing not done *yet* or not decided, advice to the listener ("don't
# let it get you down"), negators of enthusiasm or surprise ("I can't stop knitting",
# "I can't let go of the bookshop idea", "it never lets me down", "I never knew chess could be
# this fun") and small talk ("haven't spoken in months", "nothing new here", "why not"). Read
# as a free negation, each made a negative stance, and a greeting became the change of
# mind of the pattern it was said beside.
NEGATION_IDIOM_RE: re.Pattern[str] = re.compile(
    r"\b(?:long time no (?:see|talk|chat|speak|hear)|oh no\b|not a problem|"
    r"no (?:worries|worry|probs?|problems?|pressure|rush|biggie|big deal|doubts?|wonder|way)\b|"
    r"(?:not|never) alone|"
    r"(?:isn't|wasn't|aren't|weren't|hasn't been|haven't been|won't be|ain't(?: been)?|not|never)"
    r"(?: (?:always|so|that|too|very|exactly|really))? (?:easy|a walk in the park|a piece of cake)"
    r"(?:(?:,? and|,? or|,) (?:\w+ ){1,4}(?:isn't|wasn't|weren't|aren't|hasn't been) either)?|"
    r"no (?:walk in the park|cakewalk|picnic|piece of cake)|"
    r"(?:haven't|hasn't|have not|has not|not) (?:\w+ ){0,5}?yet\b|"
    r"(?:haven't|hasn't|have not|has not|can't|cannot|couldn't|didn't|not) (?:yet )?(?:decided|decide|figured)\b|"
    r"don't let [^,.;!?]*|"
    r"(?:can't|cannot|couldn't) (?:stop|let go)\b|"
    r"(?:never|won't|didn't|doesn't|don't) lets? (?:me|us|you|him|her|them) down\b|"
    r"(?:never|didn't) (?:knew|know|thought|think|reali[sz]ed?|imagined|expected)\b|"
    # Small talk: "haven't spoken in months", "nothing new here", "why not?".
    r"(?:haven't|hasn't|have not|not) (?:talked|spoken|chatted|caught up|seen each other) (?:in|for|since)\b|"
    r"(?:not|nothing) (?:much|a lot|too much|anything|special)? ?(?:is |has been )?(?:new|going on|happening)\b|"
    r"why not\b)"
)


# --------------------------------------------------------------------------------------
# Topic
# --------------------------------------------------------------------------------------

# Everything that breaks a run of content words when picking a sentence's topic
# (:func:`personatree.text.key_topic`, :func:`personatree.text.content_lemmas`).
TOPIC_SKIP: frozenset[str] = (
    STOPWORDS
    | FILLERS
    | INTENSIFIERS
    | LIGHT_VERBS
    | TIME_WORDS
    | PRED_ADJ
    | STANCE_POS
    | STANCE_NEG
    | AFFECT_POS
    | AFFECT_NEG
    | NEGATORS
    | FIRST_PERSON
    | SECOND_PERSON
    | CESSATION_TRIGGERS
    | LIKE_FORMS
    | frozenset("stand stop used anymore longer ago".split())
)


# Words that cannot name a pattern (:func:`personatree.text.can_name`), though they
# pass as content words: verbs of chat and of everyday doing ("shares", "talked",
# "wait" of "can't wait"), evaluative adjectives ("stunning", "different"), vague
# nouns ("thing", "difference" of "make a difference", "impact" of "make an impact",
# "importance", "spot"), the nouns of idioms ("had a blast", "in awe", "in the mix"),
# interjections, a pronoun with its verb ("she'd") and words for a number or an
# amount ("two", "tons"). A claim "Enjoys shares", "Enjoys blast" or "Interested in
# two" tells an agent nothing true.
NOT_NAMING: frozenset[str] = frozenset(
    """share find bring mean turn stay hold catch check add ask believe remember wait agree
    talk chat happen matter play watch support push open lose connect escape manage
    celebrate cheer chill hear love like enjoy hate appreciate thank wish guess sound
    mind care fill reach stick send spend pick miss win move sit stand learn change
    continue finish end hang join leave live look mention notice realize handle deal
    inspire motivate encourage admire achieve accomplish reckon suppose thing stuff way
    lot kind sort bit part side difference experience word world life people person
    moment time day ages idea news place everyone someone anyone anything something
    everything nothing anytime sometime somewhere anywhere self worth else either means
    one ones thanks chance point case reason fact question answer step option suggestion
    detail other others guy folks em journey item list piece sense goal goals plan long
    new different mixed positive negative stunning gorgeous yummy awesome amazing great
    cool nice fun good bad best better happy sad glad excited proud tough hard easy
    special incredible beautiful lovely wonderful fantastic perfect cute sweet crazy
    wild scary fine okay ok sure real true big small little old young huge whole entire
    important interesting favorite favourite own same next last able free busy ready
    essential crucial vital necessary possible certain usual main
    impact effect importance increase focus reminder spot blast awe mix
    around onto into upon along across away forward ahead together instead plus apart beyond
    within toward towards behind
    he'd he'll she'd she'll they'd they'll it'd that'd who'd who'll there'd
    two three four five six seven eight nine ten eleven twelve twenty fifty hundred thousand
    first second third dozen half tons ton bunch loads plenty handful heaps
    lucky super found brought meant held caught lost heard sent spent won sat stood left
    remind recommend see back key cathartic safe wow woah whoa woohoo yay hey hi hello
    oh ah yep yeah nope hmm haha lol omg gosh""".split()
)


# --------------------------------------------------------------------------------------
# Verb forms for pattern phrases
# --------------------------------------------------------------------------------------

# Third-person forms that the regular rule ("love" -> "loves") gets wrong, and
# modals and past forms that do not change.
IRREGULAR_3SG: Mapping[str, str] = {
    "have": "has", "do": "does", "go": "goes", "am": "is", "be": "is", "don't": "doesn't",
    "dont": "doesn't", "haven't": "hasn't", "can": "can", "can't": "can't", "will": "will",
    "won't": "won't", "would": "would", "could": "could", "should": "should", "might": "might",
    "must": "must", "was": "was", "wasn't": "wasn't", "did": "did", "didn't": "didn't",
    "had": "had", "may": "may", "cannot": "cannot", "wouldn't": "wouldn't", "couldn't": "couldn't",
    "need": "needs", "used": "used",
}
# Adverbs skipped between "I" and the verb to conjugate ("I really love").
ADVERBS: frozenset[str] = frozenset(
    """really usually always often never also still just absolutely totally truly sometimes
    rarely actually definitely mostly generally normally typically honestly seriously
    recently finally already currently kinda basically even only mainly simply
    especially particularly genuinely barely hardly occasionally quite""".split()
)

# Irregular past forms: the same for every person, so never conjugated.
PAST_IRREGULAR: frozenset[str] = frozenset(
    """went was were had did got made saw took ran came gave found felt thought told said
    bought brought caught taught left met paid sent spent stood understood won wrote read
    began drank drove ate fell flew forgot grew heard hid kept knew led lost meant put quit
    rode rang rose sang sat slept spoke swam threw wore became built chose held sold fought fed
    fled froze shook stole stuck struck swept swung tore woke dug lent bent dealt drew hung laid
    lit overcame sank shot sought spun swore wept mistook withdrew""".split()
)

# Verbs a person does an activity with ("went for a run", "did yoga", "played chess",
# "had a swim", "took a walk", "practised scales"), in every form.
DOING_VERBS: frozenset[str] = frozenset(
    """go goes going went do does doing did play plays playing played have has having had take
    takes taking took practise practises practising practised practice practices practicing
    practiced""".split()
)
# Irregular pasts of verbs that name an activity, by the activity ("I ran the canal
# loop", "we swam out to the buoy").
ACTIVITY_PASTS: dict[str, str] = {
    "ran": "run", "swam": "swim", "rode": "ride", "sang": "sing", "drew": "draw", "wrote": "write",
    "drove": "drive", "flew": "fly", "ate": "eat", "drank": "drink", "dug": "dig", "spun": "spin",
    "threw": "throw", "fought": "fight",
}

# --------------------------------------------------------------------------------------
# What a change reaches
# --------------------------------------------------------------------------------------


# Habits and plans a change of life rules out or reshapes, by a kind of change: (kind,
# what names the change, the words of the statements it reaches). A knee in a brace
# reaches "I run along the river before work" although MiniLM puts the two far apart;
# every form of a word is listed, as :func:`personatree.text.tokenize` gives it. Read
# only of a statement already read as a change (:func:`personatree.text.is_change`), so
# the patterns name the thing changed and need not say that it changed.
_LEG_SPORTS = frozenset(
    """run runs running ran runner jog jogs jogging jogged marathon marathons 10k 5k parkrun
    race races racing hike hikes hiking hiked hiker trek treks trekking climb climbs
    climbing bouldering football footy soccer tennis squash badminton basketball netball
    rugby hockey ski skiing snowboarding dance dances dancing salsa gym squat squats
    cycling cycle cycled bike biking sprint sprints triathlon hillwalking dig digging
    gardening allotment lifting""".split()
)
_ARM_SPORTS = frozenset(
    """climb climbs climbing bouldering swim swims swimming swam tennis golf guitar piano
    violin drums knit knitting crochet painting pottery lift lifting weights rowing
    volleyball badminton squash cricket baseball yoga typing""".split()
)
_DRINKS = frozenset(
    """wine wines beer beers pint pints pub pubs cocktail cocktails gin whisky whiskey
    vodka rum prosecco champagne cider ale lager port sherry vineyard vineyards brewery
    breweries booze drinking drunk hangover tasting bar bars""".split()
)
_COFFEE = frozenset(
    """coffee coffees espresso espressos latte lattes cappuccino cappuccinos americano
    caffeine barista grinder roast""".split()
)
_NIGHTS_OUT = frozenset(
    """sleep sleeping lie night nights late bar bars pub pubs party parties clubbing
    festival festivals gig gigs spontaneous trip trips travel travelling backpacking
    weekend weekends brunch""".split()
)
_PETS = frozenset(
    """pet pets animal animals dog dogs cat cats puppy kitten weekend weekends away trip
    trips travel holiday holidays allergic allergy""".split()
)
_WORK = frozenset(
    """work working job jobs office manager managers boss bosses colleague colleagues
    coworker coworkers shift shifts team company firm desk commute clients client
    meeting meetings deadline deadlines payroll overtime employer salary""".split()
)
_HOME = frozenset(
    """home flat flats house apartment lease rent landlord neighbour neighbours
    neighbourhood neighbor neighbors neighborhood local street commute city town""".split()
)
_PARTNER = frozenset(
    """boyfriend girlfriend partner husband wife fiance fiancee date dates anniversary
    couple couples wedding honeymoon married marriage""".split()
)
_DATING = frozenset("single singles dating date dates tinder apps".split())
_SMOKING = frozenset("cigarette cigarettes smoke smoking smoker fags vape vaping cigar cigars".split())
_DRIVING = frozenset("car cars drive drives driving drove road motorway".split())
_NUTS = frozenset(
    """nut nuts peanut peanuts almond almonds cashew cashews hazelnut hazelnuts walnut walnuts
    satay pesto praline nutella""".split()
)
_SEAFOOD = frozenset(
    """shellfish prawn prawns shrimp lobster crab mussels oysters scallops seafood
    paella""".split()
)
_MEAT = frozenset(
    """meat steak steaks burger burgers bacon chicken beef pork lamb sausage sausages bbq
    barbecue ham ribs salami pepperoni kebab kebabs""".split()
)
_DAIRY = frozenset("milk cheese cheeses dairy yoghurt yogurt butter cream latte lattes".split())
_GLUTEN = frozenset(
    """bread pasta pizza pizzas beer beers cake cakes croissant croissants sourdough baking
    bagel bagels noodles biscuits pastry pastries""".split()
)
_GAMES = frozenset(
    """game games gaming gamer gamers console consoles playstation ps4 ps5 xbox nintendo
    controller raid raids dlc expansion esports twitch fortnite minecraft rpg mmo""".split()
)
_LOUD = frozenset(
    """gig gigs concert concerts festival festivals club clubs clubbing nightclub rave raves
    band bands loud headphones""".split()
)
_SPICY = frozenset(
    """spicy spice spices chilli chillies chili chilis curry curries vindaloo madras phaal
    jalapeno jalapenos habanero sriracha sichuan szechuan""".split()
)
_RICH = frozenset(
    """salt salty fried fry fries takeaway takeaways burger burgers bacon sausage sausages
    steak steaks cheese butter cream kebab kebabs pastry pastries""".split()
)
_SOCIAL = frozenset(
    """instagram tiktok facebook twitter snapchat post posts posting followers reels feed
    scrolling selfie selfies influencer""".split()
)
_SCREENS = frozenset(
    """screen screens laptop computer tv telly film films movie movies series binge cinema
    netflix gaming phone""".split()
)
_SWEET = frozenset(
    """cake cakes dessert desserts sweets chocolate sugar biscuits cookies pastry pastries
    doughnut doughnuts donut donuts candy baking""".split()
)

# What tells that a part of the body named with it is hurt ("my knee is in a brace").
_INJURED = (
    r"brace|crutches|cast|sprain|sprained|torn|tore|broke|broken|fracture|fractured|surgery|disc"
    r"|op|operation|operated|injury|injured|injuries|hurt|physio|physiotherapy|replacement"
    r"|slipped|pulled|strapped|swollen|dislocated|ligament|tendon|tendonitis|arthritis"
    r"|sore|pain|painful|bad|gave out|gives out|knackered|issues|problems|recovering|rehab"
)

CHANGE_REACH: tuple[tuple[str, re.Pattern[str], frozenset[str]], ...] = (
    ("an injury of the legs or back", re.compile(
        r"\b(?:crutches|wheelchair|slipped disc|sciatica|(?:put|threw|thrown) my back out)\b"
        rf"|^(?=.*\b(?:{_INJURED})\b).*\b(?:knees?|ankles?|hips?|achilles|hamstrings?|shins?|calf"
        r"|foot|feet|legs?|toes?|acl|meniscus|pelvis|(?:my|lower|bad) back)\b"), _LEG_SPORTS),
    ("an injury of the arms", re.compile(
        rf"^(?=.*\b(?:{_INJURED})\b).*\b(?:wrists?|elbows?|shoulders?|arms?|hands?|fingers?"
        r"|thumbs?|collarbone|rotator cuff)\b"), _ARM_SPORTS),
    ("giving up alcohol", re.compile(
        r"\b(?:teetotal|sober|sobriety|alcohol[- ]free|dry january|on the wagon"
        r"|without (?:a |any )?(?:single )?(?:drink|drop|alcohol|booze)"
        r"|(?:stopped|quit|given up|gave up|giving up|cut out|off the|no more|no longer)"
        r" (?:drinking|drink|booze|alcohol)|(?:don't|do not|no longer) drink)\b"), _DRINKS),
    ("giving up caffeine", re.compile(
        r"\b(?:caffeine|decaf|(?:stopped|quit|given up|gave up|cut out|off|no more) coffee)\b"),
     _COFFEE),
    ("a pregnancy", re.compile(
        r"\b(?:pregnant|pregnancy|expecting (?:a baby|our first|my first|twins)"
        r"|baby on the way|trimester)\b"), _DRINKS | frozenset("sushi alcohol".split())),
    ("a baby born", re.compile(
        r"\b(?:(?:baby|son|daughter|twins|little one) (?:was born|were born|arrived|is here)"
        r"|gave birth|had (?:a|our) (?:baby|son|daughter)|newborn|new baby"
        r"|became (?:a )?(?:mum|mom|dad|father|mother|parents?))\b"),
     _NIGHTS_OUT),
    ("a new pet", re.compile(
        r"\b(?:adopted|got|bought|brought home|rescued) (?:a|an|our|my) (?:\w+ )?"
        r"(?:dog|puppy|pup|kitten|cat|lurcher|greyhound|labrador|spaniel|terrier|rescue"
        r"|rabbit|parrot)\b"), _PETS),
    ("leaving a job", re.compile(
        r"\b(?:(?:handed|hand|gave|given) (?:in )?(?:my )?notice|resigned|quit (?:my|the) job"
        r"|laid off|made redundant|redundancy|retired|retirement|new job|career change"
        r"|(?:training|retraining|studying) (?:to be|as) (?:a|an)|retraining|fired|sacked"
        r"|(?:left|leaving) (?:my|the) (?:job|company|firm|office)|went freelance"
        r"|self-employed|my own boss)\b"), _WORK),
    ("a move", re.compile(
        r"\b(?:(?:moved|moving|relocated|relocating|emigrated|emigrating) (?:to|abroad|away"
        r"|out|back|house|across)|new (?:flat|house|home|apartment|city|country)"
        r"|(?:swapped|traded|left) (?:the )?(?:city|town|high street|suburbs|big smoke|countryside) for"
        r"|(?:live|living) in the (?:countryside|country|sticks|suburbs)|smallholding)\b"), _HOME),
    ("a break-up", re.compile(
        r"\b(?:(?:broke|broken|breaking|split|splitting) up|separated|divorced?|divorcing"
        r"|(?:and i|we)(?:'re| are) (?:officially )?(?:over|finished|through)"
        r"|ended things|single again|widowed)\b"), _PARTNER),
    ("a new partner", re.compile(
        r"\b(?:got married|(?:got|just) engaged|moved in together|new (?:boyfriend|girlfriend"
        r"|partner)|(?:started|been) (?:dating|seeing) (?:someone|a)"
        r"|been (?:dating|seeing) [a-z]+ (?:for|since) (?:\w+ ){0,2}(?:weeks|months|years|a while))\b"), _DATING),
    ("giving up smoking", re.compile(
        r"\b(?:(?:stopped|quit|given up|gave up|giving up|off the) (?:smoking|cigarettes|fags"
        r"|vaping|the vape)|non-smoker|nicotine)\b"), _SMOKING),
    ("giving up the car", re.compile(
        r"\b(?:(?:sold|selling|got rid of|scrapped|wrote off|written off) (?:the|my|our) car"
        r"|lost my licen[cs]e|stopped driving|(?:can't|cannot|not allowed to) drive"
        r"|(?:car|motorway) (?:crash|accident)|crashed (?:the|my|our) car|behind the wheel)\b"), _DRIVING),
    ("failing eyesight", re.compile(
        r"\b(?:eyesight|(?:losing|lost) my (?:sight|vision)|my (?:sight|vision) (?:is |has |'s )?(?:gone|going"
        r"|failing|getting worse|got worse|deteriorat\w*)|optician|ophthalmologist|glaucoma|cataracts?|macular"
        r"|partially sighted|registered blind|going blind)\b"), _DRIVING),
    ("hearing loss", re.compile(
        r"\b(?:tinnitus|hearing aids?|hearing loss|my hearing|audiologist|going deaf|deafness)\b"), _LOUD),
    ("a stomach condition", re.compile(
        r"\b(?:ibs|reflux|heartburn|gastritis|ulcers?|crohn's|colitis|(?:stomach|gut) (?:issues|problems"
        r"|condition|trouble)|my (?:stomach|gut|digestion) (?:has |have |had |is |'s )?(?:turned on me|can't"
        r"|cannot|won't|playing up|been bad|been awful|been terrible|gone))\b"),
     _SPICY),
    ("a heart condition", re.compile(
        r"\b(?:heart attack|heart condition|cardiac|stents?|bypass|pacemaker|blood pressure"
        r"|hypertension|cholesterol|statins|angina|arrhythmia)\b"), _RICH),
    # A habit given up, not a condition: the pattern names the giving up too, or every
    # later line of a gamer that reads as a change ("streaming pays my rent now") would
    # reach all their talk of games.
    ("giving up gaming", re.compile(
        r"\b(?:unplugged|sold|boxed up|gave away|given away|got rid of|deleted|uninstalled|quit|gave up"
        r"|given up|giving up|stopped|no more|packed in) (?:\w+ ){0,2}(?:consoles?|playstation|ps4|ps5|xbox"
        r"|nintendo|gaming|video ?games?|computer games?|games)\b"), _GAMES),
    ("migraines or a concussion", re.compile(
        r"\b(?:migraines?|concussion|concussed|eye strain|screen time)\b"), _SCREENS),
    ("leaving social media", re.compile(
        r"\b(?:deleted|quit|left|came off|come off|got off|off|uninstalled|deactivated|closed|no more"
        r"|done with|a break from) (?:\w+ ){0,2}(?:social media|instagram|tiktok|facebook|twitter|snapchat)\b"),
     _SOCIAL),
    ("going meat-free", re.compile(
        r"\b(?:vegan|vegetarian|veggie|plant-based|pescatarian|(?:stopped|quit|gave up"
        r"|given up|no more|cut out|off) (?:red )?meat)\b"), _MEAT),
    ("going dairy-free", re.compile(
        r"\b(?:vegan|lactose|dairy[- ]free|(?:stopped|quit|gave up|given up|no more|cut out"
        r"|off) dairy)\b"), _DAIRY),
    ("going gluten-free", re.compile(r"\b(?:coeliac|celiac|gluten)\b"), _GLUTEN),
    ("giving up sugar", re.compile(
        r"\b(?:(?:pre-?)?diabet(?:es|ic)|prediabet(?:es|ic)|blood sugar|(?:stopped|quit|gave up|given up"
        r"|no more|cut out|off) (?:sugar|sweets|chocolate))\b"), _SWEET),
    ("an allergy to nuts", re.compile(
        r"\b(?:allergic|allergy|allergies|intolerant)\b.*\b(?:pea|hazel|wal)?nuts?\b"
        r"|\b(?:pea|hazel|wal)?nut allerg"), _NUTS),
    ("an allergy to seafood", re.compile(
        r"\b(?:allergic|allergy|allergies|intolerant)\b.*\b(?:shellfish|prawns?|seafood)\b"
        r"|\b(?:shellfish|seafood) allerg"), _SEAFOOD),
)

# Words one of which a sentence holds whenever the kind's pattern matches it (as
# :func:`personatree.text.tokenize` splits it): a pattern is tried only on a sentence
# with one of its kind's words, at a fraction of the cost of trying every pattern.
CHANGE_REACH_ANCHORS: Mapping[str, frozenset[str]] = {
    kind: frozenset(words.split()) for kind, words in (
        ("an injury of the legs or back", """crutch crutches wheelchair disc sciatica knee knees ankle
         ankles hip hips achilles hamstring hamstrings shin shins calf foot feet leg legs toe toes acl
         meniscus pelvis back"""),
        ("an injury of the arms", """wrist wrists elbow elbows shoulder shoulders arm arms hand hands
         finger fingers thumb thumbs collarbone rotator"""),
        ("giving up alcohol", "teetotal sober sobriety alcohol dry wagon drinking drink booze drop"),
        ("giving up caffeine", "caffeine decaf coffee"),
        ("a pregnancy", "pregnant pregnancy expecting baby trimester"),
        ("a baby born", "baby son daughter twins little gave had newborn new became"),
        ("a new pet", """dog puppy pup kitten cat lurcher greyhound labrador spaniel terrier rescue
         rabbit parrot"""),
        ("leaving a job", """notice resigned job laid redundant redundancy retired retirement career
         training retraining studying fired sacked left leaving freelance employed boss"""),
        ("a move", """moved moving relocated relocating emigrated emigrating new swapped traded left
         live living smallholding"""),
        ("a break-up", """broke broken breaking split splitting separated divorce divorced divorcing
         ended single widowed over finished through"""),
        ("a new partner", "married engaged together new dating seeing"),
        ("giving up smoking", "smoking cigarettes fags vaping vape smoker nicotine"),
        ("giving up the car", "car licence license driving drive motorway crashed wheel"),
        ("failing eyesight", """eyesight sight vision optician ophthalmologist glaucoma cataract
         cataracts macular sighted blind"""),
        ("hearing loss", "tinnitus hearing audiologist deaf deafness"),
        ("a stomach condition", "ibs reflux heartburn gastritis ulcer ulcers crohn's stomach gut digestion"),
        ("a heart condition", """heart cardiac stent stents bypass pacemaker blood hypertension
         cholesterol statins angina arrhythmia"""),
        ("giving up gaming", """console consoles playstation ps4 ps5 xbox nintendo gaming video videogame
         videogames computer games"""),
        ("migraines or a concussion", "migraine migraines concussion concussed eye screen"),
        ("leaving social media", "social instagram tiktok facebook twitter snapchat"),
        ("going meat-free", "vegan vegetarian veggie plant pescatarian meat"),
        ("going dairy-free", "vegan lactose dairy"),
        ("going gluten-free", "coeliac celiac gluten"),
        ("giving up sugar", "diabetes diabetic prediabetes prediabetic pre blood sugar sweets chocolate"),
        ("an allergy to nuts", "nut nuts peanut peanuts hazelnut hazelnuts walnut walnuts"),
        ("an allergy to seafood", "shellfish prawn prawns seafood"),
    )
}
