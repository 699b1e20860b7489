"""Offline cost model of the LLM judge on LoCoMo dev (no network).

Every LoCoMo dev conversation is ingested through :class:`~personatree.PersonaTree`
with an :class:`~personatree.judge.LLMJudge` whose ``completion`` is a mocked model:
it answers each prompt with the JSON a model would give, computed by the offline judge
from the prompt's own data block (so answers have realistic sizes and contents), and
goes through ``litellm.completion(mock_response=...)`` so the real response path runs.
Sessions are ingested in order with one ``observe_many`` per session and a
consolidation pass after each (which asks for mid and root summaries), then every
question is routed once. Tokens are counted with the real tokenizer of ``--model``
(``litellm.token_counter``); cost uses litellm's local cost map.

The baseline is one extraction call per message, as Mem0 does on ``add`` (Mem0 also
issues a memory-update call per message, which is not counted here): the same
extraction prompt rendered for each single message, and the same mocked answer.

Run::

    python benchmarks/bench_llm_cost.py [--data PATH] [--model openai/gpt-4o-mini] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo_dev.json"
# Candidate pairs per validation call (the judge's default).
VALIDATE_BATCH = 16


class OfflineMimic:
    """A mocked model: answers the judge's prompts with the offline judge's decisions."""

    def __init__(self, embedder: Any, registry: Any) -> None:
        from personatree.judge import OfflineJudge

        self.embedder = embedder
        self.offline = OfflineJudge(embedder, registry)
        self.chunk = ""  # the observe_many call in progress (set by the benchmark)
        self.pairs_per_chunk: dict[str, int] = {}

    def __call__(self, *, model: str, messages: list[dict[str, str]], **kwargs: Any) -> Any:
        import litellm

        system = messages[0]["content"]
        data = _data(messages[1]["content"])
        if system.startswith("You extract"):
            answer = self._extract(data)
        elif system.startswith("You check"):
            self.pairs_per_chunk[self.chunk] = self.pairs_per_chunk.get(self.chunk, 0) + len(data)
            answer = self._validate(data)
        elif system.startswith("You read what one person said"):
            # The offline judge reads no change told in other words: no links, at the
            # length an answer of empty lists has.
            answer = {"links": [{"group": g["group"], "changes": []} for g in data]}
        elif system.startswith("You route"):
            route = self.offline.route(data["question"])
            answer = {"probabilities": {lv.value: round(p, 3) for lv, p in route.probabilities.items()},
                      "schema_types": list(route.schema_types)}
        else:
            answer = self._summarize(data, system)
        return litellm.completion(model=model, messages=messages, mock_response=json.dumps(answer))

    def _extract(self, data: list[dict[str, Any]]) -> dict[str, Any]:
        from personatree.types import Message, Observation

        at = datetime(2024, 1, 1, tzinfo=timezone.utc)
        obs = [Observation(str(i["id"]), "u", "s", at, tuple(
            Message(m["role"], m["text"], m.get("speaker")) for m in i["messages"])) for i in data]
        leaves = []
        for o, drafts in zip(obs, self.offline.extract(obs)):
            for d in drafts:
                a = d.attributes
                leaves.append({"interaction": int(o.id), "message": d.provenance.turn, "text": d.content,
                               "type": d.schema_type, "polarity": a["polarity"], "negated": a["negated"],
                               "topic": a["topic"], "time": a["time"], "entities": a["entities"][:5]})
        return {"leaves": leaves}

    def _validate(self, data: list[dict[str, Any]]) -> dict[str, Any]:
        from personatree.types import Level, Node

        at = datetime(2024, 1, 1, tzinfo=timezone.utc)
        texts = [p["evidence"]["text"] for p in data] + [p["pattern"]["text"] for p in data]
        vecs = self.embedder.embed(texts)
        pairs = []
        for k, p in enumerate(data):
            child = Node(f"c{k}", "u", Level.LEAF, p["evidence"]["type"], p["evidence"]["text"], {}, at, at, 0.0,
                         embedding=vecs[k])
            parent = Node(f"p{k}", "u", Level(p["pattern"]["level"]), p["pattern"]["type"], p["pattern"]["text"],
                          {}, at, at, 0.0, embedding=vecs[len(data) + k])
            pairs.append((child, parent, float(vecs[k] @ vecs[len(data) + k])))
        verdicts = self.offline.validate(pairs)
        return {"verdicts": [{"pair": p["pair"], "label": v.label, "psi": round(v.psi, 2),
                              "reason": v.reason.split(" (")[0][:120]} for p, v in zip(data, verdicts)]}

    def _summarize(self, data: list[dict[str, Any]], system: str) -> dict[str, Any]:
        from personatree.text import pattern_phrase

        claim = pattern_phrase(data[-1]["text"]) or data[-1]["text"]
        return {"claim": claim[:280], "polarity": 0, "topic": "", "evidence": [d["id"] for d in data]}


def _data(user_message: str) -> Any:
    start = user_message.index("<data>\n") + len("<data>\n")
    end = user_message.index("\n</data>", start)
    return json.loads(user_message[start:end])


def run(
    data: Path, model: str, *, limit: int | None = None, questions: int = 20, sessions: int | None = None
) -> dict[str, Any]:
    """Ingest LoCoMo dev through the LLM judge and the per-message baseline; return the figures."""
    import litellm

    from personatree import FixedClock, PersonaTree
    from personatree_bench.datasets.locomo import load_locomo
    from personatree_bench.systems import interaction
    from personatree_bench.resources import CachedEmbedder
    from personatree.embedders import SentenceTransformerEmbedder
    from personatree.judge import LLMJudge
    from personatree.judge.accounting import count_prompt_tokens, count_text_tokens
    from personatree.judge.prompts import data_block, load_prompt
    from personatree.schema import SchemaRegistry
    from personatree.types import Level

    ds = load_locomo(data, limit=limit)
    if sessions is not None:
        # Keep the first N sessions of each conversation (a quicker, smaller run).
        keep = []
        for c in ds.conversations:
            names = list(dict.fromkeys(t.session for t in c.turns))[:sessions]
            keep.append(replace(c, turns=tuple(t for t in c.turns if t.session in names)))
        ds = replace(ds, conversations=tuple(keep))
    # The mocked model, the judge and the tree embed the same sentences; this benchmark
    # counts calls and tokens, not time, so each distinct text is embedded once.
    embedder = CachedEmbedder(SentenceTransformerEmbedder())
    registry = SchemaRegistry.load()
    mimic = OfflineMimic(embedder, registry)
    turns = sum(len(c.turns) for c in ds.conversations)
    t0 = time.perf_counter()
    consolidation_error = None
    n_questions = 0
    with tempfile.TemporaryDirectory(prefix="personatree-llmcost-") as tmp:
        first = min(t.at for c in ds.conversations for t in c.turns)
        clock = FixedClock(first)
        tree = PersonaTree.open(Path(tmp) / "cost.db", embedder=embedder, clock=clock)
        judge = LLMJudge(model, embedder=embedder, registry=registry, store=tree.store, completion=mimic,
                         offline=tree.judge, validate_batch=VALIDATE_BATCH)
        tree.judge = judge
        try:
            for conv in ds.conversations:
                sessions: dict[str, list[Any]] = {}
                for t in conv.turns:
                    sessions.setdefault(t.session, []).append(t)
                for sname, sturns in sessions.items():
                    mimic.chunk = f"{conv.id}/{sname}"
                    clock.set(max(clock.now(), sturns[-1].at))
                    tree.observe_many(conv.id, [interaction(conv.id, t) for t in sturns])
                    if consolidation_error is None:
                        try:
                            tree.consolidate(conv.id)
                        except Exception as exc:  # noqa: BLE001 - consolidation is another component
                            consolidation_error = f"{type(exc).__name__}: {exc}"
                print(f"{conv.id}: {len(conv.turns)} turns ingested, {time.perf_counter() - t0:.0f}s",
                      file=sys.stderr, flush=True)
                with judge.scope(conv.id):
                    for q in conv.questions[:questions]:
                        judge.route(q.text)
                        n_questions += 1
            ops = judge.usage().by_operation()
            requests_before = judge.usage().total().requests
            rebuilt = tree.rebuild(ds.conversations[0].id)
            rebuild_requests = judge.usage().total().requests - requests_before
            structure = {c.id: tree.stats(c.id) for c in ds.conversations}
        finally:
            tree.close()
    seconds = time.perf_counter() - t0

    # Baseline: one extraction call per message (each turn alone in the extraction prompt).
    prompt = load_prompt("extract")
    # The same rendering of the leaf types as LLMJudge's extraction prompt.
    types = "\n".join(f"- {t.name}: {t.description}" for t in registry.types_at(Level.LEAF))
    base_prompt = base_completion = 0
    for conv in ds.conversations:
        payloads = []
        for t in conv.turns:
            msg = interaction(conv.id, t)["messages"][0]
            entry = {"index": 0, "role": msg["role"], "text": msg["content"],
                     **({"speaker": msg["name"]} if "name" in msg else {})}
            payloads.append([{"id": 0, "date": t.at.date().isoformat(), "messages": [entry]}])
            base_prompt += count_prompt_tokens(model, prompt.render(types=types, data=data_block(payloads[-1])))
        # One offline pass over the conversation gives every per-message answer.
        answers = mimic._extract([{**p[0], "id": k} for k, p in enumerate(payloads)])["leaves"]
        per_turn: dict[int, list[dict[str, Any]]] = {}
        for leaf in answers:
            per_turn.setdefault(leaf["interaction"], []).append({**leaf, "interaction": 0})
        for k in range(len(payloads)):
            base_completion += count_text_tokens(model, json.dumps({"leaves": per_turn.get(k, [])}))
    b_cost = sum(litellm.cost_per_token(model=model, prompt_tokens=base_prompt, completion_tokens=base_completion))

    per100 = 100.0 / turns
    rows = {}
    for op in ("extract", "validate", "summarize", "update", "route"):
        u = ops.get(op)
        if u is None:
            rows[op] = {"requests": 0, "requests_per_100": 0.0, "prompt_tokens_per_100": 0.0,
                        "completion_tokens_per_100": 0.0, "cost_usd_per_100": 0.0, "cache_hits": 0}
            continue
        rows[op] = {"requests": u.requests, "requests_per_100": u.requests * per100,
                    "prompt_tokens_per_100": u.prompt_tokens * per100,
                    "completion_tokens_per_100": u.completion_tokens * per100,
                    "cost_usd_per_100": u.cost_usd * per100, "cache_hits": u.cache_hits}
    # observe_many validates every candidate pair of a chunk in batched calls (at most
    # VALIDATE_BATCH pairs each); the count expected from the pair tallies is printed
    # next to the measured one, so a reader sees whether it does.
    rows["validate"]["expected_if_batched_per_chunk"] = sum(
        -(-n // VALIDATE_BATCH) for n in mimic.pairs_per_chunk.values())
    ingest_ops = ("extract", "validate", "summarize", "update")
    total_ingest = {k: sum(rows[o][k] for o in ingest_ops) for k in
                    ("requests", "requests_per_100", "prompt_tokens_per_100", "completion_tokens_per_100", "cost_usd_per_100")}
    baseline = {"requests": turns, "requests_per_100": 100.0, "prompt_tokens_per_100": base_prompt * per100,
                "completion_tokens_per_100": base_completion * per100, "cost_usd_per_100": b_cost * per100}
    return {
        "data": str(data), "model": model, "conversations": len(ds.conversations), "turns": turns,
        "questions_routed": n_questions, "operations": rows, "ingest_total": total_ingest,
        "baseline_one_call_per_message": baseline,
        "goal_met": total_ingest["requests_per_100"] < 100.0,
        "fallbacks": judge.stats().to_dict()["fallbacks"],
        "rebuild": {"user": ds.conversations[0].id, "equal": rebuilt.equal, "new_requests": rebuild_requests},
        "consolidation_error": consolidation_error,
        "tree": {"mids": sum(s["mids"] for s in structure.values()), "roots": sum(s["roots"] for s in structure.values()),
                 "leaves": sum(s["leaves"] for s in structure.values())},
        "seconds": round(seconds, 1),
    }


def format_table(r: dict[str, Any]) -> str:
    """The figures as a plain-text table."""
    lines = [
        f"LLM judge cost model — {r['data']} — {r['conversations']} conversations, {r['turns']} turns, "
        f"model {r['model']} (tokens: litellm.token_counter)",
        f"{'operation':<28}{'calls':>8}{'calls/100t':>12}{'prompt tok/100t':>17}{'compl tok/100t':>16}{'USD/100t':>11}",
    ]

    def row(name: str, x: dict[str, Any]) -> str:
        return (f"{name:<28}{x['requests']:>8}{x['requests_per_100']:>12.2f}{x['prompt_tokens_per_100']:>17.0f}"
                f"{x['completion_tokens_per_100']:>16.0f}{x['cost_usd_per_100']:>11.4f}")

    for op in ("extract", "validate", "summarize", "update"):
        lines.append(row(op, r["operations"][op]))
    lines.append(row("= ingestion total", r["ingest_total"]))
    v = r["operations"]["validate"]
    lines.append(f"  (validate: {v['requests']} calls measured, {v['expected_if_batched_per_chunk']} expected "
                 f"from the pairs of each chunk, {VALIDATE_BATCH} pairs per call)")
    lines.append(row("Mem0-style 1 call/message", r["baseline_one_call_per_message"]))
    q = r["operations"]["route"]
    lines.append(f"route: {q['requests']} calls for {r['questions_routed']} questions "
                 f"({q['prompt_tokens_per_100'] / max(1e-9, q['requests_per_100']):.0f} prompt tokens per query)")
    lines.append(f"goal (fewer calls per 100 turns than one per message): {'met' if r['goal_met'] else 'NOT met'}; "
                 f"rebuild of {r['rebuild']['user']}: {r['rebuild']['new_requests']} new calls (cache); "
                 f"fallbacks: {r['fallbacks'] or 'none'}; tree: {r['tree']}")
    if r["consolidation_error"]:
        lines.append(f"consolidation unavailable: {r['consolidation_error']}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--model", default="openai/gpt-4o-mini")
    p.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    p.add_argument("--questions", type=int, default=20, help="questions routed per conversation")
    p.add_argument("--sessions", type=int, default=None, help="only the first N sessions of each conversation")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = p.parse_args(argv)
    import logging

    logging.getLogger("LiteLLM").setLevel(logging.ERROR)
    result = run(args.data, args.model, limit=args.limit, questions=args.questions, sessions=args.sessions)
    print(json.dumps(result, indent=2) if args.json else format_table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
