"""Does a MiniLM cross-encoder trained here reorder the pool better than RRF? Measured on LoCoMo dev.

    qgmem train-reranker --config configs/rerank/pool_mlp.yaml    # collects the pools this script reads
    python bench/cross_encoder_dev.py [--msc-queries 2500] [--negatives 6] [--max-length 96] [--out DIR]

Training pairs: every LongMemEval-S pool collected by `train-reranker` (its scored 100-question subset
excluded) and `--msc-queries` seeded MSC persona pools; positives are the evidence turns, negatives the
other turns among the pool's first 30 units (hard negatives from the pipeline's own pool). The
cross-encoder is fine-tuned from the packaged MiniLM (`qgmem.training.cross_encoder_fit.train`, one
epoch). On the LoCoMo dev pools (conv-26/30; never trained on) it scores the first N distinct turns
(bfloat16, 2 threads); a unit takes its turn's blended score w * CE + (1 - w) * fusion position,
units below the first N keep the fusion order. Prints turn recall@10 of the selected units for each
(N, w) next to the fusion order on the same pools, and the scoring time per question.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

import numpy as np


def _texts(name: str, **kw: object) -> dict[tuple[str, ...], str]:
    from qgmem.data.registry import load_dataset_by_name
    from qgmem.retrieve.turns import dated_turns

    out: dict[tuple[str, ...], str] = {}
    for c in load_dataset_by_name(name, download=False, **kw):
        out.update({(c.id, t.id): d for t, d in dated_turns(c)})
        out.update({("q", c.id, q.id): q.text for q in c.questions})
    return out


def _distinct_turns(rows: list[list[str]], n_units: int | None = None) -> list[str]:
    return list(dict.fromkeys(t for span in rows[:n_units] for t in span))


def examples(cfg: object, msc_queries: int, negatives: int, seed: int) -> list:
    from qgmem.training.cross_encoder_fit import Example
    from qgmem.training.rerank_pools import collect

    rng = random.Random(seed)
    out = []
    for src in cfg.train:
        pools = collect(cfg, src)
        texts = _texts(src.benchmark, **src.data_options)
        order = list(range(len(pools.qids)))
        rng.shuffle(order)
        keep = order[:msc_queries] if src.benchmark == "msc-persona" else order
        for j in keep:
            cid, qid = pools.qids[j].rsplit("/", 1)
            gold = [e for e in pools.evidence[j] if (cid, e) in texts][:3]
            negs = [t for t in _distinct_turns(pools.turns[j], 30) if t not in set(pools.evidence[j])][:negatives]
            if gold and negs:
                cands = gold + negs
                out.append(Example(pools.qids[j], texts[("q", cid, qid)], [texts[(cid, t)] for t in cands],
                                   [int(t in gold) for t in cands], []))
    return out


def main() -> None:
    import torch
    from sentence_transformers import CrossEncoder

    from qgmem.training.cross_encoder_fit import train
    from qgmem.training.ranker_fit import turn_recall
    from qgmem.training.rerank_config import load_rerank_config
    from qgmem.training.rerank_pools import collect

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="configs/rerank/pool_mlp.yaml")
    ap.add_argument("--msc-queries", type=int, default=2500)
    ap.add_argument("--negatives", type=int, default=6)
    ap.add_argument("--max-length", type=int, default=96)
    ap.add_argument("--out", default="runs/reranker/cross-encoder")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    cfg = load_rerank_config(args.config)
    out = Path(args.out)
    if not (out / "config.json").exists():
        exs = examples(cfg, args.msc_queries, args.negatives, args.seed)
        print(f"{len(exs)} questions, {sum(len(e.docs) for e in exs)} pairs")
        print(train(exs, "minilm", out, 1, 32, 5e-5, args.max_length, args.seed))
    dev = collect(cfg, cfg.dev)
    texts = _texts(cfg.dev.benchmark, **cfg.dev.data_options)
    ce = CrossEncoder(str(out), max_length=args.max_length, device="cpu")
    torch.set_num_threads(2)
    heads, weights = (10, 20, 30), (1.0, 0.7, 0.5, 0.3)
    got: dict[tuple[int, float], list[float]] = {(n, w): [] for n in heads for w in weights}
    fusion, ms = [], []
    for i, qid in enumerate(dev.qids):
        cid, q = qid.rsplit("/", 1)
        rows, gold = dev.turns[i], dev.evidence[i]
        fusion.append(turn_recall(np.arange(len(rows)), rows, gold, cfg.k))
        top = _distinct_turns(rows)[:max(heads)]
        t0 = time.perf_counter()
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
            s = ce.predict([(texts[("q", cid, q)], texts[(cid, t)]) for t in top], batch_size=64,
                           show_progress_bar=False, activation_fn=torch.nn.Identity())
        ms.append((time.perf_counter() - t0) * 1000)
        score = dict(zip(top, np.asarray(s, dtype=np.float64)))
        for n in heads:
            head = top[:n]
            ce_n = np.asarray([score[t] for t in head])
            ce_n = (ce_n - ce_n.min()) / (np.ptp(ce_n) + 1e-9)
            pos = 1 - np.arange(len(head)) / max(1, len(head) - 1)
            for w in weights:
                blend = {t: w * a + (1 - w) * b for t, a, b in zip(head, ce_n, pos)}
                unit = [max((blend[t] for t in span if t in blend), default=-1 - r / 1e3) for r, span in enumerate(rows)]
                got[(n, w)].append(turn_recall(np.argsort(-np.asarray(unit), kind="stable"), rows, gold, cfg.k))
    print(f"LoCoMo dev, {len(dev.qids)} questions: fusion order turn recall@{cfg.k} {np.mean(fusion):.3f}; "
          f"cross-encoder on {max(heads)} turns p50 {np.median(ms):.0f} ms")
    print("| turns scored | " + " | ".join(f"w={w}" for w in weights) + " |")
    print("|---|" + "---|" * len(weights))
    for n in heads:
        print(f"| {n} | " + " | ".join(f"{np.mean(got[(n, w)]):.3f}" for w in weights) + " |")


if __name__ == "__main__":
    main()
