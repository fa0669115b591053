"""ConvoMem counted as the paper counts it: a case is one pre-mixed test case (several QA pairs over one shared
haystack, upstream ``core_benchmark/pre_mixed_testcases/``), so ``max_conversations`` of a prepare config
counts cases and the prepared examples are their QA pairs. Fixture: invented content in the upstream layout."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from qgmem.config import ConfigError
from qgmem.data import DataError, load_convomem, load_convomem_cases, load_dataset_by_name
from qgmem.data import convomem as cm
from qgmem.training.prepare import config_from_file, prepare_dataset

DATA = Path(__file__).parent / "fixtures" / "data"
FIX = DATA / "convomem"
CASES = FIX / "core_benchmark" / "pre_mixed_testcases"
ROOT = Path(__file__).resolve().parents[1]


def test_a_case_is_one_conversation_with_a_question_per_evidence_item(caplog):
    with caplog.at_level(logging.WARNING, logger="qgmem.data.convomem"):
        cases = load_convomem_cases(FIX)
    assert [c.id for c in cases] == [
        "changing_evidence/2_evidence/batched_000#0", "changing_evidence/2_evidence/batched_000#1",
        "user_evidence/1_evidence/batched_000#0", "user_evidence/1_evidence/batched_000#1",
        "user_evidence/1_evidence/batched_001#1"]  # batched_001#0 repeats two QA pairs of batched_000: skipped
    assert "1 test case(s) skipped" in caplog.text
    assert [len(c.questions) for c in cases] == [1, 2, 1, 1, 2]  # 5 cases yielding 7 QA pairs
    shared = cases[4]  # two evidence items and a filler conversation in one haystack
    assert [s.id for s in shared.sessions] == ["evidence-c", "filler-1", "evidence-d"]
    assert [q.id for q in shared.questions] == [f"{shared.id}:q0", f"{shared.id}:q1"]
    assert [q.evidence for q in shared.questions] == [["evidence-c:2"], ["evidence-d:2"]]  # each in its own session
    assert all(q.conversation_id == shared.id for q in shared.questions)
    assert shared.meta == {"evidence_type": "user_evidence", "evidence_count": 1, "context_size": 3,
                           "layout": "pre_mixed_testcases"}
    change = cases[0].questions[0]  # evidence spread over two conversations of the case
    assert change.evidence == ["evidence-e1:2", "evidence-e2:2"] and change.answers == ["Oakridge Haulage"]
    assert change.category == "changing_evidence" and change.meta["person_id"] == "person-3"
    mixed = cases[1]
    assert mixed.sessions[0].id == "c0"  # a conversation without an id
    assert mixed.questions[1].unmatched_evidence == ["We booked Fennel & Thyme for the catering."]
    # the evidence-item layout in the same tree is read as before, and neither loader reads the other's files
    assert len(load_convomem(FIX)) == 3


def test_context_sizes_and_filters():
    two = load_convomem_cases(FIX, context_sizes=[2])  # the case of size 2 that repeated size 1 is kept now
    assert [c.id for c in two] == ["changing_evidence/2_evidence/batched_000#0",
                                   "user_evidence/1_evidence/batched_001#0"]
    assert sum(len(c.questions) for c in two) == 3
    users = load_convomem_cases(FIX, evidence_types=["user_evidence"])
    assert {c.meta["evidence_type"] for c in users} == {"user_evidence"}
    assert load_convomem_cases(FIX, evidence_counts=[5]) == []
    assert len(load_convomem_cases(FIX, limit=2)) == 2


def test_registry_and_prepare_config_count_cases():
    cases = load_dataset_by_name("convomem-cases", DATA, context_sizes=[1, 3])
    assert len(cases) == 4 and sum(len(c.questions) for c in cases) == 6
    cfg, out = config_from_file(str(ROOT / "configs/train/qwen3_8b_convomem.yaml"), [])
    assert cfg.dataset == "convomem-cases" and cfg.max_conversations == 1200
    assert cfg.dataset_options == {"context_sizes": [2]} and out == "checkpoints/prepared/convomem_bge"


def test_datasets_path_reads_the_same_cases(monkeypatch):
    """The hub loader calls datasets.load_dataset(repo, data_files=...) on the list files; with the 'json'
    builder and local files it runs the same code without a network."""
    rows = cm.hub_rows("json", str(CASES / "user_evidence" / "1_evidence" / "batched_000.json"), field=None)
    assert rows is not None and [len(r["evidenceItems"]) for r in rows] == [1, 1] and rows[0]["contextSize"] == 1
    seen, real = [], cm.hub_rows

    def fake_rows(repo, pattern, field="evidence_items"):
        seen.append((repo, pattern, field))
        local = FIX / pattern
        return real("json", str(local), field) if list(local.parent.glob("*.json")) else None

    monkeypatch.setattr(cm, "hub_rows", fake_rows)
    hub = load_convomem_cases(None, evidence_types=["user_evidence"], evidence_counts=[1, 2])
    assert seen == [("Salesforce/ConvoMem", f"{cm.CASES_ROOT}/user_evidence/{n}_evidence/*.json", None) for n in (1, 2)]
    local = load_convomem_cases(CASES / "user_evidence")
    assert [[q.evidence for q in c.questions] for c in hub] == [[q.evidence for q in c.questions] for c in local]
    assert [c.turns() for c in hub] == [c.turns() for c in local]
    monkeypatch.setattr(cm, "hub_rows", lambda *a, **kw: None)
    with pytest.raises(DataError, match="no test cases for types"):
        load_convomem_cases(None)


@pytest.mark.parametrize("edit, expected", [
    (lambda d: d[1]["evidenceItems"][0].pop("answer"),
     "batched_001.json: test case 1, evidence item 0: field 'answer' missing"),
    (lambda d: d[1]["conversations"][1]["messages"][0].pop("text"),
     "batched_001.json: test case 1, conversation 1, message 0: field 'text' missing"),
    (lambda d: d[0].update(contextSize="two"), "test case 0: field 'contextSize' should be int, got str"),
    (lambda d: d.clear() or d.append([1]), "test case 0: expected an object with field 'contextSize', got list"),
])
def test_malformed_cases_are_one_line(tmp_path, edit, expected):
    root = tmp_path / "convomem"
    shutil.copytree(FIX, root)
    f = root / "core_benchmark/pre_mixed_testcases/user_evidence/1_evidence/batched_001.json"
    data = json.loads(f.read_text())
    edit(data)
    f.write_text(json.dumps(data))
    with pytest.raises(DataError) as e:
        load_convomem_cases(root)
    assert expected in str(e.value) and "\n" not in str(e.value)


def test_not_a_list_of_cases(tmp_path):
    f = tmp_path / "batched_000.json"
    f.write_text(json.dumps({"evidence_items": []}))
    with pytest.raises(DataError, match="expected a JSON list of test cases"):
        load_convomem_cases(f)


def test_prepare_counts_cases_and_their_qa_pairs(tmp_path):
    """`qgmem prepare` on the case layout: max_conversations=4 draws 4 cases; the prepared examples are their
    QA pairs, split by case."""
    from qgmem.config import load_config
    from qgmem.training.prepare import PrepareConfig

    cfg = load_config(PrepareConfig, None, [
        "dataset=convomem-cases", f"data_dir={DATA}", "max_conversations=4", "split=[0.5, 0.25, 0.25]",
        "retrieval.rerank.kind=none", "retrieval.k=4", "graph.max_edges=4"])
    meta = prepare_dataset(cfg, tmp_path / "prep", progress=False)
    picked = [c for s in ("train", "val", "test") for c in meta["conversations"][s]]
    assert len(picked) == 4 and len(set(picked)) == 4
    by_case = {c.id: len(c.questions) for c in load_convomem_cases(FIX)}
    assert sum(meta["counts"].values()) == sum(by_case[c] for c in picked)
    for split in ("train", "val", "test"):
        assert meta["counts"][split] == sum(by_case[c] for c in meta["conversations"][split])
    bad = load_config(PrepareConfig, None, ["dataset=convomem-cases", f"data_dir={DATA}",
                                            "dataset_options={haystack: 2}"])
    with pytest.raises(ConfigError, match="field 'dataset_options' {'haystack': 2}: .*unexpected keyword"):
        prepare_dataset(bad, tmp_path / "bad", progress=False)
