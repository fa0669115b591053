"""Summary, Markdown report and plots, recomputed from a run folder's JSONL files.

Everything reported is derived from ``predictions.jsonl`` and ``builds.jsonl`` only, so the summary
of a resumed run equals that of an uninterrupted one. LoCoMo category 5 (adversarial) is scored
as abstention and reported on its own line, never averaged into the categories 1-4 "overall".
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from qgmem.answer import TOKEN_DEFINITION
from qgmem.evaluation.bootstrap import bootstrap_ci
from qgmem.evaluation.config import EvalConfig
from qgmem.evaluation.judge import repeated_accuracy
from qgmem.evaluation.metrics import LOCOMO_CATEGORY_NAMES
from qgmem.evaluation.runs import BUILDS, PREDICTIONS
from qgmem.io import atomic_write_json, atomic_write_text, read_jsonl

F1_DEFINITION = ("f1_locomo = official LoCoMo task_eval/evaluation.py F1 (normalised, Porter-stemmed token bag; "
                 "cat 1 comma-split multi-answer, cat 3 gold cut at ';', cat 5 abstention phrases); "
                 "f1_squad = SQuAD-style token F1 (no stemming); bleu1 = nltk BLEU-1, smoothing method1")
CONTEXT_TOKENS_DEFINITION = (f"context_tokens = {TOKEN_DEFINITION} of the memory text shown to the answer model, "
                             "one counter for every method; budget recall charges each entry the same way")
RETRIEVAL_KEYS = ("recall", "all_hit", "precision", "ndcg", "budget_recall")


def _cat_label(benchmark: str, cat: str) -> str:
    if benchmark == "locomo" and cat in LOCOMO_CATEGORY_NAMES:
        return f"{cat} {LOCOMO_CATEGORY_NAMES[cat]}"
    return cat


def _cat_key(c: str) -> tuple[int, str]:
    return (0, f"{int(c):06d}") if c.isdigit() else (1, c)


def _block(recs: list[dict[str, Any]], cfg: EvalConfig) -> dict[str, Any]:
    """Scores of one group of per-question records, each with a bootstrap CI."""
    seed, B = cfg.seed, cfg.bootstrap_resamples
    out: dict[str, Any] = {"n": len(recs)}
    ok = [r for r in recs if r.get("answer_error") is None]
    out["answer_failed"] = len(recs) - len(ok)
    for key in ("f1_locomo", "f1_squad", "bleu1"):
        vals = [r["scores"][key] for r in recs if key in r["scores"]]
        if vals:
            out[key] = bootstrap_ci(vals, B, seed).as_dict()
    if any("judge" in r for r in recs):
        runs = [r["judge"]["runs"] for r in recs if "judge" in r]
        scored = [r["judge"]["score"] for r in recs if "judge" in r and r["judge"]["score"] is not None]
        j = repeated_accuracy(runs)
        j["ci"] = bootstrap_ci(scored, B, seed).as_dict()
        out["judge"] = j
    cov = [r["coverage"]["score"] for r in recs if r.get("coverage") and r["coverage"]["score"] is not None]
    if cov:
        out["coverage"] = bootstrap_ci(cov, B, seed).as_dict()
        out["coverage"]["failed_facts"] = sum(r["coverage"]["failed"] for r in recs if r.get("coverage"))
    ret = [r["retrieval"] for r in recs if r.get("retrieval")]
    if ret:
        out["retrieval"] = {k: sum(x[k] for x in ret) / len(ret) for k in RETRIEVAL_KEYS}
        out["retrieval"]["n"] = len(ret)
    out["retrieval_no_gold"] = sum(1 for r in recs if not r.get("retrieval"))
    return out


def _costs(recs: list[dict[str, Any]], builds: list[dict[str, Any]]) -> dict[str, Any]:
    phases: dict[str, dict[str, Any]] = {}
    for r in list(builds) + list(recs):
        for phase, d in (r.get("usage") or {}).items():
            tgt = phases.setdefault(phase, {})
            for k, v in d.items():
                tgt[k] = tgt.get(k, 0) + v
    phases = {ph: {k: round(v, 3) for k, v in d.items()} for ph, d in phases.items()}  # judge shares are fractional
    n = max(len(recs), 1)
    ctx = [r["context_tokens"] for r in recs]
    return {
        "llm": phases,
        "construction_seconds": sum(b["seconds"] for b in builds),
        "builds": len(builds),
        "retrieval_seconds_mean": sum(r["retrieval_seconds"] for r in recs) / n,
        "generation_seconds_mean": sum(r["generation_seconds"] for r in recs) / n,
        "context_tokens_mean": sum(ctx) / n,
        "context_tokens_max": max(ctx) if ctx else 0,
        "truncated_questions": sum(1 for r in recs if r.get("truncated")),
    }


def summarize(run_dir: Path, cfg: EvalConfig) -> dict[str, Any]:
    recs = list(read_jsonl(run_dir / PREDICTIONS))
    builds = list(read_jsonl(run_dir / BUILDS))
    out: dict[str, Any] = {
        "benchmark": cfg.benchmark, "run": str(run_dir), "k": cfg.k,
        "f1_definition": F1_DEFINITION, "context_tokens_definition": CONTEXT_TOKENS_DEFINITION,
        "judge": ({"enabled": True, "model": cfg.judge.llm.model, "backend": cfg.judge.llm.backend,
                   "repeats": cfg.judge.repeats, "temperature": 0.0} if cfg.judge.enabled else
                  {"enabled": False, "note": "judge off: F1/BLEU only"}),
        "coverage": {"enabled": cfg.coverage.enabled, "method": cfg.coverage.method},
        "bootstrap": {"resamples": cfg.bootstrap_resamples, "seed": cfg.seed, "level": 0.95},
        "answer_model": {"backend": cfg.answer.llm.backend, "model": cfg.answer.llm.model},
        "methods": {},
    }
    for name in cfg.methods:
        mrecs = [r for r in recs if r["method"] == name]
        if not mrecs:
            continue
        mbuilds = [b for b in builds if b["method"] == name]
        cats = sorted({r["category"] for r in mrecs}, key=_cat_key)
        m: dict[str, Any] = {"categories": {c: _block([r for r in mrecs if r["category"] == c], cfg) for c in cats}}
        answered = [r for r in mrecs if r["scores"].get("scoring") == "answer"]
        abst = [r for r in mrecs if r["scores"].get("scoring") == "abstention"]
        m["overall"] = _block(answered, cfg)
        if abst:
            m["abstention"] = _block(abst, cfg)
        m["costs"] = _costs(mrecs, mbuilds)
        out["methods"][name] = m
    return out


def _fmt_ci(d: dict[str, Any] | None, scale: float = 100.0) -> str:
    if not d or d.get("n", 0) == 0 or math.isnan(d["mean"]):
        return "-"
    return f"{d['mean'] * scale:.2f} [{d['low'] * scale:.1f}, {d['high'] * scale:.1f}]"


def _fmt_judge(j: dict[str, Any] | None) -> str:
    if not j or math.isnan(j.get("mean", float("nan"))):
        return "-"
    s = f"{j['mean'] * 100:.2f} ± {j['std'] * 100:.2f}"
    if j.get("failed_judgements"):
        s += f" ({j['failed_judgements']} FAILED)"
    return s


def score_table(summary: dict[str, Any]) -> str:
    """The main table: one row per method x category (+ overall, + abstention line)."""
    bench = summary["benchmark"]
    judge_on = summary["judge"]["enabled"]
    head = ["method", "category", "n", "F1 (official LoCoMo)", "F1 (SQuAD)", "BLEU-1"]
    if judge_on:
        head += ["judge mean ± std (n runs)", "judge 95% CI"]
    if summary["coverage"]["enabled"]:
        head += [f"coverage ({summary['coverage']['method']})"]
    head += ["R@k", "nDCG@k"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, m in summary["methods"].items():
        rows = [(_cat_label(bench, c), b) for c, b in m["categories"].items() if not (bench == "locomo" and c == "5")]
        rows.append(("**overall" + (" (1-4)**" if bench == "locomo" else "**"), m["overall"]))
        if "abstention" in m:
            rows.append(("5 adversarial (abstention accuracy)" if bench == "locomo" else "abstention", m["abstention"]))
        for label, b in rows:
            cells = [name, label, str(b["n"]), _fmt_ci(b.get("f1_locomo")), _fmt_ci(b.get("f1_squad")),
                     _fmt_ci(b.get("bleu1"))]
            if judge_on:
                cells += [_fmt_judge(b.get("judge")), _fmt_ci((b.get("judge") or {}).get("ci"))]
            if summary["coverage"]["enabled"]:
                cells += [_fmt_ci(b.get("coverage"))]
            ret = b.get("retrieval")
            cells += [f"{ret['recall'] * 100:.1f}" if ret else "-", f"{ret['ndcg'] * 100:.1f}" if ret else "-"]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def cost_table(summary: dict[str, Any]) -> str:
    head = ["method", "phase", "LLM calls", "failed", "cached", "prompt tok", "completion tok", "seconds"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, m in summary["methods"].items():
        for phase in ("construction", "retrieval", "generation", "judge"):
            d = m["costs"]["llm"].get(phase, {})
            n = {k: int(round(d.get(k, 0))) for k in ("calls", "failed", "cached", "prompt_tokens", "completion_tokens")}
            lines.append(f"| {name} | {phase} | {n['calls']} | {n['failed']} | {n['cached']} | "
                         f"{n['prompt_tokens']} | {n['completion_tokens']} | {d.get('seconds', 0.0):.1f} |")
    lines.append("")
    lines.append("| method | build seconds (all convs) | retrieval s/question | generation s/question | "
                 "context tokens/question (mean, max) | truncated questions |")
    lines.append("|---|---|---|---|---|---|")
    for name, m in summary["methods"].items():
        c = m["costs"]
        lines.append(f"| {name} | {c['construction_seconds']:.1f} | {c['retrieval_seconds_mean']:.3f} | "
                     f"{c['generation_seconds_mean']:.2f} | {c['context_tokens_mean']:.0f}, {c['context_tokens_max']} | "
                     f"{c['truncated_questions']} |")
    return "\n".join(lines)


def render_report(summary: dict[str, Any], cfg: EvalConfig, command: str | None = None) -> str:
    j = summary["judge"]
    judge_line = (f"LLM judge: {j['backend']}:{j['model']}, temperature 0, {j['repeats']} run(s) per question, "
                  "mean ± std over runs; FAILED judgements are excluded from the mean and counted."
                  if j["enabled"] else "LLM judge: **off** in this run, so only F1 and BLEU-1 are reported (the CPU "
                                       "default has no capable judge: SmolLM2-135M is no judge; set judge.enabled "
                                       "with an API or vLLM model).")
    parts = [
        f"# Evaluation: {summary['benchmark']} ({', '.join(summary['methods'])})",
        "",
        f"Run folder: `{summary['run']}`  ",
        f"Answer model: {summary['answer_model']['backend']}:{summary['answer_model']['model']}; k = {summary['k']}  ",
        (f"Command: `{command}`  " if command else ""),
        f"Metrics: {summary['f1_definition']}.  ",
        judge_line + "  ",
        f"95% CIs: percentile bootstrap, {summary['bootstrap']['resamples']} resamples, seed {summary['bootstrap']['seed']}."
        + ("  LoCoMo category 5 is scored as abstention (official rule: the answer says 'not mentioned' or "
           "'no information available') and kept out of the overall." if summary["benchmark"] == "locomo" else ""),
        "",
        "## Scores (percent)",
        "",
        score_table(summary),
        "",
        "## Costs",
        "",
        f"{summary['context_tokens_definition']}.",
        "",
        cost_table(summary),
        "",
        "## Plots",
        "",
        "![accuracy per category](plots/accuracy_per_category.png)",
        "",
        "![cost vs accuracy](plots/cost_vs_accuracy.png)",
        "",
    ]
    fails = {n: m["overall"]["answer_failed"] + m.get("abstention", {}).get("answer_failed", 0)
             for n, m in summary["methods"].items()}
    if any(fails.values()):
        parts.insert(-6, "Failed answer calls (empty prediction, scored 0): " +
                     ", ".join(f"{n}: {v}" for n, v in fails.items()) + "\n")
    trunc = {n: m["costs"]["truncated_questions"] for n, m in summary["methods"].items() if m["costs"]["truncated_questions"]}
    if trunc:
        parts.insert(-6, "Memory text cut to the context budget (full-context: oldest turns dropped; others: "
                     "`answer.max_context_tokens`) for: " +
                     ", ".join(f"{n} ({v} questions)" for n, v in trunc.items()) + "\n")
    return "\n".join(p for p in parts if p is not None)


def write_outputs(run_dir: Path, cfg: EvalConfig, command: str | None = None) -> dict[str, Any]:
    """summary.json, report.md and plots/ for a run folder; returns the summary."""
    from qgmem.evaluation.plots import plot_accuracy, plot_cost_vs_accuracy

    summary = summarize(run_dir, cfg)
    atomic_write_json(run_dir / "summary.json", summary)
    plot_accuracy(summary, run_dir / "plots" / "accuracy_per_category.png")
    plot_cost_vs_accuracy(summary, run_dir / "plots" / "cost_vs_accuracy.png")
    atomic_write_text(run_dir / "report.md", render_report(summary, cfg, command))
    return summary


def scores_only(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary without timings and paths (what must not change when a run is resumed)."""
    s = json.loads(json.dumps(summary))
    s.pop("run", None)
    for m in s["methods"].values():
        c = m["costs"]
        for k in ("construction_seconds", "retrieval_seconds_mean", "generation_seconds_mean", "builds"):
            c.pop(k, None)
        c["llm"].pop("construction", None)  # a resumed run rebuilds conversations with unfinished questions
        for d in c["llm"].values():
            d.pop("seconds", None)
    return s
