"""BEAM loader: batches -> sessions, markers stripped, gold fields per ability, evidence flattening."""

from __future__ import annotations

import json
import lzma
import shutil
from pathlib import Path

import pytest

from qgmem.data import DataError, compute_stats, load_beam
from qgmem.data.beam import GOLD_FIELD, strip_marker
from qgmem.data.evidence import flatten_ids

FIX = Path(__file__).parent / "fixtures" / "data" / "beam"


@pytest.fixture(scope="module")
def conv():
    convs = load_beam("128K", FIX)
    assert len(convs) == 1
    return convs[0]


def test_batches_become_dated_sessions_with_clean_turns(conv):
    assert conv.id == "beam-128K-1"
    assert [s.id for s in conv.sessions] == ["batch_1", "batch_2"]
    assert conv.sessions[0].date == "2024-03-15" and conv.sessions[0].date_text == "March-15-2024"
    assert conv.sessions[1].date is None
    texts = {t.id: t.text for t in conv.turns()}
    assert texts["0"] == "Plan my sprint ending March 29."
    assert texts["3"] == "Flask it is."
    assert texts["4"] == "Sprint now ends April 5."
    assert [t.speaker for t in conv.turns()] == ["user", "assistant"] * 3
    assert conv.meta["markers_stripped"] == 4


def test_marker_forms():
    assert strip_marker("Hi ->-> 1,1") == "Hi"
    assert strip_marker("Hi ->->  3,8") == "Hi"
    assert strip_marker("Hi ->-> 9,5) Decision & Change Labels: deadline June 15.") == "Hi"
    assert strip_marker("a -> b") == "a -> b"


def test_questions_gold_fields_and_evidence(conv):
    qs = {q.category: q for q in conv.questions}
    ie = qs["information_extraction"]
    assert ie.id == "beam-128K-1:information_extraction:0" and ie.answers == ["March 29"]
    assert ie.evidence == ["0"] and ie.evidence_sessions == ["batch_1"]
    assert ie.meta["rubric"] == ["LLM response should state: March 29"] and ie.meta["difficulty"] == "easy"
    ku = qs["knowledge_update"]
    assert ku.evidence == ["0", "4"] and ku.unmatched_evidence == ["99"]
    assert ku.evidence_sessions == ["batch_1", "batch_2"]
    ab = qs["abstention"]
    assert ab.answers == ["Not mentioned."] and ab.evidence == [] and ab.meta["abstention"] is True
    assert qs["instruction_following"].answers == ["Uses Flask."]
    assert qs["instruction_following"].evidence == ["2", "3"]  # nested list flattened
    assert all(q.conversation_id == conv.id for q in conv.questions)


def test_flatten_ids():
    assert flatten_ids({"a": [1, [2, None]], "b": 3}) == [1, 2, 3]
    assert flatten_ids(None) == []


def test_500k_reads_packed_xz_or_per_chat_files(tmp_path):
    root = tmp_path / "beam"
    (root / "chats" / "500K" / "1").mkdir(parents=True)
    shutil.copy(FIX / "chats/100K/1/probing_questions.json", root / "chats/500K/1/probing_questions.json")
    chat = json.loads((FIX / "chats/100K/1/chat.json").read_text())
    with lzma.open(root / "beam_500K_chats.json.xz", "wt", encoding="utf-8") as f:
        json.dump({"1": chat}, f)
    packed = load_beam("500K", root)
    (root / "beam_500K_chats.json.xz").unlink()
    (root / "chats/500K/1/chat.json").write_text(json.dumps(chat))
    per_file = load_beam("500K", root)
    assert packed == per_file and packed[0].id == "beam-500K-1" and len(packed[0].turns()) == 6


def test_missing_chat_in_packed_file(tmp_path):
    root = tmp_path / "beam"
    (root / "chats" / "500K" / "2").mkdir(parents=True)
    with lzma.open(root / "beam_500K_chats.json.xz", "wt", encoding="utf-8") as f:
        json.dump({"1": []}, f)
    with pytest.raises(DataError, match="beam_500K_chats.json.xz: chat 2 missing"):
        load_beam("500K", root)


@pytest.mark.parametrize("edit_q, expected", [
    (lambda q: q["information_extraction"][0].pop("answer"),
     "probing_questions.json: information_extraction, question 0: field 'answer' missing"),
    (lambda q: q.setdefault("telepathy", []), "unknown ability 'telepathy'"),
    (lambda q: q["knowledge_update"][0].update(source_chat_ids=5), "field 'source_chat_ids' should be a list"),
])
def test_malformed_questions(tmp_path, edit_q, expected):
    root = tmp_path / "beam"
    shutil.copytree(FIX, root)
    qf = root / "chats/100K/1/probing_questions.json"
    q = json.loads(qf.read_text())
    edit_q(q)
    qf.write_text(json.dumps(q))
    with pytest.raises(DataError) as e:
        load_beam("128K", root)
    assert expected in str(e.value)


def test_duplicate_message_id(tmp_path):
    root = tmp_path / "beam"
    shutil.copytree(FIX, root)
    cf = root / "chats/100K/1/chat.json"
    chat = json.loads(cf.read_text())
    chat[1]["turns"][0][1]["id"] = 1
    cf.write_text(json.dumps(chat))
    with pytest.raises(DataError, match=r"chat.json: batch 1, turn 0, message 1: field 'id' repeats 1"):
        load_beam("128K", root)


@pytest.mark.data
def test_real_beam_128k_counts(data_dir):
    convs = load_beam("128K", data_dir / "beam")
    st = compute_stats("beam-128k", convs)
    assert (st.conversations, st.turns, st.questions) == (20, 5732, 400)
    assert st.questions_by_category == {a: 40 for a in GOLD_FIELD}
    assert sum(t.speaker == "user" for c in convs for t in c.turns()) == 2866
    assert not any("->->" in t.text for c in convs for t in c.turns())
    assert sum(c.meta["markers_stripped"] for c in convs) >= 2147  # README: 2,147 user messages
    assert st.unmatched_evidence == 0 and st.abstention == 40
    assert all(len(c.questions) == 20 for c in convs)


@pytest.mark.data
def test_real_beam_500k_counts(data_dir):
    convs = load_beam("500K", data_dir / "beam")
    st = compute_stats("beam-500k", convs)
    assert (st.conversations, st.turns, st.questions) == (35, 38058, 700)
    assert all(772 <= len(c.turns()) <= 1424 for c in convs)
