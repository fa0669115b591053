"""Validation and test memories of a prepared set are chosen without the answer key.

The graph-token experiment compares conditions on held-out examples; if the evidence labels chose
what entered memory, the answer would always be there and the comparison would flatter every
condition that reads memory. These tests fail if val or test preparation reads evidence or answers.
"""

from __future__ import annotations

import copy

import pytest

from qgmem.config import ConfigError, load_config
from qgmem.training.prepare import PrepareConfig, prepare_dataset, session_choice
from qgmem.training.prepared import load_prepared
from qgmem.training.sessions import choose_sessions

pytestmark = pytest.mark.usefixtures("one_thread")

COMPARED = ("memory_text", "item_texts", "item_turn_ids", "node_text", "edge_text", "x")


def _convs(base, n: int = 5) -> list:
    out = []
    for i in range(n):
        c = copy.deepcopy(base)
        c.id = f"conv-{i}"
        for q in c.questions:
            q.id, q.conversation_id = f"{c.id}:{q.id}", c.id
        out.append(c)
    return out


def _relabelled(convs: list, ids: set[str]) -> list:
    """The same conversations where the questions of `ids` name other evidence (the other session's
    turns) and other answers: a preparation that ignores the key gives these the same memory."""
    out = copy.deepcopy(convs)
    for c in out:
        if c.id not in ids:
            continue
        session_of = {t.id: s.id for s in c.sessions for t in s.turns}
        for q in c.questions:
            other = next(s for s in c.sessions if s.id != session_of[q.evidence[0]])
            q.evidence = [t.id for t in other.turns[:1]]
            q.evidence_sessions = [other.id]
            q.answers = ["a different answer"]
    return out


def _cfg(**kw) -> PrepareConfig:
    args = ["dataset=fixture", "retrieval.rerank.kind=none", "retrieval.k=4", "graph.max_edges=4", "max_sessions=1",
            "max_questions_per_conversation=1"]  # one question: its evidence alone would pick the session
    return load_config(PrepareConfig, None, args + [f"{k}={v}" for k, v in kw.items()])


@pytest.mark.parametrize("train_sessions", ["null", "evidence"])
def test_val_and_test_memory_ignore_evidence_and_answers(tiny_conversation, tmp_path, train_sessions):
    convs = _convs(tiny_conversation)
    cfg = _cfg(train_sessions=train_sessions)
    meta = prepare_dataset(cfg, tmp_path / "a", conversations=convs, progress=False)
    held_out = set(meta["conversations"]["val"]) | set(meta["conversations"]["test"])
    assert held_out and meta["oracle"] is (train_sessions == "evidence")
    assert "BM25" in meta["memory"]["test"] and "no labels" in meta["memory"]["val"]
    assert meta["memory"]["train"].startswith("oracle") is (train_sessions == "evidence")
    card = (tmp_path / "a" / "data_card.md").read_text()
    assert ("ORACLE" in card) is (train_sessions == "evidence") and "memory of test: the 1 session BM25" in card
    prepare_dataset(cfg, tmp_path / "b", conversations=_relabelled(convs, held_out), progress=False)
    _, a = load_prepared(tmp_path / "a")
    _, b = load_prepared(tmp_path / "b")
    for split in ("val", "test"):
        assert len(a[split]) == len(b[split]) > 0
        for ra, rb in zip(a[split], b[split]):
            assert ra["id"] == rb["id"] and ra["answer"] != rb["answer"]  # the key did change ...
            for key in COMPARED:  # ... the memory did not
                assert ra[key] == rb[key], (split, ra["id"], key)


def test_the_relabelling_would_move_an_evidence_choice(tiny_conversation):
    """The check above can fail: under the oracle choice the same relabelling changes the memory."""
    conv = _convs(tiny_conversation, 1)[0]
    moved = _relabelled([conv], {conv.id})[0]
    q_orig, q_moved = conv.questions[:1], moved.questions[:1]
    pick = [s.id for s in choose_sessions(conv, q_orig, "evidence", 1, 0).sessions]
    assert pick != [s.id for s in choose_sessions(moved, q_moved, "evidence", 1, 0).sessions]
    # the label-free choices read the question text only
    for choice in ("retrieved", "recent"):
        assert ([s.id for s in choose_sessions(conv, q_orig, choice, 1, 0).sessions]
                == [s.id for s in choose_sessions(moved, q_moved, choice, 1, 0).sessions])


def test_evidence_choice_is_refused_for_val_and_test(tmp_path, tiny_conversation):
    cfg = _cfg(sessions="evidence")
    with pytest.raises(ConfigError, match="'sessions' is 'evidence'.*without it"):
        session_choice(cfg, "test")
    with pytest.raises(ConfigError, match="answer key"):
        prepare_dataset(cfg, tmp_path / "x", conversations=_convs(tiny_conversation), progress=False)
    assert not (tmp_path / "x").exists()  # refused before anything is written
    with pytest.raises(ConfigError, match="'train_sessions' must be one of"):
        session_choice(_cfg(train_sessions="gold"), "train")
