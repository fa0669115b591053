"""Answer metrics, each under the name it is reported with.

Three definitions of "F1" circulate in the memory literature; we report two and name both:

- ``f1_locomo``: the official LoCoMo ``task_eval/evaluation.py`` behaviour. Answers are normalised
  (commas dropped, lowercased, punctuation removed, the words a/an/the/and removed, whitespace
  collapsed), Porter-stemmed, and compared as bags of tokens. Per category: 1 (multi-hop) splits
  prediction and gold on ',' and averages, over gold parts, the best F1 of any prediction part;
  2 and 4 use plain F1; 3 cuts the gold answer at its first ';'; 5 (adversarial) is right iff the
  prediction contains "no information available" or "not mentioned".
- ``f1_squad``: SQuAD-style token F1 (lowercase, no punctuation, no a/an/the, no stemming), the
  maximum over the reference answers; AnchorMem reports this one.
- ``bleu1``: nltk sentence BLEU with weights (1, 0, 0, 0) and ``SmoothingFunction().method1`` over
  the SQuAD-normalised whitespace tokens.
"""

from __future__ import annotations

import functools
import re
import string
from collections import Counter

ABSTENTION_PHRASES = ("no information available", "not mentioned")
LOCOMO_CATEGORY_NAMES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop", "5": "adversarial"}
LOCOMO_ANSWERED = ("1", "2", "3", "4")  # category 5 is abstention, reported on its own line

_PUNCT = set(string.punctuation)
_LOCOMO_STOP = re.compile(r"\b(a|an|the|and)\b")
_SQUAD_STOP = re.compile(r"\b(a|an|the)\b")


@functools.lru_cache(maxsize=1)
def _stemmer():
    from nltk.stem import PorterStemmer

    return PorterStemmer()


def normalize_locomo(text: str) -> str:
    """Official LoCoMo normalisation: drop commas, lowercase, strip punctuation, a/an/the/and, spaces."""
    s = str(text).replace(",", "").lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _LOCOMO_STOP.sub(" ", s)
    return " ".join(s.split())


def normalize_squad(text: str) -> str:
    """SQuAD normalisation: lowercase, strip punctuation, a/an/the, collapse whitespace."""
    s = str(text).lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _SQUAD_STOP.sub(" ", s)
    return " ".join(s.split())


def _bag_f1(pred: list[str], gold: list[str]) -> float:
    common = Counter(pred) & Counter(gold)
    same = sum(common.values())
    if same == 0:
        return 0.0
    p = same / len(pred)
    r = same / len(gold)
    return 2 * p * r / (p + r)


def locomo_token_f1(prediction: str, gold: str) -> float:
    """Porter-stemmed bag-of-tokens F1 after LoCoMo normalisation (the official `f1_score`)."""
    stem = _stemmer().stem
    pred = [stem(w) for w in normalize_locomo(prediction).split()]
    ref = [stem(w) for w in normalize_locomo(gold).split()]
    return _bag_f1(pred, ref)


def locomo_multi_answer_f1(prediction: str, gold: str) -> float:
    """Official category-1 score: mean over ','-separated gold parts of the best part-wise F1."""
    preds = [p.strip() for p in str(prediction).split(",")]
    golds = [g.strip() for g in str(gold).split(",")]
    return sum(max(locomo_token_f1(p, g) for p in preds) for g in golds) / len(golds)


def is_abstention(prediction: str) -> bool:
    low = str(prediction).lower()
    return any(p in low for p in ABSTENTION_PHRASES)


def locomo_f1(prediction: str, gold: str, category: str | int) -> float:
    """The official LoCoMo per-question score for `category` (1-5); see the module docstring."""
    cat = str(category)
    if cat == "5":
        return 1.0 if is_abstention(prediction) else 0.0
    gold = str(gold)
    if cat == "3":
        gold = gold.split(";")[0].strip()
    if cat == "1":
        return locomo_multi_answer_f1(prediction, gold)
    if cat in ("2", "3", "4"):
        return locomo_token_f1(prediction, gold)
    raise ValueError(f"locomo_f1: unknown LoCoMo category {category!r} (expected 1-5)")


def squad_f1(prediction: str, golds: list[str] | str) -> float:
    """SQuAD-style token F1, maximum over reference answers."""
    refs = [golds] if isinstance(golds, str) else list(golds)
    if not refs:
        raise ValueError("squad_f1: no reference answers")
    pred = normalize_squad(prediction).split()
    best = 0.0
    for g in refs:
        ref = normalize_squad(g).split()
        if not pred and not ref:
            best = max(best, 1.0)
        elif pred and ref:
            best = max(best, _bag_f1(pred, ref))
    return best


def bleu1(prediction: str, golds: list[str] | str) -> float:
    """Sentence BLEU-1 (nltk, weights (1,0,0,0), smoothing method1) on SQuAD-normalised tokens."""
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    refs = [golds] if isinstance(golds, str) else list(golds)
    ref_toks = [normalize_squad(g).split() for g in refs]
    ref_toks = [r for r in ref_toks if r]
    hyp = normalize_squad(prediction).split()
    if not ref_toks or not hyp:
        return 0.0
    return float(sentence_bleu(ref_toks, hyp, weights=(1, 0, 0, 0),
                               smoothing_function=SmoothingFunction().method1))


def answer_scores(prediction: str, answers: list[str], category: str, benchmark: str) -> dict[str, float | str]:
    """All string metrics for one question. LoCoMo gets its official per-category rules; other
    benchmarks get the plain stemmed token F1 (max over references) under the same name."""
    if not answers:
        answers = [""]
    if benchmark == "locomo":
        gold = answers[0]
        f1 = locomo_f1(prediction, gold, category)
        scoring = "abstention" if str(category) == "5" else "answer"
    else:
        f1 = max(locomo_token_f1(prediction, a) for a in answers)
        scoring = "answer"
    out: dict[str, float | str] = {"f1_locomo": f1, "scoring": scoring}
    if scoring == "answer":
        out["f1_squad"] = squad_f1(prediction, answers)
        out["bleu1"] = bleu1(prediction, answers)
    return out
