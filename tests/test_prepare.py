"""`qgmem prepare` on fixture conversations: deterministic splits by conversation, stored graphs that
round-trip, and a resume after a crash that finishes the job without redoing finished conversations."""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest
import torch

import qgmem.training.prepare as prep
from qgmem.config import ConfigError, load_config
from qgmem.model.inputs import row_graph
from qgmem.training.prepare import PrepareConfig, assign_splits, finalize_partial, load_prepared, prepare_dataset, reduce_sessions


pytestmark = pytest.mark.usefixtures("one_thread")


def _fixture_set(base) -> list:
    """Five conversations (copies of the tiny conversation under other ids)."""
    convs = []
    for i in range(5):
        c = copy.deepcopy(base)
        c.id = f"conv-{i}"
        for q in c.questions:
            q.id = f"{c.id}:{q.id}"
            q.conversation_id = c.id
        convs.append(c)
    return convs


def _cfg(**kw) -> PrepareConfig:
    return load_config(PrepareConfig, None, ["dataset=fixture", "retrieval.rerank.kind=none", "retrieval.k=4",
                                             "graph.max_edges=4"] + [f"{k}={v}" for k, v in kw.items()])


def test_assign_splits_deterministic_and_by_conversation():
    ids = [f"c{i}" for i in range(20)]
    a = assign_splits(ids, [0.8, 0.1, 0.1], seed=1)
    assert a == assign_splits(list(reversed(ids)), [0.8, 0.1, 0.1], seed=1)  # input order does not matter
    assert sorted(a.values()).count("train") == 16 and list(a.values()).count("val") == 2
    assert a != assign_splits(ids, [0.8, 0.1, 0.1], seed=2)
    small = assign_splits(["x", "y", "z"], [0.8, 0.1, 0.1], seed=0)  # every split non-empty from 3 on
    assert sorted(small.values()) == ["test", "train", "val"]
    with pytest.raises(ConfigError, match="three non-negative"):
        assign_splits(ids, [0.5, 0.5], seed=0)


def test_reduce_sessions_keeps_evidence(tiny_conversation):
    qs = [q for q in tiny_conversation.questions if q.id == "q1"]  # evidence D2:1 lives in S2
    small = reduce_sessions(tiny_conversation, qs, max_sessions=1, seed=0)
    assert [s.id for s in small.sessions] == ["S2"] and small.meta["sessions_total"] == 2
    assert reduce_sessions(tiny_conversation, qs, max_sessions=5, seed=0) is tiny_conversation


def test_prepare_splits_graphs_and_resume(tiny_conversation, tmp_path, monkeypatch):
    convs = _fixture_set(tiny_conversation)
    cfg = _cfg()
    out = tmp_path / "prep"

    # crash while building the third conversation
    real_build = prep.build_example
    seen: list[str] = []

    def crashing(wm, *a, **kw):
        ns = wm.question.conversation_id
        if ns not in seen:
            seen.append(ns)
        if len(seen) == 3:
            raise RuntimeError("simulated crash")
        return real_build(wm, *a, **kw)

    monkeypatch.setattr(prep, "build_example", crashing)
    with pytest.raises(RuntimeError, match="simulated crash"):
        prepare_dataset(cfg, out, conversations=convs, progress=False)
    log = [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()]
    assert [r["conversation_id"] for r in log] == seen[:2]
    assert not (out / "prepare_meta.json").exists()
    # a torn line from a kill mid-write is ignored and redone
    with open(out / "examples.jsonl", "a") as f:
        f.write('{"conversation_id": "conv-')
    # what is finished can be used already (`qgmem prepare --partial`)
    part = finalize_partial(cfg, out)
    assert part["partial"] and part["conversations_done"] == 2 and sum(part["counts"].values()) == 6
    assert load_prepared(out)[0]["conversations_done"] == 2

    # resume: only the unfinished conversations are built
    monkeypatch.setattr(prep, "build_example", real_build)
    from qgmem.retrieve import method

    built: list[str] = []
    real_retr_build = method.QGMemRetriever.build

    def counting(self, conv):
        built.append(conv.id)
        return real_retr_build(self, conv)

    monkeypatch.setattr(method.QGMemRetriever, "build", counting)
    meta = prepare_dataset(cfg, out, conversations=convs, progress=False)
    assert sorted(built) == sorted(c.id for c in convs if c.id not in seen[:2])

    # splits: by conversation, deterministic, 3/1/1 conversations x 3 questions
    assert meta["counts"] == {"train": 9, "val": 3, "test": 3}
    expected = assign_splits([c.id for c in convs], cfg.split, cfg.seed)
    meta2, splits = load_prepared(out)
    assert meta2 == json.loads(json.dumps(meta)) and "partial" not in meta2
    for name, ds in splits.items():
        assert {r["conversation_id"] for r in ds} == {c for c, s in expected.items() if s == name}
    ids = [r["id"] for ds in splits.values() for r in ds]
    assert sorted(ids) == sorted(q.id for c in convs for q in c.questions)

    # stored examples: question, gold answer, memory text with labels, graph tensors that round-trip
    row = next(r for r in splits["train"] if r["id"].endswith(":q1"))
    assert row["answer"] == "Globex" and row["question"] == "Where does Alice work now?"
    assert row["labels"] and all(f"[{lab}]" in row["memory_text"] for lab in row["labels"])
    g = row_graph(row, meta["node_dim"], meta["edge_dim"])
    assert g.x.shape == (row["num_nodes"], 384) and g.edge_attr.shape[1] == meta["edge_dim"] == 388
    assert g.edge_index.shape[1] == len(row["edge_text"]) <= 4
    from qgmem.embed import get_embedder

    # node features = MiniLM of node names, by the retriever's embedder (float32 by default; a config that asks
    # for bf16 gets bf16's bound: a bf16 row depends on the batch it was encoded in)
    model = get_embedder(cfg.retrieval.embedder)
    emb = model.encode(row["node_text"])
    assert torch.allclose(g.x, torch.from_numpy(emb), atol=2e-3 if model.name.endswith(":bf16") else 1e-5)

    # the same job again is a no-op that yields the same set; a different config is refused
    built.clear()
    assert prepare_dataset(cfg, out, conversations=convs, progress=False)["counts"] == meta["counts"]
    assert built == []
    with pytest.raises(ConfigError, match="different config"):
        prepare_dataset(dataclasses.replace(cfg, seed=5), out, conversations=convs, progress=False)


def test_load_prepared_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="qgmem prepare"):
        load_prepared(tmp_path)
    (tmp_path / "prepare_meta.json").write_text(json.dumps({"complete": False}))
    with pytest.raises(ValueError, match="incomplete"):
        load_prepared(tmp_path)


def test_row_graph_rejects_inconsistent_rows():
    row = {"id": "bad", "x": [[0.0, 1.0]], "edge_attr": [], "edge_index": [[0, 3]], "num_nodes": 1}
    with pytest.raises(ValueError, match="'bad'"):
        row_graph(row, 2, 2)
    empty = row_graph({"id": "e", "x": [], "edge_attr": [], "edge_index": [], "num_nodes": 0}, 8, 12)
    assert empty.x.shape == (0, 8) and empty.edge_attr.shape == (0, 12) and empty.edge_index.shape == (2, 0)
