"""The model a training run trains: the frozen LLM named by the config, wrapped in a `GraphTokenLM`
whose encoder matches the prepared graphs and whose checkpoint carries what inference needs."""

from __future__ import annotations

from typing import Any

from qgmem.training.config import ModelConfig, TrainConfig


def load_llm(cfg: ModelConfig, device: Any = None):
    """(frozen causal LM, tokenizer) named by the config; "smollm2" resolves to the packaged copy."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from qgmem.llm.hf import local_model_path

    path = local_model_path(cfg.name)
    tok = AutoTokenizer.from_pretrained(path)
    llm = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, cfg.dtype))
    if device is not None:
        llm.to(device)
    return llm, tok


def build_model(cfg: TrainConfig, meta: dict[str, Any], log: Any):
    """`GraphTokenLM` over the frozen LLM; its checkpoint extra carries what inference needs."""
    from qgmem.llm.hf import local_model_path
    from qgmem.model.graph_token_lm import GraphTokenLM
    from qgmem.pipeline import inference_settings

    node_dim, edge_dim = int(meta["node_dim"]), int(meta["edge_dim"])
    if (cfg.encoder.node_dim, cfg.encoder.edge_dim) != (node_dim, edge_dim):
        log(f"encoder dims set from the prepared graphs: node_dim {node_dim}, edge_dim {edge_dim}")
        cfg.encoder.node_dim, cfg.encoder.edge_dim = node_dim, edge_dim
    prepare = dict(meta.get("config") or {})
    graph_cfg = inference_settings(prepare, f"{cfg.data.dir}/prepare_meta.json: config").inputs.graph
    llm, tok = load_llm(cfg.model)
    return GraphTokenLM(llm, tok, cfg.encoder, lora=cfg.model.lora.as_peft(), graph_cfg=graph_cfg,
                        gradient_checkpointing=cfg.model.gradient_checkpointing,
                        base_model=local_model_path(cfg.model.name),
                        extra={"model_name": cfg.model.name, "max_length": cfg.data.max_length,
                               "system": cfg.data.system, "prepare": prepare})


def count_parameters(model: Any) -> dict[str, int]:
    """Trainable/frozen counts; refuses a model where any LLM weight (other than LoRA) would train."""
    trainable = model.trainable_parameters()
    llm_trainable = [n for n, p in model.named_parameters() if p.requires_grad
                     and not n.startswith("graph_encoder.") and "lora_" not in n]
    if llm_trainable:
        raise RuntimeError(f"LLM parameters would train: {llm_trainable[:5]} (only encoder, projector, LoRA may)")
    if {id(p) for p in trainable} != {id(p) for p in model.parameters() if p.requires_grad}:
        raise RuntimeError("model.trainable_parameters() differs from the parameters with requires_grad")
    return {"trainable": sum(p.numel() for p in trainable),
            "frozen": sum(p.numel() for p in model.parameters() if not p.requires_grad)}
