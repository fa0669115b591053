"""Reciprocal rank fusion of the channels' ranked lists into one candidate pool."""

from __future__ import annotations

Ranked = list[int] | list[list[int]]  # ids best first, or tied groups of ids best first


def rrf(ranked: dict[str, Ranked], k: int = 60, weights: dict[str, float] | None = None,
        pool_size: int = 100) -> list[tuple[int, float]]:
    """sum over channels of weight / (k + rank), rank from 1; ties keep first-seen order.

    A channel may rank groups (a raw turn and the units drawn from it): every id of the group gets the
    group's rank, and an id listed in several groups keeps its best one."""
    scores: dict[int, float] = {}
    for name, items in ranked.items():
        w = (weights or {}).get(name, 1.0)
        if w == 0:
            continue
        seen: set[int] = set()
        for r, item in enumerate(items, start=1):
            for i in (item if isinstance(item, list) else (item,)):
                if i in seen:
                    continue
                seen.add(i)
                scores[i] = scores.get(i, 0.0) + w / (k + r)
    order = sorted(scores.items(), key=lambda kv: -kv[1])
    return order[:pool_size]
