"""Train the graph encoder + projector against a frozen LLM (QGMem §III-C4), with `accelerate`.

    accelerate launch --config_file configs/accelerate/cpu.yaml train.py --config configs/train/smollm2_cpu.yaml [optim.lr=1e-4 ...]

One flat loop, nanoGPT style. What it guarantees:
- only the encoder + projector (+ LoRA when on) train; the LLM is asserted frozen before step 1
  and the parameter counts are printed;
- gradient accumulation is real (``accelerator.accumulate``: no optimizer step, no gradient sync
  between micro-batches);
- ``output_dir/last`` (optimizer, scheduler, RNG, step, data position, trainable weights) is
  written atomically every ``save_every`` steps, and a restarted run resumes from it at the
  same step and batch; ``output_dir/best`` is the best validation checkpoint
  (`GraphTokenLM.save_pretrained`);
- under DDP only the main process writes; metrics are reduced over processes;
- at the end the best checkpoint is scored on the test split under three conditions (graph token +
  text, text only, shuffled graphs) into ``report.json`` and a table.

Token F1 here is SQuAD-style (`qgmem.evaluation.metrics.squad_f1`, max over gold answers).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qgmem.config import dump_yaml, load_config, to_dict
from qgmem.model.encoder import EncoderConfig
from qgmem.graph.local_graph import GraphConfig
from qgmem.training.prepare import PrepareConfig

DTYPES = ("float32", "bfloat16", "float16")


@dataclass
class LoraSettings:
    enabled: bool = False
    r: int = 8
    alpha: int = 16
    dropout: float = 0.05
    target_modules: list[str] = field(default_factory=lambda: ["q_proj", "v_proj"])


@dataclass
class ModelConfig:
    name: str = "smollm2"  # local path, hub id, or "smollm2" (packaged GGUF, via qgmem.llm.local_model_path)
    dtype: str = "float32"  # weights of the frozen LLM: float32 on CPU, bfloat16 on GPU
    lora: LoraSettings = field(default_factory=LoraSettings)


@dataclass
class DataConfig:
    dir: str = "checkpoints/prepared/longmemeval_s_cpu"  # prepared set (`qgmem prepare`)
    prepare_if_missing: bool = True  # run the prepare step with `prepare` when `dir` has no finished set
    prepare: PrepareConfig = field(default_factory=PrepareConfig)
    max_length: int = 1024  # tokens per example (memory text is cut to fit, the answer never)
    system: str | None = None  # system prompt of the answer prompt (None = qgmem.answer.DEFAULT_SYSTEM)
    max_train_examples: int | None = None
    max_val_examples: int | None = None
    max_test_examples: int | None = None


@dataclass
class OptimConfig:
    lr: float = 1e-4
    weight_decay: float = 0.05
    betas: list[float] = field(default_factory=lambda: [0.9, 0.95])
    warmup_steps: int = 10
    min_lr_ratio: float = 0.1  # cosine decays to lr * min_lr_ratio
    grad_accum: int = 1
    clip: float = 1.0  # max grad norm (0 = off)
    epochs: int = 1
    max_steps: int | None = None  # optimizer steps; overrides epochs when set
    batch_size: int = 4  # micro-batch per process
    eval_batch_size: int = 8
    seed: int = 42


@dataclass
class EvalConfig:
    every: int = 50  # validate every N optimizer steps (and at the end)
    metric: str = "loss"  # best checkpoint by "loss" (lower) or "f1" (higher)
    gen_examples: int = 0  # token F1 via generate on this many validation examples (0 = off)
    max_new_tokens: int = 24
    test: bool = True  # final test-split report (graph+text / text only / shuffled graph)
    test_gen_examples: int | None = None  # generate on this many test examples (None = all)


@dataclass
class WandbConfig:
    enabled: bool = False
    project: str = "qgmem"
    mode: str = "offline"  # "offline" works without network; "online" to sync
    run_name: str | None = None


@dataclass
class TrainConfig:
    output_dir: str = "checkpoints/run"
    mixed_precision: str = "no"  # "no" | "bf16" | "fp16" (autocast for the trainable part)
    save_every: int = 50  # write output_dir/last every N optimizer steps
    resume: bool = True  # continue from output_dir/last when it exists
    stop_after_steps: int | None = None  # leave the loop after N steps without a final save (a simulated kill)
    progress: bool = True
    model: ModelConfig = field(default_factory=ModelConfig)
    encoder: EncoderConfig = field(default_factory=EncoderConfig)
    graph: GraphConfig = field(default_factory=GraphConfig)
    data: DataConfig = field(default_factory=DataConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    wandb: WandbConfig = field(default_factory=WandbConfig)


def validate_config(cfg: TrainConfig) -> None:
    if cfg.model.dtype not in DTYPES:
        raise ValueError(f"model.dtype: expected one of {DTYPES}, got {cfg.model.dtype!r}")
    if cfg.eval.metric not in ("loss", "f1"):
        raise ValueError(f"eval.metric: expected 'loss' or 'f1', got {cfg.eval.metric!r}")
    if cfg.eval.metric == "f1" and cfg.eval.gen_examples <= 0:
        raise ValueError("eval.metric=f1 needs eval.gen_examples > 0")
    if cfg.optim.grad_accum < 1 or cfg.optim.batch_size < 1:
        raise ValueError("optim.grad_accum and optim.batch_size must be >= 1")
    if cfg.data.prepare.graph != cfg.graph:
        raise ValueError(f"graph ({cfg.graph}) differs from data.prepare.graph ({cfg.data.prepare.graph}); "
                         "the graphs are built in the prepare step, so set both the same")


# ---------------------------------------------------------------------------------------------
# building blocks


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


def lora_dict(cfg: LoraSettings) -> dict[str, Any] | None:
    if not cfg.enabled:
        return None
    return {"r": cfg.r, "lora_alpha": cfg.alpha, "lora_dropout": cfg.dropout, "target_modules": list(cfg.target_modules)}


class ExampleDataset:
    """A prepared split as a map-style dataset of `GraphExample`s."""

    def __init__(self, ds: Any, node_dim: int, edge_dim: int, limit: int | None = None):
        self.ds = ds if limit is None else ds.select(range(min(limit, len(ds))))
        self.node_dim, self.edge_dim = node_dim, edge_dim

    def __len__(self) -> int:
        return len(self.ds)

    def __getitem__(self, i: int):
        from qgmem.training.prepare import row_to_example

        return row_to_example(self.ds[int(i)], self.node_dim, self.edge_dim)

    def rows(self) -> list[dict[str, Any]]:
        return [self.ds[i] for i in range(len(self.ds))]


def shuffled_graphs(examples: list[Any], seed: int) -> list[Any]:
    """Each example with another example's graph (a seeded derangement when possible): the control that
    keeps graph statistics but breaks the link between graph and question."""
    import dataclasses

    n = len(examples)
    perm = list(range(n))
    if n > 1:  # one random n-cycle: every example gets a graph other than its own
        order = list(range(n))
        random.Random(seed).shuffle(order)
        nxt = {order[i]: order[(i + 1) % n] for i in range(n)}
        perm = [nxt[i] for i in range(n)]
    return [dataclasses.replace(ex, graph=examples[j].graph) for ex, j in zip(examples, perm)]


def lr_lambda(step: int, warmup: int, total: int, min_ratio: float) -> float:
    """Linear warm-up, then cosine from 1 to `min_ratio` at `total` steps."""
    if warmup > 0 and step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))


def epoch_order(n: int, seed: int, epoch: int) -> list[int]:
    """The example order of an epoch: a function of (seed, epoch) only, so a resumed run sees the same."""
    idx = list(range(n))
    random.Random(seed * 1_000_003 + epoch).shuffle(idx)
    return idx


# ---------------------------------------------------------------------------------------------
# evaluation


def eval_loss(model: Any, examples: list[Any], collator: Any, accelerator: Any, batch_size: int) -> dict[str, float]:
    """Answer loss = mean NLL per answer token over `examples` (all processes; summed, then divided)."""
    import torch

    m = accelerator.unwrap_model(model)
    was = m.training
    m.eval()
    shard = examples[accelerator.process_index::accelerator.num_processes]
    tot = torch.zeros(2, dtype=torch.float64, device=accelerator.device)
    with torch.no_grad():
        for i in range(0, len(shard), batch_size):
            batch = collator(shard[i:i + batch_size])
            batch = {k: (v.to(accelerator.device) if hasattr(v, "to") else v) for k, v in batch.items()}
            with accelerator.autocast():
                out = m(batch)
            tot[0] += float(out.loss_sum)
            tot[1] += int(out.num_tokens)
    tot = accelerator.reduce(tot, reduction="sum")
    m.train(was)
    return {"loss": float(tot[0] / tot[1]) if tot[1] > 0 else float("nan"), "tokens": int(tot[1])}


def eval_generate(model: Any, examples: list[Any], golds: list[list[str]], collator: Any, accelerator: Any,
                  batch_size: int, max_new_tokens: int) -> dict[str, Any]:
    """Greedy answers for `examples`; token F1 (SQuAD-style) against `golds`, over all processes."""
    import torch
    from accelerate.utils import gather_object

    from qgmem.evaluation.metrics import squad_f1
    from qgmem.answer import parse_answer

    m = accelerator.unwrap_model(model)
    was = m.training
    m.eval()
    gen = collator.for_generation()
    idx = list(range(len(examples)))[accelerator.process_index::accelerator.num_processes]
    local: list[tuple[int, str, float]] = []
    with torch.no_grad():
        for i in range(0, len(idx), batch_size):
            part = idx[i:i + batch_size]
            batch = gen([examples[j] for j in part])
            batch = {k: (v.to(accelerator.device) if hasattr(v, "to") else v) for k, v in batch.items()}
            texts = m.generate(batch, max_new_tokens=max_new_tokens)
            for j, t in zip(part, texts):
                local.append((j, t, squad_f1(parse_answer(t)[0], golds[j])))
    allr = sorted(gather_object(local) if accelerator.num_processes > 1 else local)
    m.train(was)
    f1 = sum(r[2] for r in allr) / len(allr) if allr else float("nan")
    return {"f1": f1, "n": len(allr), "samples": [{"i": r[0], "output": r[1], "f1": r[2]} for r in allr[:5]]}


# ---------------------------------------------------------------------------------------------
# checkpoint state


def trainable_state(model: Any) -> dict[str, Any]:
    return {n: p.detach().cpu().clone() for n, p in model.named_parameters() if p.requires_grad}


def _save_last(accelerator: Any, model: Any, out: Path, state: dict[str, Any]) -> None:
    """Write `out/last` atomically: everything into last.tmp, then swap (main process only)."""
    from safetensors.torch import save_file

    tmp = out / "last.tmp"
    if accelerator.is_main_process:
        shutil.rmtree(tmp, ignore_errors=True)
    accelerator.wait_for_everyone()
    accelerator.save_state(str(tmp))  # optimizer, scheduler, RNG of every process, accelerator step
    if accelerator.is_main_process:
        save_file(trainable_state(accelerator.unwrap_model(model)), str(tmp / "trainable.safetensors"))
        (tmp / "trainer_state.json").write_text(json.dumps(state, indent=2))
        last, old = out / "last", out / "last.old"
        shutil.rmtree(old, ignore_errors=True)
        if last.exists():
            last.rename(old)
        tmp.rename(last)
        shutil.rmtree(old, ignore_errors=True)
    accelerator.wait_for_everyone()


def _load_last(accelerator: Any, model: Any, last: Path) -> dict[str, Any]:
    import torch
    from safetensors.torch import load_file

    accelerator.load_state(str(last))
    weights = load_file(str(last / "trainable.safetensors"))
    m = accelerator.unwrap_model(model)
    params = dict(m.named_parameters())
    missing = sorted(n for n, p in params.items() if p.requires_grad and n not in weights)
    unknown = sorted(n for n in weights if n not in params)
    if missing or unknown:
        raise ValueError(f"{last}/trainable.safetensors does not match the model: missing {missing[:5]}, unknown {unknown[:5]}")
    with torch.no_grad():
        for n, w in weights.items():
            params[n].copy_(w.to(params[n].device, params[n].dtype))
    return json.loads((last / "trainer_state.json").read_text())


# ---------------------------------------------------------------------------------------------
# the loop


def train(cfg: TrainConfig) -> dict[str, Any]:
    import torch
    from accelerate import Accelerator
    from accelerate.utils import DistributedDataParallelKwargs, set_seed
    from torch.utils.data import DataLoader, Subset
    from tqdm import tqdm

    from qgmem.model.collate import GraphTokenCollator
    from qgmem.model.graph_token_lm import GraphTokenLM
    from qgmem.training.prepare import load_prepared, prepare_dataset

    validate_config(cfg)
    o = cfg.optim
    out = Path(cfg.output_dir)
    accelerator = Accelerator(
        gradient_accumulation_steps=o.grad_accum, mixed_precision=cfg.mixed_precision,
        log_with="wandb" if cfg.wandb.enabled else None,
        # the encoder's learned "empty graph" vector is unused in batches without empty graphs
        kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)],
    )
    main = accelerator.is_main_process
    log = (lambda *a: print(*a, flush=True)) if main else (lambda *a: None)
    set_seed(o.seed)

    # -- data ---------------------------------------------------------------------------------
    data_dir = Path(cfg.data.dir)
    if not (data_dir / "prepare_meta.json").exists() and cfg.data.prepare_if_missing:
        if main:
            log(f"no prepared set in {data_dir}; preparing {cfg.data.prepare.dataset} ...")
            prepare_dataset(cfg.data.prepare, data_dir, progress=cfg.progress)
        accelerator.wait_for_everyone()
    meta, splits = load_prepared(data_dir)
    node_dim, edge_dim = int(meta["node_dim"]), int(meta["edge_dim"])
    if (cfg.encoder.node_dim, cfg.encoder.edge_dim) != (node_dim, edge_dim):
        log(f"encoder dims set from the prepared graphs: node_dim {node_dim}, edge_dim {edge_dim}")
        cfg.encoder.node_dim, cfg.encoder.edge_dim = node_dim, edge_dim
    train_ds = ExampleDataset(splits["train"], node_dim, edge_dim, cfg.data.max_train_examples)
    val_ds = ExampleDataset(splits["val"], node_dim, edge_dim, cfg.data.max_val_examples)
    test_ds = ExampleDataset(splits["test"], node_dim, edge_dim, cfg.data.max_test_examples)
    if len(train_ds) == 0:
        raise ValueError(f"{data_dir}: the train split is empty")
    val_examples = [val_ds[i] for i in range(len(val_ds))]
    val_golds = [r["answers"] for r in val_ds.rows()]

    # -- model --------------------------------------------------------------------------------
    llm, tok = load_llm(cfg.model)
    from qgmem.llm.hf import local_model_path

    model = GraphTokenLM(llm, tok, cfg.encoder, lora=lora_dict(cfg.model.lora), graph_cfg=cfg.graph,
                         base_model=local_model_path(cfg.model.name),
                         extra={"model_name": cfg.model.name, "max_length": cfg.data.max_length,
                                "system": cfg.data.system,
                                "prepare": to_dict(cfg.data.prepare)})
    trainable = [p for p in model.parameters() if p.requires_grad]
    n_train = sum(p.numel() for p in trainable)
    n_frozen = sum(p.numel() for p in model.parameters() if not p.requires_grad)
    llm_trainable = [n for n, p in model.named_parameters() if p.requires_grad
                     and not n.startswith("graph_encoder.") and "lora_" not in n]
    if llm_trainable:
        raise RuntimeError(f"LLM parameters would train: {llm_trainable[:5]} (only encoder, projector, LoRA may)")
    ids_trainable = {id(p) for p in model.trainable_parameters()}
    if ids_trainable != {id(p) for p in trainable}:
        raise RuntimeError("model.trainable_parameters() differs from the parameters with requires_grad")
    log(f"parameters: trainable {n_train:,} | frozen {n_frozen:,} ({100 * n_train / max(1, n_train + n_frozen):.3f}% trainable)")
    collator = GraphTokenCollator(tok, cfg.encoder.num_graph_tokens, cfg.data.max_length, system=cfg.data.system)
    eval_collator = GraphTokenCollator(tok, cfg.encoder.num_graph_tokens, cfg.data.max_length, system=cfg.data.system)

    optimizer = torch.optim.AdamW(trainable, lr=o.lr, weight_decay=o.weight_decay, betas=tuple(o.betas))
    micro_per_epoch = math.ceil(len(train_ds) / (o.batch_size * accelerator.num_processes))
    steps_per_epoch = math.ceil(micro_per_epoch / o.grad_accum)
    total_steps = o.max_steps if o.max_steps is not None else o.epochs * steps_per_epoch
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: lr_lambda(s, o.warmup_steps, total_steps, o.min_lr_ratio))
    model, optimizer = accelerator.prepare(model, optimizer)
    # save_state would write the whole model (the frozen LLM too: 16 GB for an 8B model) at every
    # checkpoint; the trainable weights go to trainable.safetensors instead (see _save_last/_load_last)
    accelerator.register_save_state_pre_hook(lambda models, weights, output_dir: weights.clear())
    accelerator.register_load_state_pre_hook(lambda models, input_dir: models.clear())
    # stepped by hand once per optimizer step (accelerate would step it num_processes times)
    accelerator.register_for_checkpointing(scheduler)

    state: dict[str, Any] = {"step": 0, "epoch": 0, "micro_in_epoch": 0, "best": None, "history": [],
                             "train_seconds": 0.0, "resumed_from": []}
    last = out / "last"
    if cfg.resume and (last / "trainer_state.json").exists():
        state = _load_last(accelerator, model, last)
        state["resumed_from"].append(state["step"])
        log(f"resumed from {last}: step {state['step']}, epoch {state['epoch']}, batch {state['micro_in_epoch']}")
    if main:
        out.mkdir(parents=True, exist_ok=True)
        (out / "config.yaml").write_text(dump_yaml(cfg))
    if cfg.wandb.enabled:
        os.environ.setdefault("WANDB_MODE", cfg.wandb.mode)
        accelerator.init_trackers(cfg.wandb.project, config=to_dict(cfg), init_kwargs={
            "wandb": {"mode": cfg.wandb.mode, "name": cfg.wandb.run_name, "dir": str(out)}})

    def validate(step: int) -> dict[str, Any]:
        res: dict[str, Any] = {"step": step}
        if val_examples:
            res["val_loss"] = eval_loss(model, val_examples, eval_collator, accelerator, o.eval_batch_size)["loss"]
            if cfg.eval.gen_examples > 0:
                n = min(cfg.eval.gen_examples, len(val_examples))
                res["val_f1"] = eval_generate(model, val_examples[:n], val_golds[:n], eval_collator, accelerator,
                                              o.eval_batch_size, cfg.eval.max_new_tokens)["f1"]
        return res

    def is_better(res: dict[str, Any], best: dict[str, Any] | None) -> bool:
        key = "val_loss" if cfg.eval.metric == "loss" else "val_f1"
        if key not in res:
            return best is None
        if best is None or key not in best:
            return True
        return res[key] < best[key] if cfg.eval.metric == "loss" else res[key] > best[key]

    def checkpoint_best(res: dict[str, Any]) -> None:
        if is_better(res, state["best"]):
            state["best"] = res
            if main:
                tmp = out / "best.tmp"
                shutil.rmtree(tmp, ignore_errors=True)
                accelerator.unwrap_model(model).save_pretrained(str(tmp))
                (tmp / "val_metrics.json").write_text(json.dumps(res, indent=2))
                shutil.rmtree(out / "best", ignore_errors=True)
                tmp.rename(out / "best")
            accelerator.wait_for_everyone()

    if state["step"] == 0 and state["best"] is None:  # step-0 validation: the untrained encoder
        res = validate(0)
        state["history"].append(res)
        checkpoint_best(res)
        log(f"step 0 | {_fmt(res)}")

    # -- train ----------------------------------------------------------------------------------
    model.train()
    bar = tqdm(total=total_steps, initial=state["step"], desc="train", unit="step",
               disable=not (main and cfg.progress))
    t0 = time.perf_counter()
    stopped = False
    while state["step"] < total_steps and not stopped:
        epoch = state["epoch"]
        order = epoch_order(len(train_ds), o.seed, epoch)
        # own generator: creating the iterator must not draw from the global RNG (the resumed run
        # creates it mid-epoch, so a global draw would shift the dropout stream)
        dl = DataLoader(Subset(train_ds, order), batch_size=o.batch_size, shuffle=False, collate_fn=collator,
                        generator=torch.Generator().manual_seed(o.seed + epoch))
        dl = accelerator.prepare_data_loader(dl)
        skip = state["micro_in_epoch"]
        it = accelerator.skip_first_batches(dl, skip) if skip else dl
        loss_acc, n_acc = 0.0, 0
        for micro, batch in enumerate(it, start=skip):
            with accelerator.accumulate(model):
                outp = model(batch)
                accelerator.backward(outp.loss)
                loss_acc += float(outp.loss.detach())
                n_acc += 1
                if accelerator.sync_gradients:
                    gnorm = accelerator.clip_grad_norm_(trainable, o.clip) if o.clip > 0 else None
                    optimizer.step()
                    optimizer.zero_grad(set_to_none=True)
            if not accelerator.sync_gradients:
                continue
            scheduler.step()
            state["step"] += 1
            state["micro_in_epoch"] = micro + 1
            step = state["step"]
            train_loss = float(accelerator.reduce(torch.tensor(loss_acc / n_acc, device=accelerator.device),
                                                  reduction="mean"))
            loss_acc, n_acc = 0.0, 0
            rec = {"step": step, "train_loss": train_loss, "lr": scheduler.get_last_lr()[0]}
            if gnorm is not None:
                rec["grad_norm"] = float(gnorm)
            bar.update(1)
            bar.set_postfix(loss=f"{train_loss:.4f}")
            if step % cfg.eval.every == 0 or step == total_steps:
                res = validate(step)
                rec.update(res)
                checkpoint_best(res)
                log(f"step {step} | {_fmt(rec)}")
            state["history"].append(rec)
            if cfg.wandb.enabled:
                accelerator.log(rec, step=step)
            if step % cfg.save_every == 0 or step == total_steps:
                state["train_seconds"] += time.perf_counter() - t0
                t0 = time.perf_counter()
                _save_last(accelerator, model, out, state)
            if cfg.stop_after_steps is not None and step >= cfg.stop_after_steps:
                stopped = True
                break
            if step >= total_steps:
                break
        else:
            state["epoch"] += 1
            state["micro_in_epoch"] = 0
    bar.close()
    state["train_seconds"] += time.perf_counter() - t0
    if stopped:
        log(f"stopped after step {state['step']} (stop_after_steps); rerun to resume from {last}")
        accelerator.end_training()
        return {"stopped_at": state["step"]}

    # -- report ---------------------------------------------------------------------------------
    report: dict[str, Any] = {
        "config": to_dict(cfg), "prepared": {"dir": str(data_dir), "counts": meta["counts"]},
        "parameters": {"trainable": n_train, "frozen": n_frozen},
        "steps": state["step"], "train_seconds": round(state["train_seconds"], 1),
        "resumed_from": state["resumed_from"], "best": state["best"], "history": state["history"],
        "collator": {"truncated_train": collator.stats.truncated, "examples_train": collator.stats.examples},
        "f1_definition": "SQuAD-style token F1 (qgmem.evaluation.metrics.squad_f1), max over gold answers",
    }
    if cfg.eval.test and len(test_ds):
        report["test"] = test_report(cfg, model, accelerator, test_ds, eval_collator, out)
    if main:
        from qgmem.io import atomic_write_json, atomic_write_text

        atomic_write_json(out / "report.json", report)
        table = report_table(report)
        atomic_write_text(out / "report.md", table + "\n")
        log(table)
    accelerator.end_training()
    return report


def test_report(cfg: TrainConfig, model: Any, accelerator: Any, test_ds: ExampleDataset, collator: Any,
                out: Path) -> dict[str, Any]:
    """Best checkpoint on the test split: graph token + text, text only, shuffled graphs."""
    import torch
    from safetensors.torch import load_file

    m = accelerator.unwrap_model(model)
    best = out / "best" / "model.safetensors"
    if best.exists():  # the trainable weights of the best validation step
        weights = load_file(str(best))
        params = dict(m.named_parameters())
        with torch.no_grad():
            for n, w in weights.items():
                if n in params:
                    params[n].copy_(w.to(params[n].device, params[n].dtype))
    examples = [test_ds[i] for i in range(len(test_ds))]
    golds = [r["answers"] for r in test_ds.rows()]
    n_gen = len(examples) if cfg.eval.test_gen_examples is None else min(cfg.eval.test_gen_examples, len(examples))
    conditions = {"graph+text": (True, examples), "text only": (False, examples),
                  "shuffled graph+text": (True, shuffled_graphs(examples, cfg.optim.seed))}
    res: dict[str, Any] = {"n": len(examples), "n_generated": n_gen}
    bs = cfg.optim.eval_batch_size
    for name, (use_graph, exs) in conditions.items():
        m.use_graph = use_graph
        r = {"loss": eval_loss(model, exs, collator, accelerator, bs)["loss"]}
        if n_gen:
            g = eval_generate(model, exs[:n_gen], golds[:n_gen], collator, accelerator, bs, cfg.eval.max_new_tokens)
            r["f1"], r["samples"] = g["f1"], g["samples"]
        res[name] = r
    m.use_graph = True
    return res


def _fmt(rec: dict[str, Any]) -> str:
    return " | ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in rec.items() if k != "step")


def report_table(report: dict[str, Any]) -> str:
    lines = [f"steps {report['steps']} | train {report['train_seconds']} s | trainable params "
             f"{report['parameters']['trainable']:,} | frozen {report['parameters']['frozen']:,}"
             + (f" | resumed at steps {report['resumed_from']}" if report.get("resumed_from") else "")]
    if report.get("best"):
        lines.append(f"best validation: {_fmt(report['best'])} (step {report['best']['step']})")
    t = report.get("test")
    if t:
        lines += ["", f"test split, n = {t['n']} (F1 on {t['n_generated']}; {report['f1_definition']})", "",
                  "| condition | answer loss | token F1 |", "|---|---:|---:|"]
        for name in ("graph+text", "text only", "shuffled graph+text"):
            r = t[name]
            f1 = f"{r['f1']:.4f}" if "f1" in r else "-"
            lines.append(f"| {name} | {r['loss']:.4f} | {f1} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# entry points


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="train.py", description=__doc__.split("\n")[0])
    add_arguments(p)
    return p.parse_args(argv)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, help="train YAML (configs/train/*.yaml)")
    parser.add_argument("--model-config", help="backbone YAML (configs/model/*.yaml): its model/encoder "
                        "sections replace the train config's; key=value overrides still apply last")
    parser.add_argument("overrides", nargs="*", help="key=value overrides, e.g. optim.lr=1e-4 output_dir=/tmp/run")


def load_train_config(path: str, model_config: str | None = None, overrides: list[str] | None = None) -> TrainConfig:
    """Train YAML (+ backbone YAML sections) + overrides -> TrainConfig."""
    import yaml

    from qgmem.config import ConfigError, apply_overrides, from_dict

    if model_config is None:
        return load_config(TrainConfig, path, overrides)
    data: dict[str, Any] = {}
    for p in (path, model_config):
        if not Path(p).exists():
            raise ConfigError(f"config file not found: {p}")
        part = yaml.safe_load(Path(p).read_text()) or {}
        if not isinstance(part, dict):
            raise ConfigError(f"{p}: top level must be a mapping")
        if p == model_config and set(part) - {"model", "encoder"}:
            raise ConfigError(f"{p}: a model config may only hold 'model' and 'encoder', got {sorted(part)}")
        data.update(part)
    apply_overrides(data, list(overrides or []))
    return from_dict(TrainConfig, data, f"{path} + {model_config}")


def run(args: argparse.Namespace) -> int:
    cfg = load_train_config(args.config, args.model_config, args.overrides)
    res = train(cfg)
    return 0 if res else 1


def main(argv: list[str] | None = None) -> int:
    return run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
