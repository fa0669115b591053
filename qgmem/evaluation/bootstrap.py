"""Percentile bootstrap confidence intervals (10,000 resamples by default), reproducible by seed."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class CI:
    mean: float
    low: float
    high: float
    n: int

    def as_dict(self) -> dict[str, float | int]:
        return {"mean": self.mean, "low": self.low, "high": self.high, "n": self.n}


def bootstrap_ci(values: list[float] | np.ndarray, n_resamples: int = 10_000, seed: int = 0,
                 level: float = 0.95, chunk: int = 1000) -> CI:
    """Mean of `values` with a percentile bootstrap CI. Resampling is chunked so that memory stays
    bounded for large benchmarks; the same seed gives the same interval."""
    x = np.asarray(values, dtype=np.float64)
    n = int(x.size)
    if n == 0:
        return CI(float("nan"), float("nan"), float("nan"), 0)
    if n_resamples <= 0:
        raise ValueError(f"bootstrap_ci: n_resamples must be positive, got {n_resamples}")
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples, dtype=np.float64)
    for start in range(0, n_resamples, chunk):
        stop = min(start + chunk, n_resamples)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = x[idx].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return CI(float(x.mean()), float(lo), float(hi), n)
