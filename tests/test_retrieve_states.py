"""Question tense and the trace-aware reordering of a ranking (retrieve/states.py)."""

from __future__ import annotations

import pytest

from qgmem.construct.traces import TraceConfig, build_traces
from qgmem.retrieve.states import question_tense, reorder, trace_rows
from qgmem.types import AtomicUnit


@pytest.mark.parametrize("text, tense", [
    ("Where does Priya work now?", "present"),
    ("Is Hana still taking the woodworking class?", "present"),
    ("What class does Noor take these days?", "present"),
    ("Where does Priya work?", "present"),  # present tense, no cue word
    ("Who is Zainab's doctor at the moment?", "present"),
    ("When did Priya quit Larkspur Books?", "transition"),
    ("When did Lucia move to Valencia?", "transition"),
    ("When was Felix laid off?", "transition"),
    ("When did Ines switch her lessons to Wednesdays?", "transition"),
    ("Where did Lucia live before moving to Valencia?", "past"),
    ("What did Ana use to do for work?", "past"),
    ("Where did Kofi work previously?", "past"),
    ("When was the wedding first planned?", "past"),
    ("Where did Priya work?", None),
    ("When did Ana go to the beach?", None),  # a "when" question about an event, not a transition
    ("Where has Mel camped?", None),
    ("", None),
])
def test_question_tense(text: str, tense: str | None) -> None:
    assert question_tense(text) == tense


def _u(i: int, subject: str, relation: str, obj: str, said: str, turn: int | None = None) -> AtomicUnit:
    t = f"D1:{i if turn is None else turn}"
    return AtomicUnit(id=f"n/u{i}", namespace="n", session_id="S1", text=f"{subject} {relation} {obj}",
                      first_turn=t, last_turn=t, turn_ids=[t], speaker=subject,
                      subject=subject, relation=relation, object=obj, utterance_time=said)


@pytest.fixture
def memory():
    units = [_u(0, "Priya", "work at", "Larkspur Books", "2023-01-01"),
             _u(1, "Priya", "quit", "Larkspur Books", "2023-04-01"),
             _u(2, "Priya", "work at", "Brightwater Bakery", "2023-05-01"),
             _u(3, "Priya", "paint", "the harbour", "2023-01-02"),
             _u(4, "Tomasz", "live in", "Leeds", "2023-01-03"),
             _u(5, "Tomasz", "move to", "York", "2023-03-03"),
             _u(6, "Priya", "say", "work is hectic", "2023-01-01", turn=0)]  # said in the old job's turn
    units, traces = build_traces(units, TraceConfig())
    return units, traces


def test_trace_rows_map_stale_rows_to_the_latest_state_and_to_the_update_that_followed(memory) -> None:
    units, traces = memory
    latest, update = trace_rows(units, traces)
    assert latest == {0: 2, 1: 2, 4: 5, 6: 2}  # row 6 has no trace but was said in row 0's turn
    assert update == {0: 1, 1: 2, 4: 5, 6: 1}


def test_present_question_puts_the_latest_state_directly_above_a_superseded_one(memory) -> None:
    units, traces = memory
    latest, update = trace_rows(units, traces)
    rows, scores = reorder([6, 0, 3, 4, 2], [1.0, 0.9, 0.8, 0.7, 0.1], units, latest, "present", update)
    assert rows == [2, 6, 0, 3, 5, 4]  # 2 moved up above the old job's turn; 5 (missing) added above 4
    assert scores == [1.0, 1.0, 0.9, 0.8, 0.7, 0.7]
    assert scores == sorted(scores, reverse=True)


def test_transition_question_puts_the_update_above_the_state_it_replaced(memory) -> None:
    units, traces = memory
    latest, update = trace_rows(units, traces)
    rows, _ = reorder([0, 2, 3, 1], [0.9, 0.8, 0.7, 0.6], units, latest, "transition", update)
    assert rows == [1, 0, 2, 3]  # the quit (update of row 0) goes first; the bakery stays where it was
    derived, _ = reorder([0, 2, 3, 1], [0.9, 0.8, 0.7, 0.6], units, latest, "transition")
    assert derived == rows  # the update map of superseded units can be derived from the units


@pytest.mark.parametrize("tense", ["past", None])
def test_past_and_unknown_questions_keep_the_order(memory, tense) -> None:
    units, traces = memory
    latest, update = trace_rows(units, traces)
    assert reorder([0, 3, 4], [0.9, 0.8, 0.7], units, latest, tense, update) == ([0, 3, 4], [0.9, 0.8, 0.7])


def test_rows_without_superseded_units_are_unchanged(memory) -> None:
    units, traces = memory
    latest, update = trace_rows(units, traces)
    assert reorder([2, 3, 5], [3.0, 2.0, 1.0], units, latest, "present", update) == ([2, 3, 5], [3.0, 2.0, 1.0])
    assert reorder([], [], units, latest, "present") == ([], [])
