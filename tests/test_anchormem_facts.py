"""AnchorMem fact-context units: chunking (every session, immutable text), the extraction parser
on the prompt's own format, repair/failure accounting, resume, and the fact -> chunk mapping."""

from __future__ import annotations

import json

import pytest

from qgmem.anchormem.facts import (
    FactStats, extract_facts_llm, extraction_messages, facts_from_llm, facts_from_units, parse_facts_reply,
)
from qgmem.anchormem.prompts import load_prompt
from qgmem.anchormem.units import Chunk, Fact, from_record, make_chunks, to_record
from qgmem.llm import ScriptedBackend
from qgmem.types import AtomicUnit, Conversation


def test_make_chunks_two_turn_default_covers_every_turn(tiny_conversation: Conversation) -> None:
    chunks = make_chunks(tiny_conversation)
    assert [c.turn_ids for c in chunks] == [
        ["D1:1", "D1:2"], ["D1:3", "D1:4"], ["D1:5", "D1:6"], ["D1:7"], ["D2:1", "D2:2"], ["D2:3", "D2:4"]]
    assert [c.order for c in chunks] == list(range(6))
    assert chunks[2].text.splitlines()[0] == "[1:56 pm on 8 May, 2023]"
    assert "Alice: I love Dune. I live in Seattle now. [shares an image: a photo of a rainy street]" in chunks[2].text
    whole = make_chunks(tiny_conversation, chunk_turns=0)
    assert [len(c.turn_ids) for c in whole] == [7, 4] and [c.session_id for c in whole] == ["S1", "S2"]
    with pytest.raises(ValueError):
        make_chunks(tiny_conversation, chunk_turns=-1)


def test_make_chunks_empty() -> None:
    assert make_chunks(Conversation(id="empty", sessions=[])) == []


def test_parse_facts_reply_on_the_prompts_own_format() -> None:
    tmpl = load_prompt("extract_facts")
    example = tmpl.split("Answer:\n", 1)[1].splitlines()[0]  # the worked example's answer line
    facts = parse_facts_reply(example)
    assert len(facts) == 3 and facts[0].startswith("Odile started a new job at the Brightwater bakery")
    fmt = next(line for line in tmpl.splitlines() if line.startswith('{"facts"'))
    assert parse_facts_reply(fmt) == ["<Name> <fact>", "<Name> <fact>"]
    assert parse_facts_reply('{"facts": []}') == []
    assert parse_facts_reply('Here you go:\n```json\n{"facts": ["Bob  likes\\nDune.",]}\n```') == ["Bob likes Dune."]
    assert parse_facts_reply('[{"fact": "Bob likes Dune."}]') == ["Bob likes Dune."]
    for bad in ['{"fact_list": []}', '{"facts": "Bob likes Dune"}', '{"facts": [3]}', "(Bob likes Dune)", ""]:
        with pytest.raises(ValueError):
            parse_facts_reply(bad)


def test_extract_facts_llm_repairs_counts_and_records_failures(tiny_conversation: Conversation) -> None:
    chunks = make_chunks(tiny_conversation, chunk_turns=0)  # two chunks: S1, S2

    def reply(req) -> str:
        text = req.messages[0]["content"]
        if "Acme Corp as a data analyst" in text:  # session 1: good JSON
            return json.dumps({"facts": ["Alice started a job at Acme Corp as a data analyst.",
                                         "She lives in Seattle."]})
        return "I cannot answer in JSON." if len(req.messages) == 1 else "(still not JSON)"

    llm = ScriptedBackend(reply)
    failures: list[tuple[str, str, str]] = []
    stats = FactStats()
    by_chunk = extract_facts_llm(chunks, ["Alice", "Bob"], llm, retries=1, stats=stats,
                                 on_failure=lambda k, e, r: failures.append((k, e, r)))
    assert by_chunk["S2#0"] == [] and len(by_chunk["S1#0"]) == 2
    assert stats.failed_chunks == 1 and stats.llm.calls == 3
    assert failures == [("am_facts:S2#0", failures[0][1], "(still not JSON)")]
    assert "unparseable" in failures[0][1]
    facts = facts_from_llm(chunks, by_chunk, ["Alice", "Bob"], stats)
    assert [f.chunk_id for f in facts] == ["S1#0", "S1#0"] and facts[0].speaker == "Alice"
    assert facts[0].turn_ids == chunks[0].turn_ids
    assert stats.facts_without_name == 1 and stats.facts == 2 and stats.chunks == 2
    # the prompt names the speakers, the date and carries the chunk verbatim
    content = llm.requests[0].messages[0]["content"]
    assert "Alice and Bob" in content and "1:56 pm on 8 May, 2023" in content and chunks[0].text in content
    assert "{{" not in content and llm.requests[0].json_mode


def test_extract_facts_llm_resumes_without_recalling_done_chunks(tiny_conversation: Conversation) -> None:
    chunks = make_chunks(tiny_conversation)
    llm = ScriptedBackend(lambda req: '{"facts": ["Bob said something."]}')
    saved: list[int] = []
    done = {chunks[0].id: ["Alice said hi."], chunks[1].id: []}
    out = extract_facts_llm(chunks, ["Alice", "Bob"], llm, done=done, save_every=2,
                            checkpoint=lambda d: saved.append(len(d)))
    assert len(llm.requests) == len(chunks) - 2
    assert out[chunks[0].id] == ["Alice said hi."] and out[chunks[-1].id] == ["Bob said something."]
    assert saved == [4, 6]


def _unit(uid: str, turns: list[str], text: str) -> AtomicUnit:
    return AtomicUnit(id=uid, namespace="c1", session_id=turns[0].split(":")[0], text=text, first_turn=turns[0],
                      last_turn=turns[-1], turn_ids=turns, speaker="Alice", subject="Alice", relation="r", object="o")


def test_facts_from_units_map_each_to_one_chunk_in_time_order(tiny_conversation: Conversation) -> None:
    chunks = make_chunks(tiny_conversation)
    units = [_unit("u2", ["D2:3"], "Alice visited Paris."),
             _unit("u1", ["D1:2", "D1:3", "D1:4"], "Rex turned 3."),  # 1 turn in chunk 0, 2 in chunk 1
             _unit("u0", ["D1:1"], "Alice works at Acme."),
             _unit("u3", ["D1:6", "D1:7"], "tie -> earliest chunk")]
    facts = facts_from_units(chunks, units)
    assert [f.text for f in facts] == ["Alice works at Acme.", "Rex turned 3.", "tie -> earliest chunk",
                                       "Alice visited Paris."]
    assert [f.chunk_id for f in facts] == ["S1#0", "S1#1", "S1#2", "S2#1"]
    assert [f.id for f in facts] == ["F0", "F1", "F2", "F3"] and facts[1].turn_ids == ["D1:2", "D1:3", "D1:4"]
    with pytest.raises(ValueError, match="u9"):
        facts_from_units(chunks, [_unit("u9", ["D7:1"], "nowhere")])


def test_records_round_trip_and_name_bad_fields() -> None:
    f = Fact("F0", "Alice likes tea.", "S1#0", ["D1:1"], 0, "Alice", "llm")
    assert from_record(Fact, to_record(f), "x") == f
    with pytest.raises(ValueError, match=r"ns c1, am_facts\[3\].*missing.*chunk_id"):
        from_record(Fact, {"id": "F0", "text": "t", "turn_ids": [], "order": 0}, "ns c1, am_facts[3]")
    with pytest.raises(ValueError, match="turn_ids"):
        from_record(Chunk, {"id": "c", "session_id": "S", "order": 0, "turn_ids": "D1:1", "text": ""}, "here")
    with pytest.raises(ValueError, match="unknown field"):
        from_record(Fact, to_record(f) | {"colour": 1}, "here")


def test_extraction_messages_has_no_open_slots(tiny_conversation: Conversation) -> None:
    ch = make_chunks(tiny_conversation)[0]
    content = extraction_messages(ch, [])[0]["content"]
    assert "{{" not in content and "the speakers" in content
