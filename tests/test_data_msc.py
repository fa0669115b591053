"""MSC dialogue loader (no questions): sessions, speakers, relative times."""

from __future__ import annotations

from pathlib import Path

import pytest

from qgmem.data import DataError, compute_stats, load_dataset_by_name, load_msc

FIX = Path(__file__).parent / "fixtures" / "data"


def test_episode_sessions_and_speakers():
    convs = load_msc(3, "test", FIX / "msc" / "msc_dialogue" / "session_3" / "test.txt")
    c = convs[0]
    assert c.id == "msc-s3-test:test_0" and c.questions == []
    assert [s.id for s in c.sessions] == ["S1", "S2", "S3"]
    assert [s.date_text for s in c.sessions] == ["5 days 1 hour ago", "5 days ago", None]
    assert all(s.date is None for s in c.sessions)
    assert [t.speaker for t in c.sessions[1].turns] == ["Speaker 1", "Speaker 2", "Speaker 1"]
    assert [(t.id, t.speaker) for t in c.sessions[2].turns] == [("S3:0", "Speaker 1"), ("S3:1", "Speaker 2")]
    assert c.meta["speakers_renamed"] == 1 and c.meta["personas"][0] == ["I own a Jeep."]
    assert load_dataset_by_name("msc", FIX, limit=1)[0].id == "msc-s3-test:test_0"


def test_bad_line_is_located(tmp_path):
    p = tmp_path / "test.txt"
    p.write_text('{"metadata": {"initial_data_id": "x"}, "previous_dialogs": [], "dialog": [{"text": "hi"}]}\n')
    with pytest.raises(DataError, match=r"test.txt: line 1, dialog 0: field 'id' missing"):
        load_msc(path=p)


@pytest.mark.data
def test_real_msc_session3_counts(data_dir):
    st = compute_stats("msc", load_msc(3, "test", data_dir / "msc" / "msc_dialogue" / "session_3" / "test.txt"))
    assert (st.conversations, st.sessions, st.turns, st.questions) == (501, 1503, 18435, 0)


def _persona_files(root: Path, episodes: dict[int, list[dict]]) -> None:
    for k, eps in episodes.items():
        d = root / "msc" / "msc_personasummary" / f"session_{k}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "valid.txt").write_text("".join(__import__("json").dumps(e) + "\n" for e in eps))


def test_msc_persona_facts_become_queries_for_their_turns(tmp_path):
    def ep(did: str, k: int) -> dict:
        return {"initial_data_id": did, "dialog": [
            {"id": "bot_0", "text": f"My two dogs keep me busy (s{k})", "persona_text": "I have two dogs at home."},
            {"id": "bot_1", "text": "Nice.", "persona_text": "ok"},  # too short to be a query
            {"id": "bot_0", "text": "I said it before", "persona_text": "I have two dogs at home."}]}

    _persona_files(tmp_path, {k: [ep("valid_0", k), ep("valid_1", k)] for k in (1, 2, 3)}
                   | {4: [ep("valid_1", 4)]})
    convs = load_dataset_by_name("msc-persona", tmp_path)
    assert [c.id for c in convs] == ["msc-persona-valid:valid_1"]  # valid_0 lacks session 4
    c = convs[0]
    assert [s.id for s in c.sessions] == ["S1", "S2", "S3", "S4"]
    assert [t.speaker for t in c.sessions[0].turns] == ["Speaker 1", "Speaker 2", "Speaker 1"]
    (q,) = c.questions
    assert q.text == "I have two dogs at home." and q.conversation_id == c.id
    assert q.evidence == [f"S{k}:{i}" for k in (1, 2, 3, 4) for i in (0, 2)]
    (tmp_path / "msc" / "msc_personasummary" / "session_2" / "valid.txt").write_text("{oops\n")
    with pytest.raises(DataError, match=r"valid.txt: session_2 line 1: invalid JSON"):
        load_dataset_by_name("msc-persona", tmp_path)
