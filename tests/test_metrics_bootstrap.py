"""Bootstrap CIs: right centre, sensible width, reproducible by seed."""

from __future__ import annotations

import numpy as np
import pytest

from qgmem.evaluation.bootstrap import bootstrap_ci


def test_constant_scores_have_a_zero_width_interval():
    ci = bootstrap_ci([0.5] * 20, 1000, seed=1)
    assert (ci.mean, ci.low, ci.high, ci.n) == (0.5, 0.5, 0.5, 20)


def test_interval_brackets_the_mean_and_matches_the_normal_approximation():
    vals = [0, 1] * 200  # mean 0.5, sd 0.5 -> normal 95% half-width 1.96 * 0.5 / sqrt(400) = 0.049
    ci = bootstrap_ci(vals, 10_000, seed=0)
    assert ci.mean == 0.5
    assert ci.low < 0.5 < ci.high
    assert (ci.high - ci.low) / 2 == pytest.approx(0.049, abs=0.006)


def test_same_seed_same_interval_other_seed_other_interval():
    rng = np.random.default_rng(3)
    vals = rng.random(50)
    a, b = bootstrap_ci(vals, 2000, seed=7), bootstrap_ci(vals, 2000, seed=7)
    c = bootstrap_ci(vals, 2000, seed=8)
    assert (a.low, a.high) == (b.low, b.high)
    assert (a.low, a.high) != (c.low, c.high)


def test_chunking_does_not_change_the_result():
    vals = list(np.linspace(0, 1, 30))
    assert bootstrap_ci(vals, 3000, seed=5, chunk=1000) == bootstrap_ci(vals, 3000, seed=5, chunk=7000)


def test_empty_input_gives_nan_and_bad_resamples_raise():
    assert bootstrap_ci([], 100).n == 0
    with pytest.raises(ValueError, match="n_resamples"):
        bootstrap_ci([1.0], 0)
