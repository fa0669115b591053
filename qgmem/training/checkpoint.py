"""Training checkpoints: ``output_dir/last`` (resume state) and ``output_dir/best`` (best validation).

``last/`` holds the optimizer, scheduler and RNG states (`accelerate.save_state`), the step and
data position (``trainer_state.json``) and only the trainable weights (``trainable.safetensors``:
the frozen LLM is never copied). ``best/`` is a `GraphTokenLM.save_pretrained` folder, the one
inference loads. Only the main process writes the model files.

Both are written into ``<name>.tmp``; when every process has finished writing (a barrier) the main
process adds a ``COMPLETE`` marker and swaps: ``<name>`` -> ``<name>.old``, ``<name>.tmp`` -> ``<name>``,
then removes ``<name>.old``. A kill at any point leaves at least one complete copy among the three
folders; `find_complete` picks the newest, and a folder of checkpoints none of which is complete is
an error, never a silent restart from step 0.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from qgmem.errors import UserError

TRAINABLE = "trainable.safetensors"
STATE = "trainer_state.json"
COMPLETE = "COMPLETE"


class CheckpointError(RuntimeError, UserError):
    """Checkpoint folders that cannot be resumed from as they are."""


def _swap_in(out: Path, name: str) -> None:
    """Mark ``<name>.tmp`` complete and put it in place of ``<name>`` (kill-safe; main process only)."""
    tmp, final, old = out / f"{name}.tmp", out / name, out / f"{name}.old"
    (tmp / COMPLETE).write_text("")
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    tmp.rename(final)
    shutil.rmtree(old, ignore_errors=True)


def find_complete(out: Path, name: str) -> Path | None:
    """The complete copy of checkpoint `name` (``last`` or ``best``) to load: ``<name>`` when complete,
    else the newest complete one of ``<name>.tmp`` / ``<name>.old`` left by a kill during a swap.
    Raises CheckpointError when copies exist but none is complete."""
    cands = [out / name, out / f"{name}.tmp", out / f"{name}.old"]
    done = [d for d in cands if (d / COMPLETE).exists()]
    if not done:
        if name == "last" and any((d / STATE).exists() for d in cands):
            raise CheckpointError(f"{out}: {name} checkpoints exist but none is complete; "
                                  "delete them to start again, or set resume=false")
        return None
    if (out / name) in done:
        return out / name

    def step(d: Path) -> int:
        try:
            return int(json.loads((d / STATE).read_text()).get("step", -1))
        except (OSError, ValueError):
            return -1

    return max(done, key=step)


def trainable_state(model: Any) -> dict[str, Any]:
    """CPU copies of the parameters that train (encoder, projector, LoRA)."""
    return {n: p.detach().cpu().clone() for n, p in model.named_parameters() if p.requires_grad}


def skip_frozen_weights(accelerator: Any) -> None:
    """Keep `save_state`/`load_state` off the model weights: they would copy the whole frozen LLM
    (16 GB for an 8B model) at every checkpoint; the trainable ones go to ``trainable.safetensors``."""
    accelerator.register_save_state_pre_hook(lambda models, weights, output_dir: weights.clear())
    accelerator.register_load_state_pre_hook(lambda models, input_dir: models.clear())


def find_last(out: Path) -> Path | None:
    """The checkpoint a resumed run continues from, or None for a fresh run."""
    return find_complete(out, "last")


def save_last(accelerator: Any, model: Any, out: Path, state: dict[str, Any]) -> None:
    """Write `out/last`: every process into last.tmp, a barrier, then the main process swaps it in."""
    from safetensors.torch import save_file

    tmp = out / "last.tmp"
    if accelerator.is_main_process:
        shutil.rmtree(tmp, ignore_errors=True)
    accelerator.wait_for_everyone()
    accelerator.save_state(str(tmp))  # optimizer, scheduler, RNG of every process, accelerator step
    accelerator.wait_for_everyone()  # every rank's RNG file is written before the swap
    if accelerator.is_main_process:
        save_file(trainable_state(accelerator.unwrap_model(model)), str(tmp / TRAINABLE))
        (tmp / STATE).write_text(json.dumps(state, indent=2))
        _swap_in(out, "last")
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
    """Replace `out/best` with the current model (`save_pretrained`) and its validation metrics; the
    old best stays until the new one is complete."""
    if accelerator.is_main_process:
        tmp = out / "best.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        accelerator.unwrap_model(model).save_pretrained(str(tmp))
        (tmp / "val_metrics.json").write_text(json.dumps(metrics, indent=2))
        (tmp / STATE).write_text(json.dumps({"step": metrics.get("step", -1)}))
        _swap_in(out, "best")
    accelerator.wait_for_everyone()


class NotShared(RuntimeError, UserError):
    """The processes of a run see different ``best/`` checkpoints (a node-local ``output_dir``)."""


def best_weights_file(out: Path) -> Path:
    """The ``model.safetensors`` of the complete ``best`` checkpoint (it may not exist)."""
    found = find_complete(out, "best")
    return found / "model.safetensors" if found is not None else out / "best" / "model.safetensors"


def content_hash(path: Path) -> str:
    """sha256 of a file's bytes ("missing" when there is no file)."""
    import hashlib

    if not path.exists():
        return "missing"
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def check_same_best(hashes: list[str], out: Path) -> None:
    """Refuse (one line) when the processes' ``best/`` weights differ from the main process's: only the main
    process writes ``best/``, so a process that sees another (or none) is on a node whose ``output_dir`` is
    not the main process's folder, and it would score other weights than those it reports."""
    odd = [rank for rank, h in enumerate(hashes) if h != hashes[0]]
    if odd:
        seen = "no best/ checkpoint" if hashes[odd[0]] == "missing" else f"a best/ with sha256 {hashes[odd[0]][:12]}"
        main = "none" if hashes[0] == "missing" else f"sha256 {hashes[0][:12]}"
        raise NotShared(f"output_dir {out}: process {odd[0]} sees {seen} where the main process has {main} "
                        f"({len(odd)} of {len(hashes)} processes differ); output_dir must be on storage "
                        "that every node shares")


def load_best_weights(model: Any, out: Path, accelerator: Any = None) -> bool:
    """Copy the trainable weights of `out/best` into `model` (unwrapped); False when there is none.

    With a multi-process `accelerator` every process first compares the content hash of the ``best/``
    it sees with the main process's (`check_same_best`): all load the same weights or all refuse."""
    from safetensors.torch import load_file

    best = best_weights_file(out)
    if accelerator is not None and accelerator.num_processes > 1:
        from accelerate.utils import gather_object

        check_same_best(list(gather_object([content_hash(best)])), out)
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
