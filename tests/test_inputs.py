"""The one model-input step: training preparation and `MemoryPipeline` build the identical example,
a stored row gives back exactly that example, and inference never imports training code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from qgmem.config import load_config
from qgmem.model.collate import GraphTokenCollator
from qgmem.model.encoder import EncoderConfig
from qgmem.model.graph_token_lm import GraphTokenLM
from qgmem.model.inputs import build_example, example_from_row
from qgmem.pipeline import MemoryPipeline
from qgmem.testing.hash_embedder import HashEmbedder
from qgmem.testing.tiny_models import make_tiny
from qgmem.training.prepare import PrepareConfig, input_config, load_prepared, prepare_dataset

pytestmark = pytest.mark.usefixtures("one_thread")

ROOT = Path(__file__).resolve().parents[1]
DIM = 16


@pytest.fixture
def hash_embedder(monkeypatch):
    """`retrieval.embedder: hash` -> a 16-dim hashed bag of words (fast, offline)."""
    import qgmem.embed

    real = qgmem.embed.get_embedder
    emb = HashEmbedder(dim=DIM)
    monkeypatch.setattr(qgmem.embed, "get_embedder",
                        lambda name="minilm", device=None: emb if name == "hash" else real(name, device))
    return emb


def _prepare_cfg() -> PrepareConfig:
    return load_config(PrepareConfig, None, [
        "dataset=fixture", "retrieval.embedder=hash",
        "retrieval.rerank.kind=none", "retrieval.k=4", "graph.max_edges=4", "text_with_graph=true"])


def test_pipeline_does_not_import_training():
    code = ("import sys, qgmem.pipeline; bad = sorted(m for m in sys.modules if m.startswith('qgmem.training')); "
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def test_prepare_and_pipeline_build_the_identical_example(hash_embedder, tiny_conversation, tmp_path):
    cfg = _prepare_cfg()
    meta = prepare_dataset(cfg, tmp_path / "prep", conversations=[tiny_conversation], progress=False)
    _, splits = load_prepared(tmp_path / "prep")
    rows = {r["id"]: r for ds in splits.values() for r in ds}
    assert sorted(rows) == ["q1", "q2", "q3"]

    # a checkpoint that carries the prepared set's config, as the trainer writes it
    llm, tok = make_tiny("qwen3", seed=0)
    enc = EncoderConfig(node_dim=meta["node_dim"], edge_dim=meta["edge_dim"], hidden=16, heads=2, projector_hidden=32)
    model = GraphTokenLM(llm, tok, enc, graph_cfg=cfg.graph, base_model="tiny-qwen3",
                         extra={"max_length": 512, "prepare": meta["config"]})
    model.save_pretrained(tmp_path / "ck")
    pipe = MemoryPipeline.from_pretrained(tmp_path / "ck", llm=(llm, tok), store_dir=tmp_path / "store")
    assert pipe.k == 4 and pipe.inputs == input_config(cfg)
    pipe.add(tiny_conversation)

    collate = GraphTokenCollator(tok, 1, 512, mode="generate")
    for q in tiny_conversation.questions:
        stored = example_from_row(rows[q.id], meta["node_dim"], meta["edge_dim"])
        wm, live = pipe.example(q)
        assert [it.label for it in wm.items] == rows[q.id]["labels"]
        assert (stored.question, stored.memory_text, stored.id) == (live.question, live.memory_text, live.id)
        assert "-[" in live.memory_text  # text_with_graph reached both paths
        for key in ("x", "edge_index", "edge_attr"):
            assert torch.equal(getattr(stored.graph, key), getattr(live.graph, key)), key
        a, b = collate([stored]), collate([live])
        assert torch.equal(a["input_ids"], b["input_ids"]) and torch.equal(a["graph_mask"], b["graph_mask"])


def test_stored_row_round_trips_to_the_built_example(hash_embedder, tiny_conversation, tmp_path):
    """`example_from_row(example_record(...))` is the `build_example` output, field by field."""
    from qgmem.retrieve.method import QGMemRetriever
    from qgmem.store import MemoryStore
    from qgmem.training.prepared import example_record

    cfg = _prepare_cfg()
    retriever = QGMemRetriever(MemoryStore(tmp_path / "store"), cfg.retrieval)
    retriever.build(tiny_conversation)
    q = tiny_conversation.questions[1]  # has a question time: the dated question text must survive
    wm = retriever.activate(q, k=cfg.retrieval.k)
    built = build_example(wm, hash_embedder.encode, input_config(cfg), embed_dim=DIM, answer=q.answers[0])
    row = example_record(q, wm, built, "train")
    back = example_from_row(row, DIM, DIM + 4)
    assert (back.question, back.memory_text, back.answer, back.id) == \
        (built.question, built.memory_text, built.answer, built.id)
    assert q.question_time and q.question_time in back.question
    for key in ("x", "edge_index", "edge_attr"):
        assert torch.equal(getattr(back.graph, key), getattr(built.graph, key)), key
    assert back.graph.edge_text == built.graph.edge_text and back.graph.node_text == built.graph.node_text
