"""LongMemEval's official retrieval protocol and flat-bm25, on a fixture in the upstream layout written for
this test (tests/fixtures/data/longmemeval_official): corpus ids, gold, `noans`, skips, BM25 scores and the
metrics, all worked out by hand below.

The fixture's four haystacks: q1 (gold user turn in answer_aa1; answer_aa1's other user turn and the whole
answer_aa2, whose only has_answer turn is the assistant's, are renamed noans), q2_abs (abstention), q3 (the
only has_answer turn is the assistant's: no user-side target), q4 (two gold turns in two sessions, a filler
session repeated under one id, and a noans distractor that matches the question best).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from qgmem.baselines.flat_bm25 import FlatBM25, OkapiIndex, tokens
from qgmem.config import ConfigError
from qgmem.data.longmemeval import load_longmemeval
from qgmem.evaluation import lme_official as lo
from qgmem.evaluation.config import RetrievalBenchConfig
from qgmem.evaluation.retrieval import run_benchmark
from qgmem.io import read_jsonl
from qgmem.types import MemoryItem

ROOT = Path(__file__).parent / "fixtures" / "data" / "longmemeval_official"
FIX = ROOT / "longmemeval" / "longmemeval_s_cleaned.json"


@pytest.fixture(scope="module")
def convs():
    return {c.id: c for c in load_longmemeval("s", FIX)}


def _corpus(convs, qid):
    c = convs[qid]
    return lo.corpus(c, c.questions[0])


def test_corpus_is_user_turns_with_noans_renaming_and_the_official_skips(convs):
    q1 = _corpus(convs, "q1")
    # user turns only, numbered 1.. over all roles of their session; answer_aa1's turn 3 lacks has_answer
    assert q1.turn_ids == ["filler_1_1", "filler_1_3", "answer_aa1_1", "noans_aa1_3", "filler_2_1", "noans_aa2_1"]
    # answer_aa2's has_answer turn is the assistant's: the session is renamed, not gold
    assert q1.session_ids == ["filler_1", "answer_aa1", "filler_2", "noans_aa2"]
    assert q1.gold("turn") == {"answer_aa1_1"} and q1.gold("session") == {"answer_aa1"} and q1.skip is None
    assert _corpus(convs, "q2_abs").skip == lo.SKIP_ABSTENTION  # even with a gold user turn
    q3 = _corpus(convs, "q3")
    assert q3.skip == lo.SKIP_NO_USER_TARGET and q3.gold("turn") == set()
    q4 = _corpus(convs, "q4")  # the repeated filler session keeps its one id, twice
    assert q4.turn_ids == ["filler_3_1", "answer_bb1_1", "filler_3_1", "answer_bb2_1", "noans_bb2_3"]
    assert q4.gold("turn") == {"answer_bb1_1", "answer_bb2_1"}


def test_okapi_scores_by_hand():
    """q4's five user turns: df 1 -> idf ln(4.5/1.5); df 2 -> ln(3.5/2.5); "I" (df 3) has a negative idf,
    replaced by 0.25 x the mean idf of the 14 distinct tokens; avgdl 19/5."""
    docs = ["I love jazz", "I visit Rome next week", "I love jazz", "we did visit Oslo", "which cities are best"]
    idx = OkapiIndex([tokens(d) for d in docs])
    idf1, idf2, idf3 = math.log(4.5 / 1.5), math.log(3.5 / 2.5), math.log(2.5 / 3.5)
    eps = 0.25 * (10 * idf1 + 3 * idf2 + idf3) / 14

    def f(dl: int) -> float:
        return 2.5 / (1 + 1.5 * (0.25 + 0.75 * dl / 3.8))

    expected = [eps * f(3), (eps + idf2) * f(5), eps * f(3), (idf1 + idf2) * f(4), 2 * idf1 * f(4)]
    got = idx.scores(tokens("which cities did I visit"))
    assert got == pytest.approx(expected, rel=1e-12)
    # ties (the two identical documents) by document order; a top-2 is a prefix of the top-5
    assert [i for i, _ in idx.rank(tokens("which cities did I visit"), 5)] == [4, 3, 1, 0, 2]
    assert idx.rank(tokens("which cities did I visit"), 2) == idx.rank(tokens("which cities did I visit"), 5)[:2]
    # single-space split: case, punctuation and empty tokens are kept; an unknown token adds nothing
    assert tokens("Hi  there, you") == ["Hi", "", "there,", "you"]
    assert idx.scores(tokens("jazz?")).tolist() == [0.0] * 5


def test_okapi_equals_rank_bm25():
    """Same scores, bit for bit, as the package LongMemEval's script calls (when it is installed)."""
    rank_bm25 = pytest.importorskip("rank_bm25")
    rng = np.random.default_rng(0)
    words = ["a", "b", "c", "d", "", "E", "f.", "g"]
    for n in (1, 2, 5, 40):
        docs = [[str(w) for w in rng.choice(words, size=int(rng.integers(1, 9)))] for _ in range(n)]
        query = [str(w) for w in rng.choice(words + ["zz"], size=6)]
        assert OkapiIndex(docs).scores(query).tolist() == rank_bm25.BM25Okapi(docs).get_scores(query).tolist()


def test_flat_bm25_turn_and_session_rankings(convs):
    m = FlatBM25("turn")
    m.build(convs["q4"])
    wm = m.activate(convs["q4"].questions[0], 100)
    # only user turns; "which cities are best" (noans) first, then the two gold turns (see the scores above)
    assert [it.turn_ids for it in wm.items] == [["s0003:2"], ["s0003:0"], ["s0001:0"], ["s0000:0"], ["s0002:0"]]
    s = FlatBM25("session")
    s.build(convs["q4"])
    wm = s.activate(convs["q4"].questions[0], 100)
    # a session is its user turns joined; N = 4, so "visit" (df 2) has idf 0 and "I" the epsilon floor:
    # answer_bb1 ("I visit Rome next week", 5 tokens) scores below the two 3-token jazz sessions
    assert [it.meta["session_id"] for it in wm.items] == ["s0003", "s0000", "s0002", "s0001"]
    assert wm.items[0].text == "we did visit Oslo which cities are best" and s.ranks == "sessions"


def test_official_metrics_by_hand(convs):
    c = convs["q4"]
    corpus = _corpus(convs, "q4")
    m = FlatBM25("turn")
    m.build(c)
    got = lo.score(m.activate(c.questions[0], 100).items, corpus)
    # gold turns at ranks 2 and 3 of 5; the official DCG weighs ranks 1 and 2 alike: (1 + 1/log2 3) / 2
    nd = (1 + 1 / math.log2(3)) / 2
    for k in (1, 3, 5, 10, 30, 50):
        hit = 0.0 if k == 1 else 1.0
        assert got[f"turn_recall_any@{k}"] == hit and got[f"turn_recall_all@{k}"] == hit
        assert got[f"turn_ndcg_any@{k}"] == pytest.approx(0.0 if k == 1 else nd)
        # sessions from the turn ranking: noans_bb2, answer_bb2, answer_bb1 are three distinct sessions
        assert got[f"session_recall_all@{k}"] == hit
        assert got[f"session_ndcg_any@{k}"] == pytest.approx(0.0 if k == 1 else nd)
    s = FlatBM25("session")
    s.build(c)
    got = lo.score(s.activate(c.questions[0], 100).items, corpus, "sessions")
    assert "turn_recall_any@1" not in got
    # session corpus [filler_3, answer_bb1, filler_3, answer_bb2], ranked answer_bb2, filler, filler, answer_bb1
    assert (got["session_recall_any@1"], got["session_recall_all@1"], got["session_ndcg_any@1"]) == (1.0, 0.0, 1.0)
    assert (got["session_recall_all@3"], got["session_ndcg_any@3"]) == (0.0, pytest.approx(1 / 2))
    assert (got["session_recall_all@5"], got["session_ndcg_any@5"]) == (1.0, pytest.approx((1 + 1 / 2) / 2))


def test_units_spanning_turns_and_assistant_units_map_onto_user_turns(convs):
    corpus = _corpus(convs, "q4")

    def item(*turns: str) -> MemoryItem:
        return MemoryItem(label="", kind="unit", text="", turn_ids=list(turns))

    # an assistant-only unit takes no rank; a span places each of its user turns, in turn order, once
    items = [item("s0001:1"), item("s0003:0", "s0003:1", "s0003:2"), item("s0003:2"), item("s0001:0")]
    assert lo.turn_ranking(items, corpus) == [3, 4, 1]
    got = lo.score(items, corpus)
    assert got["turn_recall_any@1"] == 1.0 and got["turn_recall_all@1"] == 0.0 and got["turn_recall_all@3"] == 1.0
    assert got["turn_ndcg_any@3"] == pytest.approx((1 + 0 + 1 / math.log2(3)) / 2)
    # nothing returned: nothing retrieved; recall_all of a question without gold is 1, as officially
    assert lo.score([], corpus)["turn_recall_any@50"] == 0.0
    assert lo.evaluate([0], set(), ["x"], 1) == (0.0, 1.0, 0.0)


def test_turn_to_session_grows_k_to_k_distinct_sessions():
    ids = ["s1_1", "s1_2", "answer_g_1", "noans_g_2", "s2_1"]
    # top 3 turns hold s1, answer_g: k grows to 4 (+ noans_g, a session of its own, as officially); relevance is
    # per turn position, so the gold session's one turn at rank 3 gives 1/log2(3) of an ideal 1
    assert lo.turn_to_session([0, 1, 2, 3, 4], {"answer_g_1"}, ids, 3) == (1.0, 1.0, pytest.approx(1 / math.log2(3)))
    # more sessions asked than exist: the whole ranking
    assert lo.turn_to_session([4, 3, 1, 0, 2], {"answer_g_1"}, ids, 10)[0] == 1.0


def _run(tmp_path, **kw) -> dict:
    cfg = RetrievalBenchConfig(benchmark="longmemeval-s", data_dir=str(ROOT), output_dir=str(tmp_path / "out"),
                               store_dir=str(tmp_path / "store"), k=3, methods=["flat-bm25", "flat-bm25-session"],
                               run_name="r", **kw)
    return run_benchmark(cfg)


def test_harness_reports_the_official_protocol_first_then_all_turns(tmp_path):
    s = _run(tmp_path)
    assert s["protocol"] == "official"
    turn, sess = s["groups"]["overall"]["flat-bm25"], s["groups"]["overall"]["flat-bm25-session"]
    for m in (turn, sess):
        assert (m["official_scored"], m["official_skipped_abstention"], m["official_skipped_no_user_target"]) == (2, 1, 1)
    # q1: the gold turn ranks first (it alone has "blue"); q4 as in test_official_metrics_by_hand
    nd = (1 + 1 / math.log2(3)) / 2
    assert turn["official_turn_recall_any@1"] == 0.5 and turn["official_turn_recall_all@3"] == 1.0
    assert turn["official_turn_ndcg_any@3"] == pytest.approx((1 + nd) / 2)
    assert turn["official_session_ndcg_any@10"] == pytest.approx((1 + nd) / 2)
    assert sess["official_session_recall_all@3"] == 0.5 and sess["official_session_ndcg_any@3"] == pytest.approx(0.75)
    assert sess["official_session_ndcg_any@5"] == pytest.approx((1 + 0.75) / 2)
    # (LongMemEval's run_retrieval.py prints these same means on this fixture, and skips q2_abs and q3)
    assert "official_turn_recall_any@1" not in sess
    # the all-turns protocol, as before: q3 (assistant gold) is scored there, the abstention question is not
    assert turn["scored"] == 3 and "all_turns_turn_recall_any@5" in turn
    md = (tmp_path / "out" / "longmemeval-s" / "r" / "results.md").read_text()
    assert md.index("## LongMemEval official protocol") < md.index("## All-turns protocol")
    assert "### official, session level: overall" in md and "| flat-bm25-session | 2 |" in md
    rows = {(r["method"], r["qid"]): r for r in read_jsonl(tmp_path / "out" / "longmemeval-s" / "r" / "retrieval.jsonl")}
    assert rows[("flat-bm25", "q3/q3")]["lme_official"] == {"skip": lo.SKIP_NO_USER_TARGET}
    assert rows[("flat-bm25", "q4/q4")]["lme_official"]["ranked"] == 5 == rows[("flat-bm25", "q4/q4")]["lme_official"]["corpus"]
    assert len(rows[("flat-bm25", "q4/q4")]["items"]) == 3  # the k items of the all-turns scores


def test_all_turns_protocol_alone_and_config_errors(tmp_path):
    s = _run(tmp_path, protocol="all-turns")
    assert not any(k.startswith("official_") for k in s["groups"]["overall"]["flat-bm25"])
    assert RetrievalBenchConfig(benchmark="locomo").protocol == "all-turns"
    with pytest.raises(ValueError, match="'official' is LongMemEval's protocol"):
        RetrievalBenchConfig(benchmark="locomo", protocol="official")
    with pytest.raises(ValueError, match="protocol: 'trec'"):
        RetrievalBenchConfig(benchmark="longmemeval-s", protocol="trec")
    with pytest.raises(ConfigError, match="does not answer questions"):
        from qgmem.methods import spec
        spec("flat-bm25", "qa")


def test_official_protocol_needs_the_benchmark_session_ids(tiny_conversation):
    q = tiny_conversation.questions[0]
    with pytest.raises(ValueError, match="protocol 'official' needs LongMemEval's session ids"):
        lo.corpus(tiny_conversation, q)


REFERENCE = Path(__file__).parent / "fixtures" / "lme_official_reference.json"


@pytest.mark.data
def test_flat_bm25_equals_the_official_script_on_longmemeval_s(data_dir):
    """The official script's own per-question metrics (its retrieval logs, turn and session granularity; how they
    were made is the fixture's "source") on the first questions of the S file in the data directory."""
    import json

    from qgmem.data.longmemeval import default_path, iter_longmemeval

    path = default_path("s", data_dir)
    if path.name != "longmemeval_s_cleaned.498.json.xz" or not path.exists():
        pytest.skip(f"the reference was made on longmemeval_s_cleaned.498.json.xz, not {path}")
    ref = json.loads(REFERENCE.read_text())
    methods = {"turn": FlatBM25("turn"), "session": FlatBM25("session")}
    seen = set()
    for c in iter_longmemeval("s", path, limit=32):
        q = c.questions[0]
        corpus = lo.corpus(c, q)
        assert corpus.skip == ref["skipped"].get(q.id), q.id
        if q.id not in ref["questions"]:
            continue
        r = ref["questions"][q.id]
        expected = {"turn": {**{f"turn_{k}": v for k, v in r["turn"].items()},
                             **{f"session_{k}": v for k, v in r["session_from_turns"].items()}},
                    "session": {f"session_{k}": v for k, v in r["session"].items()}}
        for gran, m in methods.items():
            m.build(c)
            got = lo.score(m.activate(q, 10**6).items, corpus, m.ranks)
            m.release(c.id)
            assert got == pytest.approx(expected[gran], abs=1e-12), (q.id, gran)
        seen.add(q.id)
    assert seen == set(ref["questions"])
