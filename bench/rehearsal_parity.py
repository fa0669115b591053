"""The rehearsal's last steps (bench/rehearsal.py): one checkpoint, three paths, one set of graph tokens; and the
shipped copy of the checkpoint with its model card.

Paths compared, each run for real:
- training's `validate` (qgmem/training/trainer.py) on the prepared validation examples, with the best/ weights
  loaded into a fresh `setup` of the rehearsal's train config (the validation loss it computes is checked against
  the one training recorded in best/val_metrics.json, under 2-process DDP);
- ``python evaluate.py --config configs/eval/rehearsal_checkpoint.yaml`` on the validation cases, its tokens caught
  by bench/capture_graph_tokens.py (one encoder call per answer, in the order of predictions.jsonl);
- ``MemoryPipeline.from_pretrained(best).add(case).answer(question)`` on a fresh store, and its ``graph_tokens``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _flat(t: Any) -> Any:
    return t.reshape(-1, t.shape[-1])


def validation_tokens(work: Path, common: list[str], out: Path, train_cfg: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(example id -> graph tokens training's `validate` scores it with, {recomputed, recorded val loss})."""
    from accelerate.state import AcceleratorState, GradientState

    from qgmem.training.checkpoint import load_best_weights
    from qgmem.training.config import load_train_config
    from qgmem.training.trainer import setup, validate

    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    cfg = load_train_config(str(ROOT / train_cfg), None, common + [
        f"output_dir={work / 'parity_validate'}", "resume=false", "wandb.enabled=false", "eval.gen_examples=0"])
    run = setup(cfg)
    model = run.accelerator.unwrap_model(run.model)
    if not load_best_weights(model, out):
        raise AssertionError(f"{out}: no best/ checkpoint")
    model.train()  # as during training: validate switches to eval mode itself
    caught: list[Any] = []
    handle = model.graph_encoder.register_forward_hook(lambda m, a, o: caught.append(o.detach().cpu().clone()))
    try:
        res = validate(run, step=-1)
    finally:
        handle.remove()
    tokens = [_flat(t) for t in caught][:len(run.val_examples)]
    recorded = json.loads((out / "best" / "val_metrics.json").read_text())
    return ({ex.id: t for ex, t in zip(run.val_examples, tokens)},
            {"recomputed": res["val_loss"], "recorded_in_training": recorded["val_loss"], "step": recorded["step"]})


def pipeline_tokens(work: Path, best: Path, data: Path, case_ids: list[str], max_new_tokens: int
                    ) -> tuple[dict[str, Any], dict[str, Any], dict[str, str]]:
    """(question id -> tokens `answer` read, question id -> `graph_tokens`, question id -> reply) from a
    pipeline loaded from `best` with a fresh store."""
    from qgmem.data.registry import load_dataset_by_name
    from qgmem.pipeline import MemoryPipeline

    by_id = {c.id: c for c in load_dataset_by_name("convomem-cases", data_dir=data, context_sizes=[2])}
    pipe = MemoryPipeline.from_pretrained(best, store_dir=work / "pipeline_store", max_new_tokens=max_new_tokens)
    answered, direct, replies = {}, {}, {}
    try:
        for cid in case_ids:
            conv = by_id[cid]
            pipe.add(conv, namespace=cid)
            for q in conv.questions:
                caught: list[Any] = []
                handle = pipe.model.graph_encoder.register_forward_hook(
                    lambda m, a, o: caught.append(o.detach().cpu().clone()))
                try:
                    ans = pipe.answer(q)
                finally:
                    handle.remove()
                if len(caught) != 1:
                    raise AssertionError(f"{q.id}: the answer made {len(caught)} encoder calls, expected 1")
                answered[q.id], direct[q.id], replies[q.id] = _flat(caught[0]), _flat(pipe.graph_tokens(q)), ans.raw
    finally:
        pipe.close()
    return answered, direct, replies


def evaluate_tokens(phases: Any, work: Path, best: Path, data: Path, case_ids: list[str], run_command: Any,
                    eval_cfg: str, extra: list[str]) -> tuple[dict[str, Any], dict[str, str], int]:
    """(question id -> tokens, question id -> raw reply, max_tokens) of `evaluate.py` on `case_ids`."""
    import torch

    from qgmem.config import load_config
    from qgmem.evaluation.config import EvalConfig

    tok_file = work / "evaluate_graph_tokens.pt"
    args = [f"data_dir={data}", f"subset.conversations={json.dumps(case_ids)}", "run_name=rehearsal",
            f"method_options.qgmem-graph-token.checkpoint={best}", f"output_dir={work / 'results'}", *extra]
    phases.run("evaluate.py (rehearsal_checkpoint.yaml)", run_command,
               [sys.executable, "bench/capture_graph_tokens.py", "--out", str(tok_file), "--", "evaluate.py",
                "--config", eval_cfg, "--quiet", *args], work / "evaluate.log")
    cfg = load_config(EvalConfig, str(ROOT / eval_cfg), args)
    rows = _rows(work / "results" / cfg.benchmark / "rehearsal" / "predictions.jsonl")
    caught = torch.load(tok_file)["tokens"]
    if len(caught) != len(rows):
        raise AssertionError(f"evaluate.py made {len(caught)} encoder calls for {len(rows)} answers")
    return ({r["question_id"]: _flat(t) for r, t in zip(rows, caught)}, {r["question_id"]: r["raw_output"] for r in rows},
            cfg.answer.max_tokens)


def check_parity(phases: Any, work: Path, common: list[str], out: Path, prep: Path, data: Path, run_command: Any,
                 eval_cfg: str, train_cfg: str, eval_extra: list[str] | None = None) -> dict[str, Any]:
    """Run the three paths and assert one set of graph tokens per validation question; returns the evidence."""
    import torch

    best = out / "best"
    case_ids = json.loads((prep / "prepare_meta.json").read_text())["conversations"]["val"]
    ev, ev_replies, max_tokens = evaluate_tokens(phases, work, best, data, case_ids, run_command, eval_cfg,
                                                 list(eval_extra or []))
    val, loss = phases.run("validate (best/ weights)", validation_tokens, work, common, out, train_cfg)
    answered, direct, replies = phases.run("MemoryPipeline.from_pretrained(best).answer", pipeline_tokens, work,
                                           best, data, case_ids, max_tokens)
    if not (set(val) == set(ev) == set(answered)) or not val:
        raise AssertionError(f"question sets differ: validate {sorted(val)[:3]}.. ({len(val)}), evaluate "
                             f"{len(ev)}, pipeline {len(answered)}")
    diffs = {q: {"evaluate": float((ev[q] - val[q]).abs().max()), "pipeline_answer": float((answered[q] - val[q]).abs().max()),
                 "pipeline_graph_tokens": float((direct[q] - val[q]).abs().max())} for q in sorted(val)}
    equal = all(torch.equal(ev[q], val[q]) and torch.equal(answered[q], val[q]) and torch.equal(direct[q], val[q])
                for q in val)
    same_replies = sum(ev_replies[q] == replies[q] for q in val)
    loss_gap = abs(loss["recomputed"] - loss["recorded_in_training"])
    res = {"questions": len(val), "cases": len(case_ids), "tokens_equal": equal,
           "max_abs_difference": max(max(d.values()) for d in diffs.values()), "per_question": diffs,
           "replies_equal": same_replies, "val_loss": loss, "val_loss_gap": loss_gap,
           "token_shape": list(next(iter(val.values())).shape)}
    if not equal:
        raise AssertionError(f"graph tokens differ between validate, evaluate.py and the pipeline: {diffs}")
    if same_replies != len(val):
        raise AssertionError(f"evaluate.py and MemoryPipeline.answer replied differently to "
                             f"{len(val) - same_replies} of {len(val)} questions")
    if loss_gap > 1e-5 * max(1.0, abs(loss["recorded_in_training"])):
        raise AssertionError(f"validation loss of best/ recomputed {loss['recomputed']} != recorded in training "
                             f"{loss['recorded_in_training']}")
    return res


def ship(out: Path, dest: Path, rehearsal: dict[str, Any], work: Path) -> Path:
    """Copy best/ (weights, config, validation metrics) with the training report and a model card into `dest`."""
    from model_card import model_card

    report = json.loads((out / "report.json").read_text())
    meta = json.loads((work / "prepared" / "prepare_meta.json").read_text())
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("model.safetensors", "qgmem_config.json", "val_metrics.json"):
        shutil.copy2(out / "best" / name, dest / name)
    keep = {k: report[k] for k in ("steps", "train_seconds", "resumed_from", "best", "history", "parameters",
                                   "prepared", "memory", "oracle", "f1_definition", "test") if k in report}
    keep["answer_filter"] = meta.get("answer_filter")
    keep["config"] = {k: report["config"][k] for k in ("model", "encoder", "data", "optim", "eval")}
    (dest / "train_report.json").write_text(json.dumps(keep, indent=1) + "\n")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    (dest / "MODEL_CARD.md").write_text(model_card(keep, meta, rehearsal, dest, commit))
    return dest
