"""Train the graph encoder + projector against a frozen LLM (QGMem §III-C4), with `accelerate`.

    accelerate launch --config_file configs/accelerate/cpu.yaml train.py --config configs/train/smollm2_cpu.yaml [optim.lr=1e-4 ...]

Laid out like litgpt's finetune recipes: `setup` builds everything (data, model, optimizer, resume
state), `fit` is the loop, `validate` scores one step, `train` runs the three and writes the report.
What it guarantees:
- only the encoder + projector (+ LoRA when on) train; the LLM is asserted frozen before step 1
  and the parameter counts are printed;
- gradient accumulation is real and token-weighted (`accumulate_step`: no optimizer step and no
  gradient sync between micro-batches; the loss of a step is the mean over every answer token of its
  micro-batches on every process, so it equals one large batch whatever the answer lengths);
- the schedule follows the data (`qgmem.training.schedule`): examples, steps per epoch and total
  steps are printed before the first step, warm-up / validation / saves may be fractions of the total,
  and a schedule that never leaves warm-up, validates fewer than 3 times or saves too rarely is refused;
- ``output_dir/last`` is written atomically every ``save_every`` steps and a restarted run resumes
  from it at the same step and batch; ``output_dir/best`` is the best validation checkpoint
  (`qgmem.training.checkpoint`);
- under DDP only the main process writes; metrics are reduced over processes;
- at the end the best checkpoint is scored on the test split under the conditions of
  `qgmem.training.validate.CONDITIONS` (own graph, shuffled graph, no graph, no text), with paired
  bootstrap intervals, into ``report.json`` and a table (`qgmem.training.validate`).

Training reads a prepared set (`qgmem prepare`); the graph and retrieval settings it stores in the
checkpoint come from that set's ``prepare_meta.json``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qgmem.errors import UserError, run_entry_point
from qgmem.config import dump_yaml, to_dict
from qgmem.training import checkpoint as ckpt
from qgmem.training.config import TrainConfig, load_train_config, validate_config
from qgmem.training.model import build_model, count_parameters
from qgmem.training.examples import EpochSampler, ExampleDataset, TextDropout
from qgmem.training.memory import estimate_only, preflight
from qgmem.training.schedule import Schedule, check_schedule, format_schedule, plan_schedule, print_schedule
from qgmem.training.validate import F1_DEFINITION, eval_generate, eval_loss, fmt, report_table, test_report


def lr_lambda(step: int, warmup: int, total: int, min_ratio: float) -> float:
    """Linear warm-up, then cosine from 1 to `min_ratio` at `total` steps."""
    if warmup > 0 and step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))


@dataclass
class Run:
    """Everything `setup` builds and `fit`/`validate` use."""

    cfg: TrainConfig
    accelerator: Any
    model: Any
    optimizer: Any
    scheduler: Any
    collator: Any  # training batches
    eval_collator: Any
    train_ds: ExampleDataset
    loader: Any  # the training data loader, prepared once; `sampler` sets its epoch's order
    sampler: EpochSampler
    val_examples: list[Any]
    val_golds: list[list[str]]
    test_ds: ExampleDataset
    meta: dict[str, Any]
    total_steps: int
    params: dict[str, int]
    state: dict[str, Any] = field(default_factory=dict)
    too_long: dict[str, list[str]] = field(default_factory=dict)  # split -> ids left out (see `setup`)
    schedule: Schedule | None = None  # warm-up, validation and save steps (set by `setup`)

    @property
    def out(self) -> Path:
        return Path(self.cfg.output_dir)

    def log(self, *a: Any) -> None:
        if self.accelerator.is_main_process:
            print(*a, flush=True)


class PreparedSetMissing(FileNotFoundError, UserError):
    """``data.dir`` holds no prepared set; the message names the command that writes it."""


def load_data(cfg: TrainConfig) -> tuple[dict[str, Any], ExampleDataset, ExampleDataset, ExampleDataset]:
    """(prepare meta, train, val, test) of the prepared set; a missing set is one clear error."""
    from qgmem.training.prepared import load_prepared

    data_dir = Path(cfg.data.dir)
    if not (data_dir / "prepare_meta.json").exists():
        raise PreparedSetMissing(f"{data_dir}: no prepared set; prepare it first with: {cfg.data.prepare_command()}")
    meta, splits = load_prepared(data_dir, prepare_hint=cfg.data.prepare_command())
    nd, ed = int(meta["node_dim"]), int(meta["edge_dim"])
    sets = [ExampleDataset(splits[s], nd, ed, lim) for s, lim in
            (("train", cfg.data.max_train_examples), ("val", cfg.data.max_val_examples),
             ("test", cfg.data.max_test_examples))]
    if len(sets[0]) == 0:
        raise ValueError(f"{data_dir}: the train split is empty")
    return meta, *sets


def setup(cfg: TrainConfig) -> Run:
    """Accelerator, data, model, optimizer and schedule; resumes from ``output_dir/last`` when asked."""
    import torch
    from accelerate import Accelerator
    from accelerate.utils import DistributedDataParallelKwargs, InitProcessGroupKwargs, set_seed
    from torch.utils.data import DataLoader

    from qgmem.model.collate import GraphTokenCollator

    validate_config(cfg)
    o = cfg.optim
    accelerator = Accelerator(
        mixed_precision=cfg.mixed_precision, log_with="wandb" if cfg.wandb.enabled else None,
        # all trainable parameters are used every step; a collective stuck past ddp_timeout_s fails, never hangs
        kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=False),
                         InitProcessGroupKwargs(timeout=cfg.ddp_timeout)],
    )
    set_seed(o.seed)
    log = (lambda *a: print(*a, flush=True)) if accelerator.is_main_process else (lambda *a: None)
    meta, train_ds, val_ds, test_ds = load_data(cfg)
    # refused before the LLM loads when the data cannot fill the schedule (the max_length filter below drops few)
    check_schedule(cfg, plan_schedule(cfg, len(train_ds), accelerator.num_processes, "prepared set"))
    preflight(cfg, meta, log, accelerator.device)  # prints the memory estimate; refuses what cannot fit the GPU
    model = build_model(cfg, meta, log)
    params = count_parameters(model)
    log(f"parameters: trainable {params['trainable']:,} | frozen {params['frozen']:,} "
        f"({100 * params['trainable'] / max(1, sum(params.values())):.3f}% trainable)")
    collate = [GraphTokenCollator(model.tokenizer, cfg.encoder.num_graph_tokens, cfg.data.max_length,
                                  system=cfg.data.system) for _ in range(2)]
    # an example whose question + answer alone exceed max_length cannot be scored: left out, counted, reported
    too_long: dict[str, list[str]] = {}
    train_ds, too_long["train"] = train_ds.fitting(collate[0].fits)
    val_ds, too_long["val"] = val_ds.fitting(collate[1].fits)
    test_ds, too_long["test"] = test_ds.fitting(collate[1].fits)
    if any(too_long.values()):
        log("left out (question + answer longer than data.max_length without any memory text): "
            + ", ".join(f"{k} {len(v)}" for k, v in too_long.items()))
    optimizer = torch.optim.AdamW(model.trainable_parameters(), lr=o.lr, weight_decay=o.weight_decay,
                                  betas=tuple(o.betas))
    schedule = plan_schedule(cfg, len(train_ds), accelerator.num_processes, "prepared set")
    check_schedule(cfg, schedule)
    log(format_schedule(cfg, schedule))
    total_steps = schedule.total_steps
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: lr_lambda(s, schedule.warmup_steps, total_steps, o.min_lr_ratio))
    model, optimizer = accelerator.prepare(model, optimizer)
    sampler = EpochSampler(len(train_ds), o.seed)
    # own generator: iterating must not draw from the global RNG (a resumed run starts mid-epoch, so a
    # global draw would shift the dropout stream)
    train_data = TextDropout(train_ds, cfg.data.text_dropout, o.seed, sampler) if cfg.data.text_dropout else train_ds
    loader = accelerator.prepare_data_loader(DataLoader(train_data, batch_size=o.batch_size, sampler=sampler,
                                                        collate_fn=collate[0],
                                                        generator=torch.Generator().manual_seed(o.seed)))
    ckpt.skip_frozen_weights(accelerator)
    # stepped by hand once per optimizer step (accelerate would step it num_processes times)
    accelerator.register_for_checkpointing(scheduler)
    run = Run(cfg, accelerator, model, optimizer, scheduler, collate[0], collate[1], train_ds, loader, sampler,
              val_ds.examples(), val_ds.golds(), test_ds, meta, total_steps, params,
              state={"step": 0, "epoch": 0, "micro_in_epoch": 0, "best": None, "history": [],
                     "train_seconds": 0.0, "resumed_from": []}, too_long=too_long, schedule=schedule)
    last = ckpt.find_last(run.out) if cfg.resume else None
    if last is not None:
        run.state = ckpt.load_last(accelerator, model, last)
        run.state["resumed_from"].append(run.state["step"])
        run.log(f"resumed from {last}: step {run.state['step']}, epoch {run.state['epoch']}, "
                f"batch {run.state['micro_in_epoch']}")
    if accelerator.is_main_process:
        run.out.mkdir(parents=True, exist_ok=True)
        (run.out / "config.yaml").write_text(dump_yaml(cfg))
    if cfg.wandb.enabled:
        os.environ.setdefault("WANDB_MODE", cfg.wandb.mode)
        accelerator.init_trackers(cfg.wandb.project, config=to_dict(cfg), init_kwargs={
            "wandb": {"mode": cfg.wandb.mode, "name": cfg.wandb.run_name, "dir": str(run.out)}})
    return run


def validate(run: Run, step: int) -> dict[str, Any]:
    """Validation answer loss (and token F1 on ``eval.gen_examples``) at `step`."""
    cfg, res = run.cfg, {"step": step}
    if run.val_examples:
        bs = cfg.optim.eval_batch_size
        res["val_loss"] = eval_loss(run.model, run.val_examples, run.eval_collator, run.accelerator, bs)["loss"]
        if cfg.eval.gen_examples > 0:
            n = min(cfg.eval.gen_examples, len(run.val_examples))
            res["val_f1"] = eval_generate(run.model, run.val_examples[:n], run.val_golds[:n], run.eval_collator,
                                          run.accelerator, bs, cfg.eval.max_new_tokens)["f1"]
    return res


def is_better(metric: str, res: dict[str, Any], best: dict[str, Any] | None) -> bool:
    key = "val_loss" if metric == "loss" else "val_f1"
    if key not in res:
        return best is None
    if best is None or key not in best:
        return True
    return res[key] < best[key] if metric == "loss" else res[key] > best[key]


def validate_and_keep_best(run: Run, step: int) -> dict[str, Any]:
    res = validate(run, step)
    if is_better(run.cfg.eval.metric, res, run.state["best"]):
        run.state["best"] = res
        ckpt.save_best(run.accelerator, run.model, run.out, res)
    return res


def _after_step(run: Run, step: int, rec: dict[str, Any]) -> None:
    """Validation, logging and the `last` checkpoint due after optimizer step `step`."""
    cfg, sched = run.cfg, run.schedule
    if step % sched.eval_every == 0 or step == run.total_steps:
        rec.update(validate_and_keep_best(run, step))
        run.log(f"step {step} | {fmt(rec)}")
    run.state["history"].append(rec)
    if cfg.wandb.enabled:
        run.accelerator.log(rec, step=step)
    if step % sched.save_every == 0 or step == run.total_steps:
        ckpt.save_last(run.accelerator, run.model, run.out, run.state)


def answer_tokens(batch: dict[str, Any]) -> int:
    """Supervised (answer) tokens of a batch, counted as the model's loss counts them (shifted labels)."""
    from qgmem.model.collate import IGNORE_INDEX

    return int((batch["labels"][:, 1:] != IGNORE_INDEX).sum())


def windows(batches: Any, size: int) -> Any:
    """Consecutive micro-batches in groups of `size` (the last group of an epoch may be shorter)."""
    group: list[Any] = []
    for b in batches:
        group.append(b)
        if len(group) == size:
            yield group
            group = []
    if group:
        yield group


def accumulate_step(run: Run, window: list[dict[str, Any]]) -> tuple[float, float | None]:
    """One optimizer step over a window of micro-batches: the loss is the sum over every answer token
    of the window on every process, divided by their number, so accumulation and DDP give exactly the
    gradient of one large batch even when answers differ in length. Returns (loss, grad norm)."""
    import contextlib

    import torch

    acc, o = run.accelerator, run.cfg.optim
    n_global = float(acc.reduce(torch.tensor(sum(answer_tokens(b) for b in window), device=acc.device,
                                             dtype=torch.float64), reduction="sum"))
    scale = acc.num_processes / max(1.0, n_global)  # DDP averages gradients over processes: undo that
    loss_sum = torch.zeros((), dtype=torch.float64, device=acc.device)
    for i, batch in enumerate(window):
        sync = i == len(window) - 1  # gradients are all-reduced once, after the last micro-batch
        with contextlib.nullcontext() if sync else acc.no_sync(run.model):
            out = run.model(batch)
            acc.backward(out.loss_sum * scale)
        loss_sum += out.loss_sum.detach().double()
    trainable = [p for p in run.model.parameters() if p.requires_grad]
    gnorm = acc.clip_grad_norm_(trainable, o.clip) if o.clip > 0 else None
    run.optimizer.step()
    run.optimizer.zero_grad(set_to_none=True)
    run.scheduler.step()
    loss = float(acc.reduce(loss_sum, reduction="sum")) / max(1.0, n_global)
    return loss, (float(gnorm) if gnorm is not None else None)


def fit(run: Run) -> bool:
    """The training loop from ``run.state`` on; True when it stopped early (``stop_after_steps``)."""
    from tqdm import tqdm

    cfg, o, acc, state = run.cfg, run.cfg.optim, run.accelerator, run.state
    if state["step"] == 0 and state["best"] is None:  # step-0 validation: the untrained encoder
        res = validate_and_keep_best(run, 0)
        state["history"].append(res)
        run.log(f"step 0 | {fmt(res)}")
    run.model.train()
    bar = tqdm(total=run.total_steps, initial=state["step"], desc="train", unit="step",
               disable=not (acc.is_main_process and cfg.progress))
    t0 = time.perf_counter()
    while state["step"] < run.total_steps:
        run.sampler.use_epoch(state["epoch"])
        skip = state["micro_in_epoch"]
        batches = acc.skip_first_batches(run.loader, skip) if skip else run.loader
        for window in windows(batches, o.grad_accum):
            train_loss, gnorm = accumulate_step(run, window)
            state["step"] += 1
            state["micro_in_epoch"] += len(window)
            step = state["step"]
            rec = {"step": step, "train_loss": train_loss, "lr": run.scheduler.get_last_lr()[0]}
            if gnorm is not None:
                rec["grad_norm"] = gnorm
            bar.update(1)
            bar.set_postfix(loss=f"{train_loss:.4f}")
            state["train_seconds"] += time.perf_counter() - t0
            t0 = time.perf_counter()
            _after_step(run, step, rec)
            if cfg.stop_after_steps is not None and step >= cfg.stop_after_steps:
                bar.close()
                return True
            if step >= run.total_steps:
                break
        else:
            state["epoch"] += 1
            state["micro_in_epoch"] = 0
    bar.close()
    state["train_seconds"] += time.perf_counter() - t0
    return False


_FINISHED_DDP: list[Run] = []  # see `end`


def end(run: Run) -> None:
    """End the run. Under DDP its model is kept, not freed: freeing it after the process group has ended
    destroys gloo's group on the main thread with the GIL held, which can deadlock at exit
    (pytorch/pytorch#56297); `main` leaves such a process with `os._exit` instead."""
    run.accelerator.end_training()
    if run.accelerator.num_processes > 1:
        _FINISHED_DDP.append(run)


def train(cfg: TrainConfig) -> dict[str, Any]:
    """setup -> fit -> test report; returns the report (``{"stopped_at": step}`` after an early stop)."""
    run = setup(cfg)
    if fit(run):
        run.log(f"stopped after step {run.state['step']} (stop_after_steps); rerun to resume from {run.out / 'last'}")
        end(run)
        return {"stopped_at": run.state["step"]}
    state = run.state
    report: dict[str, Any] = {
        "config": to_dict(cfg), "prepared": {"dir": cfg.data.dir, "counts": run.meta["counts"]},
        "parameters": run.params, "steps": state["step"], "train_seconds": round(state["train_seconds"], 1),
        "resumed_from": state["resumed_from"], "best": state["best"], "history": state["history"],
        "collator": {"truncated_train": run.collator.stats.truncated, "examples_train": run.collator.stats.examples},
        "left_out_too_long": run.too_long,
        "f1_definition": F1_DEFINITION,
        # how each split's memory was chosen (qgmem/training/sessions.py); "oracle" when the answer key chose it
        "memory": run.meta.get("memory"), "oracle": bool(run.meta.get("oracle")),
    }
    if cfg.eval.test and len(run.test_ds):
        report["test"] = test_report(run.model, run.accelerator, run.test_ds.examples(), run.test_ds.golds(),
                                     run.eval_collator, run.out, batch_size=cfg.optim.eval_batch_size,
                                     max_new_tokens=cfg.eval.max_new_tokens, gen_examples=cfg.eval.test_gen_examples,
                                     seed=cfg.optim.seed)
    if run.accelerator.is_main_process:
        from qgmem.io import atomic_write_json, atomic_write_text

        atomic_write_json(run.out / "report.json", report)
        table = report_table(report)
        atomic_write_text(run.out / "report.md", table + "\n")
        run.log(table)
    end(run)
    return report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, help="train YAML (configs/train/*.yaml)")
    parser.add_argument("--model-config", help="backbone YAML (configs/model/*.yaml): its model/encoder "
                        "sections replace the train config's; key=value overrides still apply last")
    parser.add_argument("--estimate-only", action="store_true",
                        help="print the schedule (examples, steps per epoch, total steps) and the per-GPU memory "
                             "estimate, then exit")
    parser.add_argument("overrides", nargs="*", help="key=value overrides, e.g. optim.lr=1e-4 output_dir=/tmp/run")


def run(args: argparse.Namespace) -> int:
    cfg = load_train_config(args.config, args.model_config, args.overrides)
    if args.estimate_only:
        validate_config(cfg)
        print_schedule(cfg)
        return estimate_only(cfg)
    return 0 if train(cfg) else 1


def main(argv: list[str] | None = None) -> int:
    """train.py: a missing prepared set or a bad config is one line and exit code 2 (`--debug`: traceback)."""
    p = argparse.ArgumentParser(prog="train.py", description=__doc__.split("\n")[0])
    add_arguments(p)
    code = run_entry_point("train.py", lambda a: run(p.parse_args(a)), argv)
    if _FINISHED_DDP:  # see `end`: leave without freeing the DDP model
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
