"""Retrieval runs: `python evaluate.py --config configs/eval/locomo_retrieval_cpu.yaml` (task: retrieval).

Builds (or loads from the store) each conversation's memory, activates every selected question for
each method (the QGMem activation pipeline, its ablations, BM25 and dense over raw turns, AnchorMem;
all from `qgmem.methods`), and writes `summary.json` + `results.md` with Recall@k, all-hit@k,
Precision@k, binary nDCG@k, recall at a retrieved-context token budget and p50/p95 latency, per
category and overall (definitions in `qgmem.evaluation.retrieval_metrics`). LongMemEval is scored
under its official protocol first (`protocol: official`, `qgmem.evaluation.lme_official`: user turns as
corpus, ``noans`` renaming, its skips, recall_any/recall_all/ndcg_any at 1..50 on turns and sessions),
then over all turns (`protocol: all-turns`: every turn a document and gold of any role; its
recall_any/recall_all/nDCG at 5 and 10 beside the tables above). Run folder, subset,
resume rule and question key are the QA harness's (`qgmem.evaluation.runs`): rows go to
`retrieval.jsonl` as they are produced, so a killed run resumes where it stopped. Questions without
gold evidence are counted, not scored; so are gold ids that name no turn. `shard: I/N` scores one
shard of the conversations (`qgmem.sharding`); `qgmem merge-runs` joins the shard runs; `workers: N`
runs N shards as local processes and writes their merge as the run (`qgmem.evaluation.workers`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from qgmem.answer import context_tokens, item_tokens
from qgmem.config import ConfigError, apply_overrides, from_dict, read_yaml
from qgmem.evaluation import lme_official
from qgmem.evaluation import retrieval_metrics as rm
from qgmem.evaluation.config import MOVED, RetrievalBenchConfig
from qgmem.evaluation.runs import META, RETRIEVAL_ROWS, failure_recorded, finish_run, open_run, question_key, read_meta
from qgmem.evaluation.retrieval_summary import is_longmemeval, write_summary
from qgmem.evaluation.subset import load_benchmark, select
from qgmem.io import append_jsonl, atomic_write_json, read_jsonl
from qgmem.methods import MethodContext, make_methods
from qgmem.sharding import Shard, parse_shard, sharded_name
from qgmem.types import Conversation, MemoryMethod, Question

__all__ = ["RetrievalBenchConfig", "load_retrieval_config", "make_run_methods", "run_benchmark", "main"]


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


def _all_turns_lme(items: list[list[str]], q: Question, conv: Conversation) -> dict[str, float]:
    """LongMemEval's metric formulas over all turns (protocol all-turns): every turn a document, gold = the
    turns marked has_answer whatever their role, gold sessions = answer_session_ids."""
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


def _official_row(m: MemoryMethod, q: Question, conv: Conversation, cfg: RetrievalBenchConfig) -> dict[str, Any]:
    """The official protocol's entry of a row: its metrics, or why the official means leave the question out.
    The method is asked for a ranking as deep as `official_depth` (0: the conversation's turn count)."""
    corpus = lme_official.corpus(conv, q)
    if corpus.skip is not None:
        return {"skip": corpus.skip}
    depth = cfg.official_depth or sum(len(s.turns) for s in conv.sessions)
    ranks = getattr(m, "ranks", "turns")
    wm = m.activate(q, max(depth, cfg.k))
    ranked = lme_official.session_ranking(wm.items, corpus) if ranks == "sessions" else \
        lme_official.turn_ranking(wm.items, corpus)
    return {"metrics": lme_official.score(wm.items, corpus, ranks), "ranks": ranks, "ranked": len(ranked),
            "corpus": len(corpus.session_ids if ranks == "sessions" else corpus.turn_ids)}


def _score_conversation(name: str, m: MemoryMethod, conv: Conversation, todo: list[Question],
                        cfg: RetrievalBenchConfig, lme: bool) -> list[dict[str, Any]]:
    """Build `conv` into `m`, activate and score each question; one row per question. Context tokens and
    budget costs are the memory text as the answer prompt shows it, one counter for every method. Under
    the official protocol a second, deep activation gives the official ranking; the first (k items) gives
    the all-turns scores, latency and context tokens, as without it."""
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
            row["lme_all_turns"] = _all_turns_lme(items, q, conv)
        if lme and cfg.protocol == "official":
            row["lme_official"] = _official_row(m, q, conv, cfg)
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
        if cfg.workers > 1 and shard is None:
            if conversations is not None:
                raise ConfigError("workers > 1 reads the benchmark in each worker; pass no conversations")
            return _merge_workers(cfg, run_dir)
        return _run(cfg, run_dir, conversations, shard)


def _merge_workers(cfg: RetrievalBenchConfig, run_dir: Path) -> dict[str, Any]:
    """Run the shards in `cfg.workers` processes, then write their merge as this run."""
    from qgmem.evaluation.merge_runs import collect_shards, merged_from, write_merged
    from qgmem.evaluation.workers import run_workers

    got = collect_shards(run_workers(cfg, run_dir, _shard_worker))
    summary = write_merged(run_dir, cfg, got)
    meta = read_meta(run_dir)
    atomic_write_json(run_dir / META, {**meta, "merged_from": merged_from(got)})
    finish_run(run_dir)
    return summary


def _shard_worker(cfg_dict: dict[str, Any], threads: int) -> None:
    """A worker process of `_merge_workers`: one shard run (resumed if it exists)."""
    from qgmem.evaluation.workers import limit_threads

    limit_threads(threads)
    run_benchmark(from_dict(RetrievalBenchConfig, cfg_dict, "worker config"), resume=True)


def _run(cfg: RetrievalBenchConfig, run_dir: Path, conversations: list[Conversation] | None,
         shard: Shard | None) -> dict[str, Any]:
    from qgmem.store import MemoryStore

    lme = is_longmemeval(cfg)
    selection = select(conversations if conversations is not None else load_benchmark(cfg), cfg.subset)
    if shard is not None:  # after the subset, so that the shards together score the unsharded run's questions
        selection = selection[shard.index::shard.count] if cfg.shard_by == "position" else \
            [(c, qs) for c, qs in selection if shard.holds(c.id)]
    store = MemoryStore(sharded_name(cfg.store_dir, shard) if cfg.store_dir else run_dir / "store")
    methods = make_run_methods(cfg, store)
    runner = {name: next(n for n, o in methods.items() if o is m) for name, m in methods.items()}  # first name of each object
    path = run_dir / RETRIEVAL_ROWS
    done = {(r["method"], r["qid"]): r for r in read_jsonl(path)}
    rows: dict[str, list[dict[str, Any]]] = {n: [] for n in methods}
    unmatched = 0
    bar = {"desc": f"shard {shard}", "position": shard.index} if shard is not None else {"desc": "conversations"}
    for conv, qs in tqdm(selection, unit="conv", **bar):
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
