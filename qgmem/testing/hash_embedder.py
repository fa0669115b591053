"""A deterministic bag-of-words embedder for tests: hashed, L2-normalised, fast and content-sensitive."""

from __future__ import annotations

import hashlib
import re

import numpy as np


class HashEmbedder:
    name = "hash-bow"

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.calls = 0

    def encode(self, texts: list[str], show_progress: bool = False) -> np.ndarray:
        self.calls += len(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % self.dim] += 1.0
        n = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(n == 0, 1, n)


def patch_embedder(monkeypatch, emb: object) -> object:
    """Make every `get_embedder` call of a test return `emb` (the dense baseline imported its own name),
    with an empty query-vector cache so vectors of other embedders stay apart; returns `emb`."""
    from collections import OrderedDict

    import qgmem.baselines.dense_turns
    import qgmem.embed
    from qgmem.retrieve import qcache

    monkeypatch.setattr(qcache, "_CACHE", OrderedDict())
    get = lambda name="minilm", device=None: emb  # noqa: E731
    monkeypatch.setattr(qgmem.embed, "get_embedder", get)
    monkeypatch.setattr(qgmem.baselines.dense_turns, "get_embedder", get)
    return emb
