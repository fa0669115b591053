"""ConvoMem loader on fixtures in the upstream EvidencePayload schema, from files and through `datasets`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from qgmem.data import DataError, compute_stats, load_convomem
from qgmem.data import convomem as cm

FIX = Path(__file__).parent / "fixtures" / "data" / "convomem"
ROOT = FIX / "core_benchmark" / "evidence_questions"


@pytest.fixture(scope="module")
def convs():
    return load_convomem(FIX)


def test_items_become_conversations_with_sessions_and_turns(convs):
    ids = [c.id for c in convs]
    assert ids == ["abstention_evidence/1_evidence/batch_000#0", "user_evidence/1_evidence/batch_000#0",
                   "user_evidence/1_evidence/batch_000#1"]
    c = convs[1]
    assert [s.id for s in c.sessions] == ["conv-x1", "conv-x2"]
    assert all(s.date is None for s in c.sessions)
    assert [t.id for t in c.sessions[0].turns] == ["conv-x1:0", "conv-x1:1", "conv-x1:2", "conv-x1:3"]
    assert c.sessions[0].turns[2].speaker == "User"
    assert convs[2].sessions[0].id == "c0"  # conversation without an id


def test_questions_and_evidence_matching(convs):
    q = convs[1].questions[0]
    assert q.text == "How many kids do I have?" and q.answers == ["3"]
    assert q.category == "user_evidence" and q.conversation_id == convs[1].id
    assert q.evidence == ["conv-x1:2"]  # whitespace differences ignored
    assert q.evidence_sessions == ["conv-x1"]
    assert q.meta["usecase_category"] == "Family" and q.meta["evidence_count"] == 1
    q2 = convs[2].questions[0]
    assert q2.evidence == ["c0:1"]  # evidence is a prefix of the message: containment match
    ab = convs[0].questions[0]
    assert ab.meta["abstention"] is True and ab.evidence == ["c-a:0"]


def test_unmatched_evidence_is_kept_and_counted(tmp_path):
    src = ROOT / "user_evidence" / "1_evidence" / "batch_000.json"
    data = json.loads(src.read_text())
    data["evidence_items"][0]["message_evidences"].append({"speaker": "User", "text": "My dog is called Rex."})
    p = tmp_path / "user_evidence" / "1_evidence" / "b.json"
    p.parent.mkdir(parents=True)
    p.write_text(json.dumps(data))
    convs = load_convomem(p)
    assert convs[0].questions[0].unmatched_evidence == ["My dog is called Rex."]
    assert compute_stats("c", convs).unmatched_evidence == 1


def test_filters_and_limit():
    assert {c.questions[0].category for c in load_convomem(FIX, evidence_types=["user_evidence"])} == {"user_evidence"}
    assert load_convomem(FIX, evidence_counts=[2]) == []
    assert len(load_convomem(FIX, limit=2)) == 2


def test_datasets_path_reads_the_same_items():
    """The hub loader calls datasets.load_dataset(repo, data_files=..., field='evidence_items');
    with the 'json' builder and local files it runs the same code without a network."""
    rows = cm.hub_rows("json", str(ROOT / "user_evidence" / "1_evidence" / "*.json"))
    assert rows is not None and len(rows) == 2
    from_hub = cm._items(Path("x"), "user_evidence/1_evidence/batch_000", "user_evidence", 1, rows)
    from_file = load_convomem(ROOT / "user_evidence")
    assert [c.questions[0].evidence for c in from_hub] == [c.questions[0].evidence for c in from_file]
    assert [c.turns() for c in from_hub] == [c.turns() for c in from_file]


def test_hub_loader_walks_the_upstream_layout(monkeypatch):
    seen = []
    real = cm.hub_rows

    def fake_rows(repo, pattern):
        seen.append((repo, pattern))
        local = FIX / pattern
        return real("json", str(local)) if list(local.parent.glob("*.json")) else None

    monkeypatch.setattr(cm, "hub_rows", fake_rows)
    convs = load_convomem(None, evidence_types=["user_evidence", "changing_evidence"], evidence_counts=[1, 2])
    assert seen[0] == ("Salesforce/ConvoMem", "core_benchmark/evidence_questions/user_evidence/1_evidence/*.json")
    assert len(seen) == 4 and len(convs) == 2


@pytest.mark.parametrize("edit, expected", [
    (lambda d: d["evidence_items"][1].pop("answer"), "batch_000.json: evidence item 1: field 'answer' missing"),
    (lambda d: d["evidence_items"][0]["conversations"][1]["messages"][0].pop("text"),
     "evidence item 0, conversation 1, message 0: field 'text' missing"),
    (lambda d: d.pop("evidence_items"), "field 'evidence_items' missing"),
])
def test_malformed_items(tmp_path, edit, expected):
    root = tmp_path / "convomem"
    shutil.copytree(FIX, root)
    f = root / "core_benchmark/evidence_questions/user_evidence/1_evidence/batch_000.json"
    data = json.loads(f.read_text())
    edit(data)
    f.write_text(json.dumps(data))
    with pytest.raises(DataError) as e:
        load_convomem(root)
    assert expected in str(e.value)


def test_missing_path():
    with pytest.raises(DataError, match="not found"):
        load_convomem("/nonexistent/convomem")


def test_offline_hub_gives_a_clear_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataError, match="cannot reach the HF hub.*convomem"):
        load_convomem(None, evidence_types=["user_evidence"], evidence_counts=[1])


def test_hub_with_no_matching_files_is_an_error(monkeypatch):
    monkeypatch.setattr(cm, "hub_rows", lambda repo, pattern: None)
    with pytest.raises(DataError, match="no evidence files"):
        load_convomem(None)
