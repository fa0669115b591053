"""The per-GPU memory estimate: exact parameter bytes, activations against what PyTorch really keeps
for backward, the refusal of a config that cannot fit (fake device capacity), `--estimate-only`."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM

from qgmem.errors import UserError
from qgmem.training.config import load_train_config
from qgmem.training.memory import (GIB, DoesNotFit, activation_bytes, check_fits, estimate, layer_activation_bytes,
                                   model_shape, preflight, shape_from_config)
from qgmem.training.trainer import main as train_main

QWEN_CFG = "configs/train/qwen3_8b_convomem.yaml"


def tiny(arch: str, hidden: int = 128, inter: int = 256, layers: int = 2) -> torch.nn.Module:
    kw = dict(vocab_size=96, hidden_size=hidden, intermediate_size=inter, num_hidden_layers=layers,
              num_attention_heads=4, num_key_value_heads=2, attn_implementation="sdpa", tie_word_embeddings=False)
    torch.manual_seed(0)
    if arch == "qwen3":
        return Qwen3ForCausalLM(Qwen3Config(head_dim=hidden // 4, **kw)).eval()
    return LlamaForCausalLM(LlamaConfig(**kw)).eval()


def saved_for_backward(model: torch.nn.Module, batch: int, seq: int, checkpointing: bool) -> int:
    """Bytes of the distinct non-parameter tensors autograd keeps, for a frozen LLM whose input
    embeddings need a gradient (the graph token's situation)."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    for p in model.parameters():
        p.requires_grad_(False)
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.train()
    dtype = next(model.parameters()).dtype
    emb = (0.02 * torch.randn(batch, seq, model.config.hidden_size)).to(dtype).requires_grad_(True)
    kept: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        ptr = t.untyped_storage().data_ptr()
        if ptr not in params:
            kept[ptr] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model.model(inputs_embeds=emb, use_cache=False)  # decoder stack + final norm (logits counted apart)
    return sum(kept.values())


@pytest.mark.parametrize("arch", ["qwen3", "llama"])
def test_parameter_bytes_are_exact(arch):
    model = tiny(arch)
    shape = shape_from_config(model.config)
    real = sum(p.numel() * p.element_size() for p in model.parameters())
    assert shape.params * 4 == real
    assert shape.params * 2 == sum(p.numel() * p.element_size() for p in model.to(torch.bfloat16).parameters())


@pytest.mark.parametrize("arch", ["qwen3", "llama"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_activations_match_what_autograd_keeps(arch, dtype):
    batch, seq = 2, 128
    for ckpt in (False, True):
        model = tiny(arch).to(dtype)
        shape = shape_from_config(model.config)
        d = torch.finfo(dtype).bits // 8
        measured = saved_for_backward(model, batch, seq, ckpt)
        est = activation_bytes(shape, d, batch * seq, ckpt)
        if ckpt:  # the estimate also holds the one layer recomputed during backward
            est -= batch * seq * layer_activation_bytes(shape, d)
        assert abs(est - measured) / measured < 0.05, (arch, dtype, ckpt, est, measured)


def test_checkpointing_saves_activations_at_8b():
    cfg = load_train_config(QWEN_CFG)
    shape = model_shape(cfg.model.name)  # offline: the shipped published config
    assert shape.params == 8_190_735_360 and shape.vocab == 151_936 and shape.layers == 36
    on, off = (estimate(cfg, shape, checkpointing=c) for c in (True, False))
    assert on.rows["frozen LLM weights"] == 8_190_735_360 * 2
    assert off.rows["activations"] > 10 * on.rows["activations"]
    tokens = cfg.optim.batch_size * cfg.data.max_length
    assert on.rows["logits (full vocabulary, fp32 loss)"] == tokens * 151_936 * 14


@pytest.mark.parametrize("capacity_gib, fix", [
    (70, "model.gradient_checkpointing=true"),
    (30, "optim.batch_size=1 with model.gradient_checkpointing=true"),
    (24, "data.max_length="),
    (12, "use a larger GPU"),
])
def test_refusal_names_the_fix(capacity_gib, fix):
    cfg = load_train_config(QWEN_CFG, overrides=["model.gradient_checkpointing=false"])
    shape = model_shape(cfg.model.name)
    with pytest.raises(DoesNotFit) as e:
        check_fits(cfg, shape, capacity_gib * GIB)
    msg = str(e.value)
    assert isinstance(e.value, UserError) and "\n" not in msg and fix in msg, msg
    if "=" in fix:  # the named change really fits
        named = [w for w in msg.rsplit("set ", 1)[1].split() if "=" in w]
        fixed = load_train_config(QWEN_CFG, overrides=["model.gradient_checkpointing=true", *named])
        assert estimate(fixed, shape).total <= capacity_gib * GIB


def test_fitting_config_passes_and_cpu_only_prints():
    cfg = load_train_config(QWEN_CFG)
    lines: list[str] = []
    est = preflight(cfg, None, lines.append, capacity=80 * GIB)  # an 80 GB card: fits with checkpointing
    assert est.total < 80 * GIB and "checkpointing on" in lines[0]
    big = load_train_config(QWEN_CFG, overrides=["optim.batch_size=16"])
    with pytest.raises(DoesNotFit):
        preflight(big, None, lines.append, capacity=80 * GIB)
    if not torch.cuda.is_available():  # no device: the estimate is printed, nothing refused
        lines.clear()
        preflight(big, None, lines.append, device="cpu")
        assert "frozen LLM weights" in lines[0]


def test_estimate_only_cli(capsys):
    assert train_main(["--config", QWEN_CFG, "--estimate-only"]) == 0
    out = capsys.readouterr().out
    assert "Qwen/Qwen3-8B (8,190,735,360 params, bfloat16)" in out and "total" in out
    assert train_main(["--config", QWEN_CFG, "--estimate-only", "model.name=no/such-model"]) == 2
