"""LoCoMo loader: evidence repair, answers, dates, errors (fixture) and the published counts (real data)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from qgmem.data import DataError, compute_stats, load_locomo
from qgmem.data.dates import parse_locomo_date
from qgmem.data.evidence import match_locomo_evidence

FIX = Path(__file__).parent / "fixtures" / "data" / "locomo" / "locomo_mini.json"


@pytest.fixture(scope="module")
def mini():
    return {c.id: c for c in load_locomo(FIX)}


def test_sessions_come_from_session_keys_not_dangling_dates(mini):
    conv = mini["conv-a"]
    assert [s.id for s in conv.sessions] == ["session_1", "session_2"]
    assert conv.meta["dangling_date_keys"] == ["session_3_date_time"]
    assert conv.sessions[0].date == "2023-05-08T13:56"
    assert conv.sessions[0].date_text == "1:56 pm on 8 May, 2023"
    assert conv.speakers == ["Ann", "Ben"]
    assert mini["conv-b"].sessions[0].date == "2024-01-02T00:30"


def test_turns_keep_ids_speakers_and_image_captions(mini):
    turns = {t.id: t for t in mini["conv-a"].turns()}
    assert turns["D1:2"].speaker == "Ben"
    assert turns["D1:2"].image_caption == "a photo of a garden with tomatoes"
    assert turns["D1:1"].image_caption is None


def test_questions_ids_answers_categories_and_time(mini):
    qs = mini["conv-a"].questions
    assert [q.id for q in qs] == [f"conv-a:q{i}" for i in range(6)]
    assert all(q.conversation_id == "conv-a" for q in qs)
    assert qs[1].answers == ["2021"]  # int answer -> str
    assert [q.category for q in qs] == ["4", "2", "1", "3", "5", "5"]
    # no question dates in LoCoMo: the last session's date is used
    assert {q.question_time for q in qs} == {"2023-06-20T09:05"}


def test_category5_has_no_answers_and_keeps_adversarial_answer(mini):
    q4, q5 = mini["conv-a"].questions[4:6]
    assert q4.answers == [] and q4.meta["adversarial_answer"] == "a vase" and q4.meta["abstention"] is True
    assert q5.answers == [] and q5.meta["answer_field"] == "No"
    assert mini["conv-a"].questions[0].meta["abstention"] is False


def test_evidence_normalised_matched_and_unmatched_kept(mini):
    qs = mini["conv-a"].questions
    assert qs[2].evidence == ["D2:2", "D2:1"] and qs[2].evidence_sessions == ["session_2"]
    # 'D:1:1' -> 'D1:1', 'D02:02' -> 'D2:2' (names a turn), 'D9:9' and 'D' name none
    assert qs[3].evidence == ["D1:1", "D2:2"]
    assert qs[3].unmatched_evidence == ["D9:9", "D"]
    assert mini["conv-b"].questions[0].evidence == ["D1:1", "D1:2"]


def test_zero_padding_is_only_stripped_when_that_names_a_turn():
    turns = {"D30:5": None, "D3:05": None}
    assert match_locomo_evidence(["D30:05"], turns) == (["D30:5"], [])
    assert match_locomo_evidence(["D3:05"], turns) == (["D3:05"], [])  # an exact id is never rewritten
    assert match_locomo_evidence(["D4:07"], turns) == ([], ["D4:07"])


def test_stats_count_unmatched_evidence(mini):
    st = compute_stats("mini", mini.values())
    assert (st.conversations, st.sessions, st.turns, st.questions) == (2, 3, 7, 7)
    assert st.unmatched_evidence == 2 and st.questions_with_unmatched == 1
    assert st.abstention == 2 and st.questions_by_category["5"] == 2


def test_date_parser():
    assert parse_locomo_date("12:04 pm on 1 June, 2023") == "2023-06-01T12:04"
    assert parse_locomo_date("8 May 2023") is None
    assert parse_locomo_date("1:00 pm on 31 February, 2023") is None


def _broken(tmp_path: Path, edit) -> Path:
    data = json.loads(FIX.read_text())
    edit(data)
    p = tmp_path / "locomo10.json"
    p.write_text(json.dumps(data))
    return p


def test_missing_question_field_names_file_sample_qa_and_field(tmp_path):
    p = _broken(tmp_path, lambda d: d[1]["qa"][0].pop("question"))
    with pytest.raises(DataError) as e:
        load_locomo(p)
    assert str(e.value) == "locomo10.json: sample 1 (conv-b), qa 0: field 'question' missing"


@pytest.mark.parametrize("edit, expected", [
    (lambda d: d[0]["qa"][0].pop("answer"), "sample 0 (conv-a), qa 0: field 'answer' missing"),
    (lambda d: d[0]["qa"][2].update(category=7), "sample 0 (conv-a), qa 2: field 'category' should be 1..5"),
    (lambda d: d[0]["conversation"]["session_2"][1].pop("dia_id"),
     "sample 0 (conv-a), conversation, session_2, turn 1: field 'dia_id' missing"),
    (lambda d: d[0]["conversation"].update(session_1_date_time="yesterday"), "unreadable date 'yesterday'"),
    (lambda d: d[1].pop("sample_id"), "sample 1: field 'sample_id' missing"),
    (lambda d: d[0]["qa"][3].update(question=None), "sample 0 (conv-a), qa 3: field 'question' is null"),
    (lambda d: d[0]["qa"].__setitem__(1, ["not", "an", "object"]),
     "qa 1: expected an object with field 'question', got list"),
    (lambda d: d[0]["qa"][0].update(evidence="D1:1"), "qa 0: field 'evidence' should be list, got str"),
])
def test_malformed_records_raise_located_errors(tmp_path, edit, expected):
    with pytest.raises(DataError, match="^locomo10.json: ") as e:
        load_locomo(_broken(tmp_path, edit))
    assert expected in str(e.value)


def test_invalid_json_reports_line(tmp_path):
    p = tmp_path / "locomo10.json"
    p.write_text('[\n {"sample_id": "x",\n }')
    with pytest.raises(DataError, match=r"locomo10.json: line 3 column 2: invalid JSON"):
        load_locomo(p)


@pytest.mark.data
def test_real_locomo_counts(data_dir):
    convs = load_locomo(data_dir / "locomo" / "locomo10.json")
    st = compute_stats("locomo", convs)
    assert st.conversations == 10
    assert st.sessions == st.sessions_with_turns == 272
    assert st.turns == 5882
    assert st.questions == 1986
    assert st.questions_by_category == {"1": 282, "2": 321, "3": 96, "4": 841, "5": 446}
    assert st.abstention == 446
    # README: 'D' (conv-42), D10:19 (conv-42), D4:36 (conv-47) name no turn; D30:05 is D30:5
    unmatched = sorted((q.conversation_id, e) for c in convs for q in c.questions for e in q.unmatched_evidence)
    assert unmatched == [("conv-42", "D"), ("conv-42", "D10:19"), ("conv-47", "D4:36")]
    per_conv = {c.id: (len(c.sessions), len(c.turns()), len(c.questions)) for c in convs}
    assert per_conv["conv-26"] == (19, 419, 199) and per_conv["conv-50"] == (30, 568, 204)
    assert len(convs[0].meta["dangling_date_keys"]) == 16
    # every matched evidence id names a turn of its own conversation
    for c in convs:
        ids = {t.id for t in c.turns()}
        assert all(e in ids for q in c.questions for e in q.evidence)
    # joined / malformed ids were split and repaired
    q43 = [q for c in convs for q in c.questions if c.id == "conv-43" and "D11:26" in q.evidence]
    assert q43, "'D:11:26' should be read as D11:26"
    assert Counter(len(q.answers) for c in convs for q in c.questions if q.category != "5") == Counter({1: 1540})
