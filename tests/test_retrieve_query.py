"""Query parsing: rule path (CPU default) and LLM path (scripted and over HTTP), relative times resolved."""

from __future__ import annotations

import json

import pytest
from qgmem.testing.openai_server import OpenAIServer

from qgmem.llm.scripted import ScriptedBackend
from qgmem.retrieve.query import QueryParser, parse_rule

NOW = "2023-09-01"


@pytest.mark.parametrize("text,start,end", [
    ("What did she do last May?", "2023-05-01", "2023-05-31"),
    ("What did she do last October?", "2022-10-01", "2022-10-31"),
    ("Where was he two weeks ago?", "2023-08-18", "2023-08-18"),  # a day; matching allows +/- 3 days
    ("What happened yesterday?", "2023-08-31", "2023-08-31"),
    ("What did they do on 7 May, 2023?", "2023-05-07", "2023-05-07"),
    ("What did they do on May 7th, 2023?", "2023-05-07", "2023-05-07"),
    ("What did Jon buy in June 2022?", "2022-06-01", "2022-06-30"),
    ("What happened in 2021?", "2021-01-01", "2021-12-31"),
    ("What did he do last month?", "2023-08-01", "2023-08-31"),
    ("Where did they go 3 months ago?", "2023-06-01", "2023-06-30"),
])
def test_time_expressions_resolve_against_question_time(text, start, end):
    c = parse_rule(text, NOW)
    assert (c.time_start, c.time_end) == (start, end)


def test_no_time_constraint_without_expression_or_reference():
    assert parse_rule("When did Alice visit Paris?", NOW).time_start is None
    assert parse_rule("What happened two weeks ago?", None).time_start is None  # relative needs a question time


def test_week_counted_question_time_is_marked_for_matching():
    assert parse_rule("Where was he two weeks ago?", NOW).time_grain == "week"
    assert parse_rule("What happened yesterday?", NOW).time_grain == "day"


def test_rule_parser_finds_entities_location_and_known_lowercase_names():
    c = parse_rule("What did Caroline see in Paris last May with my dog rex?", "2023-09-01", ["Rex"])
    assert "Caroline" in c.entities and "Rex" in c.entities
    assert c.location == "Paris"
    assert (c.time_start, c.time_end) == ("2023-05-01", "2023-05-31")
    assert not any(e.lower() in ("what", "may", "paris") for e in c.entities)
    assert parse_rule("what is it?").empty()


def test_llm_parser_reads_json_and_normalises():
    reply = '```json\n{"entities": ["Alice"], "location": "Paris", "time_start": "2023-07-01", "time_end": null}\n```'
    llm = ScriptedBackend([reply])
    c = QueryParser("llm", llm).parse("Where did Alice go last month?", "2023-08-20")
    assert c.source == "llm" and c.entities == ["Alice"] and c.location == "Paris"
    assert (c.time_start, c.time_end) == ("2023-07-01", "2023-07-01")
    prompt = llm.requests[0].messages[-1]["content"]
    assert "2023-08-20" in prompt and "Where did Alice go last month?" in prompt


def test_llm_parser_reasks_on_invalid_reply_then_falls_back_and_counts():
    good = '{"entities": ["Bob"], "location": null, "time_start": null, "time_end": null}'
    llm = ScriptedBackend(['{"entities": ["Bob"], "time_start": "last year"}', good])
    p = QueryParser("llm", llm)
    assert p.parse("What does Bob read?").entities == ["Bob"]
    assert len(llm.requests) == 2 and "time_start" in llm.requests[1].messages[-1]["content"]
    assert p.failures == []
    bad = QueryParser("llm", ScriptedBackend(["not json", "still not json"]))
    c = bad.parse("What does Bob read in Paris?")
    assert c.source == "rule-fallback" and "Bob" in c.entities and c.location == "Paris"
    assert len(bad.failures) == 1 and bad.failures[0]["question"] == "What does Bob read in Paris?"


def test_llm_parser_over_http_backend():
    from qgmem.llm import make_backend
    from qgmem.llm.config import LLMConfig

    def handler(req: dict) -> str:
        q = req["messages"][-1]["content"]
        assert "Question time: 2023-09-01" in q
        return json.dumps({"entities": ["Melanie"], "location": None, "time_start": "2023-08-01", "time_end": "2023-08-31"})

    with OpenAIServer(handler) as srv:
        llm = make_backend(LLMConfig(backend="openai", model="test-model", base_url=srv.base_url, cache=False,
                                     max_retries=0))
        c = QueryParser("llm", llm).parse("What did Melanie do last month?", "2023-09-01")
    assert c.source == "llm" and c.entities == ["Melanie"] and c.time_start == "2023-08-01"
    assert llm.usage.phases["retrieval"].calls >= 1


def test_parser_kind_is_checked():
    with pytest.raises(ValueError, match="rule"):
        QueryParser("regex")
    with pytest.raises(ValueError, match="backend"):
        QueryParser("llm", None)
