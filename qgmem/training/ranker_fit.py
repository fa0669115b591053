"""Fit the learned pool ranker (`qgmem.retrieve.ranker`) on collected pools; pick width and epoch on dev.

Loss: listwise softmax cross-entropy of each pool against a uniform target over its evidence rows
(every evidence unit pulled to the top, not only the first). Full batch (a few hundred pools of 100
rows), Adam, seeded. The dev metric is what the benchmark scores: turn recall of the top k units
chosen the way `QGMemRetriever._select` chooses them (a unit whose turns are all covered is skipped).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from qgmem.evaluation.retrieval_metrics import recall_at_k
from qgmem.retrieve.features import FEATURES
from qgmem.retrieve.method import select_spans
from qgmem.retrieve.ranker import LearnedRanker, RankerSpec

from .rerank_config import FitConfig
from .rerank_pools import Pools


def turn_recall(order: np.ndarray, turns: list[list[str]], evidence: list[str], k: int) -> float:
    """The benchmark's Recall@k (`recall_at_k`) of the k units `QGMemRetriever` would select from `order`."""
    ranked = [turns[i] for i in order]
    return recall_at_k([ranked[j] for j in select_spans(ranked, k)], evidence, k) if any(evidence) else 0.0


def mean_recall(pools: Pools, scores: list[np.ndarray], k: int) -> float:
    vals = [turn_recall(np.argsort(-s, kind="stable"), t, e, k) for s, t, e in zip(scores, pools.turns, pools.evidence)]
    return float(np.mean(vals)) if vals else 0.0


def fusion_scores(pools: Pools) -> list[np.ndarray]:
    """The pipeline's own order (RRF), as scores: the no-rerank baseline on the same pools."""
    j = FEATURES.index("fused_rank")
    return [-x[:, j] for x in pools.x]


@dataclass
class FitResult:
    ranker: LearnedRanker
    hidden: int
    epoch: int
    dev_recall: float
    dev_fusion_recall: float
    train_recall: float
    train_fusion_recall: float
    curve: list[dict[str, float]]  # every checkpoint of every width: hidden, epoch, loss, dev recall


def _padded(pools: Pools) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    keep = [i for i, y in enumerate(pools.y) if y.sum() > 0]  # a pool without evidence teaches nothing
    width = max(len(pools.y[i]) for i in keep)
    x = np.zeros((len(keep), width, len(FEATURES)), np.float32)
    t = np.zeros((len(keep), width), np.float32)
    mask = np.zeros((len(keep), width), bool)
    for j, i in enumerate(keep):
        n = len(pools.y[i])
        x[j, :n], mask[j, :n] = pools.x[i], True
        t[j, :n] = pools.y[i] / pools.y[i].sum()
    return x, t, mask


def fit(train: Pools, dev: Pools, cfg: FitConfig, k: int, info: dict[str, object]) -> FitResult:
    import torch

    x, target, mask = _padded(train)
    flat = np.concatenate(train.x)
    mean, std = flat.mean(0), flat.std(0)
    std[std < 1e-6] = 1.0
    xt = torch.from_numpy((x - mean) / std)
    tt, mt = torch.from_numpy(target), torch.from_numpy(mask)
    best: tuple[float, int, int, dict[str, torch.Tensor]] | None = None
    curve: list[dict[str, float]] = []
    bar = tqdm(total=len(cfg.hidden) * cfg.epochs, desc="fit", unit="epoch")
    for hidden in cfg.hidden:
        torch.manual_seed(cfg.seed)
        net = _mlp(hidden)
        opt = torch.optim.Adam(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        for epoch in range(1, cfg.epochs + 1):
            logits = net(xt).squeeze(-1).masked_fill(~mt, -1e9)
            loss = -(tt * torch.log_softmax(logits, dim=1)).sum(1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            bar.update(1)
            if epoch % cfg.eval_every == 0 or epoch == cfg.epochs:
                r = _ranker(net, mean, std, hidden, info)
                rec = mean_recall(dev, [r.score(d) for d in dev.x], k)
                curve.append({"hidden": hidden, "epoch": epoch, "loss": float(loss.detach()), "dev_recall": rec})
                if best is None or rec > best[0] + 1e-9:
                    best = (rec, hidden, epoch, copy.deepcopy(net.state_dict()))
                bar.set_postfix(width=hidden, loss=f"{float(loss.detach()):.3f}", dev=f"{rec:.3f}", best=f"{best[0]:.3f}")
    bar.close()
    assert best is not None
    rec, hidden, epoch, state = best
    net = _mlp(hidden)
    net.load_state_dict(state)
    ranker = _ranker(net, mean, std, hidden, info)
    return FitResult(ranker, hidden, epoch, rec, mean_recall(dev, fusion_scores(dev), k),
                     mean_recall(train, [ranker.score(d) for d in train.x], k),
                     mean_recall(train, fusion_scores(train), k), curve)


def _mlp(hidden: int) -> object:
    """The ranker's layers in torch (`LearnedRanker` runs the same two layers in numpy)."""
    import torch

    return torch.nn.Sequential(torch.nn.Linear(len(FEATURES), hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1))


def _ranker(net: object, mean: np.ndarray, std: np.ndarray, hidden: int, info: dict[str, object]) -> LearnedRanker:
    w = {n: p.detach().numpy().copy() for n, p in net.state_dict().items()}  # type: ignore[attr-defined]
    spec = RankerSpec(list(FEATURES), mean.tolist(), std.tolist(), hidden, dict(info))
    return LearnedRanker(spec, {"w1": w["0.weight"].T, "b1": w["0.bias"], "w2": w["2.weight"].T, "b2": w["2.bias"]})
