"""Encoder designs beside the paper's mean-pooled token: LLM-space features, query-aware pooling with K
tokens, and the words path (shapes, what the tokens are at initialisation, errors, a tiny model's
forward/backward and checkpoint round trip)."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Batch

from qgmem.graph import GraphConfig, build_local_graph, feature_dims
from qgmem.model import EncoderConfig, GraphExample, GraphTokenLM
from qgmem.model.encoder import GraphTokenEncoder
from qgmem.model.llm_space import LLMTextEmbedder, nearest_tokens
from qgmem.model.query_pool import PART_INIT, part_pattern
from qgmem.testing.hash_embedder import HashEmbedder
from qgmem.testing.tiny_models import make_tiny
from qgmem.types import AtomicUnit, MemoryItem, Question, WorkingMemory

pytestmark = pytest.mark.usefixtures("one_thread")
DIM = 16
GCFG = GraphConfig(max_edges=10)
NODE_DIM, EDGE_DIM = feature_dims(GCFG, DIM)
DESIGNS = {
    "mean_pool": {},
    "mean_pool_llm": {"features": "llm"},
    "edges_llm": {"pooling": "edges", "num_graph_tokens": 3, "features": "llm"},
    "query": {"pooling": "query", "num_graph_tokens": 3},
    "query_llm_words": {"pooling": "query", "num_graph_tokens": 3, "features": "llm", "token_residual": "words"},
    "query_k1_words": {"pooling": "query", "num_graph_tokens": 1, "features": "llm", "token_residual": "words"},
}


def cfg(**kw) -> EncoderConfig:
    return EncoderConfig(node_dim=NODE_DIM, edge_dim=EDGE_DIM, hidden=32, heads=4, layers=2, dropout=0.0,
                         projector_hidden=64, **kw)


def example(i: int, triples: list[tuple[str, str, str]], question: str, answer: str = "red") -> GraphExample:
    q = Question(f"q{i}", question, [answer], "x")
    units = [AtomicUnit(f"u{i}-{j}", "ns", "S1", f"{s} {r} {o}", f"D1:{j}", f"D1:{j}", [f"D1:{j}"], s, s, r, o,
                        utterance_time=f"2023-05-0{1 + j}") for j, (s, r, o) in enumerate(triples)]
    wm = WorkingMemory(q, [MemoryItem(f"M{j + 1}", "unit", u.text, u.turn_ids, unit=u) for j, u in enumerate(units)],
                       "test")
    g = build_local_graph(wm, HashEmbedder(DIM).encode, GCFG, embed_dim=DIM)
    return GraphExample(question, "", answer, g, id=q.id)


EXAMPLES = [
    example(0, [("alice", "has colour", "red"), ("bob", "has colour", "blue")], "what colour does alice have ?"),
    example(1, [("bob", "has colour", "green")], "what colour does bob have ?", "green"),
    example(2, [("carol", "lives in", "paris"), ("dina", "has colour", "yellow"), ("carol", "has colour", "pink")],
            "where does carol live ?", "paris"),
]


def lm(seed: int = 0, **kw) -> GraphTokenLM:
    llm, tok = make_tiny("qwen3", seed=seed)
    torch.manual_seed(seed + 1)
    return GraphTokenLM(llm, tok, cfg(**kw))


@pytest.mark.parametrize("name", list(DESIGNS))
def test_each_design_gives_k_tokens_and_trains_through_the_frozen_llm(name: str) -> None:
    model = lm(**DESIGNS[name])
    k = model.num_graph_tokens
    batch = model.make_collator(256, system="answer .")(EXAMPLES)
    assert batch["questions"] == [ex.question for ex in EXAMPLES]
    tokens = model.graph_tokens(batch)
    assert tokens.shape == (len(EXAMPLES), k, model.llm_hidden) and torch.isfinite(tokens).all()
    model.train()
    out = model(batch)
    out.loss.backward()
    assert all(p.grad is None for p in model.llm.parameters())
    grads = {n: p.grad for n, p in model.graph_encoder.named_parameters() if p.requires_grad}
    assert grads and all(g is not None for g in grads.values()), [n for n, g in grads.items() if g is None]
    assert any(float(g.abs().sum()) > 0 for g in grads.values())


def test_llm_features_are_the_llms_own_embeddings_of_the_names() -> None:
    model = lm(features="llm")
    words = model.graph_encoder.words
    emb = model.llm.get_input_embeddings().weight
    ids = model.tokenizer(" paris", add_special_tokens=False)["input_ids"]
    assert words.ids("paris") == ids
    assert torch.allclose(words.means(["paris"])[0], emb[ids].float().mean(0))
    sets, mask = words.token_sets(["alice", "has colour"])
    assert sets.shape[:2] == mask.shape and mask.sum(1).tolist() == [1, 2]


def test_query_tokens_start_as_the_attended_edges_words() -> None:
    """One edge: all attention on it, so each token is its part mix of the edge's own LLM embeddings
    (the projector's last layer starts at zero)."""
    model = lm(pooling="query", num_graph_tokens=3, features="llm", token_residual="words").eval()
    ex = EXAMPLES[1]
    tokens = model.graph_tokens(model.make_collator(256)([ex]))[0]
    w = model.graph_encoder.words
    parts = torch.stack([w.means(["bob"])[0], w.means(["has colour"])[0], w.means(["green"])[0]])
    for k, p in enumerate(part_pattern(3)):
        logits = torch.zeros(3)
        logits[p] = PART_INIT
        assert torch.allclose(tokens[k], logits.softmax(0) @ parts, atol=1e-5)
    assert part_pattern(1) == [2] and part_pattern(2) == [0, 2] and part_pattern(4) == [0, 1, 2, 0]


def test_query_pooling_attends_to_the_edge_whose_subject_the_question_names() -> None:
    model = lm(pooling="query", num_graph_tokens=1, features="llm", token_residual="words").eval()
    enc = model.graph_encoder
    for question, want in (("what colour does alice have ?", "red"), ("what colour does bob have ?", "blue")):
        ex = GraphExample(question, "", want, EXAMPLES[0].graph)
        token = model.graph_tokens(model.make_collator(256)([ex]))[0, 0]
        near = nearest_tokens(token[None], model.llm.get_input_embeddings().weight, model.tokenizer, 1)[0][0][0]
        assert near.strip() == want, (question, near)
    with pytest.raises(ValueError, match="one question per graph"):
        enc(Batch.from_data_list([EXAMPLES[0].graph]))


def test_llm_designs_need_the_llm_and_the_text() -> None:
    enc = GraphTokenEncoder.from_config(cfg(features="llm"), llm_hidden=48)
    with pytest.raises(ValueError, match="attach_llm"):
        enc(EXAMPLES[0].graph)
    _, tok = make_tiny("qwen3")
    with pytest.raises(ValueError, match="width"):
        enc.attach_llm(tok, torch.zeros(10, 8))
    enc.attach_llm(tok, torch.randn(len(tok), 48))
    g = EXAMPLES[0].graph.clone()
    del g.node_text
    with pytest.raises(ValueError, match="node_text"):
        enc(g)


def test_bad_design_configs_are_refused() -> None:
    with pytest.raises(ValueError, match="token_residual"):
        cfg(token_residual="words")
    with pytest.raises(ValueError, match="features"):
        cfg(features="minilm")
    with pytest.raises(ValueError, match="pooling"):
        cfg(pooling="max")


def test_a_query_design_checkpoint_round_trips(tmp_path) -> None:
    model = lm(pooling="query", num_graph_tokens=3, features="llm", token_residual="words")
    with torch.no_grad():
        for p in model.graph_encoder.parameters():
            p.add_(0.01 * torch.randn_like(p))
    model.eval()
    batch = model.make_collator(256)(EXAMPLES)
    ref = model.graph_tokens(batch)
    model.save_pretrained(tmp_path / "ck")
    again = GraphTokenLM.from_pretrained(tmp_path / "ck", llm=model.llm, tokenizer=model.tokenizer).eval()
    assert again.enc_cfg.pooling == "query" and again.enc_cfg.token_residual == "words"
    assert torch.equal(again.graph_tokens(batch), ref)


def test_nearest_tokens_reads_an_embedding_row_as_its_own_token() -> None:
    _, tok = make_tiny("qwen3")
    weight = torch.randn(len(tok), 24, generator=torch.Generator().manual_seed(0))
    words = LLMTextEmbedder(tok, weight)
    i = words.ids("paris")[0]
    assert nearest_tokens(weight[i:i + 1], weight, tok, 2)[0][0] == (tok.decode([i]), 1.0)
