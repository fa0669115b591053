"""`make demo` scores test conversations only: the dev split (conv-26, conv-30, where any tuning was done)
is excluded before the demo's conversations are taken."""

from __future__ import annotations

from pathlib import Path

import pytest

from qgmem.config import load_config
from qgmem.evaluation.config import EvalConfig, SubsetConfig
from qgmem.evaluation.retrieval import load_retrieval_config
from qgmem.evaluation.subset import select
from qgmem.types import Conversation, Question

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "eval"


def _convs(n: int) -> list[Conversation]:
    return [Conversation(f"c{i}", [], [Question(f"q{i}", "?", ["a"], "1")]) for i in range(n)]


def test_excluded_conversations_are_left_out_before_the_first_n_are_taken():
    got = select(_convs(5), SubsetConfig(exclude_conversations=["c0", "c2"], max_conversations=2))
    assert [c.id for c, _ in got] == ["c1", "c3"]
    seeded = SubsetConfig(exclude_conversations=["c0", "c2"], max_conversations=2, conversation_sample="seeded")
    assert not {"c0", "c2"} & {c.id for c, _ in select(_convs(5), seeded)}
    with pytest.raises(ValueError, match=r"exclude_conversations: unknown id\(s\) \['c9'\]"):
        select(_convs(5), SubsetConfig(exclude_conversations=["c9"]))


@pytest.mark.parametrize("name", ["locomo_cpu.yaml", "locomo_checkpoint.yaml"])
def test_demo_configs_exclude_the_dev_split(name):
    cfg = load_config(EvalConfig, str(CONFIGS / name), [])
    dev = load_retrieval_config(CONFIGS / "locomo_retrieval_cpu.yaml").dev_conversations
    assert dev == ["conv-26", "conv-30"] and set(dev) <= set(cfg.subset.exclude_conversations)


@pytest.mark.data
def test_make_demo_scores_conversations_not_used_for_tuning(data_dir):
    from qgmem.data.locomo import load_locomo

    cfg = load_config(EvalConfig, str(CONFIGS / "locomo_cpu.yaml"), [])
    chosen = [c.id for c, _ in select(load_locomo(data_dir / "locomo" / "locomo10.json"), cfg.subset)]
    assert chosen == ["conv-41", "conv-42"]
