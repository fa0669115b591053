"""Summary and report of a retrieval run from its rows: `summary.json` and `results.md`.

Every figure is a function of the per-question rows plus two counts that add up over shards, so a
run, a resumed run and the merge of shard runs (`qgmem merge-runs`, `workers: N`) share this code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qgmem.answer import TOKEN_DEFINITION
from qgmem.evaluation import retrieval_metrics as rm
from qgmem.evaluation.config import RetrievalBenchConfig
from qgmem.io import atomic_write_json, atomic_write_text


# what the per-category plot shows: LongMemEval's headline official metrics, else Recall@k over evidence turns
PLOT_METRICS = {True: ["session_recall_all@5", "turn_recall_all@10"], False: ["recall", "ndcg"]}


def is_longmemeval(cfg: RetrievalBenchConfig) -> bool:
    return cfg.benchmark.lower().startswith("longmemeval")


def abstention(row: dict[str, Any], longmemeval: bool) -> bool:
    """LongMemEval's abstention questions (ids ending "_abs"): its official retrieval evaluation leaves them
    out, even those whose haystack marks evidence turns, and so do we (counted apart)."""
    return longmemeval and row["qid"].endswith("_abs")


def _score_rows(rows: list[dict[str, Any]], k: int, longmemeval: bool) -> dict[str, Any]:
    scored = [r for r in rows if r["scores"] is not None and not abstention(r, longmemeval)]
    out: dict[str, Any] = {"questions": len(rows), "scored": len(scored),
                           "no_gold": sum(r["scores"] is None for r in rows)}
    if longmemeval:
        out["abstention"] = sum(abstention(r, longmemeval) for r in rows)
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


def write_summary(cfg: RetrievalBenchConfig, run_dir: Path, rows: dict[str, list[dict[str, Any]]],
                  runner: dict[str, str], n_convs: int, unmatched: int) -> dict[str, Any]:
    """`summary.json` and `results.md` of a run from its rows (method that ran -> rows); `runner` maps
    each method name to the one that ran for it. Shared by a run and the merge of shard runs."""
    from qgmem.evaluation.plots import plot_retrieval

    summary = _summarise(cfg, rows, runner, n_convs, unmatched, is_longmemeval(cfg))
    atomic_write_json(run_dir / "summary.json", summary)
    atomic_write_text(run_dir / "results.md", _markdown(cfg, summary, is_longmemeval(cfg)))
    if summary["groups"]:
        plot_retrieval(summary, PLOT_METRICS[is_longmemeval(cfg)], run_dir / "per_category.png")
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
    if lme:
        add("abstention questions (not scored)", lambda r: abstention(r, lme))
    return {"task": "retrieval", "benchmark": cfg.benchmark, "run": cfg.run_name, "methods": list(cfg.methods),
            "k": cfg.k, "token_budget": cfg.token_budget, "token_count": TOKEN_DEFINITION,
            "conversations": n_convs, "unmatched_gold_ids": unmatched, "shard": cfg.shard,
            "same_as": {name: first for name, first in runner.items() if first != name}, "groups": groups}


def _markdown(cfg: RetrievalBenchConfig, summary: dict[str, Any], lme: bool) -> str:
    metrics = ["recall", "all_hit", "precision", "ndcg", "budget_recall", "latency_p50_ms", "latency_p95_ms",
               "context_tokens_mean"]
    md = (f"# Retrieval: {cfg.benchmark}\n\nk = {cfg.k}; budget recall at {cfg.token_budget} tokens "
          f"({TOKEN_DEFINITION} of each entry as the answer prompt shows it, for every method); "
          f"{summary['conversations']} conversations; questions without gold evidence "
          f"{'(and LongMemEval abstention questions) ' if lme else ''}"
          f"are not scored (column n counts scored questions); unmatched gold ids: "
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
