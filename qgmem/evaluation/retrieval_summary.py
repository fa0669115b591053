"""Summary and report of a retrieval run from its rows: `summary.json` and `results.md`.

Every figure is a function of the per-question rows plus two counts that add up over shards, so a
run, a resumed run and the merge of shard runs (`qgmem merge-runs`, `workers: N`) share this code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qgmem.answer import TOKEN_DEFINITION
from qgmem.evaluation import lme_official
from qgmem.evaluation import retrieval_metrics as rm
from qgmem.evaluation.config import RetrievalBenchConfig
from qgmem.io import atomic_write_json, atomic_write_text


OFFICIAL = "official_"  # summary keys of the official protocol's means (`qgmem.evaluation.lme_official`)
ALL_TURNS = "all_turns_"  # summary keys of LongMemEval's formulas over all turns (protocol all-turns)


def plot_metrics(cfg: RetrievalBenchConfig) -> list[str]:
    """What the per-category plot shows: LongMemEval's headline metrics under the run's protocol, else
    Recall@k and nDCG@k over evidence turns."""
    if not is_longmemeval(cfg):
        return ["recall", "ndcg"]
    prefix = OFFICIAL if cfg.protocol == "official" else ALL_TURNS
    return [prefix + "session_recall_all@5", prefix + "turn_recall_all@10"]


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
        for key in sorted({kk for r in scored for kk in r.get("lme_all_turns", {})}):
            out[ALL_TURNS + key] = rm.mean([r["lme_all_turns"][key] for r in scored if key in r.get("lme_all_turns", {})])
        out.update(_official_means([r["lme_official"] for r in rows if "lme_official" in r]))
    return out


def _official_means(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Means of the official protocol over the questions it scores, with the skipped ones counted by reason."""
    if not entries:
        return {}
    scored = [e for e in entries if "metrics" in e]
    out: dict[str, Any] = {OFFICIAL + "scored": len(scored),
                           OFFICIAL + "skipped_abstention": sum(e.get("skip") == lme_official.SKIP_ABSTENTION for e in entries),
                           OFFICIAL + "skipped_no_user_target":
                               sum(e.get("skip") == lme_official.SKIP_NO_USER_TARGET for e in entries)}
    for key in sorted({kk for e in scored for kk in e["metrics"]}):
        out[OFFICIAL + key] = rm.mean([e["metrics"][key] for e in scored if key in e["metrics"]])
    return out


def _cell(s: dict[str, Any], m: str) -> str:
    v = s.get(m)
    if isinstance(v, float):
        return f"{v:.1f}" if "latency" in m or "tokens" in m else f"{v:.3f}"
    return "" if v is None else str(v)


def _table(summary: dict[str, Any], metrics: list[str], n_key: str = "scored", prefix: str = "", title: str = "") -> str:
    """One table per group, headed `title` + group; columns are `metrics` (summary keys, shown without
    `prefix`), n is `n_key`. Methods with none of the metrics (e.g. turn metrics of a method that ranks
    sessions) have no row, groups without rows no table."""
    lines = []
    for group, per_method in summary["groups"].items():
        shown = {name: s for name, s in per_method.items() if any(m in s for m in metrics)}
        if not shown:
            continue
        lines.append(f"\n### {title}{group}\n")
        lines.append("| method | n | " + " | ".join(m.removeprefix(prefix) for m in metrics) + " |")
        lines.append("|---|---|" + "---|" * len(metrics))
        for name, s in shown.items():
            lines.append(f"| {name} | {s.get(n_key, '')} | " + " | ".join(_cell(s, m)
                                                                       for m in metrics) + " |")
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
        plot_retrieval(summary, plot_metrics(cfg), run_dir / "per_category.png")
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
            "k": cfg.k, "token_budget": cfg.token_budget, "token_count": TOKEN_DEFINITION, "protocol": cfg.protocol,
            "conversations": n_convs, "unmatched_gold_ids": unmatched, "shard": cfg.shard,
            "same_as": {name: first for name, first in runner.items() if first != name}, "groups": groups}


def _markdown(cfg: RetrievalBenchConfig, summary: dict[str, Any], lme: bool) -> str:
    metrics = ["recall", "all_hit", "precision", "ndcg", "budget_recall", "latency_p50_ms", "latency_p95_ms",
               "context_tokens_mean"]
    md = f"# Retrieval: {cfg.benchmark}\n"
    if cfg.shard:
        md += f"\n**Shard {cfg.shard} only** (its conversations; `qgmem merge-runs` joins the shards).\n"
    if cfg.retrieval.allow_partial:
        md += ("\n**allow_partial: memories whose build left windows unextracted were scored as they are** "
               "(see each store's build failures).\n")
    if lme and cfg.protocol == "official":
        md += _official_markdown(summary)
    md += (f"\n## {'All-turns protocol' if lme else 'Evidence turns'}\n\n"
           f"{'Every turn of any role is a document and every turn marked has_answer is gold. ' if lme else ''}"
           f"k = {cfg.k}; budget recall at {cfg.token_budget} tokens "
           f"({TOKEN_DEFINITION} of each entry as the answer prompt shows it, for every method); "
           f"{summary['conversations']} conversations; questions without gold evidence "
           f"{'(and LongMemEval abstention questions) ' if lme else ''}"
           f"are not scored (column n counts scored questions); unmatched gold ids: "
           f"{summary['unmatched_gold_ids']}.\n")
    md += _table(summary, metrics)
    if lme:
        off = [f"{ALL_TURNS}{lv}_{m}@{kk}" for lv in ("session", "turn") for m in ("recall_any", "recall_all", "ndcg")
               for kk in (5, 10)]
        md += ("\nLongMemEval's metric formulas over all turns (gold sessions: answer_session_ids):\n"
               + _table(summary, off, prefix=ALL_TURNS, title="all-turns, LongMemEval metrics: "))
    return md


def _official_markdown(summary: dict[str, Any]) -> str:
    """The official protocol's tables: sessions, then turns (methods that rank sessions have no turn row)."""
    overall = next(iter(summary["groups"].get("overall", {}).values()), {})
    md = ("\n## LongMemEval official protocol\n\nAs LongMemEval's `src/retrieval/run_retrieval.py` "
          "(`qgmem.evaluation.lme_official`): the user turns are the corpus, gold = user turns marked has_answer "
          "(an evidence session's other user turns are renamed `noans`, not gold), session metrics from the turn "
          "ranking as `evaluate_retrieval_turn2session` (from the session ranking for methods that rank sessions); "
          f"left out: {overall.get(OFFICIAL + 'skipped_abstention', 0)} abstention questions and "
          f"{overall.get(OFFICIAL + 'skipped_no_user_target', 0)} with no user-side target "
          "(column n counts the scored questions).\n")
    for level in ("session", "turn"):
        cols = [OFFICIAL + c for c in lme_official.metric_names(level)]
        md += _table(summary, cols, n_key=OFFICIAL + "scored", prefix=OFFICIAL, title=f"official, {level} level: ")
    return md
