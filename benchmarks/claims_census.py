"""What claims does consolidation write for a real conversation? A census of mids and roots.

Ingests LoCoMo-format conversations through the benchmark engine (the same adapter as
``personatree bench locomo``), consolidating once at the end (``--consolidate end``) or
at every session boundary (``session``), then counts the patterns (mids) and claims
(roots) per conversation and per schema type, with the mean support of a mid, and the
conflict edges, *changed* patterns (latest conflict newer than latest support) and
patterns whose claim repeats another's of the same type and speaker (one pattern
formed twice); with ``--show`` it prints every claim's text and every conflict
(pattern, the line against it, the reason), so a person can read what an agent would
be shown, and with ``--members`` too the support under each claim.

By default both speakers are the person (as the benchmark ingests them). With
``--user first`` (the speaker who speaks first) or ``--user second`` the conversation
is read as a chat export of that speaker: their turns are the user's, the other
speaker's are the assistant's. With ``--knowme N`` the path is a KnowMe dataset folder
and its narrator's first N entries are one person's imported history (a memoir told in
the first person, unlike a chat).

Usage::

    python benchmarks/claims_census.py ../shared/data/locomo/locomo_dev.json --consolidate end
    python benchmarks/claims_census.py ../shared/data/locomo/locomo_dev.json --limit 1 --show
    python benchmarks/claims_census.py ../shared/data/locomo/locomo_dev.json --limit 2 --user second
    python benchmarks/claims_census.py ../shared/data/knowme/dataset1 --knowme 800 --show
"""

from __future__ import annotations

import argparse
import os
from collections import Counter
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from personatree.speakers import speaker_key  # noqa: E402
from personatree.text import strip_summary_suffix  # noqa: E402
from personatree.types import EdgeKind, Level  # noqa: E402
from personatree_bench.datasets import load_locomo  # noqa: E402
from personatree_bench.datasets.knowme import load_knowme  # noqa: E402
from personatree_bench.engine import PersonaTreeEngine  # noqa: E402
from personatree_bench.resources import CachedEmbedder, default_embedder, make_token_counter  # noqa: E402
from personatree_bench.types import Turn  # noqa: E402


def _as_user(turns: tuple[Turn, ...], who: str) -> tuple[Turn, ...]:
    # One speaker's chat export: their turns are the user's, the other's the assistant's.
    if who == "both":
        return turns
    speakers = list(dict.fromkeys(t.speaker for t in turns))
    me = speakers[0 if who == "first" else min(1, len(speakers) - 1)]
    return tuple(replace(t, role="user" if t.speaker == me else "assistant") for t in turns)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", type=Path)
    ap.add_argument("--limit", type=int, default=None, help="first N conversations")
    ap.add_argument("--consolidate", default="end", choices=("end", "session"))
    ap.add_argument("--skip", type=int, default=0, help="skip the first N conversations")
    ap.add_argument("--show", action="store_true", help="print every claim and conflict")
    ap.add_argument("--members", action="store_true", help="with --show: each claim's support under it")
    ap.add_argument("--user", choices=("both", "first", "second"), default="both",
                    help="whose chat export the conversation is (default: both speakers are the person)")
    ap.add_argument("--knowme", type=int, default=None, metavar="N",
                    help="path is a KnowMe dataset folder: its first N entries")
    args = ap.parse_args(argv)

    data = load_knowme(args.path, limit=args.knowme) if args.knowme else load_locomo(args.path)
    convs = data.conversations[args.skip:][: args.limit]
    emb = CachedEmbedder(default_embedder())
    engine = PersonaTreeEngine(emb, make_token_counter("gpt-4o-mini"), consolidate=args.consolidate)
    types: Counter[str] = Counter()
    mids = roots = support = turns = conflicts = changed = repeats = 0
    try:
        for conv in convs:
            engine.ingest(conv.id, _as_user(conv.turns, args.user))
            turns += len(conv.turns)
            g = engine.tree.graph(conv.id)
            # A pattern that says what another of its type already says: the same
            # pattern formed twice (a duplicate an agent reads as two).
            # Two speakers' patterns may say the same: those are two people's, no repeat.
            claims = Counter((speaker_key(g, n), n.schema_type, strip_summary_suffix(n.content))
                             for n in g.nodes(Level.MID))
            repeats += sum(k - 1 for k in claims.values())
            for n in g.nodes():
                if n.level is Level.LEAF:
                    continue
                types[f"{n.level.value} {n.schema_type}"] += 1
                if n.level is Level.MID:
                    mids += 1
                    support += n.n_support
                else:
                    roots += 1
                changed += bool(n.attributes.get("changed_at"))
                if args.show:
                    print(f"{conv.id}  {n.level.value:4s} {n.schema_type:12s} {n.content}")
                    for child in g.children(n.id) if args.members else ():
                        print(f"      + {g.node(child).content[:110]}")
            for e in g.edges(EdgeKind.CONFLICT):
                conflicts += 1
                if args.show:
                    print(f"{conv.id}  conflict  {g.node(e.dst).content[:70]}  <-  {g.node(e.src).content[:90]}"
                          f"  [{e.reason}]")
            engine.drop(conv.id)
    finally:
        engine.close()
    print(f"{len(convs)} conversations, {turns} turns, consolidate={args.consolidate}: "
          f"{mids} mids ({mids / max(1, turns) * 100:.1f} per 100 turns, mean support "
          f"{support / max(1, mids):.1f} leaves), {roots} roots; {conflicts} conflict edges, "
          f"{changed} changed patterns; {repeats} patterns repeat another's claim")
    for key, n in sorted(types.items()):
        print(f"  {key:24s} {n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
