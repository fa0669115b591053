"""Retrieval metrics over ranked items that each cover a set of turns.

Every method (QGMem units, raw turns, AnchorMem contexts) returns a ranked list of items, each with
the turn ids it covers; one definition scores them all:

- Recall@k: share of distinct gold turns covered by the union of the top-k items.
- all-hit@k: 1 if every gold turn is covered by the top-k items, else 0.
- Precision@k: share of the k slots whose item covers at least one gold turn (divided by k even
  when fewer than k items came back, as in standard P@k).
- binary nDCG@k: an item is relevant (gain 1) if it covers a gold turn that no higher-ranked item
  covered, so duplicates earn nothing twice; the ideal ranking puts min(k, #gold) relevant items
  first. Gain at rank i is discounted by log2(i + 1).
- Recall at a token budget: items are taken in rank order while their costs fit in the budget; the
  first item that does not fit ends the list. An item's cost is the tokens of the text the answer
  model reads for it (`qgmem.answer.item_tokens`: the entry as the answer prompt renders it, one
  counter for every method), so long entries cannot buy recall, and an entry that shows turns an
  earlier entry showed pays for them again, as the model reads them again.

Questions without gold evidence have no defined recall; callers skip them and count them
(`score_question` returns None).

LongMemEval's official metrics (`recall_any`, `recall_all`, `ndcg_official`) are defined on a ranked
list of corpus ids (sessions or turns) and reproduce the official script, including its DCG in
which rank 1 and rank 2 both have weight 1.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


def _gold_set(gold: Sequence[str]) -> set[str]:
    return {g for g in gold if g}


def recall_at_k(items: Sequence[Sequence[str]], gold: Sequence[str], k: int) -> float:
    g = _gold_set(gold)
    if not g:
        raise ValueError("recall is undefined without gold evidence")
    covered = {t for it in items[:k] for t in it}
    return len(g & covered) / len(g)


def all_hit_at_k(items: Sequence[Sequence[str]], gold: Sequence[str], k: int) -> float:
    g = _gold_set(gold)
    if not g:
        raise ValueError("all-hit is undefined without gold evidence")
    covered = {t for it in items[:k] for t in it}
    return float(g <= covered)


def precision_at_k(items: Sequence[Sequence[str]], gold: Sequence[str], k: int) -> float:
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    g = _gold_set(gold)
    hits = sum(1 for it in items[:k] if g.intersection(it))
    return hits / k


def ndcg_at_k(items: Sequence[Sequence[str]], gold: Sequence[str], k: int) -> float:
    g = _gold_set(gold)
    if not g:
        raise ValueError("nDCG is undefined without gold evidence")
    seen: set[str] = set()
    dcg = 0.0
    for i, it in enumerate(items[:k]):
        new = (g & set(it)) - seen
        if new:
            dcg += 1.0 / math.log2(i + 2)
            seen |= new
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(g))))
    return dcg / ideal


def budget_prefix(items: Sequence[Sequence[str]], costs: Sequence[int], budget: int) -> list[list[str]]:
    """The ranked items whose summed costs (one per item, in the same order) fit in `budget` tokens."""
    if len(costs) != len(items):
        raise ValueError(f"budget recall needs one cost per item: {len(items)} items, {len(costs)} costs")
    used = 0
    out: list[list[str]] = []
    for it, cost in zip(items, costs):
        if used + cost > budget:
            break
        used += cost
        out.append(list(it))
    return out


def budget_recall(items: Sequence[Sequence[str]], gold: Sequence[str], costs: Sequence[int], budget: int) -> float:
    if not _gold_set(gold):
        raise ValueError("recall is undefined without gold evidence")
    kept = budget_prefix(items, costs, budget)
    return recall_at_k(kept, gold, len(kept))


@dataclass
class QuestionScores:
    recall: float
    all_hit: float
    precision: float
    ndcg: float
    budget_recall: float


def score_question(items: Sequence[Sequence[str]], gold: Sequence[str], k: int,
                   costs: Sequence[int], budget: int) -> QuestionScores | None:
    """All per-question metrics; None when the question has no gold evidence (callers count those).
    `costs`: each item's tokens as shown to the answer model (`qgmem.answer.item_tokens`)."""
    if not _gold_set(gold):
        return None
    return QuestionScores(
        recall=recall_at_k(items, gold, k),
        all_hit=all_hit_at_k(items, gold, k),
        precision=precision_at_k(items, gold, k),
        ndcg=ndcg_at_k(items, gold, k),
        budget_recall=budget_recall(items, gold, costs, budget),
    )


# ---- LongMemEval official definitions (ranked corpus ids) ----

def rank_ids(items: Sequence[Sequence[str]], key: Mapping[str, str] | None = None) -> list[str]:
    """Ranked distinct ids in order of first appearance; `key` maps a turn id to e.g. its session id."""
    out: dict[str, None] = {}
    for it in items:
        for t in it:
            out.setdefault(key[t] if key is not None else t, None)
    return list(out)


def recall_any(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    g = _gold_set(gold)
    if not g:
        raise ValueError("recall_any is undefined without gold evidence")
    return float(bool(g & set(ranked[:k])))


def recall_all(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    g = _gold_set(gold)
    if not g:
        raise ValueError("recall_all is undefined without gold evidence")
    return float(g <= set(ranked[:k]))


def official_dcg(rels: Sequence[float], k: int) -> float:
    """LongMemEval's DCG of the first k relevances: rank 1 undiscounted, rank i >= 2 divided by log2(i)."""
    r = list(rels)[:k]
    if not r:
        return 0.0
    return r[0] + sum(r[i] / math.log2(i + 1) for i in range(1, len(r)))


def ndcg_official(ranked: Sequence[str], gold: Sequence[str], k: int, corpus: Sequence[str] | None = None) -> float:
    """LongMemEval's nDCG: binary relevance over the ranked list, ideal DCG over the whole corpus.

    `corpus` defaults to the ranked ids plus the gold ids (every corpus id not ranked has gain 0 either
    way, so only the gold count matters for the ideal).
    """
    g = _gold_set(gold)
    if not g:
        raise ValueError("nDCG is undefined without gold evidence")
    rels = [1.0 if d in g else 0.0 for d in ranked[:k]]
    n_rel = len(g & set(corpus)) if corpus is not None else len(g)
    ideal = official_dcg([1.0] * n_rel, k)
    return official_dcg(rels, k) / ideal if ideal > 0 else 0.0


def mean(xs: Sequence[float]) -> float:
    """Exactly rounded (fsum), so a mean does not depend on the order of its terms: the merged rows of
    a sharded run give the very numbers of the unsharded run."""
    return float(math.fsum(xs) / len(xs)) if xs else float("nan")


def percentile(xs: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100) without NumPy, NaN for an empty list."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    pos = (len(s) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)
