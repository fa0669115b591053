#!/usr/bin/env python
"""GPU check of the paper recipe's training step, self-contained: no weights, no data beyond the repository.

For each backbone (Qwen3-8B, Llama-3.1-8B) a `GraphTokenLM` is built around an LLM made from its published
config (configs/model/shapes/*.json) with random weights in the recipe's dtype (bf16), with the recipe's
encoder, gradient checkpointing, batch size, sequence length and gradient accumulation
(configs/train/qwen3_8b_convomem.yaml, llama31_8b_convomem.yaml). Batches are synthesised and collated by
the trainer's own `GraphTokenCollator` (a code-built word-level tokenizer with a chat template; memory text
cut to ``data.max_length``, a 32-word answer supervised, one 10-node graph per example with the prepared
set's feature widths), and each optimizer step is the trainer's own `accumulate_step` (forward, backward,
clipping, AdamW, scheduler) under `accelerate`. Reported per backbone: optimizer-step time, tokens/s, peak
memory (``torch.cuda.max_memory_allocated``) against `qgmem.training.memory.estimate` of the same config,
and whether the trainable weights moved.

    python bench/gpu_check.py                          # one GPU: both backbones, ~3 min on an H200
    python bench/gpu_check.py --models qwen3_8b --steps 5 --out results/gpu_check.json
    python bench/gpu_check.py --tiny                   # CPU: the same code at tiny shapes (tests run this)
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qgmem.graph.local_graph import feature_dims  # noqa: E402
from qgmem.model.collate import GraphExample  # noqa: E402
from qgmem.training.config import load_train_config  # noqa: E402
from qgmem.training.memory import SHAPES_DIR, estimate, gib, shape_from_config, trainable_params  # noqa: E402
from qgmem.training.prepare import config_from_file  # noqa: E402
from qgmem.training.schedule import plan_schedule  # noqa: E402
from qgmem.training.trainer import accumulate_step, lr_lambda  # noqa: E402

RECIPES = {"qwen3_8b": ("configs/train/qwen3_8b_convomem.yaml", "qwen"),
           "llama31_8b": ("configs/train/llama31_8b_convomem.yaml", "llama")}  # shape -> (train config, tokenizer)
EMBED_DIM = 768  # BAAI/bge-base-en-v1.5, the recipe's graph embedder (configs/prepare/convomem_bge.yaml)
ANSWER_WORDS = 32
TINY_SHAPE = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 512}
TINY = ["data.max_length=256", "encoder.hidden=16", "encoder.heads=2", "encoder.projector_hidden=32",
        "model.dtype=float32", "mixed_precision='no'"]


def recipe(shape: str, tiny: bool) -> tuple[Any, Any, Any]:
    """(train config, transformers config of the LLM, graph config of the prepared set) of one backbone."""
    from transformers import AutoConfig

    cfg_path, _ = RECIPES[shape]
    cfg = load_train_config(str(ROOT / cfg_path), overrides=TINY if tiny else [])
    prepare, _ = config_from_file(str(ROOT / cfg_path), [])
    cfg.encoder.node_dim, cfg.encoder.edge_dim = feature_dims(prepare.graph, EMBED_DIM if not tiny else 8)
    fields = {k: v for k, v in json.loads((SHAPES_DIR / f"{shape}.json").read_text()).items()
              if not k.startswith("_") and k != "name"}
    if tiny:
        fields.update(TINY_SHAPE)
    return cfg, AutoConfig.for_model(fields.pop("model_type"), **fields), prepare.graph


def examples(n: int, cfg: Any, seed: int) -> list[GraphExample]:
    """`n` examples whose memory text is longer than ``data.max_length`` (the collator cuts it to fit) and whose
    graph is a working memory of 10 units with 10 edges, features of the prepared set's widths."""
    from torch_geometric.data import Data

    from qgmem.testing.tiny_models import WORDS

    g = torch.Generator().manual_seed(seed)
    words = [w for w in WORDS if w.isalpha()]

    def text(k: int) -> str:
        return " ".join(words[int(i)] for i in torch.randint(0, len(words), (k,), generator=g))

    out = []
    for i in range(n):
        graph = Data(x=torch.randn(10, cfg.encoder.node_dim, generator=g),
                     edge_index=torch.randint(0, 10, (2, 10), generator=g),
                     edge_attr=torch.randn(10, cfg.encoder.edge_dim, generator=g))
        out.append(GraphExample(question=text(16) + " ?", memory_text=text(cfg.data.max_length + 64),
                                answer=text(ANSWER_WORDS), graph=graph, id=f"synthetic-{seed}-{i}"))
    return out


def _to(batch: dict[str, Any], device: torch.device) -> dict[str, Any]:
    return {k: v.to(device) if hasattr(v, "to") else v for k, v in batch.items()}


def _estimate(cfg: Any, hf_cfg: Any, name: str, answer_tokens: int) -> Any:
    """`memory.estimate` of the config, told the answer length where it takes one."""
    shape = shape_from_config(hf_cfg, name)
    kw = {"answer_tokens": answer_tokens} if "answer_tokens" in inspect.signature(estimate).parameters else {}
    return estimate(cfg, shape, trainable_params(cfg, shape), **kw)


def check(shape: str, steps: int, tiny: bool) -> dict[str, Any]:
    """Build one backbone, run ``steps`` measured optimizer steps (after one warm-up step), report."""
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState, GradientState
    from transformers import AutoModelForCausalLM

    from qgmem.model.collate import GraphTokenCollator
    from qgmem.model.graph_token_lm import GraphTokenLM
    from qgmem.testing.tiny_models import make_tokenizer

    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    cfg, hf_cfg, graph_cfg = recipe(shape, tiny)
    o = cfg.optim
    acc = Accelerator(mixed_precision=cfg.mixed_precision, cpu=tiny)
    cuda = acc.device.type == "cuda"
    torch.manual_seed(o.seed)
    t0 = time.perf_counter()
    with torch.device(acc.device):
        llm = AutoModelForCausalLM.from_config(hf_cfg, dtype=getattr(torch, cfg.model.dtype))
    tok = make_tokenizer(RECIPES[shape][1])
    model = GraphTokenLM(llm, tok, cfg.encoder, graph_cfg=graph_cfg,
                         gradient_checkpointing=cfg.model.gradient_checkpointing, base_model=shape)
    build_s = time.perf_counter() - t0
    opt = torch.optim.AdamW(model.trainable_parameters(), lr=o.lr, weight_decay=o.weight_decay, betas=tuple(o.betas))
    sched = plan_schedule(cfg, cfg.plan.train_examples or 1, cfg.plan.processes, "plan.train_examples")
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: lr_lambda(s, sched.warmup_steps, sched.total_steps, o.min_lr_ratio))
    collate = GraphTokenCollator(tok, cfg.encoder.num_graph_tokens, cfg.data.max_length, system=cfg.data.system,
                                 template_kwargs=model.template_kwargs)
    # collated on the CPU and moved to the device, as the trainer's prepared data loader does
    windows = [[_to(collate(examples(o.batch_size, cfg, seed=s * o.grad_accum + m)), acc.device)
                for m in range(o.grad_accum)] for s in range(steps + 1)]
    model, opt = acc.prepare(model, opt)
    model.train()
    run = SimpleNamespace(accelerator=acc, cfg=cfg, model=model, optimizer=opt, scheduler=scheduler)
    before = torch.cat([p.detach().flatten().float().cpu() for p in model.trainable_parameters()])
    if cuda:
        torch.cuda.synchronize(acc.device)
        torch.cuda.reset_peak_memory_stats(acc.device)
    times, losses = [], []
    for window in windows:
        t = time.perf_counter()
        loss, gnorm = accumulate_step(run, window)
        if cuda:
            torch.cuda.synchronize(acc.device)
        times.append(time.perf_counter() - t)
        losses.append(loss)
    after = torch.cat([p.detach().flatten().float().cpu() for p in model.trainable_parameters()])
    lengths = [int(b["attention_mask"].sum()) for w in windows for b in w]  # real tokens of each micro-batch
    answer = max(int((b["labels"] != -100).sum(1).max()) for w in windows for b in w)
    est = _estimate(cfg, hf_cfg, shape, answer)
    peak = torch.cuda.max_memory_allocated(acc.device) if cuda else None
    measured = sorted(times[1:])
    step_s = measured[len(measured) // 2]
    tokens_per_step = sum(lengths) / len(windows)
    res = {
        "model": shape, "device": torch.cuda.get_device_name(acc.device) if cuda else "cpu",
        "params": sum(p.numel() for p in model.parameters()),
        "trainable": sum(p.numel() for p in model.trainable_parameters()),
        "dtype": cfg.model.dtype, "mixed_precision": cfg.mixed_precision,
        "gradient_checkpointing": bool(getattr(llm, "is_gradient_checkpointing", False)),
        "batch_size": o.batch_size, "max_length": cfg.data.max_length, "grad_accum": o.grad_accum,
        "tokens_per_micro_batch": max(lengths), "answer_tokens_max": answer,
        "build_s": round(build_s, 2), "warmup_step_s": round(times[0], 3), "step_s": round(step_s, 3),
        "step_s_all": [round(x, 3) for x in times[1:]], "tokens_per_s": round(tokens_per_step / step_s, 1),
        "loss": [round(x, 4) for x in losses], "grad_norm_last": None if gnorm is None else round(gnorm, 4),
        "trainable_changed": bool((after - before).abs().max() > 0),
        "estimate": gib(est.total), "estimate_rows": {k: gib(v) for k, v in est.rows.items()},
        "peak_allocated": gib(peak) if peak is not None else None,
        "peak_reserved": gib(torch.cuda.max_memory_reserved(acc.device)) if cuda else None,
        "peak_over_estimate": round(peak / est.total, 3) if peak is not None else None,
    }
    del run, model, opt, llm
    if cuda:
        torch.cuda.empty_cache()
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="+", default=list(RECIPES), choices=list(RECIPES))
    ap.add_argument("--steps", type=int, default=3, help="measured optimizer steps per backbone (after 1 warm-up)")
    ap.add_argument("--tiny", action="store_true", help="tiny shapes on the CPU, through the same code")
    ap.add_argument("--out", help="also write the results as JSON here")
    args = ap.parse_args(argv)
    if not args.tiny and not torch.cuda.is_available():
        print("gpu_check: no CUDA device; run with --tiny for the CPU path", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    results = []
    for shape in args.models:
        results.append(check(shape, args.steps, args.tiny))
        print(json.dumps(results[-1]), flush=True)
    summary = {"results": results, "wall_s": round(time.perf_counter() - t0, 1), "torch": torch.__version__}
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(summary, indent=1) + "\n")
    for r in results:
        peak = f"peak {r['peak_allocated']} vs estimate {r['estimate']} ({r['peak_over_estimate']}x)" \
            if r["peak_allocated"] else f"estimate {r['estimate']} (no CUDA peak on CPU)"
        print(f"{r['model']}: {r['step_s']} s per optimizer step ({r['grad_accum']} x {r['batch_size']} x "
              f"{r['max_length']}), {r['tokens_per_s']:,} tokens/s, {peak}, trainable weights moved: "
              f"{r['trainable_changed']}")
    print(f"wall time {summary['wall_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
