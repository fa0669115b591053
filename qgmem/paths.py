"""Where data, caches and local model copies live. Every location can be set by environment."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    """Benchmark data directory: $QGMEM_DATA_DIR, else ../shared/data when it exists (the layout of a
    checkout beside the shared data), else ./data."""
    if os.environ.get("QGMEM_DATA_DIR"):
        return Path(os.environ["QGMEM_DATA_DIR"]).expanduser()
    shared = Path("..") / "shared" / "data"
    return shared if shared.is_dir() else Path("data")


def cache_dir() -> Path:
    """Caches (converted models, LLM responses, embeddings): $QGMEM_CACHE_DIR, else ~/.cache/qgmem."""
    p = Path(os.environ.get("QGMEM_CACHE_DIR", Path.home() / ".cache" / "qgmem")).expanduser()
    p.mkdir(parents=True, exist_ok=True)
    return p


def repo_checkpoint(path: str | Path) -> Path:
    """A shipped checkpoint named relative to the checkout (``checkpoints/reranker/...``): the path as given
    when it exists (from the working directory, or absolute), else under $QGMEM_CHECKPOINT_DIR, else under
    the checkout's own folder beside the package, so configs work from any working directory."""
    p = Path(path).expanduser()
    if p.exists() or p.is_absolute():
        return p
    parts = p.parts[1:] if p.parts and p.parts[0] == "checkpoints" else p.parts
    if os.environ.get("QGMEM_CHECKPOINT_DIR"):
        return Path(os.environ["QGMEM_CHECKPOINT_DIR"]).expanduser().joinpath(*parts)
    return Path(__file__).resolve().parent.parent.joinpath("checkpoints", *parts)
