"""Answer metrics checked against values computed by hand, including the official LoCoMo quirks."""

from __future__ import annotations

import math

import pytest

from qgmem.answer import count_tokens
from qgmem.evaluation.metrics import (answer_scores, bleu1, locomo_f1, locomo_multi_answer_f1,
                                      locomo_token_f1, normalize_locomo, normalize_squad, squad_f1)


def test_locomo_normalisation_drops_commas_punctuation_articles_and_and():
    assert normalize_locomo("The Cat, and a DOG!") == "cat dog"
    assert normalize_locomo("7 May, 2023") == "7 may 2023"
    assert normalize_squad("The bread and butter.") == "bread and butter"


def test_locomo_token_f1_stems_and_counts_a_bag_of_tokens():
    # "cats are running" -> [cat, are, run]; "a cat runs" -> [cat, run]: P = 2/3, R = 1 -> F1 = 0.8
    assert locomo_token_f1("The cats are running", "a cat runs") == pytest.approx(0.8)
    assert locomo_token_f1("running", "run") == 1.0
    assert locomo_token_f1("Paris", "London") == 0.0
    # bag, not set: a repeated token counts once per occurrence on both sides
    assert locomo_token_f1("dog dog", "dog") == pytest.approx(2 * 0.5 * 1 / 1.5)


def test_and_is_an_article_for_locomo_but_not_for_squad():
    assert locomo_token_f1("bread and butter", "butter bread") == 1.0
    assert squad_f1("bread and butter", ["butter bread"]) == pytest.approx(0.8)  # P = 2/3, R = 1


def test_category_1_splits_prediction_and_gold_on_commas():
    # gold parts "London" (best pred part F1 1) and "Berlin" (0) -> 0.5
    assert locomo_f1("Paris, London", "London, Berlin", 1) == pytest.approx(0.5)
    assert locomo_multi_answer_f1("Paris, London", "London, Berlin") == pytest.approx(0.5)
    # without the comma split the same strings score as one bag (category 2/4 behaviour)
    assert locomo_f1("Paris, London", "London, Berlin", 4) == pytest.approx(0.5)
    # "Paris and London" is a single prediction part: vs "London" P = 1/2, R = 1 -> 2/3; vs "Berlin" 0 -> 1/3
    assert locomo_f1("Paris and London", "London, Berlin", "1") == pytest.approx(1 / 3)
    assert locomo_f1("Paris and London", "London, Berlin", "2") == pytest.approx(0.5)


def test_category_3_cuts_gold_at_the_first_semicolon():
    assert locomo_f1("yes", "Yes; she likes dogs", 3) == 1.0
    # category 4 keeps the whole gold: [yes, she, like, dog] -> P = 1, R = 1/4 -> 0.4
    assert locomo_f1("yes", "Yes; she likes dogs", 4) == pytest.approx(0.4)


def test_category_5_is_abstention_by_the_official_phrases():
    assert locomo_f1("That is not mentioned in the conversation.", "", 5) == 1.0
    assert locomo_f1("No information available", "", "5") == 1.0
    assert locomo_f1("NOT MENTIONED", "", 5) == 1.0
    assert locomo_f1("She went to Paris", "", 5) == 0.0
    assert locomo_f1("I don't know", "", 5) == 0.0  # the official rule accepts only its two phrases


def test_unknown_category_is_an_error():
    with pytest.raises(ValueError, match="category"):
        locomo_f1("a", "b", 7)


def test_squad_f1_takes_the_best_reference():
    assert squad_f1("Globex", ["Acme", "Globex Corp"]) == pytest.approx(2 * 1 * 0.5 / 1.5)
    assert squad_f1("running", ["run"]) == 0.0  # no stemming in SQuAD F1


def test_bleu1_by_hand():
    # "the" removed: hyp [cat sat on mat], ref [cat is on mat]: 3/4 unigrams match, equal lengths -> 0.75
    assert bleu1("the cat sat on the mat", ["the cat is on the mat"]) == pytest.approx(0.75)
    # brevity penalty exp(1 - 4/1) for a one-word hypothesis with precision 1
    assert bleu1("cat", ["cat is on mat"]) == pytest.approx(math.exp(-3))
    assert bleu1("", ["cat"]) == 0.0


def test_answer_scores_names_each_metric_and_keeps_category_5_apart():
    s = answer_scores("Globex", ["Globex"], "4", "locomo")
    assert s == {"f1_locomo": 1.0, "scoring": "answer", "f1_squad": 1.0, "bleu1": 1.0}
    a = answer_scores("not mentioned", [], "5", "locomo")
    assert a["scoring"] == "abstention" and a["f1_locomo"] == 1.0 and "bleu1" not in a
    # other benchmarks: best stemmed F1 over references, no category rules
    o = answer_scores("Paris, London", ["London, Berlin"], "multi-session", "longmemeval-s")
    assert o["f1_locomo"] == pytest.approx(0.5)


def test_count_tokens_counts_words_and_punctuation():
    assert count_tokens("Alice: hi, Bob!") == 6
