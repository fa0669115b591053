"""GraphTokenLM around the real SmolLM2-135M-Instruct and MiniLM graph features (slow)."""

from __future__ import annotations

import pytest
import torch
from conftest import REDUCED

from qgmem.graph import GraphConfig, build_local_graph, feature_dims
from qgmem.model import EncoderConfig
from qgmem.answer import serialize_working_memory
from qgmem.model import GraphExample, GraphTokenLM
from qgmem.types import AtomicUnit, Conversation, MemoryItem, WorkingMemory

pytestmark = pytest.mark.slow


def examples(conv: Conversation, embed) -> list[GraphExample]:
    """One working memory per question, units made from the gold evidence turns."""
    turns = {t.id: (s, t) for s in conv.sessions for t in s.turns}
    triples = {"D2:1": ("I", "works at", "Globex"), "D2:3": ("I", "visited", "Paris"),
               "D1:4": ("I", "is reading", "Dune"), "D2:2": ("I", "started reading", "Foundation")}
    out = []
    for q in conv.questions:
        items = []
        for i, tid in enumerate(q.evidence):
            s, t = turns[tid]
            sub, rel, obj = triples[tid]
            u = AtomicUnit(f"u-{tid}", conv.id, s.id, t.text, tid, tid, [tid], t.speaker, sub, rel, obj,
                           utterance_time=s.date[:10] if s.date else None)
            items.append(MemoryItem(f"M{i + 1}", "unit", t.text, [tid], unit=u, source_text=t.render()))
        wm = WorkingMemory(q, items, "qgmem")
        g = build_local_graph(wm, embed, GraphConfig())
        out.append(GraphExample(q.text, serialize_working_memory(wm, graph=g), q.answers[0], g, id=q.id))
    return out




def test_smollm2_graph_token_lm_end_to_end(tiny_conversation, tmp_path, one_thread) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from qgmem.embed import get_embedder
    from qgmem.llm.hf import local_model_path

    torch.manual_seed(0)
    path = local_model_path("smollm2")
    llm = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(path)
    emb = get_embedder()
    node_dim, edge_dim = feature_dims(GraphConfig(), emb.dim)
    cfg = EncoderConfig(node_dim=node_dim, edge_dim=edge_dim, hidden=64, heads=4, dropout=0.0, projector_hidden=128)
    lm = GraphTokenLM(llm, tok, cfg, graph_cfg=GraphConfig())
    assert lm.llm_hidden == llm.config.hidden_size == 576
    exs = examples(tiny_conversation, emb.encode)

    system = "Answer the question from the memory."
    col = lm.make_collator(1024, system=system)
    batch = col(exs[:1] if REDUCED else exs)
    ids = batch["input_ids"][0][batch["attention_mask"][0].bool()].tolist()
    # SmolLM2's BOS is <|im_start|>: the template writes it, encode does not add it -> no duplicate
    assert ids[0] == tok.bos_token_id and ids[1] != tok.bos_token_id
    assert ids.count(tok.bos_token_id) == 3  # system, user, assistant turns
    assert tok.decode(ids[-3:]) == "<|im_start|>assistant\n" or tok.decode(ids).find("Question:") > 0

    before = {n: p.detach().clone() for n, p in lm.llm.named_parameters()}
    opt = torch.optim.AdamW(lm.trainable_parameters(), lr=1e-3)
    lm.train()
    losses = []
    for _ in range(2 if REDUCED else 8):
        out = lm(batch)
        opt.zero_grad()
        out.loss.backward()
        opt.step()
        losses.append(float(out.loss))
    assert losses[-1] < losses[0]  # the graph token learns on the real model
    for n, p in lm.llm.named_parameters():
        assert p.grad is None and torch.equal(p, before[n]), n

    lm.eval()
    with torch.no_grad():
        ref = lm(batch, return_logits=True).logits
    lm.save_pretrained(tmp_path / "ckpt")
    lm2 = GraphTokenLM.from_pretrained(tmp_path / "ckpt")  # loads SmolLM2 from the path it recorded
    with torch.no_grad():
        assert torch.allclose(lm2(batch, return_logits=True).logits, ref, atol=1e-4)

    gen = lm.make_collator(1024, mode="generate", system=system)
    n_new = 4 if REDUCED else 12
    batched = lm.generate(gen(exs), max_new_tokens=n_new)
    single = [lm.generate(gen([e]), max_new_tokens=n_new)[0] for e in exs]
    assert batched == single and all(batched)
