"""Tests of the offline judge with the real packaged embedder and the shipped registry."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Sequence

import numpy as np
import pytest

from personatree.embedders import SentenceTransformerEmbedder
from personatree.judge import OfflineJudge
from personatree.ports import Embedder, Judge
from personatree.schema import SchemaRegistry
from personatree.types import Level, Message, Node, Observation, Route

T0 = datetime(2024, 3, 5, 12, 0, tzinfo=timezone.utc)


class CountingEmbedder:
    """A real Embedder that counts calls (delegates to the packaged model)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.calls: list[int] = []

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(len(texts))
        return self.inner.embed(texts)


class FixedRouter:
    """A scripted router (the trained one lives in personatree.retrieval.router)."""

    def route(self, query: str) -> Route:
        return Route(Level.MID, {Level.LEAF: 0.1, Level.MID: 0.8, Level.ROOT: 0.1}, ("preference",))


@pytest.fixture(scope="module")
def embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


@pytest.fixture(scope="module")
def registry() -> SchemaRegistry:
    return SchemaRegistry.load()


@pytest.fixture(scope="module")
def judge(embedder: SentenceTransformerEmbedder, registry: SchemaRegistry) -> OfflineJudge:
    return OfflineJudge(embedder, registry)


def obs(oid: str, *messages: Message, at: datetime = T0, session: str = "s1") -> Observation:
    return Observation(oid, "u1", session, at, tuple(messages))


def node(embedder: Embedder, text: str, schema_type: str, level: Level = Level.LEAF, *,
         nid: str | None = None, attributes: dict | None = None,
         t: datetime = T0, n_support: int = 0) -> Node:
    return Node(nid or text, "u1", level, schema_type, text, dict(attributes or {}), t, t, 0.0,
                n_support=n_support, embedding=embedder.embed([text])[0])


def cos(a: Node, b: Node) -> float:
    assert a.embedding is not None and b.embedding is not None
    return float(a.embedding @ b.embedding)


# -- protocol -----------------------------------------------------------------------------


def test_implements_the_judge_protocol(judge: OfflineJudge) -> None:
    assert isinstance(judge, Judge)
    assert judge.name == "offline"


# -- extraction ---------------------------------------------------------------------------


def test_extract_keeps_self_statements_and_drops_the_rest(judge: OfflineJudge) -> None:
    o = obs(
        "o1",
        Message("user", "Hey Mari! Good to see you! How are things? I love hiking in the mountains."),
        Message("assistant", "That sounds lovely! I enjoy helping you plan hikes."),
        Message("system", "You are a helpful assistant."),
        Message("user", "Thanks! The kids loved the beach trip. What about you?"),
    )
    [drafts] = judge.extract([o])
    assert [d.content for d in drafts] == ["I love hiking in the mountains.", "The kids loved the beach trip."]
    first, second = drafts
    assert (first.provenance.observation_id, first.provenance.turn, first.provenance.sentence) == ("o1", 0, 3)
    assert (second.provenance.turn, second.provenance.sentence) == (3, 1)
    assert first.provenance.at == T0 and first.provenance.session_id == "s1"
    assert first.schema_type == "preference"
    attrs = first.attributes
    assert attrs["polarity"] == 1 and attrs["negated"] is False and attrs["role"] == "user"
    assert attrs["topic"] == "hiking" and attrs["time"] is None and attrs["speaker"] is None
    assert isinstance(attrs["type_score"], float) and isinstance(attrs["entities"], list)
    assert first.embedding is not None and first.embedding.dtype == np.float32
    assert abs(float(np.linalg.norm(first.embedding)) - 1.0) < 1e-4


def test_extract_embeds_everything_in_one_batch(embedder: Embedder, registry: SchemaRegistry) -> None:
    counting = CountingEmbedder(embedder)
    j = OfflineJudge(counting, registry)
    counting.calls.clear()  # construction embedded the schema examples
    observations = [obs(f"o{i}", Message("user", f"I went hiking with friend number {i}. I love it."))
                    for i in range(5)]
    out = j.extract(observations)
    # One batch for all sentences; a near-tie between two types is typed again from
    # the sentence embedded alone, one sentence per call.
    assert counting.calls[0] == 10 and all(n == 1 for n in counting.calls[1:])
    assert len(counting.calls) <= 1 + 10
    assert [len(d) for d in out] == [2] * 5
    sent = len(counting.calls)
    assert j.extract([obs("q", Message("user", "Hi!"), Message("assistant", "I like cats."))]) == [[]]
    assert j.extract([]) == []
    assert len(counting.calls) == sent  # nothing to embed, no call


def test_extract_locomo_style_speakers(judge: OfflineJudge) -> None:
    o = obs(
        "D1",
        Message("user", "Hey Corinne! I went to a NAMI support group yesterday and found it moving.",
                name="Corinne"),
        Message("user", "Wow, that's cool! I'm buried in school runs & work.", name="Marisol"),
    )
    [drafts] = judge.extract([o])
    assert [(d.attributes["speaker"], d.provenance.turn) for d in drafts] == [("Corinne", 0), ("Marisol", 1)]
    assert drafts[0].attributes["time"] == "yesterday"
    assert "NAMI" in drafts[0].attributes["entities"]
    assert drafts[0].schema_type == "event"


@pytest.mark.parametrize(
    ("sentence", "schema_type"),
    [
        ("I'm allergic to peanuts.", "fact"),
        ("I work as a software engineer.", "fact"),
        ("I go running every morning.", "routine"),
        ("I usually cook dinner at home.", "routine"),
        ("I love hiking.", "preference"),
        ("I hate horror movies.", "preference"),
        ("I went to a concert last night.", "event"),
        ("We adopted a kitten two weeks ago.", "event"),
        ("I've been feeling really anxious lately.", "state"),
        ("I'm planning to run a marathon next year.", "goal"),
        ("My dream is to open a bakery.", "goal"),
        ("My mom calls me every day.", "relationship"),
        ("My best friend lives in Chicago.", "relationship"),
        ("Loud crowds make me anxious.", "trigger"),
        ("Deadlines always stress me out.", "trigger"),
    ],
)
def test_extract_types_obvious_examples(judge: OfflineJudge, sentence: str, schema_type: str) -> None:
    [[draft]] = judge.extract([obs("o", Message("user", sentence))])
    assert draft.schema_type == schema_type


_BATCH_SENTENCES = [
    "I used to love climbing but I gave it up.", "My flatmate Theo is a chef.", "I'm saving for a van.",
    "Thunder makes me jumpy.", "I walk to the bakery every morning.", "I'm fighting off a cold.",
    "I grew up near the docks.", "We went bowling on Friday.", "I've started learning to sew.",
    "I'm not a fan of cold soup.", "If I had a garden I'd grow tomatoes.", "My aunt and I write letters.",
    "I'm fed up with my commute.", "I'm Ines.", "Loves playing chess.", "I hurt my shoulder at the gym.",
]


def test_type_and_stance_do_not_depend_on_the_batch(judge: OfflineJudge) -> None:
    # Alone, each sentence is its own observation and its own embedding call; in the
    # batch, 64 observations (the sentences four times over, in shifting order and with
    # longer neighbours that change the padding) share one call.
    alone = {}
    for s in _BATCH_SENTENCES:
        [[d]] = judge.extract([obs("a", Message("user", s))])
        alone[s] = (d.schema_type, d.attributes["stance"], d.attributes["type_score"])
    filler = "I spent the whole long afternoon sorting old photographs from three family holidays by the sea."
    batch_texts = [(_BATCH_SENTENCES * 4)[(i * 7) % 64] if i % 5 else filler for i in range(64)]
    out = judge.extract([obs(f"b{i}", Message("user", t)) for i, t in enumerate(batch_texts)])
    seen = 0
    for t, [d] in zip(batch_texts, out):
        if t in alone:
            assert (d.schema_type, d.attributes["stance"], d.attributes["type_score"]) == alone[t], t
            seen += 1
    assert seen >= 48


def test_type_probabilities_are_scikit_learns(embedder: Embedder, registry: SchemaRegistry) -> None:
    # The typer computes the fitted model's probabilities itself (no per-call input
    # checks); they must be the library's own, bit for bit, at any batch size.
    from personatree.judge.leaf_typing import LeafTyper, _softmax_proba

    typer = LeafTyper(embedder, registry)
    texts = _BATCH_SENTENCES + ["I took up the cello at fifty.", "We walked the dog along the canal."]
    x = np.asarray(embedder.embed(texts), dtype=np.float64)
    model = typer._model
    for rows in (x[:1], x[:5], x):
        assert np.array_equal(_softmax_proba(model, rows), model.predict_proba(rows))


def test_extract_is_deterministic(judge: OfflineJudge) -> None:
    o = [obs("a", Message("user", "I stopped hiking after my knee injury. I moved to Lisbon in 2021!")),
         obs("b", Message("user", "My sister Anna and I talk every day."))]
    a, b = judge.extract(o), judge.extract(o)
    key = lambda out: [[(d.content, d.schema_type, dict(d.attributes), d.provenance) for d in ds] for ds in out]  # noqa: E731
    assert key(a) == key(b)
    assert a[0][0].attributes["cessation"] is True and a[0][0].attributes["polarity"] == -1


def test_extract_chunks_overlong_sentences(judge: OfflineJudge) -> None:
    text = ", ".join(f"I visited museum number {i} in the old town" for i in range(40)) + "."
    [drafts] = judge.extract([obs("long", Message("user", text))])
    assert len(drafts) > 1
    assert all(len(d.content) <= 600 for d in drafts)
    assert [d.provenance.sentence for d in drafts] == list(range(len(drafts)))


# -- validation ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hiking_mid(embedder: Embedder) -> Node:
    return node(embedder, "Loves hiking (5 mentions, Mar–Jun 2024)", "preference", Level.MID,
                nid="mid-hiking", attributes={"polarity": 1})


@pytest.fixture(scope="module")
def hiking_leaf_parent(embedder: Embedder) -> Node:
    return node(embedder, "I enjoy hiking", "preference", Level.MID, nid="mid-enjoy")


def _verdict(judge: OfflineJudge, embedder: Embedder, text: str, schema_type: str, parent: Node):
    leaf = node(embedder, text, schema_type)
    [v] = judge.validate([(leaf, parent, cos(leaf, parent))])
    assert -1.0 <= v.psi <= 1.0 and v.reason
    return v


@pytest.mark.parametrize("parent_name", ["hiking_mid", "hiking_leaf_parent"])
def test_same_stance_supports(judge, embedder, parent_name, request) -> None:
    v = _verdict(judge, embedder, "I love hiking", "preference", request.getfixturevalue(parent_name))
    assert v.label == "support" and v.psi >= 0.6


@pytest.mark.parametrize("parent_name", ["hiking_mid", "hiking_leaf_parent"])
@pytest.mark.parametrize(
    ("text", "schema_type"),
    [("I stopped hiking after my knee injury", "event"),
     ("I don't like hiking anymore", "preference"),
     ("I hate hiking now", "preference")],
)
def test_cessation_and_opposite_stance_conflict(judge, embedder, parent_name, request, text, schema_type) -> None:
    v = _verdict(judge, embedder, text, schema_type, request.getfixturevalue(parent_name))
    assert v.label == "conflict" and v.psi <= -0.35, v


@pytest.mark.parametrize(
    "text",
    ["My uncle used to take me hiking every summer.",
     "My sister loved the hills, and used to go hiking every weekend.",
     "He quit hiking when he moved to the city."],
)
def test_someone_elses_stop_is_no_conflict(judge, embedder, hiking_mid, text) -> None:
    # Another person's past habit ends nothing of the speaker's.
    leaf = node(embedder, text, "event")
    [v] = judge.validate([(leaf, hiking_mid, 0.9)])
    assert "cessation" not in v.reason and v.label != "conflict", v


@pytest.mark.parametrize(
    ("text", "parent_text"),
    [("The coach yelled 'No diving!' from the deck.", "Enjoys training with the coach"),
     ("She turned up in her green scarf, no gloves.", "Interested in scarves"),
     ("Crosswords are my wind-down, so I never bother timing myself.", "Enjoys crosswords"),
     # The clause that names the topic reads against it only by a feeling; the denial
     # and the dislike are of other things.
     ("I wiped my boots twice, there was no mud on them, but the hallway still smelled awful.",
      "Interested in smells"),
     ("I hate early starts, and the ferry crossing was awful.", "Enjoys ferry crossings")],
)
def test_a_side_taken_on_something_else_is_no_conflict(judge, embedder, text, parent_text) -> None:
    # The denial is someone else's words, or is about another thing than the pattern.
    parent = node(embedder, parent_text, "preference", Level.MID, nid="mid-other")
    leaf = node(embedder, text, "preference")
    [v] = judge.validate([(leaf, parent, 0.9)])
    assert v.label != "conflict" and "something else" in v.reason, v
    # Taken on the pattern's topic, the same kind of denial is a conflict.
    leaf = node(embedder, f"{parent_text.split()[-1].capitalize()}? I can't stand them anymore.", "preference")
    [v] = judge.validate([(leaf, parent, 0.9)])
    assert v.label == "conflict", v


def test_a_denial_contradicts_no_claim_that_a_topic_keeps_coming_up(judge, embedder) -> None:
    # "Often talks about Grandpa" says only that he comes up; a line denying something
    # about him is him coming up again.
    parent = node(embedder, "Often talks about Grandpa (6 mentions, Mar–May 2024)", "relationship", Level.MID,
                  nid="mid-grandpa")
    leaf = node(embedder, "I shouldn't have phoned Grandpa so late last night.", "event")
    [v] = judge.validate([(leaf, parent, 0.9)])
    assert v.label != "conflict" and "takes no side" in v.reason, v
    # A stop is still a change of what the pattern rests on.
    leaf = node(embedder, "I don't visit Grandpa anymore.", "event")
    [v] = judge.validate([(leaf, parent, 0.9)])
    assert v.label == "conflict" and "cessation" in v.reason, v
    # A claim that takes a side is contradicted by the same kind of denial.
    parent = node(embedder, "Enjoys visiting Grandpa (6 mentions, Mar–May 2024)", "preference", Level.MID,
                  nid="mid-visits")
    leaf = node(embedder, "I never visit Grandpa now, I can't face the drive.", "preference")
    [v] = judge.validate([(leaf, parent, 0.9)])
    assert v.label == "conflict", v


def test_a_denied_episode_is_weak_evidence_never_a_conflict(judge, embedder) -> None:
    # How one climb went takes no side on the climbing the person works toward.
    goal = node(embedder, "Training to climb the north face next summer", "goal", Level.MID, nid="mid-climb")
    leaf = node(embedder, "Windy day on the crag, I didn't reach the top of the climb.", "event")
    [v] = judge.validate([(leaf, goal, 0.95)])
    assert "a denial of one episode" in v.reason and -0.35 < v.psi < 0 and v.label != "conflict", v
    # A standing denial still is one.
    leaf = node(embedder, "I don't climb on the north face.", "event")
    [v] = judge.validate([(leaf, goal, 0.95)])
    assert "negated vs affirmed" in v.reason, v


def test_a_bad_outing_is_weak_evidence_never_a_conflict(judge, embedder, hiking_mid) -> None:
    # How one hike felt takes no side on hiking, however close the two are.
    leaf = node(embedder, "The hike in the rain yesterday was awful.", "event")
    [v] = judge.validate([(leaf, hiking_mid, 0.99)])
    assert "opposite affect" in v.reason and -0.35 < v.psi < 0, v


def test_unrelated_topic_gives_small_psi(judge, embedder, hiking_mid) -> None:
    v = _verdict(judge, embedder, "I visited the art museum downtown yesterday", "event", hiking_mid)
    assert v.label == "unrelated" and abs(v.psi) < 0.15


def test_schema_incompatible_pair_is_unrelated_however_similar(judge, embedder, hiking_mid) -> None:
    leaf = node(embedder, "I love hiking", "fact")  # fact leaves may only support fact mids
    [v] = judge.validate([(leaf, hiking_mid, 0.99)])
    assert v.label == "unrelated" and v.psi == 0.0 and "schema" in v.reason


def test_parent_polarity_attribute_wins_over_its_text(judge, embedder) -> None:
    parent = node(embedder, "Hiking", "preference", Level.MID, attributes={"polarity": -1})
    leaf = node(embedder, "I love hiking", "preference")
    [v] = judge.validate([(leaf, parent, 0.8)])
    assert v.label == "conflict"


def test_psi_grows_with_relatedness(judge, embedder, hiking_mid) -> None:
    leaf = node(embedder, "I love hiking", "preference")
    low, mid, high = judge.validate([(leaf, hiking_mid, s) for s in (0.3, 0.45, 0.6)])
    assert 0 < low.psi < mid.psi < high.psi
    stop = node(embedder, "I stopped hiking", "event")
    low, high = judge.validate([(stop, hiking_mid, s) for s in (0.3, 0.6)])
    assert high.psi < low.psi < 0


def test_negated_fact_conflicts(judge, embedder) -> None:
    parent = node(embedder, "Has two kids", "fact", Level.MID)
    v = _verdict(judge, embedder, "I don't have kids", "fact", parent)
    assert v.label == "conflict"
    v = _verdict(judge, embedder, "I have two kids", "fact", parent)
    assert v.label == "support"


@pytest.mark.parametrize(
    "text",
    ["Running the bakery isn't easy, but I'm determined to make it work.",
     "The bakery has been tough going, but I'm staying focused on it.",
     "No worries, the bakery keeps me busy."],
)
def test_a_conceded_hardship_or_an_idiom_is_no_conflict(judge, embedder, text) -> None:
    # A hardship told before "but", or a negator that is part of an idiom, denies
    # nothing: the pattern the line is said beside does not change.
    parent = node(embedder, "Working toward running a bakery", "goal", Level.MID)
    v = _verdict(judge, embedder, text, "goal", parent)
    assert v.label != "conflict" and v.psi > -0.35, v


@pytest.mark.parametrize(
    "text",
    ["I can't picture my weekends without the climbing gym.",
     "Ain't nothing like a long climb on a Sunday morning.",
     "Climbing is my stress fix after work."],
)
def test_praise_told_with_a_negator_or_a_hardship_supports(judge, embedder, text) -> None:
    # "can't picture ... without", "ain't nothing like", "stress fix": praise, read as
    # such by the judge too, not a negation or a stressed line against the pattern.
    parent = node(embedder, "Enjoys climbing", "preference", Level.MID, attributes={"stance": "positive"})
    v = _verdict(judge, embedder, text, "preference", parent)
    assert v.label != "conflict" and v.psi > 0, v


# -- routing ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "level"),
    [("Why does she volunteer so much?", Level.ROOT),
     ("What kind of person is Corinne?", Level.ROOT),
     ("Would Marisol enjoy a pottery class?", Level.ROOT),
     ("What does he usually do on weekends?", Level.MID),
     ("What has she been reading lately?", Level.MID),
     ("When did Corinne go to the book club?", Level.LEAF)],
)
def test_route_fallback(judge: OfflineJudge, query: str, level: Level) -> None:
    r = judge.route(query)
    assert r.level is level
    assert abs(sum(r.probabilities.values()) - 1.0) < 1e-9
    assert max(r.probabilities, key=r.probabilities.__getitem__) is level


def test_route_delegates_to_router(embedder: Embedder, registry: SchemaRegistry) -> None:
    j = OfflineJudge(embedder, registry, router=FixedRouter())
    assert j.route("anything").schema_types == ("preference",)


# -- summarization ------------------------------------------------------------------------


def test_summarize_mid_uses_medoid_count_and_span(judge, embedder) -> None:
    texts = ["I love hiking in the mountains.", "I really love hiking.", "Hiking in the mountains is my favourite.",
             "I adore mountain hikes.", "I bought new shoes."]
    months = [3, 4, 5, 6, 6]
    members = [node(embedder, t, "preference", nid=f"l{i}", t=datetime(2024, m, 2, tzinfo=timezone.utc))
               for i, (t, m) in enumerate(zip(texts, months))]
    s = judge.summarize(list(reversed(members)), Level.MID, "preference")
    assert s.schema_type == "preference"
    assert s.attributes["medoid"] in {"l0", "l1", "l2", "l3"}
    assert s.content == "Enjoys hiking (5 mentions, Mar–Jun 2024)"
    assert s.attributes["mentions"] == 5 and s.attributes["polarity"] == 1
    assert s.attributes["stance"] == "positive"
    assert judge.summarize(members, Level.MID, "preference") == s  # order-independent


def test_summarize_spans_and_root(judge, embedder) -> None:
    one = node(embedder, "I'm allergic to peanuts", "fact", nid="x")
    s = judge.summarize([one], Level.MID, "fact")
    assert s.content == "Allergic to peanuts (1 mention, Mar 2024)"
    mids = [node(embedder, "Loves hiking in the mountains (5 mentions, Nov 2023–Feb 2024)", "preference", Level.MID,
                 nid="m1", t=datetime(2023, 11, 1, tzinfo=timezone.utc), n_support=5),
            node(embedder, "Goes hiking every weekend (4 mentions, Feb 2024)", "routine", Level.MID,
                 nid="m2", t=datetime(2024, 2, 1, tzinfo=timezone.utc), n_support=4)]
    r = judge.summarize(mids, Level.ROOT, "personality")
    # The root names the theme both patterns share, in neither pattern's words.
    assert "hiking" in r.content.lower()
    assert r.content not in {"Loves hiking in the mountains", "Goes hiking every weekend"}
    assert "mountains" not in r.content and "weekend" not in r.content
    assert r.attributes["members"] == 2 and r.attributes["mentions"] == 9
    assert r.attributes["span"] == "Nov 2023–Feb 2024"
    with pytest.raises(ValueError):
        judge.summarize([], Level.MID, "fact")


# -- requests and questions through the engine --------------------------------------------

_NOT_EVIDENCE = [
    "Any dessert ideas for me?",
    "What should I cook tonight?",
    "Could you make this sound formal: we are late.",
]


def _leaf_texts(tree, user: str) -> list[str]:
    return sorted(n.content for n in tree.nodes(user, Level.LEAF))


def test_observe_makes_no_leaf_from_requests_or_questions(tmp_path, embedder: Embedder, registry: SchemaRegistry) -> None:
    from tests.helpers import Parts, open_tree

    parts = Parts(embedder, registry, OfflineJudge(embedder, registry))
    tree = open_tree(tmp_path / "t.db", parts, T0)
    for i, text in enumerate(_NOT_EVIDENCE):
        tree.observe("ana", [{"role": "user", "content": text}], at=T0, session_id=f"s{i}")
    tree.observe("ana", [{"role": "user", "content": "I'm vegan. Any dessert ideas for me?"}], at=T0, session_id="s9")
    assert _leaf_texts(tree, "ana") == ["I'm vegan."]


def test_observe_many_makes_no_leaf_from_requests_or_questions(tmp_path, embedder: Embedder, registry: SchemaRegistry) -> None:
    from tests.helpers import Parts, open_tree

    parts = Parts(embedder, registry, OfflineJudge(embedder, registry))
    tree = open_tree(tmp_path / "t.db", parts, T0)
    items = [{"messages": [{"role": "user", "content": t}], "at": T0, "session_id": "s1"} for t in _NOT_EVIDENCE]
    items.append({"messages": [{"role": "user", "content": "I just moved to Oslo - what should I see first?"},
                               {"role": "assistant", "content": "The fjord is lovely."},
                               {"role": "user", "content": "Help me plan a weekend there. I hate crowds."}],
                  "at": T0, "session_id": "s2"})
    tree.observe_many("ana", items)
    assert _leaf_texts(tree, "ana") == ["I hate crowds.", "I just moved to Oslo"]


# -- claims that generalize -----------------------------------------------------------------


def _leaves(judge: OfflineJudge, texts: list[str], schema_type: str) -> list[Node]:
    out = []
    for i, t in enumerate(texts):
        [[d]] = judge.extract([obs(f"o{i}", Message("user", t))])
        out.append(Node(f"l{i}", "u1", Level.LEAF, schema_type, t, dict(d.attributes), T0, T0, 0.0,
                        embedding=d.embedding))
    return out


@pytest.mark.parametrize(
    ("texts", "schema_type", "claim", "stance"),
    [
        (["We did a long walk up the Serra hills last weekend, we really enjoy being out hiking.",
          "I love hiking in the mountains.", "Hiking is my favourite way to unwind.",
          "Went hiking with Ana again today, loved it."], "preference", "Enjoys hiking", "positive"),
        (["I can't stand sushi.", "Never order sushi for me again.", "I really hate sushi, raw fish is gross."],
         "preference", "Dislikes sushi", "negative"),
        (["I stopped running after my knee injury.", "I don't go running anymore since my knee injury.",
          "I quit running in the spring."], "routine", "Stopped running after a knee injury", "stopped"),
        (["Loves cycling, especially in Porto (note 167)", "I cycle to the office most days.",
          "Cycling along the river is my favourite thing."], "preference", "Enjoys cycling", "positive"),
    ],
)
def test_a_pattern_reads_as_a_pattern_not_one_episode(judge, texts, schema_type, claim, stance) -> None:
    s = judge.summarize(_leaves(judge, texts, schema_type), Level.MID, schema_type)
    assert s.content.startswith(claim + " (")
    assert s.attributes["stance"] == stance
    for episodic in ("weekend", "today", "Porto", "note", "167", "Ana", "Serra", "I ", "my "):
        assert episodic not in s.content.split(" (")[0]


@pytest.mark.parametrize(
    ("texts", "stance", "claim"),
    [
        (["Baking bread calms me down after work.", "Kneading dough is so relaxing.",
          "Nothing soothes me like baking bread on a Sunday."], "positive", "Finds baking bread calming"),
        (["Gardening is my stress relief.", "I spend evenings gardening to destress after work.",
          "Gardening at dusk is how I unwind."], "positive", "Finds gardening calming"),
        (["Our dogs bring me so much joy.", "The dogs always make me smile.",
          "Coming home to the dogs makes me happy."], "positive", "Finds dogs uplifting"),
        (["Open-plan offices make me anxious.", "The open-plan office stresses me out.",
          "I get tense in an open-plan office."], "negative", "Finds office stressful"),
        (["Slow drivers make me so angry.", "Slow drivers annoy me to no end.",
          "I get irritated behind slow drivers."], "negative", "Finds slow drivers frustrating"),
    ],
)
def test_a_trigger_names_the_feeling_its_members_name(judge, texts, stance, claim) -> None:
    # Joy is not calm, and anger is not stress: the claim says what the person said.
    s = judge.summarize(_leaves(judge, texts, "trigger"), Level.MID, "trigger")
    assert s.content.split(" (")[0] == claim
    assert s.attributes["stance"] == stance


def test_a_trigger_is_never_named_by_the_feeling_it_sets_off() -> None:
    from personatree.judge.claims import claim_phrase

    lines = ["Reading gives me such comfort.", "My books are a comfort on bad days.",
             "Curling up with a novel and some reading is my comfort."]
    phrase, topic = claim_phrase(lines, ["positive"] * 3, "trigger", lines[0])
    assert topic == "reading" and phrase == "Finds reading comforting"


def test_a_positive_claim_is_never_about_the_hardship_that_helps() -> None:
    from personatree.judge.claims import claim_phrase

    texts = ["Sketching helps me work through my struggles.", "When my struggles pile up I go sketching.",
             "My struggles feel smaller after an hour of sketching."]
    phrase, topic = claim_phrase(texts, ["positive"] * 3, "trigger", texts[0])
    assert "struggle" not in phrase.lower() and topic == "sketching"
    # Said against the hardship, the hardship is the topic.
    against = ["Money worries keep me up at night.", "My money worries are getting worse.", "I hate these money worries."]
    phrase, _ = claim_phrase(against, ["negative"] * 3, "trigger", against[0])
    assert "money" in phrase.lower()


def test_a_few_remarks_that_share_no_word_and_speak_of_no_one_name_no_pattern() -> None:
    from personatree.judge.claims import claim_phrase

    remarks = ["Holding on to the good days is what matters.", "Together we can get through anything!",
               "Little joys keep everyone going."]
    assert claim_phrase(remarks, ["positive"] * 3, "trigger", remarks[0]) == ("", "")
    own = ["My evening jog clears my head.", "I run along the canal after dinner.", "Jogging at dusk is my reset."]
    assert claim_phrase(own, ["positive"] * 3, "routine", own[0])[0] != ""


def test_praise_of_the_listeners_things_names_no_pattern(judge) -> None:
    # Lines said to someone about their quilts tell nothing the speaker enjoys.
    said_to = ["That quilt is gorgeous, Dana!", "Dana, your quilts are amazing!", "Wow, love the quilt you made, Dana."]
    s = judge.summarize(_leaves(judge, said_to, "preference"), Level.MID, "preference")
    assert s.attributes["named"] is False
    own = ["I love making quilts.", "Quilting is my favourite evening hobby.", "I finished another quilt today, loved it."]
    s = judge.summarize(_leaves(judge, own, "preference"), Level.MID, "preference")
    assert s.attributes["named"] is True and "quilt" in s.content.lower()


def test_a_fact_pattern_keeps_its_place_but_not_its_episode(judge) -> None:
    s = judge.summarize(_leaves(judge, ["I live in Porto with my partner.", "We live in Porto, since last year."],
                                "fact"), Level.MID, "fact")
    assert s.content.startswith("Lives in Porto")
    assert "last year" not in s.content


def test_a_pattern_read_from_one_member_states_what_holds_not_one_episode() -> None:
    from personatree.judge.claims import claim_phrase

    # The most typical member is an episode: a member that says what holds names it.
    texts = ["I went to an adoption info evening last week.", "Here's the adoption agency I picked.",
             "Adoption has been on my mind a lot.", "I applied to two adoption agencies!"]
    assert claim_phrase(texts, ["neutral"] * 4, "fact", texts[0])[0] == "Adoption has been on their mind a lot"
    # Only episodes: the topic the person keeps coming back to, never one episode (x3).
    episodes = ["I went to an adoption info evening last week.", "I applied to two adoption agencies!",
                "Last Friday I went to an adoption meeting."]
    assert claim_phrase(episodes, ["neutral"] * 3, "fact", episodes[0]) == ("Often talks about adoption", "adoption")
    # A name keeps the case the members write it in.
    visits = ["I went to the reunion with my sister Lena.", "I visited my sister Lena last week.",
              "Last Friday I went out with my sister Lena."]
    assert claim_phrase(visits, ["neutral"] * 3, "relationship", visits[0])[0] == "Often talks about sister Lena"
    # A past episode told with another subject is one too.
    city = ["Last weekend our city held a food festival!", "I go to the food festival whenever I can.",
            "The food festival is my favourite week of the year."]
    assert claim_phrase(city, ["neutral"] * 3, "fact", city[0])[0] == "Goes to the food festival whenever they can"
    # An event that changed the person's life is a fact that holds.
    moved = ["I moved to Porto last year.", "We moved to Porto in spring.", "Porto has been home since."]
    assert claim_phrase(moved, ["neutral"] * 3, "fact", moved[0])[0] == "Moved to Porto"
    # A proposal put to the listener is no claim either.
    cousins = ["Let's plan a weekend with our cousins soon.", "Our cousins came over for a barbecue last week.",
               "We went camping with our cousins in June."]
    assert claim_phrase(cousins, ["neutral"] * 3, "relationship", cousins[0])[0] == "Often talks about cousins"


def test_a_root_over_unrelated_patterns_repeats_neither(judge, embedder) -> None:
    mids = [node(embedder, "Enjoys hiking (5 mentions, Mar–Jun 2024)", "preference", Level.MID, nid="m1",
                 attributes={"stance": "positive"}, n_support=5),
            node(embedder, "Enjoys cooking (3 mentions, Mar 2024)", "preference", Level.MID, nid="m2",
                 attributes={"stance": "positive"}, n_support=3)]
    r = judge.summarize(mids, Level.ROOT, "personality")
    # Their topics joined ("hiking and cooking") would state no trait: no claim.
    assert r.attributes["named"] is False


def test_a_big_pattern_is_never_named_by_one_members_sentence() -> None:
    from personatree.judge.claims import claim_phrase

    # Eight lines of a memoir about one friend: the most typical one tells one moment.
    # Named by it, the pattern would show one sentence with eight mentions (x8).
    told = ["Tomas and I giggled until the bus driver glared at us.", "I waited for Tomas by the gate.",
            "Tomas showed me his new penknife behind the shed.", "I told Tomas the secret about the attic.",
            "Tomas dared me to jump from the boathouse roof.", "I lent Tomas my red scarf on the ferry.",
            "Tomas and I traded marbles at break.", "I followed Tomas down to the harbour after school."]
    assert claim_phrase(told, ["neutral"] * 8, "relationship", told[0]) == ("Often talks about Tomas", "tomas")
    # What most of them say in the same words does name it.
    works = ["I work night shifts at the bakery.", "Night shifts at the bakery wear me out.",
             "I start my night shifts at the bakery at ten.", "The bakery night shifts pay well.",
             "I work at the bakery, mostly night shifts.", "My night shifts at the bakery start soon.",
             "I have worked at the bakery for two years."]
    assert claim_phrase(works, ["neutral"] * 7, "fact", works[0])[0] == "Works night shifts at the bakery"
    # A few lines that say one thing in other words are still named by the typical one.
    few = ["I live in Porto with my partner.", "Porto has been home for six years.", "Our flat in Porto is tiny."]
    assert claim_phrase(few, ["neutral"] * 3, "fact", few[0])[0] == "Lives in Porto with their partner"


def test_a_root_is_named_by_what_most_of_its_patterns_share() -> None:
    from personatree.judge.claims import claim_phrase

    # Two of seven patterns mention the sea: the other five are not about it.
    topics = ["sea", "sea swimming", "violin", "chess", "bread baking", "spreadsheets", "crosswords"]
    assert claim_phrase(topics, ["positive"] * 7, "personality", topics[0], root=True) == ("", "")
    # Three of five share it.
    sea = ["sea", "sea swimming", "sea kayaking", "chess", "violin"]
    phrase, topic = claim_phrase(sea, ["positive"] * 5, "personality", sea[0], root=True)
    assert topic == "sea" and phrase == "Drawn to sea"
    # Two patterns without a shared word: no claim joins them.
    assert claim_phrase(["violin", "chess"], ["positive"] * 2, "personality", "violin", root=True) == ("", "")


@pytest.mark.parametrize("word", ["hiking", "sushi", "pottery", "volunteering", "yoga", "calls", "family", "speed",
                                  "vegetables", "table", "collectibles", "tennis"])
def test_words_that_name_a_pattern(word: str) -> None:
    from personatree.text import can_name

    assert can_name(word)


@pytest.mark.parametrize("word", ["shares", "talked", "agreed", "wait", "stunning", "difference", "increasingly",
                                  "beautiful", "anytime", "woohoo", "playing", "thing", "admirable", "incredible",
                                  "delicious", "nervous", "essential", "crucial", "plus", "together", "forward",
                                  "she'd", "they'll", "two", "dozen", "tons", "bunch", "blast", "impact",
                                  "importance", "spot", "awe", "effect", "increase", "focus", "reminder", "mix"])
def test_words_of_chat_name_no_pattern(word: str) -> None:
    from personatree.text import can_name

    assert not can_name(word)


@pytest.mark.parametrize("word", ["hiking", "dance", "painting", "pottery", "store", "health", "biz"])
def test_words_that_can_head_a_claim(word: str) -> None:
    from personatree.text import can_head

    # Nouns, gerunds, and a word the lexicon does not know ("biz").
    assert can_head(word)


@pytest.mark.parametrize("word", ["strong", "met", "assist", "gives", "shares", "stunning"])
def test_adjectives_and_verbs_head_no_claim(word: str) -> None:
    from personatree.text import can_head, can_name

    assert not can_head(word)
    if word in ("strong", "met", "assist", "gives"):
        assert can_name(word)  # the word lists alone let them through


def test_the_noun_of_an_idiom_names_no_claim() -> None:
    from personatree.judge.claims import claim_phrase

    # "Had a blast" says how it went: the fairground is what the lines are about.
    fair = ["We had a blast at the fairground on Saturday.",
            "The fairground rides were a blast, I love that place.",
            "I love the fairground, the kids had a blast too."]
    phrase, topic = claim_phrase(fair, ["positive"] * 3, "preference", fair[0])
    assert (phrase, topic) == ("Enjoys fairground", "fairground")


def test_a_claim_is_named_by_a_noun_not_by_an_adjective_or_a_verb() -> None:
    from personatree.judge.claims import claim_phrase

    # "strong" and "met" are in every member; what the members share that names a
    # thing is the bike and the harbour.
    rides = ["My legs feel strong after the hill repeats on my bike.",
             "I felt strong on the last climb of the bike ride.",
             "Staying strong matters to me on long bike rides."]
    # A kind of thing in general: the plural of a noun English only counts.
    assert claim_phrase(rides, ["positive"] * 3, "preference", rides[0]) == ("Enjoys bike rides", "bike ride")
    harbour = ["We met at the harbour café last spring.", "I met a lovely crowd at the harbour.",
               "The people I met there were kind."]
    assert claim_phrase(harbour, ["positive"] * 3, "preference", harbour[0]) == ("Enjoys harbour", "harbour")


def test_a_claim_topic_is_used_as_a_noun_at_least_once() -> None:
    from personatree.judge.claims import shared_topic

    # "read" is a noun in the lexicon ("a good read"), a verb in every member here.
    promises = ["I'll look that novel up, it sounds like a fun one to read on the train.",
                "No, I haven't read those yet, but they're on my list.",
                "I'd love to read more of her poems."]
    assert "read" not in shared_topic(promises).split()
    # A verb somewhere and a noun elsewhere still names the activity.
    assert shared_topic(["I dance every morning.", "My dance class is the best.", "We dance at weddings."]) == "dance"
    # "affects", "boosts" are nouns in the lexicon; after "it" or "she" they are verbs.
    weather = ["The grey weather is hard, it affects my sleep.", "It affects how long I sit at my desk.",
               "She says it affects her too, the long winter."]
    assert "affects" not in shared_topic(weather).split()
    # "helps me trust", "made me feel": a bare verb after a causative and its object.
    steady = ["Yoga helps me trust my body again.", "Running made me trust the process.",
              "It lets me trust my own pace."]
    assert "trust" not in shared_topic(steady).split()
    # "working" in a progressive ("I've been working late", "keep working") names no work
    # the person wants; a gerund used as a thing ("my favourite is painting") still names one.
    grind = ["I've been working late all month.", "I'm working through the backlog now.",
             "Just keep working, I tell myself."]
    assert shared_topic(grind) == ""
    assert shared_topic(["My favourite is painting.", "I'm painting the fence blue.",
                         "Painting clears my head."]) == "painting"


def test_what_it_was_like_names_no_claim() -> None:
    from personatree.judge.claims import shared_topic

    # "a bumpy ride" says how the year went; "Enjoys rides" would be false.
    year = ["It's been a rocky ride since I opened the bakery, but I'm loving it!",
            "Honestly, it's definitely been a bumpy ride.", "It has been an odd ride so far, I admit."]
    assert "ride" not in shared_topic(year).split()
    # A ride the person takes still names one.
    assert shared_topic(["I love long bike rides.", "It's been a rough ride this winter.",
                         "My ride along the coast is the best part of the week."]) == "ride"


def test_a_claim_names_a_kind_of_thing_in_general() -> None:
    from personatree.judge.claims import claim_phrase

    novels = ["I finished another detective novel on the bus.", "A good novel keeps me up past midnight.",
              "I always have a novel in my bag, I love novels."]
    assert claim_phrase(novels, ["positive"] * 3, "preference", novels[0]) == ("Enjoys novels", "novel")
    # Only as the members say it: none of them counts the marathons.
    race = ["I love the city marathon in our town.", "The city marathon is the best weekend of autumn.",
            "I cheer at the city marathon every year."]
    assert claim_phrase(race, ["positive"] * 3, "preference", race[0])[0] == "Enjoys city marathon"
    # A mass noun keeps its form; a goal is one thing worked toward.
    clay = ["I do pottery every Thursday evening.", "Pottery is where I switch off.", "My pottery wheel is my happy place."]
    assert claim_phrase(clay, ["positive"] * 3, "preference", clay[0])[0] == "Enjoys pottery"
    plans = ["I'm taking a month off to finish my novel.", "My plan is to finish my novel by spring.",
             "I write a chapter of my novel every week."]
    assert claim_phrase(plans, ["neutral"] * 3, "goal", plans[0])[0] == "Working toward novel"


def test_a_thing_left_out_names_no_claim() -> None:
    from personatree.judge.claims import claim_phrase

    # Gluten-free baking is no gluten: "Enjoys gluten" would say the opposite.
    bakes = ["I baked a gluten-free loaf for my sister this morning.",
             "My gluten-free scones came out light for once!",
             "I love trying gluten free recipes on Sundays."]
    phrase, topic = claim_phrase(bakes, ["positive"] * 3, "preference", bakes[0])
    assert "gluten" not in topic.split(), phrase


def test_a_claim_topic_repeats_no_word_and_ends_on_no_possessive() -> None:
    from personatree.judge.claims import shared_topic

    assert shared_topic(["I adore nature's colours.", "Spending time in nature's quiet places helps."]) == "nature"
    assert shared_topic(["Late-night writing, write until dawn, that's my routine.",
                         "Morning writing, write before breakfast, always."]) == "writing"


@pytest.mark.parametrize(
    ("texts", "schema_type"),
    [
        # Agreement and praise share only words of chat.
        (["I totally agree with what you said.", "Agreed, that really makes sense.",
          "I agree, it really does matter.", "Yes, I agree with you on that one."], "state"),
        # A loose cluster: no word is held by two of its six members.
        (["I baked rye bread this morning.", "The tram was late again.", "I repainted the garden fence.",
          "My cousin sold his old van.", "I finished a crossword in ink.", "A heron stood in the pond."],
         "preference"),
        # Reactions to the listener, about the listener.
        (["Your support means so much, Priya.", "Your support keeps me going, Priya.",
          "Priya, your support is wonderful."], "relationship"),
        # Said to the listener by name.
        (["Priya, I loved the concert.", "Hey Priya, I still think about that concert.",
          "Priya, I went to the concert with my brother."], "fact"),
    ],
)
def test_members_that_share_no_nameable_topic_get_no_claim(judge, embedder, texts, schema_type) -> None:
    # Leaves as a store may hold them (extraction drops most such lines today, but
    # imports, other judges and older stores do not).
    members = [node(embedder, t, schema_type, nid=f"l{i}") for i, t in enumerate(texts)]
    s = judge.summarize(members, Level.MID, schema_type)
    assert s.attributes["named"] is False


@pytest.mark.parametrize("schema_type", ["routine", "state", "trigger", "preference", "goal", "trend"])
def test_scenes_told_in_the_past_name_no_habit_state_or_trigger(judge, schema_type) -> None:
    # A memoir's scenes, typed by their embedding alone, take no side on the gate: a
    # frame ("Makes a habit of", "Going through", "Reacts strongly to") would say what
    # none of them says.
    scenes = ["I pushed the gate open and stepped into the yard.", "I saw the neighbour lean on the gate.",
              "The gate creaked when I closed it behind me."]
    s = judge.summarize(_leaves(judge, scenes, schema_type), Level.MID, schema_type)
    assert s.attributes["named"] is False, s
    # Said as what holds, the same topic names the pattern.
    habits = ["I walk through the park gate every morning.", "The park gate is where my run starts.",
              "I always stretch by the gate before I set off."]
    s = judge.summarize(_leaves(judge, habits, schema_type), Level.MID, schema_type)
    assert s.attributes["named"] is True and s.attributes["topic"] == "park gate", s


def test_a_side_or_a_change_told_in_the_past_still_names_a_pattern() -> None:
    from personatree.judge.claims import claim_phrase

    # The side the members take carries the claim's verb, whatever their tense.
    liked = ["I loved the ferry ride across the bay.", "The ferry ride was the best part of the trip.",
             "I enjoyed every ferry ride we took."]
    assert claim_phrase(liked, ["positive"] * 3, "preference", liked[0])[0] == "Enjoys ferry ride"
    # A move is told in the past and still holds.
    canal = ["We moved to a flat by the canal.", "I bought a kayak for the canal.", "I paddled the canal at dawn."]
    assert claim_phrase(canal, ["neutral"] * 3, "routine", canal[0])[0] == "Makes a habit of canal"
    # Without it, three past scenes by the canal are no habit.
    assert claim_phrase(canal[1:] + ["I swam in the canal once."], ["neutral"] * 3, "routine", canal[1]) == ("", "")
    # Runs told one by one are: the person does what the claim names...
    runs = ["I went for a run by the river this morning.", "Did a long run on Sunday before breakfast.",
            "I ran the river loop again yesterday."]
    assert claim_phrase(runs, ["neutral"] * 3, "routine", runs[0])[0] == "Makes a habit of run"
    # ... but no state or trigger is something one does.
    assert claim_phrase(runs, ["neutral"] * 3, "state", runs[0]) == ("", "")
    assert claim_phrase(runs, ["neutral"] * 3, "trigger", runs[0]) == ("", "")


def test_a_scene_the_person_heard_names_no_claim() -> None:
    from personatree.judge.claims import claim_phrase

    # What the neighbours agreed is theirs, whatever change it names: the pattern is
    # the neighbours the person keeps coming back to, not one scene they overheard.
    texts = ["I heard the neighbours agree that the noise had to stop.", "The neighbours waved at me over the hedge.",
             "I baked a cake for the neighbours."]
    assert claim_phrase(texts, ["neutral"] * 3, "relationship", texts[0]) == ("Often talks about neighbours",
                                                                               "neighbours")


def test_a_few_paraphrases_of_one_habit_are_named_by_the_most_typical(judge) -> None:
    texts = ["I jog along the canal after work.", "Evening runs by the water clear my head.",
             "Most nights I do a few laps of the park."]
    s = judge.summarize(_leaves(judge, texts, "routine"), Level.MID, "routine")
    assert s.attributes["named"] is True and s.attributes["topic"]


def test_crude_lemmas_do_not_bar_real_topics() -> None:
    from personatree.text import can_name

    # "wine" and "care", "car" and "win" share a crude lemma; only the chat verbs are barred.
    assert can_name("wine") and can_name("car") and not can_name("winning") and not can_name("caring")


def test_a_named_pattern_says_so(judge) -> None:
    s = judge.summarize(_leaves(judge, ["I love pottery.", "Pottery class was the best part of my week.",
                                        "I made a bowl at pottery again."], "preference"), Level.MID, "preference")
    assert s.content.startswith("Enjoys pottery (") and s.attributes["named"] is True
    assert s.attributes["topic"] == "pottery"


def test_a_root_reads_the_topics_its_patterns_were_named_by(judge, embedder) -> None:
    mids = [node(embedder, "Working toward pottery (4 mentions, Mar 2024)", "goal", Level.MID, nid="m1",
                 attributes={"stance": "positive", "topic": "pottery"}, n_support=4),
            node(embedder, "Makes a habit of pottery (3 mentions, Apr 2024)", "routine", Level.MID, nid="m2",
                 attributes={"stance": "positive", "topic": "pottery"}, n_support=3)]
    r = judge.summarize(mids, Level.ROOT, "personality")
    assert r.content == "Drawn to pottery" and r.attributes["named"] is True


def test_consolidation_forms_no_pattern_its_judge_cannot_name(registry, embedder, judge) -> None:
    from personatree.config import ConsolidationConfig
    from personatree.consolidate import Consolidator
    from personatree.consolidate.synthetic import SyntheticLeaf, build_graph

    chat = ["I totally agree with what you said.", "Agreed, that really makes sense.", "I agree, it really does matter.",
            "Yes, I agree with you on that one.", "I agree with you completely.", "Totally agree, that makes sense."]
    pottery = ["I love pottery.", "Pottery class was the best part of my week.", "I made a bowl at pottery again.",
               "Pottery relaxes me more than anything.", "I signed up for another pottery course."]
    leaves = [SyntheticLeaf(t, "preference", T0 + timedelta(days=3 * i), f"s{i}", 0)
              for i, t in enumerate(chat + pottery)]
    g = build_graph("u", leaves, registry, embedder=embedder)
    plan = Consolidator(ConsolidationConfig(), registry, judge, embedder=embedder).plan(g, T0 + timedelta(days=40))
    assert [m.content.split(" (")[0] for m in plan.new_mids] == ["Enjoys pottery"]
    assert any("share no topic" in c.note for c in plan.clusters)


def test_summarize_is_linear_in_the_members(judge) -> None:
    # A 40,000-member cluster: an n x n similarity matrix would need 6.4 GB; the centroid
    # path needs the n x d member matrix (about 40 MB) and one matrix-vector product.
    import time
    import tracemalloc

    from personatree.embedders import HashingEmbedder

    hashing = HashingEmbedder(256)
    n = 40_000
    texts = [f"I went hiking on trail {i % 97} with group {i % 13}" for i in range(n)]
    vecs = hashing.embed(texts[:2000])
    members = [Node(f"l{i:05d}", "u1", Level.LEAF, "event", texts[i], {"stance": "neutral"}, T0, T0, 0.0,
                    embedding=vecs[i % 2000]) for i in range(n)]
    tracemalloc.start()
    t0 = time.perf_counter()
    s = judge.summarize(members, Level.MID, "routine")
    elapsed = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert s.attributes["members"] == n and "hiking" in s.content.lower()
    assert peak < 400 * 2**20, peak
    assert elapsed < 60, elapsed
