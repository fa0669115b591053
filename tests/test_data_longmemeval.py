"""LongMemEval loader: one Conversation per instance, has_answer evidence, streaming (.json/.xz), errors."""

from __future__ import annotations

import json
import lzma
from collections import Counter
from pathlib import Path

import pytest

from qgmem.data import (
    DataError,
    compute_stats,
    iter_longmemeval,
    jsonfile,
    load_longmemeval,
)
from qgmem.data.jsonfile import iter_json_array

FIX = Path(__file__).parent / "fixtures" / "data" / "longmemeval" / "longmemeval_mini.json"


@pytest.fixture(scope="module")
def mini():
    return load_longmemeval("oracle", FIX)


def test_instance_becomes_conversation_with_sorted_sessions(mini):
    c = mini[0]
    assert c.id == "q1" and len(c.questions) == 1
    # opaque ids by chronological position; the benchmark ids (gold ones start "answer_") only in meta
    assert [s.id for s in c.sessions] == ["s0000", "s0001", "s0002", "s0003"]
    assert [s.date for s in c.sessions] == ["2023-05-01T08:00", "2023-05-10T12:30", "2023-05-20T09:00",
                                            "2023-05-25T18:00"]
    assert c.meta["haystack_order"] == ["s0002", "s0000", "s0001", "s0003"]
    assert c.meta["original_session_ids"] == {"s0000": "filler_1", "s0001": "answer_a", "s0002": "answer_b",
                                              "s0003": "filler_1"}  # the repeated filler session: both copies
    t = c.sessions[2].turns[0]
    assert (t.id, t.speaker, t.text) == ("s0002:0", "user", "I now work at Globex.")
    assert len({t.id for t in c.turns()}) == len(c.turns()) == 8


def test_question_fields(mini):
    q = mini[0].questions[0]
    assert q.evidence == ["s0002:0", "s0001:0"]  # has_answer turns, in file order
    assert q.evidence_sessions == ["s0001", "s0002"]
    assert q.meta["original_evidence"] == ["answer_b:0", "answer_a:0"]  # for reports only
    assert q.meta["original_evidence_sessions"] == ["answer_a", "answer_b"]
    assert q.category == "knowledge-update" and q.answers == ["Globex"]
    assert q.question_time == "2023-06-01T10:00" and q.conversation_id == "q1"
    assert q.meta["abstention"] is False
    q2 = mini[1].questions[0]
    assert q2.meta["abstention"] is True and q2.answers == ["42"]


def test_xz_and_plain_give_the_same_conversations(tmp_path, mini):
    xz = tmp_path / "longmemeval_mini.json.xz"
    with lzma.open(xz, "wt", encoding="utf-8") as f:
        f.write(FIX.read_text())
    assert load_longmemeval("oracle", xz) == mini


def test_streaming_across_tiny_chunks_matches_json_load(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonfile, "_CHUNK", 7)  # elements, strings and numbers straddle chunk borders
    data = [{"a": [1, 2.5, "x,]y"], "b": None}, 12345678, "s\"]", [], {"k": {"n": -0.5e3}}]
    p = tmp_path / "a.json"
    p.write_text(" \n" + json.dumps(data, indent=2))
    assert list(iter_json_array(p)) == data
    p.write_text("[ \n ]")
    assert list(iter_json_array(p)) == []
    assert list(iter_longmemeval("oracle", FIX)) == load_longmemeval("oracle", FIX)


def test_limit_stops_early():
    assert [c.id for c in load_longmemeval("oracle", FIX, limit=1)] == ["q1"]


@pytest.mark.parametrize("text, where", [
    ('{"a": 1}', "expected a JSON array"),
    ('[{"a": 1} {"b": 2}]', "element 1: expected ','"),
    ('[{"a": 1}, {"b": ', "element 1"),
])
def test_stream_errors_are_located(tmp_path, text, where):
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(DataError, match="bad.json") as e:
        list(iter_json_array(p))
    assert where in str(e.value)


@pytest.mark.parametrize("edit, expected", [
    (lambda d: d[1].pop("question"), "instance 1 (q2_abs): field 'question' missing"),
    (lambda d: d[0]["haystack_dates"].pop(), "differ in length (4, 3, 4)"),
    (lambda d: d[0]["haystack_dates"].__setitem__(1, "soon"), "field 'haystack_dates' item 1 is not a date: 'soon'"),
    (lambda d: d[0]["haystack_sessions"][2][1].pop("content"),
     "instance 0 (q1), session 2 (answer_a), turn 1: field 'content' missing"),
])
def test_malformed_instances_raise_located_errors(tmp_path, edit, expected):
    data = json.loads(FIX.read_text())
    edit(data)
    p = tmp_path / "longmemeval_oracle.json"
    p.write_text(json.dumps(data))
    with pytest.raises(DataError, match="^longmemeval_oracle.json: ") as e:
        load_longmemeval("oracle", p)
    assert expected in str(e.value)


def test_unknown_variant():
    with pytest.raises(ValueError, match="oracle"):
        load_longmemeval("m")  # type: ignore[arg-type]


@pytest.mark.data
def test_real_oracle_counts(data_dir):
    convs = load_longmemeval("oracle", data_dir / "longmemeval" / "longmemeval_oracle.json")
    st = compute_stats("longmemeval-oracle", convs)
    assert (st.conversations, st.questions, st.turns, st.evidence_turns) == (500, 500, 10960, 896)
    assert st.questions_by_category == {"temporal-reasoning": 133, "multi-session": 133, "knowledge-update": 78,
                                        "single-session-user": 70, "single-session-assistant": 56,
                                        "single-session-preference": 30}
    assert st.abstention == 30
    assert st.abstention_by_category == {"multi-session": 12, "single-session-user": 6, "temporal-reasoning": 6,
                                         "knowledge-update": 6}
    assert st.unmatched_evidence == 0
    assert Counter(len(c.questions[0].evidence_sessions) for c in convs) == \
        Counter({1: 176, 2: 250, 3: 41, 4: 19, 5: 11, 6: 3})
    for c in convs:  # sessions chronological, evidence inside the haystack
        dates = [s.date for s in c.sessions]
        assert dates == sorted(dates)
        assert set(c.questions[0].evidence_sessions) <= {s.id for s in c.sessions}


S_FILE = ("longmemeval", "longmemeval_s_cleaned.498.json.xz")  # sha256-pinned copy (data README)


@pytest.mark.data
def test_real_s_first_instances(data_dir):
    """A streamed prefix of the 257 MB (unpacked) S file: cheap, decompresses only what it reads."""
    convs = load_longmemeval("s", data_dir.joinpath(*S_FILE), limit=40)
    st = compute_stats("longmemeval-s", convs)
    assert (st.conversations, st.sessions, st.turns, st.evidence_turns, st.abstention) == (40, 1880, 19379, 70, 4)
    for c in convs:
        q = c.questions[0]
        ev_sessions = {e.rsplit(":", 1)[0] for e in q.evidence}
        assert ev_sessions <= set(q.evidence_sessions)  # has_answer turns lie in the answer sessions
        assert [s.date for s in c.sessions] == sorted(s.date for s in c.sessions)


@pytest.mark.data
@pytest.mark.slow
def test_real_s_counts(data_dir):
    """Whole S file in one streaming pass: ~8 s on an idle core (xz decompression dominates), 25 s under
    load. Reduced (QGMEM_REDUCED=1): the first 250 instances."""
    from conftest import REDUCED

    limit = 250 if REDUCED else None
    st = compute_stats("longmemeval-s", iter_longmemeval("s", data_dir.joinpath(*S_FILE), limit=limit))
    if REDUCED:
        assert (st.conversations, st.sessions, st.turns, st.evidence_turns, st.abstention) == \
            (250, 11917, 123149, 401, 16)
        return
    assert (st.conversations, st.questions, st.turns, st.evidence_turns) == (498, 498, 245625, 893)
    assert st.questions_by_category["temporal-reasoning"] == 132
    assert st.questions_by_category["single-session-assistant"] == 55
    assert st.abstention == 30
    assert st.unmatched_evidence == 0
