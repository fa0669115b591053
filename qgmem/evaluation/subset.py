"""The benchmark and the seeded question subset a run scores (QA and retrieval runs alike), so that
a CPU run and its rerun score the very same questions."""

from __future__ import annotations

import hashlib
import random

from typing import Any

from qgmem.evaluation.config import SubsetConfig
from qgmem.types import Conversation, Question


def load_benchmark(cfg: Any) -> list[Conversation]:
    """Conversations (with questions) of `cfg.benchmark` through the shared data registry."""
    from qgmem.data.registry import load_dataset_by_name

    return list(load_dataset_by_name(cfg.benchmark, data_dir=cfg.data_dir, download=False, **cfg.data_options))


def _rng(seed: int, *keys: str) -> random.Random:
    h = hashlib.sha256("\x1f".join([str(seed), *keys]).encode()).hexdigest()
    return random.Random(int(h[:16], 16))


def _sample(items: list[Question], n: int, rng: random.Random) -> list[Question]:
    if n <= 0 or len(items) <= n:
        return list(items)
    keep = set(rng.sample(range(len(items)), n))
    return [q for i, q in enumerate(items) if i in keep]


def select(conversations: list[Conversation], cfg: SubsetConfig) -> list[tuple[Conversation, list[Question]]]:
    """(conversation, its selected questions) in benchmark order; conversations left with no
    question are dropped. Raises ValueError naming any requested or excluded conversation id that is missing."""
    convs = list(conversations)
    if cfg.conversations:
        by_id = {c.id: c for c in convs}
        missing = [c for c in cfg.conversations if c not in by_id]
        if missing:
            raise ValueError(f"subset.conversations: unknown id(s) {missing}; e.g. {list(by_id)[:5]}")
        convs = [by_id[c] for c in cfg.conversations]
    if cfg.exclude_conversations:  # the tuning split is never scored: left out before any sampling
        known = {c.id for c in conversations}
        missing = [c for c in cfg.exclude_conversations if c not in known]
        if missing:
            raise ValueError(f"subset.exclude_conversations: unknown id(s) {missing}; e.g. {sorted(known)[:5]}")
        convs = [c for c in convs if c.id not in set(cfg.exclude_conversations)]
    if 0 < cfg.max_conversations < len(convs):
        if cfg.conversation_sample == "seeded":  # a seeded sample, benchmark order kept
            keep = set(random.Random(cfg.seed).sample(range(len(convs)), cfg.max_conversations))
            convs = [c for i, c in enumerate(convs) if i in keep]
        else:
            convs = convs[: cfg.max_conversations]
    cats = {str(c) for c in cfg.categories}
    out: list[tuple[Conversation, list[Question]]] = []
    for conv in convs:
        qs = [q for q in conv.questions if not cats or str(q.category) in cats]
        if cfg.per_category > 0 or cfg.per_category_overrides:
            groups: dict[str, list[Question]] = {}
            for q in qs:
                groups.setdefault(str(q.category), []).append(q)
            keep: set[str] = set()
            for cat, items in groups.items():
                n = int(cfg.per_category_overrides.get(cat, cfg.per_category))
                keep.update(q.id for q in _sample(items, n, _rng(cfg.seed, conv.id, cat)))
            qs = [q for q in qs if q.id in keep]
        if qs:
            out.append((conv, qs))
    if cfg.max_questions > 0:
        flat = [(c.id, q.id) for c, qs in out for q in qs]
        if len(flat) > cfg.max_questions:
            keep_pairs = set(_rng(cfg.seed, "max_questions").sample(flat, cfg.max_questions))
            out = [(c, [q for q in qs if (c.id, q.id) in keep_pairs]) for c, qs in out]
            out = [(c, qs) for c, qs in out if qs]
    return out
