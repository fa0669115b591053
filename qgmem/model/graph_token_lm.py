"""Frozen causal LM + trainable graph encoder/projector whose output enters as graph token(s).

Only the encoder and projector train (plus LoRA adapters when asked); the LLM is frozen with
``requires_grad_(False)`` and kept in eval mode so its dropout never fires (QGMem §III-C4). The
graph tokens replace the embeddings at the collator's placeholder positions; they are computed
in float32 and cast to the LLM's embedding dtype (bf16 on GPU) — no fp16 weights under bf16
autocast. Hidden size comes from the LLM's input embeddings, never from a constant.

Loss is the mean cross-entropy over answer tokens; ``loss_sum`` and ``num_tokens`` are returned
too, so gradient accumulation can divide by the token count of the whole accumulated batch and
match one large batch exactly (G-Retriever's accumulation does not accumulate). With labels and
without ``return_logits`` only the positions that predict an answer token go through the LM head
(`_answer_rows`), so no full-vocabulary logits of the whole sequence are ever made or kept for
backward (8,192 tokens x 151,936 would be ~5 GB in fp32); ``logits`` is then None.

Inference is eval mode by construction: `from_pretrained` returns the model in eval mode and
`generate` runs in eval mode whatever the caller's mode, so encoder dropout never reaches an
answer. `graph_tokens` is the one function that turns a batch's graphs into tokens, for training,
validation, evaluation runs and `MemoryPipeline` alike (in float32, autocast off).
"""

from __future__ import annotations

import dataclasses
import json
import contextlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn
from torch_geometric.data import Batch
from transformers.utils import ModelOutput

from qgmem.model.encoder import EncoderConfig, GraphTokenEncoder
from qgmem.graph.local_graph import GraphConfig
from qgmem.io import atomic_write_json
from qgmem.model.collate import DEFAULT_TEMPLATE_KWARGS, IGNORE_INDEX, GraphTokenCollator, end_of_turn_id
from qgmem.model.placement import checkpoint_dtype, dtype_name

CONFIG_NAME = "qgmem_config.json"
WEIGHTS_NAME = "model.safetensors"
FORMAT = "qgmem-graph-token-lm"


@dataclass
class GraphTokenLMOutput(ModelOutput):
    loss: Tensor | None = None  # mean over this batch's answer tokens
    logits: Tensor | None = None  # [B, L, V]; with labels only when asked for (``return_logits=True``)
    loss_sum: Tensor | None = None  # sum over answer tokens (for token-weighted accumulation)
    num_tokens: Tensor | None = None  # answer tokens in this batch
    row_loss_sum: Tensor | None = None  # [B] answer NLL summed per example (paired comparisons)
    row_tokens: Tensor | None = None  # [B] answer tokens per example


def _compact(batch: dict[str, Tensor], keep: Tensor, left: bool, pad_id: int) -> dict[str, Tensor]:
    """Drop positions where ``keep`` is False from every [B, L] tensor, re-padding per side."""
    fill = {"input_ids": pad_id, "attention_mask": 0, "graph_mask": False, "labels": IGNORE_INDEX}
    lengths = keep.sum(1)
    n = int(lengths.max()) if lengths.numel() else 0
    out = {}
    for key, t in batch.items():
        new = torch.full((t.size(0), n), fill[key], dtype=t.dtype, device=t.device)
        for i in range(t.size(0)):
            row = t[i][keep[i]]
            if left:
                new[i, n - row.numel():] = row
            else:
                new[i, :row.numel()] = row
        out[key] = new
    return out


class GraphTokenLM(nn.Module):
    """Frozen ``llm`` + trainable `GraphTokenEncoder`; ``base_model`` (default: the LLM's own
    ``name_or_path``) is what `from_pretrained` loads later — give an alias like "smollm2" or a
    hub id to keep checkpoints portable across machines."""

    def __init__(self, llm: Any, tokenizer: Any, enc_cfg: EncoderConfig, lora: dict[str, Any] | None = None,
                 *, graph_cfg: GraphConfig | None = None, base_model: str | None = None,
                 base_model_kwargs: dict[str, Any] | None = None, extra: dict[str, Any] | None = None,
                 gradient_checkpointing: bool = False, template_kwargs: dict[str, Any] | None = None):
        super().__init__()
        # chat-template keywords of every prompt (e.g. Qwen3's enable_thinking=False); saved with the
        # checkpoint so inference renders prompts the way training did
        self.template_kwargs = {**DEFAULT_TEMPLATE_KWARGS, **(template_kwargs or {})}
        self.base_model = base_model or getattr(llm, "name_or_path", None) or getattr(llm.config, "_name_or_path", "")
        self.base_model_kwargs = dict(base_model_kwargs or {})
        self.tokenizer = tokenizer
        self.enc_cfg = enc_cfg
        self.graph_cfg = graph_cfg
        self.lora = dict(lora) if lora else None
        self.extra = dict(extra or {})
        self.use_graph = True
        llm.requires_grad_(False)
        llm.eval()
        if self.lora:
            from peft import LoraConfig, get_peft_model

            cfg = {"r": 8, "lora_alpha": 16, "lora_dropout": 0.0, "target_modules": ["q_proj", "v_proj"], **self.lora}
            self.lora = cfg
            llm = get_peft_model(llm, LoraConfig(task_type="CAUSAL_LM", **cfg))
        self.llm = llm
        self.gradient_checkpointing = bool(gradient_checkpointing)
        if self.gradient_checkpointing:
            llm.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        emb = llm.get_input_embeddings()
        self.llm_hidden = int(emb.embedding_dim)
        self.graph_encoder = GraphTokenEncoder.from_config(enc_cfg, self.llm_hidden)
        self.graph_encoder.to(emb.weight.device, torch.float32)
        self.graph_encoder.set_token_norm(emb.weight)
        self.graph_encoder.attach_llm(tokenizer, emb.weight)  # LLM-space designs read text through it
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id

    # -- modes and parameters ---------------------------------------------------------------
    def train(self, mode: bool = True) -> GraphTokenLM:
        super().train(mode)
        self.llm.eval()  # frozen LLM: its own dropout stays off while the encoder trains
        if mode and self.lora:  # ... but the LoRA adapters train, with their dropout on
            for name, m in self.llm.named_modules():
                if name.split(".")[-1] == "lora_dropout" or ".lora_dropout." in f".{name}.":
                    m.train(True)
        if mode and self.gradient_checkpointing:
            # HF layers checkpoint only while `training`; flag the layers themselves (not their
            # children), so activations are recomputed in backward but dropout stays off.
            from transformers.modeling_layers import GradientCheckpointingLayer

            for m in self.llm.modules():
                if isinstance(m, GradientCheckpointingLayer):
                    m.training = True
        return self

    @property
    def num_graph_tokens(self) -> int:
        return self.enc_cfg.num_graph_tokens

    @property
    def device(self) -> torch.device:
        return self.llm.get_input_embeddings().weight.device

    def trainable_parameters(self) -> list[nn.Parameter]:
        return [p for p in self.parameters() if p.requires_grad]

    def make_collator(self, max_length: int = 2048, mode: str = "train", **kw: Any) -> GraphTokenCollator:
        kw.setdefault("template_kwargs", self.template_kwargs)
        return GraphTokenCollator(self.tokenizer, self.num_graph_tokens, max_length, mode=mode, **kw)

    # -- embedding ---------------------------------------------------------------------------
    def graph_tokens(self, batch: dict[str, Any]) -> Tensor:
        """The graph tokens ``[B, num_graph_tokens, llm_hidden]`` (float32) of a collated batch's graphs.

        Every path reads its tokens from here (training, `validate`, the `qgmem-graph-token` method,
        `MemoryPipeline`), so one (graph, checkpoint) gives one set of tokens. Each graph is encoded on
        its own: a batch of other shape rounds differently (7e-8 on CPU between validation's batch of 2 and
        an answer's batch of 1), and a token must not depend on the graphs it shares a batch with. Autocast
        is off: a bf16 mixed-precision validation computes them as an fp32 inference does."""
        graph = batch.get("graph")
        if graph is None:
            raise ValueError("batch has graph positions but no 'graph' (build it with GraphTokenCollator)")
        graphs = graph.to_data_list() if isinstance(graph, Batch) else [graph]
        dev = self.graph_encoder.empty_device()
        off = torch.autocast(dev.type, enabled=False) if _has_autocast(dev.type) else contextlib.nullcontext()
        with off:
            questions = batch.get("questions")  # read by query pooling (encoder.pooling: query)
            return torch.cat([self.graph_encoder(g, questions=None if questions is None else [questions[i]])
                              for i, g in enumerate(graphs)])

    def _inputs(self, batch: dict[str, Any], left: bool) -> tuple[Tensor, Tensor, Tensor | None]:
        dev = self.device
        t = {k: batch[k].to(dev) for k in ("input_ids", "attention_mask", "graph_mask") if k in batch}
        if "labels" in batch:
            t["labels"] = batch["labels"].to(dev)
        if "graph_mask" not in t:
            t["graph_mask"] = torch.zeros_like(t["input_ids"], dtype=torch.bool)
        if not self.use_graph and t["graph_mask"].any():
            t = _compact(t, t["attention_mask"].bool() & ~t["graph_mask"], left, self.pad_id)
        embeds = self.llm.get_input_embeddings()(t["input_ids"])
        gmask = t["graph_mask"]
        if self.use_graph and gmask.any():
            per_row = gmask.sum(1)
            if not bool((per_row == self.num_graph_tokens).all()):
                raise ValueError(f"batch rows have {per_row.tolist()} graph positions; model has "
                                 f"num_graph_tokens={self.num_graph_tokens}")
            tokens = self.graph_tokens(batch).to(embeds.dtype)
            if tokens.size(0) != embeds.size(0):
                raise ValueError(f"batch has {embeds.size(0)} prompts but {tokens.size(0)} graphs")
            embeds = embeds.masked_scatter(gmask.unsqueeze(-1), tokens.reshape(-1, self.llm_hidden))
        return embeds, t["attention_mask"], t.get("labels")

    @staticmethod
    def _positions(attention_mask: Tensor) -> Tensor:
        return (attention_mask.long().cumsum(-1) - 1).clamp(min=0)

    # -- training ----------------------------------------------------------------------------
    def forward(self, batch: dict[str, Any], return_logits: bool = False) -> GraphTokenLMOutput:
        """Logits of a prompt batch, or (with ``labels``) the answer loss; the full logits of a batch
        with labels only when ``return_logits`` (they are what training memory must not hold)."""
        left = bool((batch["attention_mask"][:, 0] == 0).any())
        embeds, attn, labels = self._inputs(batch, left)
        kw = {"inputs_embeds": embeds, "attention_mask": attn, "position_ids": self._positions(attn), "use_cache": False}
        if labels is None or return_logits:
            logits = self.llm(**kw).logits
            if labels is None:
                return GraphTokenLMOutput(logits=logits)
            shift_labels = labels[:, 1:]
            nll = nn.functional.cross_entropy(logits[:, :-1].float().reshape(-1, logits.size(-1)),
                                              shift_labels.reshape(-1), ignore_index=IGNORE_INDEX,
                                              reduction="none").view(shift_labels.shape)
            row_sum, row_n = nll.sum(1), (shift_labels != IGNORE_INDEX).sum(1)
        else:
            logits = None
            keep = torch.zeros_like(labels, dtype=torch.bool)  # position t is scored when it predicts label t+1
            keep[:, :-1] = labels[:, 1:] != IGNORE_INDEX
            with _answer_rows(self.llm.get_output_embeddings(), keep):
                rows = self.llm(**kw).logits  # [N, V]: one row per answer token, batch-major
            nll = nn.functional.cross_entropy(rows.float(), labels[:, 1:][keep[:, :-1]], reduction="none")
            row_of = keep.nonzero()[:, 0]
            row_sum = torch.zeros(labels.size(0), dtype=nll.dtype, device=nll.device).index_add(0, row_of, nll)
            row_n = keep.sum(1)
        loss_sum, n = row_sum.sum(), row_n.sum()
        return GraphTokenLMOutput(loss=loss_sum / n.clamp(min=1), logits=logits, loss_sum=loss_sum, num_tokens=n,
                                  row_loss_sum=row_sum, row_tokens=row_n)

    # -- generation --------------------------------------------------------------------------
    @torch.no_grad()
    def generate(self, batch: dict[str, Any], max_new_tokens: int = 64, **kw: Any) -> list[str]:
        """Greedy (unless told otherwise) batched generation from left-padded prompt embeddings, in eval
        mode (the caller's mode is restored afterwards): an answer never samples encoder dropout."""
        was = self.training
        self.eval()
        try:
            return self._generate(batch, max_new_tokens, **kw)
        finally:
            self.train(was)

    def _generate(self, batch: dict[str, Any], max_new_tokens: int, **kw: Any) -> list[str]:
        if "labels" in batch and bool((batch["labels"] != IGNORE_INDEX).any()):
            raise ValueError("generate() needs a prompt-only batch: build it with a collator in mode='generate'")
        batch = dict(batch)
        batch.pop("labels", None)
        if bool((batch["attention_mask"][:, -1] == 0).any()):  # right padded: left-align it
            keep = batch["attention_mask"].bool()
            sub = {k: batch[k] for k in ("input_ids", "attention_mask", "graph_mask") if k in batch}
            batch.update(_compact(sub, keep, True, self.pad_id))
        embeds, attn, _ = self._inputs(batch, left=True)
        kw.setdefault("do_sample", False)
        if not kw["do_sample"]:
            kw.setdefault("temperature", None)
            kw.setdefault("top_p", None)
            kw.setdefault("top_k", None)
        kw.setdefault("eos_token_id", self._eos_ids())
        out = self.llm.generate(inputs_embeds=embeds, attention_mask=attn, max_new_tokens=max_new_tokens,
                                pad_token_id=self.pad_id, **kw)
        return [s.strip() for s in self.tokenizer.batch_decode(out, skip_special_tokens=True)]

    def _eos_ids(self) -> list[int]:
        """The tokenizer's EOS, the template's end-of-turn token and any the model's generation config
        names (Llama 3, Qwen3 list several)."""
        ids = [self.tokenizer.eos_token_id] if self.tokenizer.eos_token_id is not None else []
        eot = end_of_turn_id(self.tokenizer, self.template_kwargs)
        if eot is not None and eot not in ids:
            ids.append(int(eot))
        gc = getattr(self.llm, "generation_config", None)
        extra = getattr(gc, "eos_token_id", None) if gc is not None else None
        for i in ([extra] if isinstance(extra, int) else list(extra or [])):
            if i not in ids:
                ids.append(int(i))
        return ids

    # -- checkpoints -------------------------------------------------------------------------
    def config_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT, "version": 1, "base_model": self.base_model,
            "base_model_kwargs": self.base_model_kwargs, "llm_hidden": self.llm_hidden,
            "num_graph_tokens": self.num_graph_tokens, "encoder": dataclasses.asdict(self.enc_cfg),
            "graph": dataclasses.asdict(self.graph_cfg) if self.graph_cfg else None,
            "lora": self.lora, "use_graph": self.use_graph, "extra": self.extra,
            "template_kwargs": self.template_kwargs,
            # the dtypes it was trained in; inference loads the LLM in llm_dtype (qgmem.model.placement)
            "llm_dtype": dtype_name(self.llm.get_input_embeddings().weight.dtype),
            "encoder_dtype": dtype_name(self.graph_encoder.encoder.empty.dtype),
        }

    def save_pretrained(self, directory: str | Path) -> Path:
        """Write only the trainable weights (``model.safetensors``) and ``qgmem_config.json``."""
        from safetensors.torch import save_file

        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        state = {n: p.detach().to("cpu").contiguous() for n, p in self.named_parameters() if p.requires_grad}
        fd, tmp = tempfile.mkstemp(dir=d, prefix=f".{WEIGHTS_NAME}.", suffix=".tmp")
        os.close(fd)
        try:
            save_file(state, tmp, metadata={"format": FORMAT})
            os.replace(tmp, d / WEIGHTS_NAME)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        atomic_write_json(d / CONFIG_NAME, self.config_dict())
        return d

    @classmethod
    def from_pretrained(cls, directory: str | Path, llm: Any = None, tokenizer: Any = None,
                        torch_dtype: torch.dtype | str | None = None, device: str | torch.device | None = None
                        ) -> GraphTokenLM:
        """Rebuild from `save_pretrained` output, in eval mode (call ``.train()`` to train on).

        Loads the base LLM named there unless given, in ``torch_dtype`` or else the dtype the checkpoint
        records (float32 for a checkpoint from before the record; `qgmem.model.placement`). A given
        ``llm`` keeps its dtype unless ``torch_dtype`` is named; ``device`` moves the model there."""
        from safetensors.torch import load_file

        d = Path(directory)
        cfg_path = d / CONFIG_NAME
        if not cfg_path.exists():
            raise FileNotFoundError(f"{cfg_path}: not found (not a GraphTokenLM checkpoint)")
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
        if cfg.get("format") != FORMAT:
            raise ValueError(f"{cfg_path}: field 'format' is {cfg.get('format')!r}, expected {FORMAT!r}")
        try:
            enc_cfg = EncoderConfig(**cfg["encoder"])
            graph_cfg = GraphConfig(**cfg["graph"]) if cfg.get("graph") else None
        except (KeyError, TypeError) as e:
            raise ValueError(f"{cfg_path}: bad 'encoder'/'graph' section: {e}") from e
        kwargs = dict(cfg.get("base_model_kwargs") or {})
        if llm is None or tokenizer is None:
            if not cfg.get("base_model"):
                raise ValueError(f"{cfg_path}: field 'base_model' is empty; pass llm= and tokenizer=")
            from transformers import AutoModelForCausalLM, AutoTokenizer

            from qgmem.llm.hf import (
                local_model_path,  # resolves aliases such as "smollm2"
            )

            where = local_model_path(cfg["base_model"])
            if llm is None:
                llm = AutoModelForCausalLM.from_pretrained(
                    where, dtype=checkpoint_dtype(cfg, torch_dtype, str(cfg_path)), **kwargs)
            if tokenizer is None:
                tokenizer = AutoTokenizer.from_pretrained(where, **kwargs)
        elif torch_dtype is not None:
            llm = llm.to(checkpoint_dtype(cfg, torch_dtype, str(cfg_path)))
        if device is not None:
            llm = llm.to(device)
        model = cls(llm, tokenizer, enc_cfg, cfg.get("lora"), graph_cfg=graph_cfg,
                    base_model=cfg.get("base_model"), base_model_kwargs=kwargs, extra=cfg.get("extra"),
                    template_kwargs=cfg.get("template_kwargs"))
        if model.llm_hidden != cfg.get("llm_hidden", model.llm_hidden):
            raise ValueError(f"{cfg_path}: checkpoint was trained for LLM hidden size {cfg['llm_hidden']}, "
                             f"the given LLM has {model.llm_hidden}")
        w_path = d / WEIGHTS_NAME
        state = load_file(str(w_path), device=str(model.device))
        missing, unexpected = model.load_state_dict(state, strict=False)
        trainable = {n for n, p in model.named_parameters() if p.requires_grad}
        missing_trainable = sorted(set(missing) & trainable)
        if unexpected or missing_trainable:
            raise ValueError(f"{w_path}: weights do not match the model: missing {missing_trainable[:5]}, "
                             f"unexpected {sorted(unexpected)[:5]}")
        model.use_graph = bool(cfg.get("use_graph", True))
        return model.eval()


def _has_autocast(device_type: str) -> bool:
    """Whether torch has an autocast for this device type (CPU and CUDA always; MPS in newer torch)."""
    check = getattr(torch.amp, "is_autocast_available", None)
    return bool(check(device_type)) if check is not None else device_type in ("cpu", "cuda")


@contextlib.contextmanager
def _answer_rows(lm_head: nn.Module, keep: Tensor) -> Iterator[None]:
    """While active, the LM head sees only the hidden states at ``keep`` ([B, L] bool): the causal LM
    returns logits ``[N, V]`` for those N positions (batch-major), through its own forward (any final
    logit scaling it applies included), and never makes the [B, L, V] tensor."""

    def pick(module: nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...]:
        if not args or tuple(args[0].shape[:2]) != tuple(keep.shape):
            got = tuple(args[0].shape) if args else "keyword input"
            raise RuntimeError(f"LM head input {got} does not match the batch {tuple(keep.shape)}; "
                               "call forward(batch, return_logits=True) for this model")
        return (args[0][keep], *args[1:])

    handle = lm_head.register_forward_pre_hook(pick)
    try:
        yield
    finally:
        handle.remove()
