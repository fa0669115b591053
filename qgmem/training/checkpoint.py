"""Training checkpoints: ``output_dir/last`` (resume state) and ``output_dir/best`` (best validation).

``last/`` holds the optimizer, scheduler and RNG states (`accelerate.save_state`), the step and
data position (``trainer_state.json``) and only the trainable weights (``trainable.safetensors``:
the frozen LLM is never copied). It is written into ``last.tmp`` and swapped in, so a kill leaves
either the old or the new checkpoint. ``best/`` is a `GraphTokenLM.save_pretrained` folder, the
one inference loads. Only the main process writes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

TRAINABLE = "trainable.safetensors"
STATE = "trainer_state.json"


def trainable_state(model: Any) -> dict[str, Any]:
    """CPU copies of the parameters that train (encoder, projector, LoRA)."""
    return {n: p.detach().cpu().clone() for n, p in model.named_parameters() if p.requires_grad}


def skip_frozen_weights(accelerator: Any) -> None:
    """Keep `save_state`/`load_state` off the model weights: they would copy the whole frozen LLM
    (16 GB for an 8B model) at every checkpoint; the trainable ones go to ``trainable.safetensors``."""
    accelerator.register_save_state_pre_hook(lambda models, weights, output_dir: weights.clear())
    accelerator.register_load_state_pre_hook(lambda models, input_dir: models.clear())


def has_last(out: Path) -> bool:
    return (out / "last" / STATE).exists()


def save_last(accelerator: Any, model: Any, out: Path, state: dict[str, Any]) -> None:
    """Write `out/last` atomically: everything into last.tmp, then swap (main process only)."""
    from safetensors.torch import save_file

    tmp = out / "last.tmp"
    if accelerator.is_main_process:
        shutil.rmtree(tmp, ignore_errors=True)
    accelerator.wait_for_everyone()
    accelerator.save_state(str(tmp))  # optimizer, scheduler, RNG of every process, accelerator step
    if accelerator.is_main_process:
        save_file(trainable_state(accelerator.unwrap_model(model)), str(tmp / TRAINABLE))
        (tmp / STATE).write_text(json.dumps(state, indent=2))
        last, old = out / "last", out / "last.old"
        shutil.rmtree(old, ignore_errors=True)
        if last.exists():
            last.rename(old)
        tmp.rename(last)
        shutil.rmtree(old, ignore_errors=True)
    accelerator.wait_for_everyone()


def load_last(accelerator: Any, model: Any, last: Path) -> dict[str, Any]:
    """Restore `last` into the prepared model/optimizer/scheduler; returns the trainer state."""
    from safetensors.torch import load_file

    accelerator.load_state(str(last))
    weights = load_file(str(last / TRAINABLE))
    m = accelerator.unwrap_model(model)
    params = dict(m.named_parameters())
    missing = sorted(n for n, p in params.items() if p.requires_grad and n not in weights)
    unknown = sorted(n for n in weights if n not in params)
    if missing or unknown:
        raise ValueError(f"{last}/{TRAINABLE} does not match the model: missing {missing[:5]}, unknown {unknown[:5]}")
    _copy_into(params, weights)
    return json.loads((last / STATE).read_text())


def save_best(accelerator: Any, model: Any, out: Path, metrics: dict[str, Any]) -> None:
    """Replace `out/best` with the current model (`save_pretrained`) and its validation metrics."""
    if accelerator.is_main_process:
        tmp = out / "best.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        accelerator.unwrap_model(model).save_pretrained(str(tmp))
        (tmp / "val_metrics.json").write_text(json.dumps(metrics, indent=2))
        shutil.rmtree(out / "best", ignore_errors=True)
        tmp.rename(out / "best")
    accelerator.wait_for_everyone()


def load_best_weights(model: Any, out: Path) -> bool:
    """Copy the trainable weights of `out/best` into `model` (unwrapped); False when there is none."""
    from safetensors.torch import load_file

    best = out / "best" / "model.safetensors"
    if not best.exists():
        return False
    params = dict(model.named_parameters())
    _copy_into(params, {n: w for n, w in load_file(str(best)).items() if n in params})
    return True


def _copy_into(params: dict[str, Any], weights: dict[str, Any]) -> None:
    import torch

    with torch.no_grad():
        for n, w in weights.items():
            params[n].copy_(w.to(params[n].device, params[n].dtype))
