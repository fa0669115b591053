"""Retrieval runs: `python evaluate.py --config configs/eval/locomo_retrieval_cpu.yaml` (task: retrieval).

Builds (or loads from the store) each conversation's memory, activates every selected question for
each method (the QGMem activation pipeline, its ablations, BM25 and dense over raw turns, AnchorMem;
all from `qgmem.methods`), and writes `summary.json` + `results.md` with Recall@k, all-hit@k,
Precision@k, binary nDCG@k, recall at a retrieved-context token budget and p50/p95 latency, per
category and overall (definitions in `qgmem.evaluation.retrieval_metrics`). LongMemEval adds the
official recall_any/recall_all@5/@10 and nDCG@5/@10 on sessions and turns. Run folder, subset,
resume rule and question key are the QA harness's (`qgmem.evaluation.runs`): rows go to
`retrieval.jsonl` as they are produced, so a killed run resumes where it stopped. Questions without
gold evidence are counted, not scored; so are gold ids that name no turn. `shard: I/N` scores one
shard of the conversations (`qgmem.sharding`); `qgmem merge-runs` joins the shard runs.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from qgmem.answer import TOKEN_DEFINITION, context_tokens, item_tokens
from qgmem.config import ConfigError, apply_overrides, from_dict, read_yaml
from qgmem.evaluation import retrieval_metrics as rm
from qgmem.evaluation.config import MOVED, RetrievalBenchConfig
from qgmem.evaluation.runs import RETRIEVAL_ROWS, failure_recorded, finish_run, open_run, question_key
from qgmem.evaluation.subset import load_benchmark, select
from qgmem.io import append_jsonl, atomic_write_json, atomic_write_text, read_jsonl
from qgmem.methods import MethodContext, make_methods
from qgmem.sharding import Shard, parse_shard, sharded_name
from qgmem.types import Conversation, MemoryMethod, Question

__all__ = ["RetrievalBenchConfig", "load_retrieval_config", "make_run_methods", "run_benchmark", "write_summary", "main"]


def load_retrieval_config(path: str | Path, overrides: list[str] | None = None) -> RetrievalBenchConfig:
    """The YAML at `path` with overrides; a key of the old retrieval layout says where it went."""
    data = apply_overrides(read_yaml(path), list(overrides or []))
    for old, new in MOVED.items():
        if old in data:
            raise ConfigError(f"{path}: key {old!r} moved: use {new}")
    return from_dict(RetrievalBenchConfig, data, str(path))


def make_run_methods(cfg: RetrievalBenchConfig, store: Any) -> dict[str, MemoryMethod]:
    """Method name -> method, from the registry; names with equal setups share one object (run once)."""
    return make_methods(cfg.methods, MethodContext(store=store, retrieval=cfg.retrieval), cfg.method_options)


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


def _score_conversation(name: str, m: MemoryMethod, conv: Conversation, todo: list[Question],
                        cfg: RetrievalBenchConfig, lme: bool) -> list[dict[str, Any]]:
    """Build `conv` into `m`, activate and score each question; one row per question. Context tokens and
    budget costs are the memory text as the answer prompt shows it, one counter for every method."""
    m.build(conv)
    rows = []
    for q in todo:
        q.conversation_id = q.conversation_id or conv.id
        t0 = time.perf_counter()
        wm = m.activate(q, cfg.k)
        lat = float(wm.meta.get("latency_ms", (time.perf_counter() - t0) * 1000))
        items = [list(it.turn_ids) for it in wm.items]
        sc = rm.score_question(items, q.evidence, cfg.k, item_tokens(m, wm), cfg.token_budget)
        ctx = context_tokens(m, wm)
        row = {"method": name, "qid": question_key(conv.id, q.id), "category": q.category, "items": items,
               "gold": q.evidence, "scores": sc.__dict__ if sc else None, "latency_ms": lat, "context_tokens": ctx}
        if lme and sc is not None:
            row["official"] = _official(items, q, conv)
        rows.append(row)
    m.release(conv.id)
    return rows


def run_benchmark(cfg: RetrievalBenchConfig, conversations: list[Conversation] | None = None,
                  resume: bool = False) -> dict[str, Any]:
    """Run every method on the selected questions; returns the summary (also written to the run folder)."""
    shard = parse_shard(cfg.shard, "shard") if cfg.shard else None
    if shard is not None:  # run <run_name>.shard-I-of-N: named, so that the shards can be found and merged
        if not cfg.run_name:
            raise ConfigError(f"shard {cfg.shard}: needs run_name=NAME (the shard's run is NAME{shard.suffix}; "
                              "`qgmem merge-runs` joins NAME.shard-*)")
        cfg.run_name = sharded_name(cfg.run_name, shard)
    run_dir, _ = open_run(cfg, resume=resume)
    with failure_recorded(run_dir):
        return _run(cfg, run_dir, conversations, shard)


def _run(cfg: RetrievalBenchConfig, run_dir: Path, conversations: list[Conversation] | None,
         shard: Shard | None) -> dict[str, Any]:
    from qgmem.store import MemoryStore

    lme = _is_longmemeval(cfg)
    selection = select(conversations if conversations is not None else load_benchmark(cfg), cfg.subset)
    if shard is not None:  # after the subset, so that the shards together score the unsharded run's questions
        selection = [(c, qs) for c, qs in selection if shard.holds(c.id)]
    store = MemoryStore(sharded_name(cfg.store_dir, shard) if cfg.store_dir else run_dir / "store")
    methods = make_run_methods(cfg, store)
    runner = {name: next(n for n, o in methods.items() if o is m) for name, m in methods.items()}  # first name of each object
    path = run_dir / RETRIEVAL_ROWS
    done = {(r["method"], r["qid"]): r for r in read_jsonl(path)}
    rows: dict[str, list[dict[str, Any]]] = {n: [] for n in methods}
    unmatched = 0
    for conv, qs in tqdm(selection, desc="conversations", unit="conv"):
        unmatched += sum(len(q.unmatched_evidence) for q in qs)
        for name, m in methods.items():
            if runner[name] != name:
                continue
            keys = [(name, question_key(conv.id, q.id)) for q in qs]
            rows[name].extend(done[k] for k in keys if k in done)
            todo = [q for q, k in zip(qs, keys) if k not in done]
            if todo:
                new = _score_conversation(name, m, conv, todo, cfg, lme)
                append_jsonl(path, new)
                rows[name].extend(new)
    summary = write_summary(cfg, run_dir, rows, runner, len(selection), unmatched)
    finish_run(run_dir)
    return summary


def _is_longmemeval(cfg: RetrievalBenchConfig) -> bool:
    return cfg.benchmark.lower().startswith("longmemeval")


def write_summary(cfg: RetrievalBenchConfig, run_dir: Path, rows: dict[str, list[dict[str, Any]]],
                  runner: dict[str, str], n_convs: int, unmatched: int) -> dict[str, Any]:
    """`summary.json` and `results.md` of a run from its rows (method that ran -> rows); `runner` maps
    each method name to the one that ran for it. Shared by a run and the merge of shard runs."""
    summary = _summarise(cfg, rows, runner, n_convs, unmatched, _is_longmemeval(cfg))
    atomic_write_json(run_dir / "summary.json", summary)
    atomic_write_text(run_dir / "results.md", _markdown(cfg, summary, _is_longmemeval(cfg)))
    return summary


def _summarise(cfg: RetrievalBenchConfig, rows: dict[str, list[dict[str, Any]]], runner: dict[str, str],
               n_convs: int, unmatched: int, lme: bool) -> dict[str, Any]:
    groups: dict[str, dict[str, Any]] = {}
    dev = set(cfg.dev_conversations)

    def add(group: str, pred) -> None:
        per = {}
        for name, first in runner.items():
            sel = [r for r in rows[first] if pred(r)]
            if sel:
                per[name + (f" (= {first})" if first != name else "")] = _score_rows(sel, cfg.k, lme)
        if per:
            groups[group] = per

    add("overall", lambda r: True)
    if dev:
        add("test (without dev conversations)", lambda r: r["qid"].split("/")[0] not in dev)
        add("dev conversations", lambda r: r["qid"].split("/")[0] in dev)
    for cat in sorted({r["category"] for rs in rows.values() for r in rs}):
        add(f"category {cat}", lambda r, c=cat: r["category"] == c)
    return {"task": "retrieval", "benchmark": cfg.benchmark, "run": cfg.run_name, "methods": list(cfg.methods),
            "k": cfg.k, "token_budget": cfg.token_budget, "token_count": TOKEN_DEFINITION,
            "conversations": n_convs, "unmatched_gold_ids": unmatched, "shard": cfg.shard,
            "same_as": {name: first for name, first in runner.items() if first != name}, "groups": groups}


def _markdown(cfg: RetrievalBenchConfig, summary: dict[str, Any], lme: bool) -> str:
    metrics = ["recall", "all_hit", "precision", "ndcg", "budget_recall", "latency_p50_ms", "latency_p95_ms",
               "context_tokens_mean"]
    md = (f"# Retrieval: {cfg.benchmark}\n\nk = {cfg.k}; budget recall at {cfg.token_budget} tokens "
          f"({TOKEN_DEFINITION} of each entry as the answer prompt shows it, for every method); "
          f"{summary['conversations']} conversations; questions without gold "
          f"evidence are not scored (column n counts scored questions); unmatched gold ids: "
          f"{summary['unmatched_gold_ids']}.\n")
    if cfg.shard:
        md += f"\n**Shard {cfg.shard} only** (its conversations; `qgmem merge-runs` joins the shards).\n"
    if cfg.retrieval.allow_partial:
        md += ("\n**allow_partial: memories whose build left windows unextracted were scored as they are** "
               "(see each store's build failures).\n")
    md += _table(summary, metrics)
    if lme:
        off = [f"{lv}_{m}@{kk}" for lv in ("session", "turn") for m in ("recall_any", "recall_all", "ndcg") for kk in (5, 10)]
        md += "\n## LongMemEval official metrics\n" + _table(summary, off)
    return md


def main(config_path: str, overrides: list[str], resume: bool = False) -> int:
    """Entry point for evaluate.py (task: retrieval)."""
    cfg = load_retrieval_config(config_path, overrides)
    summary = run_benchmark(cfg, resume=resume)
    run_dir = Path(cfg.output_dir) / cfg.benchmark / str(cfg.run_name)
    print((run_dir / "results.md").read_text())
    print(json.dumps({n: {m: round(v[m], 3) for m in ("recall", "ndcg", "budget_recall", "latency_p50_ms")}
                      for n, v in summary["groups"].get("overall", {}).items()}, indent=1))
    print(f"[evaluate] run: {run_dir}")
    return 0
