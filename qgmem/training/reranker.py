"""`qgmem train-reranker --config configs/rerank/<name>.yaml`: train the learned pool ranker.

Steps: collect the unreranked pipeline's pools for the training and dev questions (one file per
conversation under `work_dir`, reused by a rerun), fit the MLP for each width in `fit.hidden`, keep
the width and epoch with the best dev turn recall@k, write the ranker, `train_report.json` and a
model card into `out`. Use it with ``rerank: {kind: learned, model: <out>}``.
"""

from __future__ import annotations

import argparse
import platform
import shlex
import time
from dataclasses import asdict
from pathlib import Path

from qgmem.io import atomic_write_json, atomic_write_text
from qgmem.retrieve.ranker import WEIGHTS_FILE


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", required=True, help="YAML under configs/rerank/ (e.g. configs/rerank/pool_mlp.yaml)")
    p.add_argument("overrides", nargs="*", help="key=value overrides, e.g. fit.epochs=100 out=/tmp/ranker")


def model_card(report: dict[str, object]) -> str:
    """MODEL_CARD.md: what the ranker is, what it was trained and selected on, what it scored."""
    fit, data = report["fit"], report["data"]
    verdict = ("**The chosen model ranks the dev pools worse than the fusion order: it does not earn a place "
               "as a default reranker.**\n" if report["dev_recall"] < report["dev_fusion_recall"] else "")
    rows = "\n".join(f"| {name} | {d['questions']} | {d['with_evidence_in_pool']} |" for name, d in data.items())
    return f"""# Learned pool ranker ({Path(str(report['out'])).name})

A two-layer MLP (width {report['chosen_hidden']}) that reorders QGMem's fused 100-candidate pool from the pipeline's own
evidence: per-channel ranks and raw scores (BM25, MiniLM cosine of the unit and of its turn, attribute matches),
what the question constrains and what the unit is ({len(report['features'])} features, `qgmem/retrieve/features.py`).
Weights: `ranker.safetensors` ({report['weights_bytes']} bytes), numpy inference, no base model and no licence
beyond this repository's; its inputs come from the packaged all-MiniLM-L6-v2 (Apache-2.0).

Reproduce: `{report['command']}` (this run on {report['machine']}: {report['collect_seconds']:.0f} s
reading the data and the pools in `work_dir`, collecting what was missing, {report['fit_seconds']:.0f} s fitting; from nothing, collection is ~1 s a conversation).

## Data
| source | questions | with an evidence unit in the pool |
|---|---|---|
{rows}

Training labels: a candidate is positive when its span holds an evidence turn (LongMemEval: the turns marked as
holding the answer; MSC persona: the turn whose persona annotation is the query). The LongMemEval-S questions of the
benchmark's 100-question subset are excluded; the dev source (LoCoMo conv-26 / conv-30) only chose the width and epoch. Seed {fit['seed']}, Adam lr {fit['lr']}, weight decay {fit['weight_decay']}, full batch,
{report['chosen_epoch']} epochs (of {fit['epochs']}; widths tried {fit['hidden']}, the best on dev kept).

## Held-out metrics (turn recall@{report['k']} of the selected units, same pools)
| split | learned ranker | fusion order (no rerank) |
|---|---|---|
| dev (model selection) | {report['dev_recall']:.3f} | {report['dev_fusion_recall']:.3f} |
| train (fit) | {report['train_recall']:.3f} | {report['train_fusion_recall']:.3f} |

{verdict}
Benchmark numbers (LoCoMo test split, LongMemEval-S subset, latency): `bench/RESULTS.md`.
"""


def run(args: argparse.Namespace) -> int:
    from .ranker_fit import fit
    from .rerank_config import load_rerank_config
    from .rerank_pools import Pools, collect

    cfg = load_rerank_config(args.config, args.overrides)
    t0 = time.perf_counter()
    train = Pools.empty()
    data: dict[str, dict[str, int]] = {}
    for src in cfg.train:
        got = collect(cfg, src)
        data[f"train: {src.benchmark}"] = got.counts()
        train.extend(got)
    dev = collect(cfg, cfg.dev)
    data[f"dev: {cfg.dev.benchmark}"] = dev.counts()
    t_fit = time.perf_counter()
    info = {"config": args.config, "train": [asdict(s) for s in cfg.train], "dev": asdict(cfg.dev)}
    res = fit(train, dev, cfg.fit, cfg.k, info)
    out = Path(cfg.out)
    res.ranker.spec.info.update(hidden=res.hidden, epoch=res.epoch, dev_recall=res.dev_recall)
    res.ranker.save(out)
    command = " ".join([f"qgmem train-reranker --config {args.config}", *(shlex.quote(o) for o in args.overrides)])
    report = {"out": str(out), "config": args.config, "command": command,
              "features": list(res.ranker.spec.features), "k": cfg.k,
              "fit": asdict(cfg.fit), "data": data, "chosen_hidden": res.hidden, "chosen_epoch": res.epoch,
              "dev_recall": res.dev_recall, "dev_fusion_recall": res.dev_fusion_recall,
              "train_recall": res.train_recall, "train_fusion_recall": res.train_fusion_recall,
              "weights_bytes": (out / WEIGHTS_FILE).stat().st_size, "curve": res.curve,
              "collect_seconds": t_fit - t0, "fit_seconds": time.perf_counter() - t_fit,
              "machine": f"{platform.machine()}, {platform.system()}"}
    atomic_write_json(out / "train_report.json", report)
    atomic_write_text(out / "MODEL_CARD.md", model_card(report))
    print(f"[train-reranker] width {res.hidden}, epoch {res.epoch}: dev turn recall@{cfg.k} {res.dev_recall:.3f} "
          f"(fusion order {res.dev_fusion_recall:.3f}); wrote {out}")
    return 0
