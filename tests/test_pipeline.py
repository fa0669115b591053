"""MemoryPipeline round trips: a saved tiny graph-token checkpoint, and the text path over a ChatBackend."""

from __future__ import annotations

import copy

import pytest

from qgmem.config import to_dict
from qgmem.model.encoder import EncoderConfig
from qgmem.graph.local_graph import GraphConfig
from qgmem.llm.scripted import ScriptedBackend
from qgmem.model.graph_token_lm import GraphTokenLM
from qgmem.pipeline import Answer, MemoryPipeline
from qgmem.retrieve.config import RetrievalConfig
from qgmem.types import Question
from qgmem.testing.tiny_models import make_tiny


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def tiny_checkpoint(tmp_path):
    llm, tok = make_tiny("llama", seed=1, hidden=32)
    llm_dir = tmp_path / "llm"
    llm.save_pretrained(llm_dir)
    tok.save_pretrained(llm_dir)
    retrieval = RetrievalConfig(k=4)
    retrieval.rerank.kind = "none"
    graph = GraphConfig(max_edges=4)
    prepare = {"dataset": "locomo", "graph": to_dict(graph), "retrieval": to_dict(retrieval), "text_with_graph": False}
    model = GraphTokenLM(llm, tok, EncoderConfig(node_dim=384, edge_dim=388, hidden=32, heads=2, projector_hidden=64),
                         graph_cfg=graph, base_model=str(llm_dir),
                         extra={"model_name": str(llm_dir), "max_length": 400, "prepare": prepare})
    ck = tmp_path / "ck"
    model.save_pretrained(ck)
    return ck


def test_checkpoint_round_trip(tiny_checkpoint, tiny_conversation, tmp_path):
    pipe = MemoryPipeline.from_pretrained(tiny_checkpoint, store_dir=tmp_path / "store", max_new_tokens=6)
    assert pipe.model is not None and pipe.k == 4 and pipe.max_length == 400  # settings from the checkpoint
    ans = pipe.add(tiny_conversation, namespace="alice").answer("Where does Alice work now?", namespace="alice")
    assert pipe.namespaces() == ["alice"]
    assert isinstance(ans, Answer) and ans.raw
    labels = {it.label for it in ans.working_memory.items}
    assert 0 < len(labels) <= 4
    assert set(ans.cited_labels) <= labels and not set(ans.cited_labels) & set(ans.invalid_labels)
    assert any("D2:1" in it.turn_ids for it in ans.working_memory.items)  # Globex turn retrieved
    # the answer is the checkpoint model's own greedy output for this working memory
    from qgmem.graph.local_graph import build_local_graph
    from qgmem.model.collate import GraphExample
    from qgmem.answer import serialize_working_memory

    emb = pipe.retriever.embedder
    g = build_local_graph(ans.working_memory, emb.encode, pipe.inputs.graph, embed_dim=emb.dim)
    ex = GraphExample(question="Where does Alice work now?", memory_text=serialize_working_memory(
        ans.working_memory, with_graph=False, graph=g), answer=None, graph=g)
    assert pipe.model.generate(pipe.model.make_collator(400, mode="generate")([ex]), max_new_tokens=6)[0] == ans.raw


def test_text_path_cites_only_existing_labels(tiny_conversation, tmp_path):
    def reply(req):
        assert "[M1]" in req.messages[-1]["content"] and "Where does Alice work now?" in req.messages[-1]["content"]
        return "The latest job is in [M1]; see also [M2] and [M99].\nAnswer: Globex"

    backend = ScriptedBackend(reply)
    pipe = MemoryPipeline.from_pretrained(None, llm=backend, store_dir=tmp_path / "store")
    pipe.add(tiny_conversation)  # namespace = conversation id
    ans = pipe.answer(Question("x", "Where does Alice work now?", [], "", conversation_id="c1"))
    assert ans.text == "Globex"
    assert ans.cited_labels == ["M1", "M2"] and ans.invalid_labels == ["M99"]
    assert backend.usage.phases["generation"].calls == 1
    # a single namespace needs no name; an unknown one is a clear error
    assert pipe.answer("Where does Alice work now?").text == "Globex"
    with pytest.raises(KeyError, match="bob"):
        pipe.answer("Where does Bob live?", namespace="bob")


def test_add_sessions_incrementally(tiny_conversation, tmp_path):
    pipe = MemoryPipeline.from_pretrained(None, llm=ScriptedBackend(lambda r: "Answer: not mentioned"),
                                          store_dir=tmp_path / "store")
    s1, s2 = copy.deepcopy(tiny_conversation.sessions)
    pipe.add([s1], namespace="u")
    before = pipe.working_memory("Where did Alice visit with her mom?", namespace="u")
    assert all(t.startswith("D1:") for t in before.turn_ids())
    pipe.add([s2], namespace="u")
    after = pipe.working_memory("Where did Alice visit with her mom?", namespace="u")
    assert "D2:3" in after.turn_ids()
    assert len(pipe.store.units("u")) > 0 and pipe.namespaces() == ["u"]
    with pytest.raises(TypeError, match="Conversation or a list of Session"):
        pipe.add("not a conversation", namespace="u")
