"""Retrieval benchmark: `python evaluate.py --config configs/eval/locomo_retrieval_cpu.yaml` (task: retrieval).

Builds (or loads from the store) each conversation's memory, activates every question with evidence
for each method (full QGMem pipeline, its ablations, BM25 and dense over raw turns), and writes
`summary.json` + `results.md` with Recall@k, all-hit@k, Precision@k, binary nDCG@k, recall at a
retrieved-context token budget and p50/p95 latency, per category and overall (definitions in
`qgmem.evaluation.retrieval_metrics`). LongMemEval adds the official recall_any/recall_all@5/@10 and
nDCG@5/@10 on sessions and turns. Per-question results go to `questions.<method>.jsonl` as they are
produced, so a killed run resumes where it stopped. Questions without gold evidence are skipped and
counted; so are gold ids that name no turn (left out of the gold set by the loader).
"""

from __future__ import annotations

import copy
import json
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from qgmem.config import dump_yaml, load_config
from qgmem.evaluation import retrieval_metrics as rm
from qgmem.io import append_jsonl, atomic_write_json, atomic_write_text, read_jsonl
from qgmem.types import Conversation, MemoryMethod, Question

from qgmem.retrieve.config import RetrievalConfig

ABLATIONS = {
    "qgmem": {},
    "qgmem-no-attribute": {"channels": ["lexical", "dense"]},
    "qgmem-no-rerank": {"rerank.kind": "none"},
    "qgmem-no-traces": {"use_traces": False},
    "qgmem-no-context": {"context_turns": 0},
    "qgmem-lexical-only": {"channels": ["lexical"]},
    "qgmem-dense-only": {"channels": ["dense"]},
}
BASELINES = ("bm25-turns", "dense-turns")


@dataclass
class RetrievalBenchConfig:
    task: str = "retrieval"
    dataset: str = "locomo"  # registry name: "locomo" | "longmemeval-s"
    data_dir: str | None = None  # default $QGMEM_DATA_DIR
    categories: list[str] = field(default_factory=list)  # empty = every category
    conversations: list[str] = field(default_factory=list)  # empty = every conversation
    dev_conversations: list[str] = field(default_factory=list)  # tuning split; also reported separately
    max_conversations: int = 0  # 0 = all (LongMemEval: one conversation per question)
    subset_seed: int = 0  # seeded choice of `max_conversations`
    k: int = 10
    token_budget: int = 600
    methods: list[str] = field(default_factory=lambda: ["qgmem", "qgmem-no-attribute", "qgmem-no-rerank",
                                                        "qgmem-no-traces", "bm25-turns", "dense-turns"])
    output_dir: str = "outputs/retrieval/locomo"
    store_dir: str = ""  # default <output_dir>/store
    resume: bool = True
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    method_options: dict[str, dict[str, Any]] = field(default_factory=dict)  # e.g. {"anchormem": {"tau": 0.85}}


def _apply(cfg: RetrievalConfig, changes: dict[str, Any]) -> RetrievalConfig | None:
    """A copy of cfg with `changes` ("a.b" keys); None when nothing changes (ablation = full)."""
    new = copy.deepcopy(cfg)
    changed = False
    for key, val in changes.items():
        obj = new
        parts = key.split(".")
        for p in parts[:-1]:
            obj = getattr(obj, p)
        if getattr(obj, parts[-1]) != val:
            setattr(obj, parts[-1], val)
            changed = True
    return new if changed else None


def make_methods(cfg: RetrievalBenchConfig, store: Any) -> dict[str, MemoryMethod | str]:
    """Method name -> method, or -> the name of the method it is identical to."""
    from qgmem.baselines.bm25_turns import BM25Turns
    from qgmem.baselines.dense_turns import DenseTurns

    from qgmem.retrieve.method import QGMemRetriever

    out: dict[str, MemoryMethod | str] = {}
    for name in cfg.methods:
        if name in ABLATIONS:
            rc = cfg.retrieval if name == "qgmem" else _apply(cfg.retrieval, ABLATIONS[name])
            out[name] = "qgmem" if rc is None else QGMemRetriever(store, rc, name=name)
        elif name == "bm25-turns":
            out[name] = BM25Turns()
        elif name == "dense-turns":
            out[name] = DenseTurns(cfg.retrieval.embedder, cfg.retrieval.device, store=store)
        elif name == "anchormem":  # through the shared registry (qgmem.methods), options from method_options
            from qgmem.methods import make_method

            out[name] = make_method(name, store=store, **cfg.method_options.get(name, {}))
        else:
            raise ValueError(f"unknown method {name!r}; known: {sorted(ABLATIONS) + list(BASELINES) + ['anchormem']}")
    return out


def _questions(conv: Conversation, cats: set[str]) -> list[Question]:
    return [q for q in conv.questions if not cats or q.category in cats]


def _score_rows(rows: list[dict[str, Any]], k: int, longmemeval: bool) -> dict[str, Any]:
    scored = [r for r in rows if r["scores"] is not None]
    out: dict[str, Any] = {"questions": len(rows), "scored": len(scored), "no_gold": len(rows) - len(scored)}
    for m in ("recall", "all_hit", "precision", "ndcg", "budget_recall"):
        out[m] = rm.mean([r["scores"][m] for r in scored])
    lat = [r["latency_ms"] for r in rows]
    out["latency_p50_ms"] = rm.percentile(lat, 50)
    out["latency_p95_ms"] = rm.percentile(lat, 95)
    out["context_tokens_mean"] = rm.mean([r["context_tokens"] for r in rows])
    if longmemeval:
        for key in sorted({kk for r in scored for kk in r.get("official", {})}):
            out[key] = rm.mean([r["official"][key] for r in scored if key in r.get("official", {})])
    return out


def _official(items: list[list[str]], q: Question, conv: Conversation) -> dict[str, float]:
    sess_of = {t.id: s.id for s in conv.sessions for t in s.turns}
    out: dict[str, float] = {}
    levels = {"turn": (rm.rank_ids(items), q.evidence, [t.id for t in conv.turns()]),
              "session": (rm.rank_ids(items, sess_of), q.evidence_sessions or sorted({sess_of[t] for t in q.evidence}),
                          [s.id for s in conv.sessions])}
    for level, (ranked, gold, corpus) in levels.items():
        if not gold:
            continue
        for kk in (5, 10):
            out[f"{level}_recall_any@{kk}"] = rm.recall_any(ranked, gold, kk)
            out[f"{level}_recall_all@{kk}"] = rm.recall_all(ranked, gold, kk)
            out[f"{level}_ndcg@{kk}"] = rm.ndcg_official(ranked, gold, kk, corpus)
    return out


def _table(summary: dict[str, Any], metrics: list[str]) -> str:
    lines = []
    for group, per_method in summary["groups"].items():
        lines.append(f"\n### {group}\n")
        lines.append("| method | n | " + " | ".join(metrics) + " |")
        lines.append("|---|---|" + "---|" * len(metrics))
        for name, s in per_method.items():
            vals = [f"{s[m]:.3f}" if isinstance(s.get(m), float) and "latency" not in m and "tokens" not in m
                    else (f"{s[m]:.1f}" if isinstance(s.get(m), float) else str(s.get(m, ""))) for m in metrics]
            lines.append(f"| {name} | {s['scored']} | " + " | ".join(vals) + " |")
    return "\n".join(lines) + "\n"


def run_benchmark(cfg: RetrievalBenchConfig, conversations: list[Conversation] | None = None) -> dict[str, Any]:
    """Run every method on the data set; returns the summary (also written to output_dir)."""
    from qgmem.store import MemoryStore

    from qgmem.retrieve.method import TokenCounter

    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "config.yaml", dump_yaml(cfg))
    lme = cfg.dataset.lower().startswith("longmemeval")
    if conversations is None:
        from qgmem.data.registry import load_dataset_by_name

        conversations = load_dataset_by_name(cfg.dataset, cfg.data_dir)
    convs = list(conversations)
    if cfg.conversations:
        wanted = set(cfg.conversations)
        missing = wanted - {c.id for c in convs}
        if missing:
            raise ValueError(f"conversations {sorted(missing)} are not in {cfg.dataset}")
        convs = [c for c in convs if c.id in wanted]
    if cfg.max_conversations and len(convs) > cfg.max_conversations:
        rng = random.Random(cfg.subset_seed)
        keep = set(rng.sample(range(len(convs)), cfg.max_conversations))
        convs = [c for i, c in enumerate(convs) if i in keep]
    cats = {str(c) for c in cfg.categories}
    store = MemoryStore(cfg.store_dir or out / "store")
    methods = make_methods(cfg, store)
    counter = TokenCounter(cfg.retrieval.token_counter, _embedder(cfg))
    rows: dict[str, list[dict[str, Any]]] = {n: [] for n in methods}
    done: dict[str, dict[str, dict[str, Any]]] = {}
    for name in methods:
        path = out / f"questions.{name}.jsonl"
        if not cfg.resume and path.exists():
            path.unlink()
        done[name] = {r["qid"]: r for r in read_jsonl(path)}
    unmatched = 0
    for conv in tqdm(convs, desc="conversations", unit="conv"):
        qs = _questions(conv, cats)
        unmatched += sum(len(q.unmatched_evidence) for q in qs)
        if not qs:
            continue
        turn_tokens = {t.id: counter(t.render()) for t in conv.turns()}
        for name, m in methods.items():
            if isinstance(m, str):
                continue
            todo = [q for q in qs if f"{conv.id}/{q.id}" not in done[name]]
            rows[name].extend(done[name][f"{conv.id}/{q.id}"] for q in qs if f"{conv.id}/{q.id}" in done[name])
            if not todo:
                continue
            m.build(conv)
            new = []
            for q in todo:
                q.conversation_id = q.conversation_id or conv.id
                t0 = time.perf_counter()
                wm = m.activate(q, cfg.k)
                lat = float(wm.meta.get("latency_ms", (time.perf_counter() - t0) * 1000))
                items = [list(it.turn_ids) for it in wm.items]
                sc = rm.score_question(items, q.evidence, cfg.k, turn_tokens, cfg.token_budget)
                ctx = wm.context_tokens or sum(counter(it.text) for it in wm.items)
                row = {"qid": f"{conv.id}/{q.id}", "category": q.category, "items": items, "gold": q.evidence,
                       "scores": sc.__dict__ if sc else None, "latency_ms": lat, "context_tokens": ctx}
                if lme and sc is not None:
                    row["official"] = _official(items, q, conv)
                new.append(row)
            append_jsonl(out / f"questions.{name}.jsonl", new)
            rows[name].extend(new)
            if hasattr(m, "release"):
                m.release(conv.id)
    for name, m in methods.items():
        if isinstance(m, str):
            rows[name] = rows[m]
    groups: dict[str, dict[str, Any]] = {}
    dev = set(cfg.dev_conversations)

    def add(group: str, pred) -> None:
        per = {}
        for name in methods:
            sel = [r for r in rows[name] if pred(r)]
            if sel:
                per[name + (f" (= {methods[name]})" if isinstance(methods[name], str) else "")] = \
                    _score_rows(sel, cfg.k, lme)
        if per:
            groups[group] = per

    add("overall", lambda r: True)
    if dev:
        add("test (without dev conversations)", lambda r: r["qid"].split("/")[0] not in dev)
        add("dev conversations", lambda r: r["qid"].split("/")[0] in dev)
    for cat in sorted({r["category"] for rs in rows.values() for r in rs}):
        add(f"category {cat}", lambda r, c=cat: r["category"] == c)
    summary = {"dataset": cfg.dataset, "k": cfg.k, "token_budget": cfg.token_budget,
               "token_counter": cfg.retrieval.token_counter, "conversations": len(convs),
               "unmatched_gold_ids": unmatched, "groups": groups}
    atomic_write_json(out / "summary.json", summary)
    metrics = ["recall", "all_hit", "precision", "ndcg", "budget_recall", "latency_p50_ms", "latency_p95_ms",
               "context_tokens_mean"]
    md = (f"# Retrieval: {cfg.dataset}\n\nk = {cfg.k}; budget recall at {cfg.token_budget} tokens "
          f"({cfg.retrieval.token_counter} tokenizer); {len(convs)} conversations; questions without gold "
          f"evidence are not scored (column n counts scored questions); unmatched gold ids: {unmatched}.\n")
    md += _table(summary, metrics)
    if lme:
        off = [f"{lv}_{m}@{kk}" for lv in ("session", "turn") for m in ("recall_any", "recall_all", "ndcg") for kk in (5, 10)]
        md += "\n## LongMemEval official metrics\n" + _table(summary, off)
    atomic_write_text(out / "results.md", md)
    return summary


def _embedder(cfg: RetrievalBenchConfig) -> Any:
    from qgmem.embed import get_embedder

    return get_embedder(cfg.retrieval.embedder, cfg.retrieval.device)


def main(config_path: str, overrides: list[str]) -> int:
    """Entry point for evaluate.py (task: retrieval)."""
    cfg = load_config(RetrievalBenchConfig, config_path, overrides)
    if cfg.task != "retrieval":
        print(f"error: {config_path}: task must be 'retrieval', got {cfg.task!r}", file=sys.stderr)
        return 2
    summary = run_benchmark(cfg)
    print((Path(cfg.output_dir) / "results.md").read_text())
    print(json.dumps({n: {m: round(v[m], 3) for m in ("recall", "ndcg", "budget_recall", "latency_p50_ms")}
                      for n, v in summary["groups"].get("overall", {}).items()}, indent=1))
    return 0
