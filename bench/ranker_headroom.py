"""How much can any ranker over the pool features gain, even trained on the same benchmark?

    qgmem train-reranker --config configs/rerank/pool_mlp.yaml    # collects the pools this script reads
    python bench/ranker_headroom.py [--config configs/rerank/pool_mlp.yaml] [--sources dev train0 train1]
                                    [--tradeoff train0]

A diagnostic, never a model selection: for each source's collected pools (the LoCoMo dev conversations,
each training source), the conversations are split in two seeded halves; the learned ranker
(`qgmem.training.ranker_fit.fit`, the shipped recipe) is fitted on one half and scored on the other,
both ways. Its width and epoch are chosen on the scored half itself, so the gain printed is an upper
bound of what the features carry within one benchmark. If even that is small, no reweighting of the
pipeline's own evidence can close the gap to the issue's target: a stronger relevance signal must.

`--tradeoff trainI` fits on one half of that training source and follows, epoch by epoch, the other
half and the LoCoMo dev pools (one seeded full-batch run scored twice): whether what the ranker learns
on one benchmark carries to the other.
"""

from __future__ import annotations

import argparse
import random
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from qgmem.training.rerank_config import PoolSource, RerankTrainConfig
    from qgmem.training.rerank_pools import Pools


def _halves(pools: Pools, seed: int) -> tuple[Pools, Pools]:
    """The questions of a seeded half of the conversations, and the rest (a conversation is never split)."""
    conv = [q.rsplit("/", 1)[0] for q in pools.qids]
    names = sorted(set(conv))
    random.Random(seed).shuffle(names)
    first = set(names[: len(names) // 2])
    return (pools.take([i for i, c in enumerate(conv) if c in first]),
            pools.take([i for i, c in enumerate(conv) if c not in first]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="configs/rerank/pool_mlp.yaml")
    ap.add_argument("--sources", nargs="+", default=["dev", "train0", "train1"],
                    help="dev, or trainI for the config's I-th training source")
    ap.add_argument("--hidden", type=int, nargs="+", default=[16])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tradeoff", default="", help="trainI: follow its held-out half and the dev pools per epoch")
    args = ap.parse_args()

    from qgmem.training.ranker_fit import fit
    from qgmem.training.rerank_config import load_rerank_config
    from qgmem.training.rerank_pools import collect

    cfg = load_rerank_config(args.config, [f"fit.hidden={args.hidden}"])
    rows = []
    for name in args.sources:
        src = cfg.dev if name == "dev" else cfg.train[int(name.removeprefix("train"))]
        a, b = _halves(collect(cfg, src), args.seed)
        for fit_on, score_on, label in ((a, b, "A -> B"), (b, a, "B -> A")):
            res = fit(fit_on, score_on, cfg.fit, cfg.k, {})
            rows.append((f"{src.benchmark} {label}", len(fit_on.qids), len(score_on.qids), res.dev_fusion_recall,
                         res.dev_recall, res.hidden, res.epoch))
    print(f"\nturn recall@{cfg.k} of the scored half (width and epoch chosen on it: an upper bound)\n")
    print("| source, fit -> scored | fit questions | scored questions | fusion order | best ranker | gain | width, epoch |")
    print("|---|---|---|---|---|---|---|")
    for label, nf, ns, fus, best, hidden, epoch in rows:
        print(f"| {label} | {nf} | {ns} | {fus:.3f} | {best:.3f} | {best - fus:+.3f} | {hidden}, {epoch} |")
    if args.tradeoff:
        _tradeoff(cfg, cfg.train[int(args.tradeoff.removeprefix("train"))], args.seed)


def _tradeoff(cfg: RerankTrainConfig, src: PoolSource, seed: int) -> None:
    from qgmem.training.ranker_fit import fit
    from qgmem.training.rerank_pools import collect

    a, b = _halves(collect(cfg, src), seed)
    dev = collect(cfg, cfg.dev)
    held, other = fit(a, b, cfg.fit, cfg.k, {}), fit(a, dev, cfg.fit, cfg.k, {})  # the same seeded run
    print(f"\nfitted on half A of {src.benchmark} ({len(a.qids)} questions); turn recall@{cfg.k}, epoch by epoch\n")
    print(f"| width | epoch | {src.benchmark} half B | {cfg.dev.benchmark} dev |")
    print("|---|---|---|---|")
    print(f"| fusion order | | {held.dev_fusion_recall:.3f} | {other.dev_fusion_recall:.3f} |")
    for h, o in zip(held.curve, other.curve):
        print(f"| {h['hidden']} | {h['epoch']} | {h['dev_recall']:.3f} | {o['dev_recall']:.3f} |")


if __name__ == "__main__":
    main()
