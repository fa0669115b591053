"""What the learned ranker sees of each pool candidate: the pipeline's own evidence, as numbers.

RRF keeps only each channel's rank and weighs channels the same for every question. The ranker reads
more of what the channels already computed (raw BM25 and cosine scores next to ranks, the unit's own
cosine and its turn's, attribute scores), what the question asks for (names, a time, a place) and what
the unit is (span length, whole turn, trace state, how many pool units share its turn), and learns how
they combine. Every feature is cheap at query time: the channels ran anyway, and the only extra vector
products are the pool's 100 rows against the query.

Features are stated once, in `FEATURES`; the checkpoint stores their names, so a ranker trained on an
older list refuses to load instead of reading the wrong columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .query import QueryConstraints

RANKED_CHANNELS = ("lexical", "dense", "attribute", "turn-lexical", "turn-dense")

FEATURES: tuple[str, ...] = (
    "fused", "fused_rank",
    *(f"rank:{c}" for c in RANKED_CHANNELS),
    "bm25", "cosine", "cosine_gap", "turn_bm25", "turn_cosine", "turn_cosine_gap", "attribute",
    "q_entities", "q_time", "q_location", "q_words",
    "span_turns", "claim_words", "whole_turn", "superseded", "trace_size", "latest_state", "update",
    "speaker_asked", "turn_support",
)


@dataclass
class PoolView:
    """One question's pool and the channel evidence behind it (what `QGMemRetriever.pool` returns)."""

    text: str
    constraints: QueryConstraints
    qvec: np.ndarray  # the question's vector
    rows: list[int]  # pool rows, fusion order
    fused: np.ndarray  # their RRF scores
    ranks: dict[str, dict[int, int]] = field(default_factory=dict)  # channel -> row -> rank (0 = first)
    scores: dict[str, dict[int, float]] = field(default_factory=dict)  # lexical/dense/attribute raw scores
    turn_scores: dict[str, dict[int, float]] = field(default_factory=dict)  # turn channels: turn position -> score


def _rank_feature(ranks: dict[int, int], row: int, missing: int) -> float:
    return float(np.log1p(ranks.get(row, missing)))


def _best_turn(scores: dict[int, float], positions: list[int]) -> float:
    return max((scores.get(p, 0.0) for p in positions), default=0.0)


def pool_features(idx: Any, view: PoolView, depth: int) -> np.ndarray:
    """(pool size, len(FEATURES)) float32 matrix, rows in `view.rows` order; `idx` is the conversation's
    index in `QGMemRetriever` (units, texts, dense, turns, trace rows)."""
    rows = view.rows
    n = len(rows)
    out = np.zeros((n, len(FEATURES)), dtype=np.float32)
    if not n:
        return out
    arr = np.asarray(rows, dtype=np.int64)
    units = [idx.units[r] for r in rows]
    cos = idx.dense.scores_for(view.qvec, arr).astype(np.float32)
    turn_pos = [idx.turns.positions(u.turn_ids) if idx.turns is not None else [] for u in units]
    if idx.turns is not None and idx.turns.dense is not None:
        flat = sorted({p for ps in turn_pos for p in ps})
        tc = dict(zip(flat, idx.turns.dense.scores_for(view.qvec, np.asarray(flat, dtype=np.int64)).tolist()))
        turn_cos = np.asarray([max((tc[p] for p in ps), default=c) for ps, c in zip(turn_pos, cos)], np.float32)
    else:
        turn_cos = cos.copy()
    lex = view.scores.get("lexical", {})
    top_lex = max(lex.values(), default=0.0) or 1.0
    tlex = view.turn_scores.get("turn-lexical", {})
    top_tlex = max(tlex.values(), default=0.0) or 1.0
    attr = view.scores.get("attribute", {})
    c = view.constraints
    q_lower = view.text.lower()
    first_turns: dict[str, int] = {}
    for u in units:
        first_turns[u.first_turn] = first_turns.get(u.first_turn, 0) + 1
    col = {name: j for j, name in enumerate(FEATURES)}
    fused = view.fused.astype(np.float32)
    out[:, col["fused"]] = fused / (fused.max() or 1.0)
    out[:, col["fused_rank"]] = np.log1p(np.arange(n))
    for ch in RANKED_CHANNELS:
        ranks = view.ranks.get(ch, {})
        out[:, col[f"rank:{ch}"]] = [_rank_feature(ranks, r, 2 * depth) for r in rows]
    out[:, col["bm25"]] = [lex.get(r, 0.0) / top_lex for r in rows]
    out[:, col["cosine"]] = cos
    out[:, col["cosine_gap"]] = cos - cos.max()
    out[:, col["turn_bm25"]] = [_best_turn(tlex, ps) / top_tlex for ps in turn_pos]
    out[:, col["turn_cosine"]] = turn_cos
    out[:, col["turn_cosine_gap"]] = turn_cos - turn_cos.max()
    out[:, col["attribute"]] = [attr.get(r, 0.0) for r in rows]
    out[:, col["q_entities"]] = len(c.entities)
    out[:, col["q_time"]] = float(bool(c.time_start or c.time_end))
    out[:, col["q_location"]] = float(bool(c.location))
    out[:, col["q_words"]] = np.log1p(len(view.text.split()))
    for i, (r, u) in enumerate(zip(rows, units)):
        trace = idx.trace_rows.get(r, [])
        out[i, col["span_turns"]] = np.log1p(len(u.turn_ids))
        out[i, col["claim_words"]] = np.log1p(len(u.text.split()))
        out[i, col["whole_turn"]] = float(idx.texts.whole_turn(u) is not None)
        out[i, col["superseded"]] = float(u.superseded)
        out[i, col["trace_size"]] = np.log1p(len(trace))
        out[i, col["latest_state"]] = float(bool(trace) and r not in idx.latest_row)
        out[i, col["update"]] = float(u.trace_role == "update")
        out[i, col["speaker_asked"]] = float(bool(u.speaker) and u.speaker.lower() in q_lower)
        out[i, col["turn_support"]] = np.log1p(first_turns[u.first_turn] - 1)
    return out
