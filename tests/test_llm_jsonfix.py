"""JSON repair on the kinds of broken output small models actually produce."""

from __future__ import annotations

import pytest

from qgmem.llm import (
    JSONReplyError,
    LLMError,
    ScriptedBackend,
    chat_json,
    parse_json_lenient,
)


@pytest.mark.parametrize(
    "raw, expected",
    [
        ('{"facts": ["Alice works at Globex"]}', {"facts": ["Alice works at Globex"]}),
        ('```json\n{"facts": ["a", "b"]}\n```', {"facts": ["a", "b"]}),
        ('Sure! Here is the JSON you asked for:\n```\n[{"s": "Alice", "p": "lives_in", "o": "Seattle"}]\n```\nLet me know!',
         [{"s": "Alice", "p": "lives_in", "o": "Seattle"}]),
        ('Here are the facts: {"facts": ["x",], "n": 2,}  I hope this helps.', {"facts": ["x"], "n": 2}),
        ("{'name': 'Bob', 'likes': ['Dune', 'Foundation'], 'married': False, 'pet': None}",
         {"name": "Bob", "likes": ["Dune", "Foundation"], "married": False, "pet": None}),
        ('{event: "hiking", "when": "2023-05-07", valid: True}', {"event": "hiking", "when": "2023-05-07", "valid": True}),
        ("Alice's answer: {'quote': 'I don\\'t know \"why\"'}", {"quote": "I don't know \"why\""}),
        ('{"a": 1} and then {"b": 2}', {"a": 1}),
        ('I think [the] answer is {"answer": "Paris"}', {"answer": "Paris"}),
        ('{"text": "a {brace} inside, and a ] too", "k": [1, 2]}', {"text": "a {brace} inside, and a ] too", "k": [1, 2]}),
        ('{"a": 1, // the count\n "b": "x"}', {"a": 1, "b": "x"}),
        ('\u201cnot json\u201d {\u201canswer\u201d: \u201cyes\u201d}', {"answer": "yes"}),
        ('{"summary": "line one\nline two"}', {"summary": "line one\nline two"}),
        ("[]", []),
        ("42", 42),
    ],
)
def test_parse_json_lenient_repairs(raw: str, expected: object) -> None:
    assert parse_json_lenient(raw) == expected


@pytest.mark.parametrize(
    "raw, needle",
    [
        ("", "empty"),
        ("   ", "empty"),
        ("I cannot answer that.", "no JSON"),
        ('{"facts": ["Alice works at', "could not parse"),  # truncated: never guessed
        ("{this is: not, json at all because : :}", "could not parse"),
    ],
)
def test_parse_json_lenient_errors_say_why(raw: str, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        parse_json_lenient(raw)


def _need_facts(value: object) -> list[str]:
    if not isinstance(value, dict) or not isinstance(value.get("facts"), list):
        raise ValueError('expected an object with a "facts" list')  # noqa: TRY004 - chat_json's contract
    return [str(f) for f in value["facts"]]


def test_chat_json_repairs_without_reasking() -> None:
    be = ScriptedBackend(["```json\n{'facts': ['Alice lives in Seattle',],}\n```"])
    assert chat_json(be, [{"role": "user", "content": "extract"}], validate=_need_facts, phase="construction") == [
        "Alice lives in Seattle"
    ]
    assert len(be.requests) == 1 and be.requests[0].json_mode
    assert be.usage.phases["construction"].calls == 1


def test_chat_json_reasks_with_the_error_then_succeeds() -> None:
    be = ScriptedBackend(['{"fact": "wrong key"}', '{"facts": ["ok"]}'])
    out = chat_json(be, [{"role": "user", "content": "extract"}], validate=_need_facts)
    assert out == ["ok"]
    second = be.requests[1].messages
    assert second[1] == {"role": "assistant", "content": '{"fact": "wrong key"}'}
    assert "facts" in second[2]["content"] and second[2]["role"] == "user"


def test_chat_json_gives_up_with_countable_error() -> None:
    be = ScriptedBackend(["no json here", "still none", "nope"])
    with pytest.raises(JSONReplyError) as ei:
        chat_json(be, [{"role": "user", "content": "extract"}], retries=2)
    err = ei.value
    assert isinstance(err, LLMError) and isinstance(err, ValueError)
    assert err.raw == "nope" and len(err.errors) == 3
    assert len(be.requests) == 3


def test_chat_json_propagates_backend_failure() -> None:
    be = ScriptedBackend([RuntimeError("server down")])
    with pytest.raises(LLMError, match="server down"):
        chat_json(be, [{"role": "user", "content": "x"}], phase="retrieval")
    assert be.usage.phases["retrieval"].failed == 1
