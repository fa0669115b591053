"""GraphTokenLM on tiny Qwen3 and Llama models: frozen LLM, checkpoints, generation, accumulation."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import torch
from qgmem.testing.tiny_models import make_tiny

from qgmem.graph import GraphConfig, build_local_graph, feature_dims
from qgmem.model import EncoderConfig
from qgmem.answer import serialize_working_memory
from qgmem.model import GraphExample, GraphTokenLM
from qgmem.types import AtomicUnit, MemoryItem, Question, WorkingMemory

ARCHS = ["qwen3", "llama"]
DIM = 16


def hash_embed(texts: list[str]) -> np.ndarray:
    """Deterministic unit vectors per string (stands in for the sentence encoder)."""
    out = []
    for t in texts:
        rng = np.random.default_rng(int(hashlib.md5(t.encode()).hexdigest()[:8], 16))
        v = rng.normal(size=DIM).astype(np.float32)
        out.append(v / np.linalg.norm(v))
    return np.stack(out)


GCFG = GraphConfig(max_edges=10)


pytestmark = pytest.mark.usefixtures("one_thread")
NODE_DIM, EDGE_DIM = feature_dims(GCFG, DIM)


def enc_cfg(tokens: int = 2, dropout: float = 0.0) -> EncoderConfig:
    return EncoderConfig(node_dim=NODE_DIM, edge_dim=EDGE_DIM, hidden=32, heads=4, layers=2, dropout=dropout,
                         num_graph_tokens=tokens, projector_hidden=64)


def unit(i: int, s: str, r: str, o: str) -> AtomicUnit:
    return AtomicUnit(f"u{i}", "ns", "S1", f"{s} {r} {o}", f"D1:{i}", f"D1:{i}", [f"D1:{i}"], "Alice", s, r, o,
                      utterance_time=f"2023-05-0{1 + i % 9}")


def example(i: int, n_units: int, answer: str | None = "red") -> GraphExample:
    q = Question(f"q{i}", f"what colour is item{i} ?", [answer or ""], "4")
    units = [unit(j, f"item{i + j}", "has colour", ["red", "blue", "green"][j % 3]) for j in range(n_units)]
    wm = WorkingMemory(q, [MemoryItem(f"M{j + 1}", "unit", u.text, u.turn_ids, unit=u) for j, u in enumerate(units)],
                       "qgmem")
    g = build_local_graph(wm, hash_embed, GCFG, embed_dim=DIM)
    return GraphExample(q.text, serialize_working_memory(wm, graph=g), answer, g, id=f"ex{i}")


def make_lm(arch: str, tokens: int = 2, dropout: float = 0.0, lora: dict | None = None, seed: int = 0) -> GraphTokenLM:
    llm, tok = make_tiny(arch, seed=seed)
    torch.manual_seed(seed + 1)
    return GraphTokenLM(llm, tok, enc_cfg(tokens, dropout), lora=lora, graph_cfg=GCFG)


@pytest.mark.parametrize("arch", ARCHS)
def test_llm_frozen_encoder_trains(arch: str) -> None:
    lm = make_lm(arch, dropout=0.1)
    before_llm = {n: p.detach().clone() for n, p in lm.llm.named_parameters()}
    before_enc = {n: p.detach().clone() for n, p in lm.graph_encoder.named_parameters()}
    assert {id(p) for p in lm.trainable_parameters()} == {id(p) for p in lm.graph_encoder.parameters()}
    opt = torch.optim.AdamW(lm.trainable_parameters(), lr=1e-2)
    batch = lm.make_collator(256)([example(i, n_units=1 + i % 3) for i in range(4)])
    lm.train()
    assert not lm.llm.training  # LLM dropout stays off
    for _ in range(3):
        opt.zero_grad()
        out = lm(batch)
        out.loss.backward()
        opt.step()
    for n, p in lm.llm.named_parameters():
        assert p.grad is None, n
        assert torch.equal(p, before_llm[n]), n
    for n, p in lm.graph_encoder.named_parameters():
        if n == "encoder.empty":  # no empty graph in this batch
            continue
        assert p.grad is not None and torch.isfinite(p.grad).all(), n
        assert not torch.equal(p, before_enc[n]), n


@pytest.mark.parametrize("arch", ARCHS)
def test_save_load_roundtrip_identical_logits(arch: str, tmp_path) -> None:
    lm = make_lm(arch)
    opt = torch.optim.AdamW(lm.trainable_parameters(), lr=1e-2)
    batch = lm.make_collator(256)([example(i, 2) for i in range(3)])
    lm.train()
    for _ in range(2):
        opt.zero_grad()
        lm(batch).loss.backward()
        opt.step()
    lm.eval()
    with torch.no_grad():
        ref = lm(batch, return_logits=True).logits
    lm.save_pretrained(tmp_path / "ckpt")
    names = {n for n, p in lm.named_parameters() if p.requires_grad}
    from safetensors.torch import load_file
    assert set(load_file(str(tmp_path / "ckpt" / "model.safetensors"))) == names  # only trainable weights
    llm2, tok2 = make_tiny(arch, seed=0)
    lm2 = GraphTokenLM.from_pretrained(tmp_path / "ckpt", llm=llm2, tokenizer=tok2).eval()
    assert lm2.enc_cfg == lm.enc_cfg and lm2.graph_cfg == GCFG
    with torch.no_grad():
        assert torch.equal(lm2(batch, return_logits=True).logits, ref)


@pytest.mark.parametrize("arch", ARCHS)
def test_save_load_with_lora_roundtrip(arch: str, tmp_path) -> None:
    lm = make_lm(arch, lora={"r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"]})
    base = {n: p.detach().clone() for n, p in lm.llm.named_parameters() if "lora_" not in n}
    lora_before = {n: p.detach().clone() for n, p in lm.llm.named_parameters() if "lora_" in n}
    assert lora_before and all(p.requires_grad for n, p in lm.llm.named_parameters() if "lora_" in n)
    opt = torch.optim.AdamW(lm.trainable_parameters(), lr=1e-2)
    batch = lm.make_collator(256)([example(i, 2) for i in range(3)])
    lm.train()
    for _ in range(3):
        opt.zero_grad()
        lm(batch).loss.backward()
        opt.step()
    for n, p in lm.llm.named_parameters():
        if "lora_" in n:
            continue
        assert p.grad is None and torch.equal(p, base[n]), n
    assert any(not torch.equal(p, lora_before[n]) for n, p in lm.llm.named_parameters() if "lora_" in n)
    lm.eval()
    with torch.no_grad():
        ref = lm(batch, return_logits=True).logits
    lm.save_pretrained(tmp_path / "ckpt")
    llm2, tok2 = make_tiny(arch, seed=0)
    lm2 = GraphTokenLM.from_pretrained(tmp_path / "ckpt", llm=llm2, tokenizer=tok2).eval()
    assert lm2.lora == lm.lora
    with torch.no_grad():
        assert torch.allclose(lm2(batch, return_logits=True).logits, ref, atol=1e-6)


def test_from_pretrained_rejects_wrong_hidden_size(tmp_path) -> None:
    lm = make_lm("qwen3")
    lm.save_pretrained(tmp_path / "ckpt")
    llm2, tok2 = make_tiny("qwen3", hidden=64)
    with pytest.raises(ValueError, match="hidden size"):
        GraphTokenLM.from_pretrained(tmp_path / "ckpt", llm=llm2, tokenizer=tok2)


@pytest.mark.parametrize("arch", ARCHS)
def test_batched_generate_equals_unbatched(arch: str) -> None:
    lm = make_lm(arch).eval()
    gen = lm.make_collator(256, mode="generate")
    exs = [example(0, 1, None), example(1, 3, None), example(2, 0, None), example(3, 2, None)]
    lengths = {len(gen.encode(e)["input_ids"]) for e in exs}
    assert len(lengths) == len(exs)  # different prompt lengths, so left padding matters
    batched = lm.generate(gen(exs), max_new_tokens=8)
    single = [lm.generate(gen([e]), max_new_tokens=8)[0] for e in exs]
    assert batched == single
    assert all(s for s in single)


@pytest.mark.parametrize("arch", ARCHS)
def test_gradient_accumulation_matches_full_batch(arch: str) -> None:
    lm = make_lm(arch)
    col = lm.make_collator(256)
    exs = [example(i, 1 + i % 4) for i in range(8)]
    for i, e in enumerate(exs):  # different answer lengths, so token weighting matters
        e.answer = " ".join(["red"] * (1 + i))
    lm.train()
    lm.zero_grad()
    lm(col(exs)).loss.backward()
    full = {n: p.grad.clone() for n, p in lm.named_parameters() if p.grad is not None}
    lm.zero_grad()
    micro = [col(exs[i:i + 2]) for i in range(0, 8, 2)]
    total = sum(int((b["labels"][:, 1:] != -100).sum()) for b in micro)
    for b in micro:
        (lm(b).loss_sum / total).backward()
    acc = {n: p.grad.clone() for n, p in lm.named_parameters() if p.grad is not None}
    assert full.keys() == acc.keys() and full
    for n, g in full.items():
        assert torch.allclose(g, acc[n], atol=1e-5, rtol=1e-4), n


@pytest.mark.parametrize("arch", ARCHS)
def test_empty_graph_forward_and_generate(arch: str) -> None:
    lm = make_lm(arch)
    exs = [example(0, 0), example(1, 2)]
    assert exs[0].graph.num_nodes == 0
    lm.train()
    out = lm(lm.make_collator(256)(exs), return_logits=True)
    assert torch.isfinite(out.logits).all() and torch.isfinite(out.loss)
    out.loss.backward()
    assert lm.graph_encoder.encoder.empty.grad is not None  # the empty embedding is learned
    lm.eval()
    texts = lm.generate(lm.make_collator(256, mode="generate")([example(0, 0, None)]), max_new_tokens=4)
    assert len(texts) == 1 and texts[0]


@pytest.mark.parametrize("arch", ARCHS)
def test_text_only_control_equals_prompt_without_graph_positions(arch: str) -> None:
    lm = make_lm(arch).eval()
    ex = example(0, 2)
    b = lm.make_collator(256)([ex])
    lm.use_graph = False
    with torch.no_grad():
        ctrl = lm(b, return_logits=True)
    keep = ~b["graph_mask"][0]
    ids = b["input_ids"][0][keep].unsqueeze(0)
    with torch.no_grad():
        ref = lm.llm(input_ids=ids).logits
    assert torch.allclose(ctrl.logits, ref, atol=1e-5)
    lm.use_graph = True
    with torch.no_grad():
        with_graph = lm(b, return_logits=True)
    assert with_graph.logits.shape[1] == ctrl.logits.shape[1] + lm.num_graph_tokens


def test_graph_token_count_mismatch_is_an_error() -> None:
    lm = make_lm("qwen3", tokens=2)
    from qgmem.model import GraphTokenCollator
    b = GraphTokenCollator(lm.tokenizer, 3, 256)([example(0, 1)])
    with pytest.raises(ValueError, match="num_graph_tokens=2"):
        lm(b)


def test_bf16_llm_gets_bf16_graph_tokens_and_fp32_encoder_grads() -> None:
    llm, tok = make_tiny("llama", seed=0)
    lm = GraphTokenLM(llm.to(torch.bfloat16), tok, enc_cfg(), graph_cfg=GCFG)
    assert all(p.dtype == torch.float32 for p in lm.graph_encoder.parameters())
    seen = {}
    emb = lm.llm.get_input_embeddings()
    hook = lm.llm.register_forward_pre_hook(lambda m, a, kw: seen.update(h=kw["inputs_embeds"]), with_kwargs=True)
    lm.train()
    out = lm(lm.make_collator(256)([example(0, 2), example(1, 0)]))
    hook.remove()
    assert seen["h"].dtype == emb.weight.dtype == torch.bfloat16
    assert torch.isfinite(out.loss) and out.loss.dtype == torch.float32
    out.loss.backward()
    grads = [p.grad for p in lm.graph_encoder.parameters() if p.grad is not None]
    assert grads and all(g.dtype == torch.float32 and torch.isfinite(g).all() for g in grads)


def test_build_example_and_text_only_generation() -> None:
    from qgmem.model import InputConfig, build_example

    q = Question("qa", "what colour is item3 ?", ["red"], "4", question_time="2023-09-01")
    u = unit(1, "item3", "has colour", "red")
    wm = WorkingMemory(q, [MemoryItem("M1", "unit", u.text, u.turn_ids, unit=u)], "qgmem")
    ex = build_example(wm, hash_embed, InputConfig(graph=GCFG, text_with_graph=True), answer="red", embed_dim=DIM)
    assert ex.id == "qa" and ex.answer == "red" and "2023-09-01" in ex.question
    assert ex.graph.edge_text == ["has colour"] and "(item3) -[has colour]-> (red) [M1]" in ex.memory_text
    lm = make_lm("qwen3").eval()
    lm.use_graph = False
    gen = lm.make_collator(256, mode="generate")
    batched = lm.generate(gen([ex, example(5, 3, None)]), max_new_tokens=5)
    assert batched == [lm.generate(gen([e]), max_new_tokens=5)[0] for e in (ex, example(5, 3, None))]


def test_gradient_checkpointing_recomputes_without_dropout_and_matches() -> None:
    exs = [example(i, 1 + i) for i in range(3)]
    grads = {}
    calls = {}
    for ckpt in (False, True):
        llm, tok = make_tiny("qwen3", seed=0)
        llm.config.attention_dropout = 0.5  # would change the loss if the LLM's dropout were on
        torch.manual_seed(1)
        lm = GraphTokenLM(llm, tok, enc_cfg(), graph_cfg=GCFG, gradient_checkpointing=ckpt)
        calls[ckpt] = 0
        first = lm.llm.model.layers[0].input_layernorm  # recomputation starts at the layer input

        def count(*_: object, key: bool = ckpt) -> None:
            calls[key] += 1

        hook = first.register_forward_hook(count)
        lm.train()
        lm(lm.make_collator(256)(exs)).loss.backward()
        hook.remove()
        grads[ckpt] = {k: p.grad.clone() for k, p in lm.graph_encoder.named_parameters() if p.grad is not None}
        assert all(p.grad is None for p in lm.llm.parameters())
    assert calls == {False: 1, True: 2}  # the checkpointed layer ran again in backward
    for k in grads[False]:
        assert torch.allclose(grads[False][k], grads[True][k], atol=1e-6), k


def test_generate_stops_on_every_eos_the_model_names() -> None:
    lm = make_lm("qwen3")
    lm.llm.generation_config.eos_token_id = [7, lm.tokenizer.eos_token_id]
    assert lm._eos_ids() == [lm.tokenizer.eos_token_id, 7]
