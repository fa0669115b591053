"""Deterministic top-k: score descending, then a stable key (document order by default).

`np.argpartition` picks arbitrary members among tied scores, and NumPy's selection kernels dispatch on
the CPU's vector features, so a top-k built on it differs between machines and is not a prefix of a
larger top-k. Here only the k-th largest *value* comes from a selection (a value is the same whatever
kernel finds it); the members are every score above it plus the tied ones first by key.
"""

from __future__ import annotations

import numpy as np

# Scores computed by BLAS may differ in their last bits between CPUs (other kernels, other summation
# orders); ranking on scores rounded to this many decimals makes such near-ties exact ties, which the key
# then breaks the same way everywhere.
RANK_DECIMALS = 6


def top_k(scores: np.ndarray, k: int, key: np.ndarray | None = None) -> np.ndarray:
    """Positions of the k best scores, best first; ties by `key` ascending (default: position).

    The result does not depend on the CPU, and top_k(s, 5) is a prefix of top_k(s, 50)."""
    s = np.asarray(scores)
    n = len(s)
    if k <= 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    order_key = np.arange(n) if key is None else np.asarray(key)
    if k < n:
        kth = np.partition(s, n - k)[n - k]
        cand = np.flatnonzero(s >= kth)
    else:
        cand = np.arange(n)
    return cand[np.lexsort((order_key[cand], -s[cand]))][:k].astype(np.int64)


def rank_scores(scores: np.ndarray, decimals: int = RANK_DECIMALS) -> np.ndarray:
    """Scores as ranked: rounded so that last-bit differences between machines tie instead of flipping."""
    return np.round(np.asarray(scores, dtype=np.float64), decimals)


def top_k_rows(scores: np.ndarray, k: int) -> np.ndarray:
    """`top_k` of every row of a 2-D score matrix (ties by column), as a (rows, min(k, cols)) array."""
    s = np.asarray(scores)
    if s.ndim != 2:
        raise ValueError(f"top_k_rows needs a 2-D matrix, got shape {s.shape}")
    return np.stack([top_k(row, k) for row in s]) if len(s) else np.zeros((0, min(k, s.shape[1])), np.int64)
