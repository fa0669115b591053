"""The answer (generation) step and the method registry, against the local OpenAI-compatible server."""

from __future__ import annotations

import json

import pytest
from qgmem.testing.openai_server import OpenAIServer

from qgmem.baselines.full_context import FullContext
from qgmem.evaluation.config import EvalConfig
from qgmem.evaluation.runner import evaluate
from qgmem.io import read_jsonl
from qgmem.llm import LLMConfig, make_backend
from qgmem.answer import count_tokens, generate_answer
from qgmem.config import ConfigError
from qgmem.methods import MethodUnavailable, make_method


def _backend(srv: OpenAIServer, retries: int = 1):
    return make_backend(LLMConfig(backend="openai", model="answerer", base_url=srv.base_url, cache=False,
                                  max_retries=retries, backoff_base_s=0.01, backoff_max_s=0.02, timeout_s=10))


def test_answer_path_sends_memory_and_question_and_parses_the_answer_line(tiny_conversation):
    m = FullContext()
    m.build(tiny_conversation)
    q = tiny_conversation.questions[0]
    wm = m.activate(q)
    with OpenAIServer(["Alice moved to Globex [S2].\nAnswer: Globex"]) as srv:
        b = _backend(srv)
        ans = generate_answer(m, q, wm, b, max_tokens=40)
        req = srv.requests[0]
    assert ans.prediction == "Globex" and ans.error is None and ans.cited == []
    user = req["messages"][-1]["content"]
    assert "Alice: Big news: I left Acme Corp" in user and "Where does Alice work now?" in user
    assert "10:00 am on 20 August, 2023" in user  # session dates reach the model
    assert req["max_tokens"] == 40 and req["temperature"] == 0.0
    g = b.usage.phases["generation"]
    assert g.calls == 1 and g.prompt_tokens > 0 and ans.prompt_tokens == g.prompt_tokens


def test_failed_answers_are_recorded_and_counted_not_dropped(tmp_path, tiny_conversation):
    cfg = EvalConfig(methods=["full-context"], output_dir=str(tmp_path), bootstrap_resamples=200)
    with OpenAIServer(lambda req: (503, json.dumps({"error": {"message": "overloaded"}}))) as srv:
        run_dir, s = evaluate(cfg, [tiny_conversation], _backend(srv, retries=1), show_progress=False)
    recs = list(read_jsonl(run_dir / "predictions.jsonl"))
    assert len(recs) == 3 and all(r["answer_error"] and r["prediction"] == "" for r in recs)
    assert s["methods"]["full-context"]["overall"]["answer_failed"] == 3
    assert s["methods"]["full-context"]["costs"]["llm"]["generation"]["failed"] == 3
    assert "Failed answer calls" in (run_dir / "report.md").read_text()


def test_full_context_keeps_the_newest_turns_within_the_budget_and_says_so(tiny_conversation):
    m = FullContext(max_context_tokens=50)
    m.build(tiny_conversation)
    wm = m.activate(tiny_conversation.questions[0])
    kept = wm.turn_ids()
    assert kept[-1] == "D2:4" and "D1:1" not in kept
    all_ids = [t.id for t in tiny_conversation.turns()]
    assert kept == all_ids[-len(kept):]  # a contiguous newest stretch
    assert wm.meta["truncated"] and wm.meta["dropped_turns"] == len(all_ids) - len(kept)
    assert wm.context_tokens <= 50 and wm.context_tokens == count_tokens(m.render(wm))  # note and headers counted
    assert "turns were cut to fit the context budget" in m.render(wm)
    whole = FullContext()
    whole.build(tiny_conversation)
    assert not whole.activate(tiny_conversation.questions[0]).meta["truncated"]


def test_registry_errors_name_the_method(tmp_path):
    with pytest.raises(MethodUnavailable, match="unknown method 'magic'"):
        make_method("magic")
    with pytest.raises(MethodUnavailable, match="checkpoint"):
        make_method("qgmem-graph-token", store_root=tmp_path / "store")
    with pytest.raises(ConfigError, match="method_options.full-context.max_tokens: unknown option"):
        make_method("full-context", max_tokens=3)
    with pytest.raises(ConfigError, match="'naive-rag' was renamed: use 'dense-turns'"):
        make_method("naive-rag")
    m = make_method("bm25-turns")
    assert m.name == "bm25-turns" and callable(m.activate)
    assert make_method("full-context", max_context_tokens=7).max_context_tokens == 7


def test_memory_text_follows_the_method_protocol_not_its_name(tiny_conversation, tmp_path):
    from qgmem.answer import memory_text
    from qgmem.methods import GraphTokenMethod
    from qgmem.types import MemoryMethod, MethodBase

    text_m = make_method("qgmem-text", store=tmp_path / "store", extractor="rule")
    act_m = make_method("qgmem-activation", store=tmp_path / "store")
    for m in (text_m, act_m):
        assert isinstance(m, MemoryMethod)
        m.build(tiny_conversation)
    q = tiny_conversation.questions[0]
    wm = text_m.activate(q, k=5)
    assert text_m.graph_in_memory and not act_m.graph_in_memory
    with_graph = memory_text(text_m, wm)
    assert "Relations between memory entries" in with_graph
    assert "Relations between memory entries" not in memory_text(act_m, wm)
    assert "Relations between memory entries" not in memory_text(text_m, wm, with_graph=False)
    text_m.name = "renamed"  # the name decides nothing
    assert memory_text(text_m, wm) == with_graph
    fc = FullContext()
    fc.build(tiny_conversation)
    fwm = fc.activate(q)
    assert memory_text(fc, fwm) == fc.render(fwm) and "Session" in memory_text(fc, fwm)
    assert GraphTokenMethod.answers_itself and not MethodBase.answers_itself

    class Own(MethodBase):  # a method that answers with its own model never needs a backend
        answers_itself = True

        def answer(self, question, wm, max_tokens):
            return f"Answer: own {max_tokens}", 3, 2

    ans = generate_answer(Own(), q, wm, None, max_tokens=9)
    assert ans.prediction == "own 9" and ans.prompt_tokens == 3 and ans.memory_text == ""


def test_memory_text_is_cut_to_the_context_budget_and_flagged(tiny_conversation):
    from qgmem.answer import count_tokens
    from qgmem.answer import cap_tokens

    text, cut = cap_tokens("a b, c d e", 3)  # tokens: a b , | c d e
    assert cut and text.startswith("a b,") and "c d" not in text and "context budget" in text
    assert cap_tokens("a b", 3) == ("a b", False) and cap_tokens("a b c d", 0) == ("a b c d", False)

    m = FullContext()
    m.build(tiny_conversation)
    q = tiny_conversation.questions[0]
    with OpenAIServer(["Answer: Globex"]) as srv:
        ans = generate_answer(m, q, m.activate(q), _backend(srv), max_context_tokens=20)
        user = srv.requests[0]["messages"][-1]["content"]
    assert ans.memory_truncated and count_tokens(ans.memory_text) <= 20 + 12
    assert "(memory cut here to fit the context budget)" in user


@pytest.mark.parametrize("reply, answer, labels, cut", [
    # truncated reasoning: never the answer, whatever its last line says
    ("<think>\nThe memory says [M2] Alice works at Acme, so maybe the answer is Acme", "", [], True),
    ("<think>\nAlice moved.\nAnswer: Globex [M1]", "Globex", ["M1"], True),  # an answer line after it is kept
    ("<think>she moved [M3]</think>\nAnswer: Globex [M1]", "Globex", ["M1"], False),  # closed: dropped whole
    # the template wrote <think> into the prompt, so the reply holds only its end
    ("Alice left Acme [M2], so\n</think>\n\nAnswer: Globex", "Globex", [], False),
    ("plain reply [M1]\nAnswer: Paris", "Paris", ["M1"], False),
])
def test_parse_reply_never_takes_unclosed_reasoning_as_the_answer(reply, answer, labels, cut):
    from qgmem.answer import parse_answer, parse_reply

    r = parse_reply(reply)
    assert (r.answer, r.labels, r.reasoning_cut) == (answer, labels, cut)
    assert parse_answer(reply) == (answer, labels)


def test_cut_reasoning_is_a_counted_failed_answer_not_a_prediction(tmp_path, tiny_conversation):
    """A Qwen3 reply stopped at max_tokens inside <think>: empty prediction, the error says why and
    what to change, the run counts it as a failed answer."""
    cut = "<think>\nOkay, the user asks where Alice works. Looking at the memory, Alice"
    with OpenAIServer([cut]) as srv:
        cfg = EvalConfig(methods=["full-context"], output_dir=str(tmp_path), bootstrap_resamples=50)
        run_dir, summary = evaluate(cfg, [tiny_conversation], _backend(srv), show_progress=False)
    recs = read_jsonl(run_dir / "predictions.jsonl")
    assert recs and all(r["prediction"] == "" for r in recs)
    assert all("reasoning cut off" in r["answer_error"] and "enable_thinking" in r["answer_error"] for r in recs)
    overall = summary["methods"]["full-context"]["overall"]
    assert overall["answer_failed"] == overall["n"] > 0
