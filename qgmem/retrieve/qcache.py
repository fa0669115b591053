"""Query-embedding cache shared by the retrievers of one process.

The benchmark runs the full pipeline, its ablations and the dense baseline on the same questions; each
question text is embedded once and the measured cost of that embedding (its share of the batch time) is
stored with the vector, so every method still reports the latency it would have paid alone. Encoding
runs on one torch thread: on a busy CPU, multi-threaded inference of a few short strings is several
times slower than single-threaded.
"""

from __future__ import annotations

import time
from collections import OrderedDict

import numpy as np

_CACHE: OrderedDict[tuple[str, str], tuple[np.ndarray, float]] = OrderedDict()
MAX_ENTRIES = 50_000


def encode_queries(embedder: object, texts: list[str]) -> tuple[np.ndarray, float]:
    """(matrix, milliseconds the encoding costs); texts already cached cost what they cost then."""
    import torch

    name = getattr(embedder, "name", "?")
    missing = [t for t in dict.fromkeys(texts) if (name, t) not in _CACHE]
    if missing:
        prev = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            t0 = time.perf_counter()
            mat = embedder.encode(missing)
            per = (time.perf_counter() - t0) * 1000 / len(missing)
        finally:
            torch.set_num_threads(prev)
        for t, v in zip(missing, mat):
            _CACHE[(name, t)] = (v, per)
            if len(_CACHE) > MAX_ENTRIES:
                _CACHE.popitem(last=False)
    rows = [_CACHE[(name, t)] for t in texts]
    cost = sum(c for _, c in {t: _CACHE[(name, t)] for t in texts}.values())
    return np.stack([v for v, _ in rows]).astype(np.float32, copy=False), cost
