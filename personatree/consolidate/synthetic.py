"""Seeded synthetic users for tests and benchmarks: planted patterns plus noise.

A planted pattern is one topic said many times in varied words (frames × fillers);
noise is one-off statements about unrelated things. Leaves are built directly
(no judge, no store), so clustering can be measured against the plant.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Sequence

import numpy as np

from ..graph import MemoryGraph
from ..ports import Embedder
from ..schema import SchemaRegistry
from ..types import Level, Node, Provenance

__all__ = ["PATTERNS", "NOISE", "SyntheticLeaf", "planted_leaves", "noise_leaves", "build_graph"]

#: (schema type, frames with one ``{}`` slot, fillers): each pattern is one topic.
PATTERNS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("preference",
     ("I prefer {} when I travel.", "Booked {} again, I really can't sleep anywhere noisy.",
      "For the trip I picked {}, as always.", "Honestly I only enjoy staying in {}."),
     ("quiet hotels away from the city centre", "a calm little hotel far from traffic noise",
      "a silent guesthouse on a quiet street", "a peaceful hotel with no nightlife nearby")),
    ("routine",
     ("{} before work, it sets up my whole day.", "Did my usual thing: {}.",
      "As every day, {} at dawn.", "I never skip it: {}."),
     ("I go for a run every morning", "a five kilometre jog along the river each morning",
      "my early morning run around the park", "running laps at sunrise")),
    ("state",
     ("{} lately and it is getting to me.", "Work has been brutal, {}.",
      "I have to admit {} these weeks.", "Again today, {}."),
     ("I feel completely burned out at my job", "I am exhausted and stressed by deadlines",
      "the office workload keeps me anxious and drained", "I'm overwhelmed by the pressure at work")),
    ("fact",
     ("Just so you know, {}.", "Remember that {}.", "I should mention {}.", "Careful with food: {}."),
     ("I am severely allergic to peanuts", "peanuts give me a dangerous allergic reaction",
      "even a trace of peanut makes me go into anaphylaxis", "my peanut allergy is life-threatening")),
    ("relationship",
     ("{}, we are really close.", "Talked with my sister again: {}.",
      "My sister Maria and I {}.", "{} and that keeps me going."),
     ("my sister Maria calls me every evening", "we chat on the phone every single night",
      "share everything with each other on our nightly calls", "Maria is the person I trust most")),
    ("goal",
     ("{} this year, fingers crossed.", "I'm determined: {}.", "Big plan: {}.",
      "Still working toward it: {}."),
     ("I want to learn to speak Japanese fluently", "studying Japanese grammar and kanji to become fluent",
      "passing the JLPT Japanese language exam", "being able to hold a conversation in Japanese")),
    ("trigger",
     ("{}, it's awful.", "Happened again: {}.", "I hate it, {}.", "{} every single time."),
     ("crowded trains make me panic", "packed subway cars give me a panic attack",
      "being squeezed in a crowded train makes my heart race", "rush-hour crowds on the metro trigger my anxiety")),
    ("preference",
     ("{} is my absolute favourite.", "Had {} for dinner, so good.", "I could eat {} every day.",
      "Nothing beats {}."),
     ("spicy Thai green curry", "a bowl of hot Thai curry with chili", "fiery Thai red curry with rice",
      "extra spicy Thai food")),
)

#: One-off statements about unrelated things (each used at most once).
NOISE: tuple[str, ...] = (
    "My neighbour repainted his fence blue yesterday.", "The dentist appointment got moved to Tuesday.",
    "I found an old coin in the garden.", "Our printer ran out of cyan ink.",
    "I watched a documentary about octopuses.", "The bakery on the corner closed for renovation.",
    "I returned the library book three days late.", "My laptop battery is swelling.",
    "We bought a new shower curtain.", "The tram schedule changed this month.",
    "I lost my umbrella at the cinema.", "A squirrel got into the attic.",
    "I renewed my passport online.", "The car needed new windshield wipers.",
    "I tried a pottery class once.", "Our building's elevator was broken all week.",
    "I donated old clothes to the charity shop.", "The wifi router keeps rebooting.",
    "I assembled a bookshelf from flat-pack.", "The plumber fixed the kitchen tap.",
    "I saw a hot air balloon over the valley.", "My cousin sold his motorbike.",
    "We had a power cut during the storm.", "I paid the parking fine.",
    "I planted tulip bulbs in October.", "The museum had a dinosaur exhibit.",
    "I repaired a flat bicycle tyre.", "The postman delivered the wrong parcel.",
    "I cleaned out the garage.", "A new pharmacy opened downtown.",
    "I upgraded my phone's operating system.", "We played chess at the cafe.",
    "The school announced a strike day.", "I learned to fold origami cranes.",
    "The heating bill was higher than expected.", "I visited a lighthouse on the coast.",
    "My watch strap broke.", "I attended a wedding in Porto.",
    "We adopted a tortoise named Gus.", "I sorted the recycling bins.",
    "The hairdresser cut my hair too short.", "I filed my tax return early.",
    "I saw a fox crossing the road at night.", "The orchestra played Vivaldi.",
    "I replaced the smoke detector battery.", "Our team lost the pub quiz.",
    "I bought a second-hand typewriter.", "The lake froze over in January.",
    "I helped a friend move a sofa.", "The violin teacher retired.",
    "I got a splinter gardening.", "The council repaved our street.",
    "I knitted a scarf for the winter.", "Someone scratched my car door.",
    "I ordered curtains for the bedroom.", "The bridge was closed for repairs.",
    "I found my grandmother's recipe notebook.", "A bird built a nest on the balcony.",
    "I ran out of printer paper.", "The vet vaccinated the cat.",
)


@dataclass(frozen=True, slots=True)
class SyntheticLeaf:
    """One generated statement: text, schema type, time, session and planted label (−1: noise)."""

    content: str
    schema_type: str
    at: datetime
    session_id: str
    label: int


def planted_leaves(
    n_patterns: int,
    per_pattern: int,
    start: datetime,
    *,
    seed: int,
    span_days: float = 90.0,
    sessions: int | None = None,
) -> list[SyntheticLeaf]:
    """Leaves of ``n_patterns`` planted patterns, ``per_pattern`` varied mentions each.

    Parameters
    ----------
    n_patterns : int
        At most ``len(PATTERNS)``.
    per_pattern : int
        Mentions per pattern.
    start : datetime
        Time of the earliest mention.
    seed : int
        Seed of every random choice.
    span_days : float
        Mentions are spread uniformly over this many days (0: one burst).
    sessions : int, optional
        Number of distinct sessions the mentions fall into (default: one per mention day).

    Returns
    -------
    list of SyntheticLeaf
    """
    rng = np.random.default_rng(seed)
    out: list[SyntheticLeaf] = []
    for k, (stype, frames, fillers) in enumerate(PATTERNS[:n_patterns]):
        offsets = np.sort(rng.uniform(0.0, span_days, per_pattern)) if span_days > 0 else np.zeros(per_pattern)
        for i in range(per_pattern):
            text = frames[rng.integers(len(frames))].format(fillers[rng.integers(len(fillers))])
            text = text[0].upper() + text[1:]
            at = start + timedelta(days=float(offsets[i]), minutes=i)
            sess = f"s{k}-{i % sessions}" if sessions else f"d{at:%Y%m%d}"
            out.append(SyntheticLeaf(text, stype, at, sess, k))
    return out


def noise_leaves(n: int, start: datetime, *, seed: int, span_days: float = 90.0) -> list[SyntheticLeaf]:
    """``n`` one-off event statements (``n`` ≤ ``len(NOISE)``), spread over ``span_days``."""
    rng = np.random.default_rng(seed + 7919)
    picks = rng.permutation(len(NOISE))[:n]
    return [
        SyntheticLeaf(NOISE[j], "event", start + timedelta(days=float(rng.uniform(0, span_days))),
                      f"n{i}", -1)
        for i, j in enumerate(picks)
    ]


def build_graph(
    user_id: str,
    leaves: Sequence[SyntheticLeaf],
    registry: SchemaRegistry,
    *,
    embedder: Embedder | None = None,
    vectors: np.ndarray | None = None,
) -> MemoryGraph:
    """A graph holding ``leaves`` as orphan leaf nodes (ids stable from content and time).

    Give either an ``embedder`` or precomputed unit ``vectors`` (one row per leaf).
    """
    if vectors is None:
        if embedder is None:
            raise ValueError("give an embedder or vectors")
        vectors = embedder.embed([s.content for s in leaves])
    g = MemoryGraph(user_id)
    for i, (s, vec) in enumerate(zip(leaves, vectors)):
        h = hashlib.sha256(f"{user_id}|{i}|{s.content}|{s.at.isoformat()}".encode()).hexdigest()[:20]
        prov = Provenance(f"obs-{h}", 0, 0, s.at, s.session_id)
        g.add_node(Node(
            id=f"lf_{h}", user_id=user_id, level=Level.LEAF, schema_type=s.schema_type,
            content=s.content, attributes={"planted": s.label}, t_first=s.at, t_last=s.at,
            logit=registry.prior_logit(s.schema_type), embedding=np.asarray(vec, dtype=np.float32),
            provenance=(prov,),
        ))
    return g
