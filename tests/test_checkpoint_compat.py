"""A checkpoint written by qgmem 0.1.0 (before the package layout moved) still loads and gives the
same graph tokens; its inference settings (k, retrieval, graph) reach `MemoryPipeline`.

The fixture and `expected_graph_tokens.json` were written by the old code for the one-unit graph
built below (same construction as the script that wrote them; see tests/fixtures/checkpoints/README.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Batch

from qgmem.config import to_dict
from qgmem.graph.local_graph import GraphConfig, build_local_graph
from qgmem.model.graph_token_lm import GraphTokenLM
from qgmem.retrieve.config import RETIRED_KEYS
from qgmem.pipeline import MemoryPipeline
from qgmem.testing.hash_embedder import HashEmbedder
from qgmem.testing.tiny_models import make_tiny
from qgmem.types import AtomicUnit, MemoryItem, Question, WorkingMemory

pytestmark = pytest.mark.usefixtures("one_thread")

CKPT = Path(__file__).parent / "fixtures" / "checkpoints" / "qgmem-0.1.0-tiny-qwen3"
GCFG = GraphConfig(max_edges=10, rank_feature=True, time_feature=True)


def one_unit_graph():
    """The graph of the fixture script: one unit "Alice -work at-> the bakery", HashEmbedder(dim=16)."""
    emb = HashEmbedder(dim=16)
    u = AtomicUnit(id="u1", namespace="c", session_id="s1", text="Alice works at the bakery.", first_turn="D1:1",
                   last_turn="D1:1", turn_ids=["D1:1"], speaker="Alice", subject="Alice", relation="work at",
                   object="the bakery", utterance_time="2023-05-08")
    wm = WorkingMemory(Question(id="q", text="Where does Alice work?", answers=["bakery"], category="1"),
                       [MemoryItem(label="M1", kind="unit", text=u.text, turn_ids=u.turn_ids, unit=u)], "qgmem")
    return build_local_graph(wm, emb.encode, GCFG, embed_dim=emb.dim)


def test_old_checkpoint_gives_the_same_graph_tokens():
    llm, tok = make_tiny("qwen3", seed=0)
    model = GraphTokenLM.from_pretrained(CKPT, llm=llm, tokenizer=tok).eval()
    assert model.graph_cfg == GCFG and model.enc_cfg.node_dim == 16 and model.enc_cfg.edge_dim == 20
    with torch.no_grad():
        tokens = model.graph_encoder(Batch.from_data_list([one_unit_graph()]))
    expected = torch.tensor(json.loads((CKPT / "expected_graph_tokens.json").read_text())["tokens"])
    assert tokens.shape == expected.shape == (1, 1, 48)
    assert torch.allclose(tokens, expected, atol=1e-5)


def test_old_checkpoint_settings_reach_the_pipeline(tmp_path, monkeypatch, tiny_conversation):
    import qgmem.embed

    # the fixture was written with a hashed 16-dim embedder (offline, no model download)
    real_get = qgmem.embed.get_embedder
    hashed = HashEmbedder(dim=16)
    monkeypatch.setattr(qgmem.embed, "get_embedder",
                        lambda name="minilm", device=None: hashed if name == "hash" else real_get(name, device))
    llm, tok = make_tiny("qwen3", seed=0)
    pipe = MemoryPipeline.from_pretrained(CKPT, llm=(llm, tok), store_dir=tmp_path / "store", max_new_tokens=4)
    old = json.loads((CKPT / "qgmem_config.json").read_text())["extra"]["prepare"]
    assert pipe.k == 5 and pipe.max_length == 256
    assert pipe.retrieval.embedder == "hash" and pipe.retrieval.k == 5 and pipe.retrieval.rerank.kind == "none"
    # every retrieval setting as the old code stored it (fields added since then take their defaults)
    # (retired keys such as token_counter are dropped with their meaning)
    kept = {k: v for k, v in old["retrieval"].items() if k not in RETIRED_KEYS}
    assert _common(to_dict(pipe.retrieval), kept) == kept
    assert pipe.inputs.graph == GCFG and pipe.inputs.text_with_graph is False
    ans = pipe.add(tiny_conversation, namespace="alice").answer("Where does Alice work now?", namespace="alice")
    assert 0 < len(ans.working_memory.items) <= 5


def _common(new: dict, old: dict) -> dict:
    """`new` restricted to the keys `old` has, recursively."""
    return {k: _common(new[k], v) if isinstance(v, dict) and isinstance(new.get(k), dict) else new.get(k)
            for k, v in old.items()}
