"""Why does personatree miss the cue speaker's statement? A per-cue diagnosis.

Builds the cue/trigger cases exactly as ``personatree bench cue-recall`` does (same
loader, seed and host, gold = the cue speaker's own turns), ingests each through the
same engine adapter, then for the cue speaker's statement reports:

- whether it became a leaf (and, if not, whether ``is_informative`` drops it), its
  schema type and whether the retrieval state counts it as a disposition or a
  standing statement (a goal, value, condition or cause);
- its rank among the user's leaves by cosine (dense), among turns by BM25, among the
  dispositions by cosine, and in the fused leaf ranking ``score_nodes`` builds for a
  recall at the budget;
- the route (level, whether the query counts as *personal*, and whether it tells a
  situation of the person's own, which gives the standing statements a bonus; the
  bench's triggers all do, being the person's own messages: ``from_user``);
- whether recall at the budget showed it, what the context spent its tokens on
  (claims vs evidence), and whether flat dense found it (with its rank among turns).

Usage::

    python benchmarks/diagnose_cues.py --split tune --budget 1000 --out cues-diagnosis.json
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from personatree_bench.datasets import load_locomo_plus  # noqa: E402
from personatree_bench.datasets.locomo_plus import default_cues_path  # noqa: E402
from personatree_bench.resources import CachedEmbedder, make_token_counter  # noqa: E402
from personatree_bench.systems import DenseSystem, FlatIndex, PersonaTreeEngine  # noqa: E402


def _rank(order: list[str], x: str) -> int | None:
    try:
        return order.index(x) + 1
    except ValueError:
        return None


def diagnose_case(engine: PersonaTreeEngine, flat: DenseSystem, conv: Any, budget: int) -> dict[str, Any]:
    """Ingest one case and explain where its cue speaker's statement went."""
    from personatree.retrieval.prelude import route_query, user_state
    from personatree.retrieval.lexical import tokenize
    from personatree.retrieval.scoring import score_nodes
    from personatree.text import is_disposition, is_informative, split_sentences, tells_own_situation
    from personatree.types import Level

    tree = engine.tree
    engine.ingest(conv.id, conv.turns)
    flat.ingest(conv.id, conv.turns)
    (q,) = conv.questions
    gold = list(q.evidence)
    turns = {t.id: t for t in conv.turns}
    engine.clock.set(q.at)
    rec = tree.recall(conv.id, q.text, budget=budget, from_user=q.from_user)
    shown = engine.turns_of(conv.id, rec)
    flat_ctx = flat.retrieve(conv.id, q.text, q.at, budget, from_user=q.from_user)
    flat_order = flat.index.dense_order(conv.id, q.text)

    qvec = tree.embedder.embed([q.text])[0]
    route = route_query(tree.engine, q.text, qvec)
    with tree._lock:
        state = user_state(tree, conv.id, tree._state(conv.id))
    wanted = set(route.schema_types)
    personal = route.level is not Level.LEAF or "preference" in wanted
    pool = max(16, min(tree.config.recall.pool, budget // 10))
    scored, cos = score_nodes(state, q.text, qvec, (Level.LEAF,), tree.config.recall,
                              {lv: pool for lv in Level}, personal, q.from_user)
    fused_order = sorted(scored, key=lambda x: -scored[x].relevance)
    arr = state.arrays.get(Level.LEAF)
    leaf_cos = cos.get(Level.LEAF)
    dense_order = [arr.ids[i] for i in np.argsort(-leaf_cos, kind="stable")] if arr is not None else []
    bm25_turns = [k for k, _ in state.turns.search(tokenize(q.text), 10_000)]
    disp = [x for x in dense_order if x in state.dispositions]

    cue_leaves = []
    obs_ids = {f"{conv.id}:{tid}": tid for tid in gold}
    for n in tree.nodes(conv.id, level="leaf"):
        if any(p.observation_id in obs_ids for p in n.provenance):
            cue_leaves.append(n)
    sentences = [s for tid in gold for s in split_sentences(turns[tid].text)]
    leaves = [{
        "content": n.content,
        "schema_type": n.schema_type,
        "disposition": n.id in state.dispositions,
        "standing": n.id in state.standing,
        "parent": state.parent.get(n.id),
        "dense_rank": _rank(dense_order, n.id),
        "bm25_turn_rank": _rank(bm25_turns, state.turn_of.get(n.id, "")),
        "disposition_rank": _rank(disp, n.id),
        "fused_rank": _rank(fused_order, n.id),
        "cosine": float(leaf_cos[arr.row[n.id]]) if arr is not None and n.id in arr.row else None,
    } for n in cue_leaves]
    levels = [it.level.value for it in rec.items]
    return {
        "case": conv.id, "item": conv.meta.get("item"), "relation": q.category, "trigger": q.text,
        "cue": [turns[t].text for t in gold],
        "found": bool(set(gold) & set(shown)),
        "flat_dense_found": bool(set(gold) & set(flat_ctx.turn_ids)),
        "flat_dense_rank": min((_rank(flat_order, t) or 10**9) for t in gold),
        "leaves": leaves,
        "sentences": [{"text": s, "informative": is_informative(s), "disposition": is_disposition(s)}
                      for s in sentences],
        "route": {"level": route.level.value, "types": sorted(wanted), "personal": personal,
                  "situation": q.from_user or tells_own_situation(q.text)},
        "context": {"items": len(levels), "leaves": levels.count("leaf"), "mids": levels.count("mid"),
                    "roots": levels.count("root"),
                    "claim_tokens": sum(it.tokens for it in rec.items if it.level.value != "leaf"),
                    "tokens": rec.tokens},
        "n_leaves": len(dense_order), "n_dispositions": len(disp),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?", type=Path, default=default_cues_path())
    ap.add_argument("--host", type=Path, default=Path("..") / "shared" / "data" / "locomo" / "locomo_dev.json")
    ap.add_argument("--split", default="tune")
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--consolidate", default="session", choices=("session", "end", "none"))
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)

    import orjson

    from personatree.embedders import SentenceTransformerEmbedder

    data = load_locomo_plus(args.path, host=args.host, split=args.split, gold="speaker", limit=args.limit)
    emb = CachedEmbedder(SentenceTransformerEmbedder())
    counter = make_token_counter("gpt-4o-mini")
    engine = PersonaTreeEngine(emb, counter, consolidate=args.consolidate, keep_users=True)
    flat = DenseSystem(FlatIndex(emb, counter))
    rows = []
    try:
        for conv in data.conversations:
            row = diagnose_case(engine, flat, conv, args.budget)
            rows.append(row)
            best = min((x["fused_rank"] or 10**9 for x in row["leaves"]), default=None)
            print(f"{row['item']:>10} found={row['found']!s:5} dense={row['flat_dense_found']!s:5} "
                  f"leaves={len(row['leaves'])} fused_rank={best} flat_rank={row['flat_dense_rank']} "
                  f"route={row['route']['level']}/{'personal' if row['route']['personal'] else 'event'}",
                  file=sys.stderr, flush=True)
            engine.drop(conv.id)
            flat.drop(conv.id)
    finally:
        engine.close()
    if args.out:
        args.out.write_bytes(orjson.dumps(rows, option=orjson.OPT_INDENT_2))
    found = sum(r["found"] for r in rows)
    print(f"tree found {found}/{len(rows)}; flat dense {sum(r['flat_dense_found'] for r in rows)}/{len(rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
