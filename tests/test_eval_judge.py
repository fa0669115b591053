"""LLM judge and semantic coverage against the local OpenAI-compatible test server."""

from __future__ import annotations

import json

import pytest
from qgmem.testing.openai_server import OpenAIServer

from qgmem.evaluation.coverage import reference_facts, semantic_coverage
from qgmem.evaluation.judge import Judge, build_judge_prompt, parse_label, parse_yes_no, repeated_accuracy
from qgmem.llm import LLMConfig, make_backend
from qgmem.types import Question


def _backend(srv: OpenAIServer, retries: int = 1):
    return make_backend(LLMConfig(backend="openai", model="judge", base_url=srv.base_url, cache=False,
                                  max_retries=retries, backoff_base_s=0.01, backoff_max_s=0.02, timeout_s=10))


def _user(req: dict) -> str:
    return [m["content"] for m in req["messages"] if m["role"] == "user"][0]


Q4 = Question("c:q1", "Where does Alice work now?", ["Globex"], "4", conversation_id="c")


def test_locomo_judge_reads_correct_and_incorrect_from_the_server():
    def handler(req: dict) -> str:
        user = _user(req)
        label = "CORRECT" if "Model answer: Globex" in user else "INCORRECT"
        return json.dumps({"reason": "compared with the reference", "label": label})

    with OpenAIServer(handler) as srv:
        judge = Judge(_backend(srv), "locomo", repeats=3)
        right = judge.judge(Q4, "Globex")
        wrong = judge.judge(Q4, "Acme Corp")
        assert right.runs == [1, 1, 1] and right.score == 1.0
        assert wrong.runs == [0, 0, 0] and wrong.score == 0.0
        assert "Reference answer: Globex" in _user(srv.requests[0])
        assert all(r["temperature"] == 0.0 for r in srv.requests)
        # the three runs are distinct requests (a response cache would otherwise merge them)
        assert len({json.dumps(r["messages"]) for r in srv.requests[:3]}) == 3
    assert judge.backend.usage.phases["judge"].calls == 6


def test_a_judge_that_keeps_failing_is_reported_failed_not_wrong():
    with OpenAIServer(lambda req: (500, json.dumps({"error": {"message": "boom"}}))) as srv:
        judge = Judge(_backend(srv, retries=1), "locomo", repeats=2)
        v = judge.judge(Q4, "Globex")
        assert v.runs == [None, None]
        assert v.score is None and v.failed_runs == 2
        assert all(r.startswith("FAILED") for r in v.reasons)
        assert len(srv.requests) == 4  # 2 runs x (1 try + 1 backend retry)
    assert judge.backend.usage.phases["judge"].failed == 2
    # in the aggregate a failed run is excluded and counted, never a 0
    agg = repeated_accuracy([[1, 1], [None, None], [0, 1]])
    assert agg["mean"] == pytest.approx((1 / 2 + 2 / 2) / 2) and agg["failed_judgements"] == 2
    assert agg["failed_questions"] == 1


def test_unparseable_reply_is_repaired_then_counted_failed():
    replies = ["I think it is fine", json.dumps({"reason": "same", "label": "CORRECT"}),
               "hmm", "still hmm", "no idea"]
    with OpenAIServer(replies) as srv:
        judge = Judge(_backend(srv), "locomo", repeats=1, parse_retries=1)
        v = judge.judge(Q4, "Globex")
        assert v.runs == [1] and v.parse_repairs == 1
        # the repair turn shows the model its own reply and asks again
        assert srv.requests[1]["messages"][-2] == {"role": "assistant", "content": "I think it is fine"}
        v2 = judge.judge(Q4, "Globex")
        assert v2.runs == [None] and "unparseable" in v2.reasons[0]


def test_repeated_runs_mean_and_std_by_hand_and_reproducible():
    agg = repeated_accuracy([[1, 0], [1, 1], [None, 1]])
    # run 1: 2/2 = 1; run 2: 2/3 -> mean 5/6, population std 1/6
    assert agg["mean"] == pytest.approx(5 / 6) and agg["std"] == pytest.approx(1 / 6)

    def handler(req: dict) -> str:  # deterministic, but different per run marker
        sysmsg = req["messages"][0]["content"]
        return json.dumps({"reason": "r", "label": "CORRECT" if "run 2" not in sysmsg else "INCORRECT"})

    with OpenAIServer(handler) as srv:
        b = _backend(srv)
        a1 = Judge(b, "locomo", repeats=3).judge(Q4, "Globex").runs
        a2 = Judge(b, "locomo", repeats=3).judge(Q4, "Globex").runs
    assert a1 == a2 == [1, 0, 1]


def test_longmemeval_uses_the_official_per_type_prompts():
    cases = {
        "temporal-reasoning": "do not penalize off-by-one errors",
        "knowledge-update": "previous information along with an updated answer",
        "single-session-preference": "Rubric:",
        "multi-session": "contains all the intermediate steps",
    }
    for cat, phrase in cases.items():
        p = build_judge_prompt("longmemeval-s", Question("x", "q?", ["a"], cat), "resp")
        assert phrase in p.messages[0]["content"], cat
    p = build_judge_prompt("longmemeval-s", Question("x_abs", "q?", ["explanation"], "temporal-reasoning"), "r")
    assert p.kind == "longmemeval_abstention" and "unanswerable" in p.messages[0]["content"]
    # LoCoMo category 5 gets an abstention prompt showing the adversarial answer as a wrong one
    q5 = Question("c:q9", "What is Bob's cat called?", [], "5", meta={"adversarial_answer": "Tom"})
    p5 = build_judge_prompt("locomo", q5, "not mentioned")
    assert p5.kind == "locomo_abstention_judge" and "Tom" in p5.messages[0]["content"]

    with OpenAIServer(["Yes.", "no", "maybe"]) as srv:
        j = Judge(_backend(srv), "longmemeval-s", repeats=1, parse_retries=0)
        q = Question("y", "How many days?", ["18 days"], "temporal-reasoning")
        assert j.judge(q, "19 days").runs == [1]
        assert j.judge(q, "3 days").runs == [0]
        assert j.judge(q, "?").runs == [None]


def test_label_parsers():
    assert parse_label('```json\n{"reason": "ok", "label": "correct"}\n```') == (1, "ok")
    assert parse_label("INCORRECT")[0] == 0
    with pytest.raises(ValueError):
        parse_label("CORRECT or INCORRECT, hard to say")
    assert parse_yes_no("Yes, it matches")[0] == 1
    with pytest.raises(ValueError):
        parse_yes_no("unclear")


def test_coverage_is_the_share_of_entailed_reference_facts():
    q = Question("c:q2", "What does Bob read?", ["Dune; Foundation"], "1")
    assert reference_facts(q) == ["Dune", "Foundation"]

    def handler(req: dict) -> str:
        user = _user(req)
        return json.dumps({"entailed": "Reference fact: Dune" in user})

    with OpenAIServer(handler) as srv:
        res = semantic_coverage(_backend(srv), q, "He reads Dune.")
    assert res.entailed == [True, False] and res.score == 0.5
    with OpenAIServer(lambda req: (500, "{}")) as srv:
        failed = semantic_coverage(_backend(srv, retries=0), q, "He reads Dune.")
    assert failed.entailed == [None, None] and failed.score is None and failed.as_dict()["failed"] == 2
    nug = Question("b:1", "q", ["x"], "c", meta={"nuggets": ["fact one", "fact two", "fact three"]})
    assert reference_facts(nug) == ["fact one", "fact two", "fact three"]
