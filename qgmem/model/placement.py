"""Where and in what dtype a graph-token checkpoint is served.

Training records the frozen LLM's dtype (``llm_dtype``) and the encoder's (``encoder_dtype``) in the
checkpoint's ``qgmem_config.json``; inference loads the LLM in that dtype, so the graph tokens are
cast to, and read by, the same numerics validation chose the checkpoint with (a bf16 Qwen3-8B is not
served in fp32 at twice the memory). A checkpoint written before the record has no ``llm_dtype``:
it loads in float32, as it always did (`LEGACY_DTYPE`).

The device default is the best one available: CUDA, then Apple's MPS, then the CPU. A caller who
names a device or dtype gets that one.
"""

from __future__ import annotations

from typing import Any

import torch

LEGACY_DTYPE = torch.float32  # checkpoints without an ``llm_dtype`` record were always served in float32
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def best_device() -> torch.device:
    """CUDA when available, else MPS, else the CPU."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def resolve_device(device: str | torch.device | None) -> torch.device:
    """The caller's device, or `best_device` when none is named."""
    return torch.device(device) if device is not None else best_device()


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.bfloat16`` -> ``"bfloat16"`` (the name checkpoints record)."""
    return str(dtype).removeprefix("torch.")


def as_dtype(value: str | torch.dtype, where: str = "torch_dtype") -> torch.dtype:
    """A dtype from its name ("bfloat16", "torch.bfloat16") or itself; a bad name is a ValueError naming `where`."""
    if isinstance(value, torch.dtype):
        return value
    name = str(value).removeprefix("torch.")
    if name not in DTYPES:
        raise ValueError(f"{where}: {value!r} is not one of {sorted(DTYPES)}")
    return DTYPES[name]


def checkpoint_dtype(cfg: dict[str, Any], torch_dtype: str | torch.dtype | None, where: str) -> torch.dtype:
    """The dtype to load a checkpoint's LLM in: the caller's, else the recorded ``llm_dtype``, else
    `LEGACY_DTYPE` (a checkpoint from before the record). `where` names the config file in errors."""
    if torch_dtype is not None:
        return as_dtype(torch_dtype)
    recorded = cfg.get("llm_dtype")
    return as_dtype(recorded, f"{where}: field 'llm_dtype'") if recorded else LEGACY_DTYPE
