"""Per-GPU memory estimate of a graph-token training run, printed before training, and the refusal of a
config that cannot fit the visible device (one line naming the option that would fix it).

What one process holds (bytes; ``d`` = bytes per element of ``model.dtype``, ``T`` = tokens of one
micro-batch = ``optim.batch_size * data.max_length``):

- frozen LLM weights: ``params * d`` (parameter count exact: the model is built from its config on
  the meta device, no weights loaded);
- trainable part (encoder + projector, + LoRA when on): fp32 weights, fp32 gradients and the two
  fp32 AdamW moments, ``16 * trainable`` bytes;
- activations. Accounting in the style of Korthikanti et al. 2022 ("Reducing Activation
  Recomputation in Large Transformer Models", §4.1: list the tensors each operation keeps for
  backward), adapted to this model: the LLM weights are frozen, so a linear layer keeps no input
  (only its weight, counted above), but the gradient still flows through every layer to the graph
  token at the input. Per token and decoder layer (Llama/Qwen3: RMSNorm, GQA attention through
  SDPA, SwiGLU MLP)::

      A = 2 * 4h                     two RMSNorm inputs, upcast to fp32 by the HF implementation
        + d * (2 q + 2 kv)           SDPA keeps q, k, v and its output (no s^2 score matrix)
        + 4 * (q + kv)               Qwen3 only: its q/k RMSNorm inputs, fp32
        + 3 d I                      SwiGLU: gate and up projections and the activated gate

  with q = heads * head_dim, kv = kv_heads * head_dim, I = intermediate size. Without
  checkpointing all layers keep A: ``T * (L * A + 4h)`` (4h: the final norm). With checkpointing
  each layer keeps only its input, and backward recomputes one layer at a time:
  ``T * (L * d h + A + 4h)``. tests/test_training_memory.py checks this against the bytes PyTorch
  actually saves for backward on small Qwen3 and Llama models. An ``attn_implementation="eager"``
  model also keeps the ``batch * heads * s^2`` softmax; not counted (SDPA is the default);
- logits over the full vocabulary, peak while the loss runs backward: the LLM's logits at ``d``,
  their fp32 copy, the fp32 log-softmax kept by cross-entropy and its fp32 gradient:
  ``N * V * (d + 12)`` (``12 V N`` when ``d`` = 4: the copy is the same tensor). Training asks
  `GraphTokenLM` for the loss only, so the LM head runs on the ``N`` positions that predict an
  answer token, never on the whole sequence: ``N = batch_size * a`` with ``a`` the longest
  supervised span of the prepared set ("Answer: " + answer + EOS), bounded by its UTF-8 bytes
  (`answer_tokens_bound`: a byte-level BPE token is at least one byte) and by ``max_length``.
  Without a prepared set to read (or one written before it recorded ``answer_bytes_max``) every
  position is counted, ``N = T``;
- runtime: 1 GiB (CUDA context, cuBLAS workspaces) + 5 % allocator slack on the sum.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from qgmem.errors import UserError
from qgmem.training.config import TrainConfig

GIB = 1024 ** 3
RUNTIME_BYTES = GIB
SLACK = 0.05
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
SHAPES_DIR = Path(__file__).resolve().parents[2] / "configs" / "model" / "shapes"
ANSWER_PREFIX = "Answer: "  # the collator's default answer template, before the answer text


class DoesNotFit(RuntimeError, UserError):
    """The config needs more memory than the visible GPU has."""


class UnknownModelShape(ValueError, UserError):
    """No config for the model could be read (offline, no local folder, no shipped shape)."""


@dataclass(frozen=True)
class ModelShape:
    """The numbers of an LLM's config that the estimate needs."""

    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    params: int
    qk_norm: bool  # Qwen3 normalises q and k per head


def shape_from_config(hf_config: Any, name: str = "") -> ModelShape:
    """A `ModelShape` from a transformers config; the parameter count comes from building the model
    on the meta device (exact for any architecture, no memory used)."""
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(hf_config)
    params = sum(p.numel() for p in model.parameters())
    heads = int(hf_config.num_attention_heads)
    hidden = int(hf_config.hidden_size)
    return ModelShape(name=name or getattr(hf_config, "_name_or_path", "") or hf_config.model_type,
                      hidden=hidden, layers=int(hf_config.num_hidden_layers), heads=heads,
                      kv_heads=int(getattr(hf_config, "num_key_value_heads", None) or heads),
                      head_dim=int(getattr(hf_config, "head_dim", None) or hidden // heads),
                      intermediate=int(hf_config.intermediate_size), vocab=int(hf_config.vocab_size),
                      params=params, qk_norm=hf_config.model_type.startswith("qwen3"))


def shipped_shape(name: str) -> Path | None:
    """The shipped published config (configs/model/shapes/*.json) whose ``name`` is `name`."""
    for f in sorted(SHAPES_DIR.glob("*.json")):
        if json.loads(f.read_text()).get("name", "").lower() == name.strip().lower():
            return f
    return None


def model_shape(name: str) -> ModelShape:
    """The shape of `name` (a local folder, a hub id or "smollm2"): its AutoConfig when it can be read
    (local folder, HF cache, hub), else the shipped published config of that hub id."""
    from transformers import AutoConfig

    from qgmem.llm.hf import local_model_path

    shipped = shipped_shape(name)
    try:
        return shape_from_config(AutoConfig.from_pretrained(local_model_path(name)), name)
    except (OSError, ValueError) as e:
        if shipped is None:
            known = [json.loads(f.read_text())["name"] for f in sorted(SHAPES_DIR.glob("*.json"))]
            raise UnknownModelShape(f"model.name {name!r}: cannot read its config ({type(e).__name__}); give a "
                                    f"local model folder, or one of the shipped shapes {known}") from None
    data = {k: v for k, v in json.loads(shipped.read_text()).items() if not k.startswith("_")}
    data.pop("name")
    return shape_from_config(AutoConfig.for_model(data.pop("model_type"), **data), name)


def trainable_params(cfg: TrainConfig, shape: ModelShape) -> int:
    """Encoder + projector parameters (built on the meta device), + LoRA's when it is on."""
    import torch

    from qgmem.model.encoder import GraphTokenEncoder

    with torch.device("meta"):
        enc = GraphTokenEncoder.from_config(cfg.encoder, shape.hidden)
    n = sum(p.numel() for p in enc.parameters())
    lora = cfg.model.lora
    if lora.enabled:  # r * (in + out) per adapted projection and layer
        dims = {"q_proj": (shape.hidden, shape.heads * shape.head_dim),
                "k_proj": (shape.hidden, shape.kv_heads * shape.head_dim),
                "v_proj": (shape.hidden, shape.kv_heads * shape.head_dim),
                "o_proj": (shape.heads * shape.head_dim, shape.hidden),
                "gate_proj": (shape.hidden, shape.intermediate), "up_proj": (shape.hidden, shape.intermediate),
                "down_proj": (shape.intermediate, shape.hidden)}
        n += shape.layers * sum(lora.r * sum(dims[m]) for m in lora.target_modules if m in dims)
    return n


def layer_activation_bytes(shape: ModelShape, d: int) -> int:
    """``A``: bytes one decoder layer keeps for backward per token (see the module docstring)."""
    q, kv = shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
    a = 2 * 4 * shape.hidden + d * (2 * q + 2 * kv) + 3 * d * shape.intermediate
    return a + (4 * (q + kv) if shape.qk_norm else 0)


def activation_bytes(shape: ModelShape, d: int, tokens: int, checkpointing: bool) -> int:
    """Activations of the frozen LLM kept for backward, for `tokens` tokens of one micro-batch."""
    a = layer_activation_bytes(shape, d)
    final_norm = 4 * shape.hidden
    if checkpointing:
        return tokens * (shape.layers * d * shape.hidden + a + final_norm)
    return tokens * (shape.layers * a + final_norm)


def logits_bytes(shape: ModelShape, d: int, tokens: int) -> int:
    """Full-vocabulary logits of `tokens` scored positions: model-dtype logits, fp32 copy, log-softmax, gradient."""
    return tokens * shape.vocab * ((d if d != 4 else 0) + 12)


def answer_tokens_bound(meta: dict[str, Any] | None) -> int | None:
    """Most supervised tokens of one example of the prepared set (`meta`): the UTF-8 bytes of "Answer: " +
    its longest answer, + EOS, + 1 for a tokenizer's word-start marker; None when the meta does not say."""
    if not meta or meta.get("answer_bytes_max") is None:
        return None
    return len(ANSWER_PREFIX.encode("utf-8")) + int(meta["answer_bytes_max"]) + 2


def scored_positions(cfg: TrainConfig, answer_tokens: int | None, batch_size: int | None = None,
                     max_length: int | None = None) -> int:
    """Positions of one micro-batch that go through the LM head in training (every one when unknown)."""
    b, length = batch_size or cfg.optim.batch_size, max_length or cfg.data.max_length
    return b * (min(length, answer_tokens) if answer_tokens is not None else length)


@dataclass
class MemoryEstimate:
    rows: dict[str, int]  # what -> bytes

    @property
    def total(self) -> int:
        return sum(self.rows.values())


def estimate(cfg: TrainConfig, shape: ModelShape, trainable: int | None = None, *,
             checkpointing: bool | None = None, batch_size: int | None = None,
             max_length: int | None = None, answer_tokens: int | None = None) -> MemoryEstimate:
    """Per-GPU bytes of `cfg` (keyword arguments replace the config's value of the same option;
    `answer_tokens`: `answer_tokens_bound` of the prepared set, None = count every position's logits)."""
    d = DTYPE_BYTES[cfg.model.dtype]
    ckpt = cfg.model.gradient_checkpointing if checkpointing is None else checkpointing
    tokens = (batch_size or cfg.optim.batch_size) * (max_length or cfg.data.max_length)
    n_train = trainable_params(cfg, shape) if trainable is None else trainable
    rows = {"frozen LLM weights": shape.params * d,
            "trainable part (fp32 weights, grads, AdamW)": 16 * n_train,
            "activations": activation_bytes(shape, d, tokens, ckpt),
            "logits (full vocabulary, fp32 loss)": logits_bytes(
                shape, d, scored_positions(cfg, answer_tokens, batch_size, max_length))}
    rows["runtime (CUDA context, allocator slack)"] = RUNTIME_BYTES + int(SLACK * sum(rows.values()))
    return MemoryEstimate(rows)


def gib(n: int) -> str:
    return f"{n / GIB:.2f} GiB"


def format_table(cfg: TrainConfig, shape: ModelShape, trainable: int | None = None,
                 answer_tokens: int | None = None) -> str:
    """The estimate with and without gradient checkpointing, side by side."""
    n = trainable_params(cfg, shape) if trainable is None else trainable
    on, off = (estimate(cfg, shape, n, checkpointing=c, answer_tokens=answer_tokens) for c in (True, False))
    o = cfg.optim
    head = (f"memory estimate per GPU: {shape.name} ({shape.params:,} params, {cfg.model.dtype}), trainable {n:,}, "
            f"batch_size {o.batch_size} x max_length {cfg.data.max_length} = {o.batch_size * cfg.data.max_length:,} "
            f"tokens per micro-batch; gradient_checkpointing is "
            f"{'on' if cfg.model.gradient_checkpointing else 'off'}; logits at "
            + (f"{scored_positions(cfg, answer_tokens):,} answer positions (at most {answer_tokens} per example)"
               if answer_tokens is not None else "every position (answer lengths unknown: no prepared set read)"))
    lines = [head, f"{'':<44}{'checkpointing on':>18}{'off':>14}"]
    lines += [f"{k:<44}{gib(on.rows[k]):>18}{gib(off.rows[k]):>14}" for k in on.rows]
    lines.append(f"{'total':<44}{gib(on.total):>18}{gib(off.total):>14}")
    return "\n".join(lines)


def fix_for(cfg: TrainConfig, shape: ModelShape, trainable: int, capacity: int, answer_tokens: int | None = None
            ) -> str:
    """The one option change that makes `cfg` fit `capacity` bytes, as ``key=value`` with a reason."""
    a = answer_tokens
    if not cfg.model.gradient_checkpointing and \
            estimate(cfg, shape, trainable, checkpointing=True, answer_tokens=a).total <= capacity:
        return "set model.gradient_checkpointing=true"
    ckpt = True
    for b in range(cfg.optim.batch_size - 1, 0, -1):
        if estimate(cfg, shape, trainable, checkpointing=ckpt, batch_size=b, answer_tokens=a).total <= capacity:
            extra = "" if cfg.model.gradient_checkpointing else " with model.gradient_checkpointing=true"
            return (f"set optim.batch_size={b}{extra} (raise optim.grad_accum to keep the effective batch)")
    lo, hi = 0, cfg.data.max_length  # largest max_length that fits at batch 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate(cfg, shape, trainable, checkpointing=ckpt, batch_size=1, max_length=mid,
                    answer_tokens=a).total <= capacity:
            lo = mid
        else:
            hi = mid - 1
    if lo >= 128:
        return f"set data.max_length={lo} with optim.batch_size=1 and model.gradient_checkpointing=true"
    return f"the frozen weights alone take {gib(shape.params * DTYPE_BYTES[cfg.model.dtype])}: use a larger GPU"


def check_fits(cfg: TrainConfig, shape: ModelShape, capacity: int, trainable: int | None = None,
               answer_tokens: int | None = None) -> MemoryEstimate:
    """The estimate of `cfg`; raises `DoesNotFit` (one line, with the fix) when it exceeds `capacity` bytes."""
    n = trainable_params(cfg, shape) if trainable is None else trainable
    est = estimate(cfg, shape, n, answer_tokens=answer_tokens)
    if est.total > capacity:
        raise DoesNotFit(f"estimated {gib(est.total)} per GPU for {shape.name} at batch_size "
                         f"{cfg.optim.batch_size} x max_length {cfg.data.max_length} "
                         f"(gradient_checkpointing {'on' if cfg.model.gradient_checkpointing else 'off'}) "
                         f"exceeds the GPU's {gib(capacity)}: {fix_for(cfg, shape, n, capacity, answer_tokens)}")
    return est


def device_capacity(device: Any = None) -> int | None:
    """Total memory of the CUDA device training will use; None without CUDA."""
    import torch

    if not torch.cuda.is_available():
        return None
    dev = torch.device(device) if device is not None else torch.device("cuda", torch.cuda.current_device())
    if dev.type != "cuda":
        return None
    return int(torch.cuda.get_device_properties(dev.index or 0).total_memory)


def with_prepared_dims(cfg: TrainConfig, meta: dict[str, Any] | None) -> TrainConfig:
    """A copy of `cfg` whose encoder input dims are those of the prepared set (as the trainer sets them)."""
    cfg = copy.deepcopy(cfg)
    if meta:
        cfg.encoder.node_dim, cfg.encoder.edge_dim = int(meta["node_dim"]), int(meta["edge_dim"])
    return cfg


def preflight(cfg: TrainConfig, meta: dict[str, Any] | None, log: Callable[..., None], device: Any = None,
              capacity: int | None = None) -> MemoryEstimate:
    """Print the estimate (through `log`, the main process's printer) and, on a CUDA device (or with a
    given `capacity`), refuse a config that cannot fit. Runs before the LLM weights are loaded."""
    cfg = with_prepared_dims(cfg, meta)
    shape = model_shape(cfg.model.name)
    n = trainable_params(cfg, shape)
    a = answer_tokens_bound(meta)
    log(format_table(cfg, shape, n, a))
    cap = capacity if capacity is not None else device_capacity(device)
    if cap is None:
        return estimate(cfg, shape, n, answer_tokens=a)
    log(f"GPU memory: {gib(cap)}")
    return check_fits(cfg, shape, cap, n, a)


def estimate_only(cfg: TrainConfig) -> int:
    """`train.py --estimate-only`: the table (and, on a GPU machine, the fit check) without loading weights."""
    meta_path = Path(cfg.data.dir) / "prepare_meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else None
    preflight(cfg, meta, lambda *a: print(*a, flush=True))
    return 0
