"""data.text_dropout: training examples shown without memory text, reproducibly per (seed, epoch, index)."""

from __future__ import annotations

import pytest
from test_model_graph_token_lm import example

from qgmem.config import load_config
from qgmem.training.config import TrainConfig, validate_config
from qgmem.training.examples import EpochSampler, TextDropout


def test_text_dropout_rate_and_reproducibility() -> None:
    exs = [example(i, 2) for i in range(400)]
    sampler = EpochSampler(len(exs), seed=3)
    drop = TextDropout(exs, 0.5, seed=3, sampler=sampler)
    first = [drop[i].memory_text == "" for i in range(len(exs))]
    assert 150 < sum(first) < 250  # about half
    assert all(drop[i].graph is exs[i].graph for i in range(5))  # the graph always stays
    assert [drop[i].memory_text == "" for i in range(len(exs))] == first  # same epoch, same draws (resume)
    sampler.use_epoch(1)
    assert [drop[i].memory_text == "" for i in range(len(exs))] != first  # a new epoch draws again
    assert all(ex.memory_text for ex in exs)  # the stored examples are untouched
    assert not any(TextDropout(exs, 0.0, 3, sampler)[i].memory_text == "" for i in range(len(exs)))


def test_text_dropout_must_be_a_probability() -> None:
    with pytest.raises(ValueError, match="data.text_dropout"):
        validate_config(load_config(TrainConfig, None, ["data.text_dropout=1.0"]))
