"""Text serialisation of working memory, the shared answer prompt, and answer parsing."""

from __future__ import annotations

from test_model_graph_token_lm import hash_embed

from qgmem.graph import build_local_graph
from qgmem.answer import (
    DEFAULT_SYSTEM,
    answer_messages,
    parse_answer,
    serialize_working_memory,
)
from qgmem.types import AtomicUnit, MemoryItem, Question, WorkingMemory

Q = Question("q1", "Where does Alice work now?", ["Globex"], "4", question_time="2023-09-01")


def wm() -> WorkingMemory:
    old = AtomicUnit("u1", "c1", "S1", "Alice works at Acme Corp as a data analyst.", "D1:1", "D1:1", ["D1:1"],
                     "Alice", "I", "works at", "Acme Corp", fact_time_start="2023-05-01", utterance_time="2023-05-08",
                     superseded=True)
    new = AtomicUnit("u2", "c1", "S2", "Alice works at Globex as a manager.", "D2:1", "D2:2", ["D2:1", "D2:2"],
                     "Alice", "Alice", "works at", "Globex", utterance_time="2023-08-20")
    items = [
        MemoryItem("M1", "unit", new.text, new.turn_ids, unit=new,
                   source_text="Alice: Big news: I now work at Globex.\nBob: Wow!",
                   trajectory=["2023-05-08: works at Acme Corp", "2023-08-20: works at Globex"]),
        MemoryItem("M2", "unit", old.text, old.turn_ids, unit=old, source_text="Alice: I started at Acme Corp."),
        MemoryItem("M3", "turn", "Bob: I am reading Dune.", ["D1:4"], source_text=""),
    ]
    return WorkingMemory(Q, items, "qgmem")


def test_serialisation_has_labels_times_sources_trajectories_and_graph() -> None:
    text = serialize_working_memory(wm())
    lines = text.splitlines()
    assert lines[0] == "[M1] Alice works at Globex as a manager."
    assert "  said on 2023-08-20" in lines
    assert "  source (D2:1..D2:2): Alice: Big news: I now work at Globex." in lines
    assert "  trajectory: 2023-05-08: works at Acme Corp -> 2023-08-20: works at Globex" in lines
    assert "[M2] Alice works at Acme Corp as a data analyst. (superseded by a later update)" in lines
    assert "  time: 2023-05-01; said on 2023-05-08" in lines
    assert "[M3] Bob: I am reading Dune." in lines
    assert text.index("[M1]") < text.index("[M2]") < text.index("[M3]")  # rank order kept
    assert "(Alice) -[works at]-> (Globex) [M1]" in lines  # "I" resolved to the speaker
    assert "(Alice) -[works at]-> (Acme Corp) [M2] (superseded)" in lines


def test_graph_text_from_built_graph_matches_and_can_be_left_out() -> None:
    w = wm()
    g = build_local_graph(w, hash_embed)
    assert serialize_working_memory(w, graph=g) == serialize_working_memory(w)
    plain = serialize_working_memory(w, with_graph=False)
    assert "-[works at]->" not in plain and "[M2]" in plain


def test_empty_memory_is_said_explicitly() -> None:
    assert serialize_working_memory(WorkingMemory(Q, [], "qgmem")) == "(no memory retrieved)"


def test_answer_messages() -> None:
    msgs = answer_messages(Q, "[M1] fact")
    assert [m["role"] for m in msgs] == ["system", "user"] and msgs[0]["content"] == DEFAULT_SYSTEM
    assert msgs[1]["content"] == ("Memory:\n[M1] fact\n\nQuestion: Where does Alice work now?\n"
                                  "(The question is asked on 2023-09-01.)")
    assert answer_messages("plain?", "m", system="S")[0] == {"role": "system", "content": "S"}
    assert "Answer:" in DEFAULT_SYSTEM


def test_parse_answer() -> None:
    assert parse_answer("[M1] says she moved on.\nAnswer: Globex [M1].") == ("Globex", ["M1"])
    assert parse_answer("<think>M9 maybe</think>Per [M2] and [M1]:\nanswer: 7 May 2023") == ("7 May 2023", ["M2", "M1"])
    assert parse_answer("Final answer: **Paris**") == ("Paris", [])
    assert parse_answer("Globex") == ("Globex", [])
    assert parse_answer("Reasoning [M3].\nAnswer: not mentioned\nextra") == ("not mentioned", ["M3"])
    assert parse_answer("") == ("", [])
