"""Reciprocal rank fusion of the channels' ranked lists into one candidate pool."""

from __future__ import annotations


def rrf(ranked: dict[str, list[int]], k: int = 60, weights: dict[str, float] | None = None,
        pool_size: int = 100) -> list[tuple[int, float]]:
    """sum over channels of weight / (k + rank), rank from 1; ties keep first-seen order."""
    scores: dict[int, float] = {}
    for name, ids in ranked.items():
        w = (weights or {}).get(name, 1.0)
        if w == 0:
            continue
        for r, i in enumerate(ids, start=1):
            scores[i] = scores.get(i, 0.0) + w / (k + r)
    order = sorted(scores.items(), key=lambda kv: -kv[1])
    return order[:pool_size]
