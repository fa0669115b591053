#!/usr/bin/env python
"""GPU check of the paper's graph-token training step, self-contained (no weights to carry): a
random-initialised Qwen3-8B-shaped model from its published config (configs/model/shapes/qwen3_8b.json),
the paper's train config (configs/train/qwen3_8b_convomem.yaml) at max_length 4096, random graphs
and tokens. Prints step time, tokens/s, peak memory (torch.cuda.max_memory_allocated) against the
estimate of qgmem.training.memory, the graph token's overhead against a text-only step, and batched
generation throughput.

    python bench/gpu_check.py                               # 1 GPU
    torchrun --nproc_per_node 8 bench/gpu_check.py          # several GPUs (DDP over the trainable part)
    python bench/gpu_check.py --smoke                       # CPU: tiny shapes, 2 steps (checks it starts)
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch
from torch_geometric.data import Batch, Data
from transformers import AutoConfig, AutoModelForCausalLM

from qgmem.model.encoder import GraphTokenEncoder
from qgmem.training.config import load_train_config
from qgmem.training.memory import SHAPES_DIR, estimate, gib, shape_from_config


def graphs(n: int, node_dim: int, edge_dim: int, device: torch.device) -> Batch:
    """`n` random 10-node local graphs (the working-memory size) with 10 edges each."""
    return Batch.from_data_list([Data(x=torch.randn(10, node_dim), edge_index=torch.randint(0, 10, (2, 10)),
                                      edge_attr=torch.randn(10, edge_dim)) for _ in range(n)]).to(device)


def step(llm, enc, opt, ids, g, graph_token: bool) -> float:
    """One forward + backward + optimizer step; the graph token replaces position 0's embedding."""
    t0 = time.perf_counter()
    emb = llm.get_input_embeddings()(ids)
    if graph_token:
        tok = enc(g).to(emb.dtype)[:, 0]
        emb = torch.cat([tok.unsqueeze(1), emb[:, 1:]], 1)
    logits = llm(inputs_embeds=emb, use_cache=False).logits[:, :-1].float()
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1))
    if graph_token:
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    if ids.is_cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="configs/train/qwen3_8b_convomem.yaml")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--max-length", type=int, default=4096)
    ap.add_argument("--smoke", action="store_true", help="tiny shapes on CPU, 2 steps")
    args = ap.parse_args()
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    cuda = torch.cuda.is_available() and not args.smoke
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda else torch.device("cpu")
    if world > 1:
        torch.distributed.init_process_group("nccl" if cuda else "gloo")
    cfg = load_train_config(args.config, overrides=[f"data.max_length={args.max_length}"])
    shape_json = {k: v for k, v in json.loads((SHAPES_DIR / "qwen3_8b.json").read_text()).items()
                  if not k.startswith("_") and k != "name"}
    if args.smoke:
        shape_json.update(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                          num_key_value_heads=2, head_dim=16, vocab_size=512)
        cfg.data.max_length, args.steps = 64, 2
        cfg.encoder.hidden, cfg.encoder.projector_hidden, cfg.model.dtype = 32, 64, "float32"
    hf_cfg = AutoConfig.for_model(shape_json.pop("model_type"), **shape_json)
    dtype = getattr(torch, cfg.model.dtype)
    with torch.device(dev):
        llm = AutoModelForCausalLM.from_config(hf_cfg, dtype=dtype)
    llm.requires_grad_(False)
    if cfg.model.gradient_checkpointing:
        llm.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        llm.train()
    enc = GraphTokenEncoder.from_config(cfg.encoder, hf_cfg.hidden_size).to(dev)
    if world > 1:
        enc = torch.nn.parallel.DistributedDataParallel(enc, device_ids=[dev.index] if cuda else None)
    opt = torch.optim.AdamW(enc.parameters(), lr=cfg.optim.lr)
    b, s = cfg.optim.batch_size, cfg.data.max_length
    ids = torch.randint(0, hf_cfg.vocab_size, (b, s), device=dev)
    g = graphs(b, cfg.encoder.node_dim, cfg.encoder.edge_dim, dev)
    if cuda:
        torch.cuda.reset_peak_memory_stats(dev)
    times = [step(llm, enc, opt, ids, g, True) for _ in range(args.steps)]
    peak = torch.cuda.max_memory_allocated(dev) if cuda else 0
    text_only = [step(llm, enc, opt, ids, g, False) for _ in range(max(2, args.steps // 4))]
    graph_fwd = []  # the graph token's own cost: encoder + projector forward
    for _ in range(max(2, args.steps // 4)):
        t0 = time.perf_counter()
        with torch.no_grad():
            enc(g)
        graph_fwd.append(time.perf_counter() - t0)
    llm.eval()
    new = 8 if args.smoke else 64
    t0 = time.perf_counter()
    with torch.no_grad():
        out = llm.generate(ids[:, : min(s, 512)].repeat(4, 1), max_new_tokens=new, min_new_tokens=new, do_sample=False)
    gen_s = time.perf_counter() - t0
    est = estimate(cfg, shape_from_config(hf_cfg, "Qwen3-8B shape"))
    warm = times[1:] or times
    res = {"device": torch.cuda.get_device_name(dev) if cuda else "cpu", "processes": world,
           "batch_size": b, "max_length": s, "gradient_checkpointing": cfg.model.gradient_checkpointing,
           "step_s": sum(warm) / len(warm), "tokens_per_s": world * b * s * len(warm) / sum(warm),
           "peak_allocated": gib(peak) if cuda else None, "estimate": gib(est.total),
           "forward_only_step_s": sum(text_only[1:]) / max(1, len(text_only) - 1),
           "graph_encoder_forward_s": sum(graph_fwd) / len(graph_fwd),
           "generation_tokens_per_s": (out.size(0) * new) / gen_s, "generation_batch": int(out.size(0))}
    if rank == 0:
        print(json.dumps(res, indent=1))
    if world > 1:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
