"""`qgmem prepare` embeds its graph features with the retriever's own embedder: loaded once, on
``retrieval.device``, the one `MemoryPipeline` uses at inference (it was loaded a second time, without
the device: on a GPU prepare the features came from the CPU copy)."""

from __future__ import annotations

import copy

import pytest

import qgmem.embed
from qgmem.config import load_config
from qgmem.testing.hash_embedder import HashEmbedder
from qgmem.training.prepare import PrepareConfig, prepare_dataset

pytestmark = pytest.mark.usefixtures("one_thread")


def test_graph_features_come_from_the_retrievers_embedder_on_its_device(tiny_conversation, tmp_path, monkeypatch):
    loaded: list[tuple[str, str | None]] = []
    emb = HashEmbedder(dim=16)

    def get_embedder(name: str = "minilm", device: str | None = None) -> HashEmbedder:
        loaded.append((name, device))
        return emb

    monkeypatch.setattr(qgmem.embed, "get_embedder", get_embedder)
    convs = []
    for i in range(3):
        c = copy.deepcopy(tiny_conversation)
        c.id = f"conv-{i}"
        for q in c.questions:
            q.id, q.conversation_id = f"{c.id}:{q.id}", c.id
        convs.append(c)
    cfg = load_config(PrepareConfig, None, ["dataset=fixture", "retrieval.rerank.kind=none", "retrieval.k=4",
                                            "retrieval.embedder=hashed", "retrieval.device=cpu"])
    before = emb.calls
    meta = prepare_dataset(cfg, tmp_path / "prep", conversations=convs, progress=False)
    # one embedder, on the configured device (the build's change probe asks for the one it was trained on, its own)
    assert [got for got in loaded if got[0] != "minilm"] == [("hashed", "cpu")]
    assert meta["node_dim"] == 16 and emb.calls > before  # the graphs were embedded by it
