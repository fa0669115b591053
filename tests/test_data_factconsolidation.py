"""FactConsolidation (MemoryAgentBench Conflict_Resolution) loader on rows in the upstream schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qgmem.data import DataError, load_factconsolidation
from qgmem.data import factconsolidation as fc

FIX = Path(__file__).parent / "fixtures" / "data" / "memoryagentbench"
ROWS = FIX / "Conflict_Resolution.jsonl"


def test_sh_row_becomes_fact_sessions_and_questions():
    (conv,) = load_factconsolidation("sh", sizes=["6k"], path=ROWS, facts_per_session=2)
    assert conv.id == "factconsolidation_sh_6k"
    assert [[t.id for t in s.turns] for s in conv.sessions] == [["F0", "F1"], ["F2", "F3"], ["F4"]]
    turns = {t.id: t.text for t in conv.turns()}
    assert turns["F2"] == "The instrument Nimbus is a trumpet."
    # '1882. He' is not taken for fact 1882: numbers must run on by one
    assert turns["F3"] == "The author of Dubliners is James Joyce, born 1882. He wrote it."
    assert conv.meta["preamble"] == "Here is a list of facts:" and conv.meta["facts"] == 5
    q0, q1 = conv.questions
    assert (q0.id, q0.answers, q0.category) == ("factconsolidation_sh_6k_no0", ["trumpet"], "factconsolidation_sh_6k")
    assert q1.answers == ["Bergen", "Bergen, Norway"] and q1.meta["question_type"] == "single_hop"
    assert q0.evidence == [] and q0.conversation_id == conv.id


def test_mh_facts_separated_by_spaces():
    (conv,) = load_factconsolidation("mh", sizes=["6k"], path=ROWS)
    assert [t.text for t in conv.turns()] == ["The spouse of Quill is Rune.", "Rune is a citizen of Chile.",
                                              "Rune is a citizen of Peru."]
    assert conv.questions[0].answers == ["Peru", "the Republic of Peru"]


def test_parquet_and_datasets_paths_match_jsonl(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [json.loads(x) for x in ROWS.read_text().splitlines()]
    for r in rows:  # parquet needs one struct type for metadata
        r["metadata"].setdefault("question_types", [])
    pq_file = tmp_path / "data" / "Conflict_Resolution-00000-of-00001.parquet"
    pq_file.parent.mkdir()
    pq.write_table(pa.Table.from_pylist(rows), pq_file)
    want = load_factconsolidation("sh", sizes=["6k"], path=ROWS)
    assert load_factconsolidation("sh", sizes=["6k"], path=tmp_path) == want  # folder in HF layout
    hub = fc.hub_rows("parquet", "train", data_files=str(pq_file))  # the `datasets` code path
    assert [r["metadata"]["source"] for r in hub][:2] == ["factconsolidation_sh_6k", "factconsolidation_mh_6k"]


def test_hub_is_used_without_a_path(monkeypatch):
    calls = []

    def fake(repo, split, data_files=None):
        calls.append((repo, split))
        return [json.loads(x) for x in ROWS.read_text().splitlines()]

    monkeypatch.setattr(fc, "hub_rows", fake)
    (conv,) = load_factconsolidation("mh", sizes=["6k"])
    assert calls == [("ai-hyz/MemoryAgentBench", "Conflict_Resolution")] and len(conv.turns()) == 3


def test_missing_size_and_bad_arguments():
    assert [c.id for c in load_factconsolidation("sh", path=ROWS)] == ["factconsolidation_sh_6k"]  # all present
    with pytest.raises(DataError, match="no row with metadata.source factconsolidation_sh_32k"):
        load_factconsolidation("sh", sizes=["6k", "32k"], path=ROWS)
    with pytest.raises(ValueError, match="variant"):
        load_factconsolidation("xx", path=ROWS)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="sizes"):
        load_factconsolidation("sh", sizes=["7k"], path=ROWS)


@pytest.mark.parametrize("edit, expected", [
    (lambda r: r[0]["answers"].pop(), "row 0 (factconsolidation_sh_6k): fields 'questions' and 'answers' differ"),
    (lambda r: r[1].update(context="no numbers here"), "row 1 (factconsolidation_mh_6k): field 'context' holds no"),
    (lambda r: r[0]["metadata"].pop("source"), "row 0, metadata: field 'source' missing"),
    (lambda r: r[0]["answers"].__setitem__(1, []), "question 1: field 'answers' item 1 should be a non-empty list"),
])
def test_malformed_rows(tmp_path, edit, expected):
    rows = [json.loads(x) for x in ROWS.read_text().splitlines()]
    edit(rows)
    p = tmp_path / "rows.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows))
    with pytest.raises(DataError) as e:
        load_factconsolidation("sh" if "mh" not in expected else "mh", sizes=["6k"], path=p)
    assert str(e.value).startswith("rows.jsonl: ") and expected in str(e.value)


def test_offline_hub_gives_a_clear_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataError, match="cannot reach the HF hub.*memoryagentbench"):
        load_factconsolidation("sh")
