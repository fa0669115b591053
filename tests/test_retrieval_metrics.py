"""Retrieval metrics on hand-computed cases (see the definitions in qgmem.evaluation.retrieval_metrics)."""

from __future__ import annotations

import math

import pytest

from qgmem.evaluation import retrieval_metrics as rm


def test_recall_counts_distinct_gold_turns_covered_by_spans():
    items = [["a", "b"], ["x"], ["c"]]
    gold = ["b", "c", "d", "d"]  # duplicate gold ids count once: 3 distinct
    assert rm.recall_at_k(items, gold, 10) == pytest.approx(2 / 3)
    assert rm.recall_at_k(items, gold, 2) == pytest.approx(1 / 3)
    assert rm.all_hit_at_k(items, gold, 10) == 0.0
    assert rm.all_hit_at_k(items + [["d"]], gold, 10) == 1.0
    assert rm.all_hit_at_k(items + [["d"]], gold, 3) == 0.0


def test_precision_divides_by_k_and_counts_items_touching_gold():
    items = [["a", "b"], ["x"], ["c"], ["c"]]
    assert rm.precision_at_k(items, ["b", "c"], 4) == pytest.approx(3 / 4)
    assert rm.precision_at_k(items, ["b", "c"], 10) == pytest.approx(3 / 10)
    with pytest.raises(ValueError):
        rm.precision_at_k(items, ["b"], 0)


def test_binary_ndcg_hand_computed_with_duplicates_and_ties():
    gold = ["g1", "g2"]
    # relevant at ranks 2 and 3 -> DCG = 1/log2(3) + 1/log2(4); IDCG = 1 + 1/log2(3)
    got = rm.ndcg_at_k([["x"], ["g1"], ["g2"]], gold, 10)
    assert got == pytest.approx((1 / math.log2(3) + 0.5) / (1 + 1 / math.log2(3)))
    # a duplicate of an already-covered gold turn earns nothing the second time
    dup = rm.ndcg_at_k([["g1"], ["g1"], ["g2"]], gold, 10)
    assert dup == pytest.approx((1 + 0.5) / (1 + 1 / math.log2(3)))
    # one item covering both gold turns: gain 1 at rank 1 only (binary), ideal is two relevant items
    both = rm.ndcg_at_k([["g1", "g2"]], gold, 10)
    assert both == pytest.approx(1 / (1 + 1 / math.log2(3)))
    # perfect ranking is 1; ties in the ideal (k larger than #gold) do not change it
    assert rm.ndcg_at_k([["g1"], ["g2"], ["x"]], gold, 10) == pytest.approx(1.0)
    assert rm.ndcg_at_k([["g2"], ["g1"]], gold, 1) == pytest.approx(1.0)
    assert rm.ndcg_at_k([["x"]], gold, 10) == 0.0


def test_budget_recall_stops_at_first_item_that_does_not_fit():
    costs = [300, 200, 150, 700]  # each item's rendered text, as the answer model reads it
    items = [["a"], ["a", "b"], ["c"], ["d"]]
    # 300 + 200 = 500; c would make 650 > 600 -> stop
    assert rm.budget_prefix(items, costs, 600) == [["a"], ["a", "b"]]
    assert rm.budget_recall(items, ["b", "c"], costs, 600) == pytest.approx(0.5)
    assert rm.budget_recall(items, ["b", "c"], costs, 650) == pytest.approx(1.0)
    # a first item over budget leaves nothing
    assert rm.budget_recall([["d"], ["c"]], ["c"], [700, 150], 600) == 0.0
    with pytest.raises(ValueError, match="one cost per item"):
        rm.budget_prefix(items, costs[:2], 600)


def test_no_gold_is_undefined_not_zero():
    assert rm.score_question([["a"]], [], 10, [1], 600) is None
    with pytest.raises(ValueError, match="gold"):
        rm.recall_at_k([["a"]], [], 10)
    s = rm.score_question([["a"], ["b"]], ["b"], 10, [5, 5], 600)
    assert s is not None and s.recall == 1.0 and s.precision == pytest.approx(0.1)


def test_longmemeval_official_definitions():
    ranked = rm.rank_ids([["t1", "t2"], ["t3"], ["t1"]], key={"t1": "s1", "t2": "s2", "t3": "s1"})
    assert ranked == ["s1", "s2"]
    assert rm.recall_any(["s3", "s1"], ["s1", "s2"], 5) == 1.0
    assert rm.recall_all(["s3", "s1"], ["s1", "s2"], 5) == 0.0
    assert rm.recall_any(["s3", "s1"], ["s1"], 1) == 0.0
    # official DCG gives ranks 1 and 2 the same weight: gold at rank 2 of 1 gold -> 1.0
    assert rm.ndcg_official(["x", "g"], ["g"], 10) == pytest.approx(1.0)
    # gold at rank 3 -> 1/log2(3)
    assert rm.ndcg_official(["x", "y", "g"], ["g"], 10) == pytest.approx(1 / math.log2(3))


def test_percentile_interpolates():
    assert rm.percentile([1, 2, 3, 4], 50) == pytest.approx(2.5)
    assert rm.percentile([5], 95) == 5
    assert math.isnan(rm.percentile([], 50))
