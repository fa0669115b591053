"""Query-embedding cache shared by the retrievers of one process.

The benchmark runs the full pipeline, its ablations and the dense baseline on the same questions; each
question text is embedded once and the measured cost of that embedding (its share of the batch time) is
stored with the vector, so every method still reports the latency it would have paid alone. Encoding
runs on one torch thread: on a busy CPU, multi-threaded inference of a few short strings is several
times slower than single-threaded.

Each text is encoded on its own. In a batch, a text is padded to its companions' length and the matrix
products take other shapes, which moves its vector in the last bits (float32 too); with a cache, which
texts share a batch depends on what was asked before, so a question's ranking depended on the questions
and methods run before it in the same process (123 of 1,536 LoCoMo working memories differed between
a benchmark run and `MemoryPipeline` on the same store). Alone, a text always gets the same vector.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

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
            for t in missing:  # one text a call: a vector must not depend on its batch (see the docstring)
                t0 = time.perf_counter()
                v = embedder.encode([t])[0]
                _CACHE[(name, t)] = (v, (time.perf_counter() - t0) * 1000)
                if len(_CACHE) > MAX_ENTRIES:
                    _CACHE.popitem(last=False)
        finally:
            torch.set_num_threads(prev)
    rows = [_CACHE[(name, t)] for t in texts]
    cost = sum(c for _, c in {t: _CACHE[(name, t)] for t in texts}.values())
    return np.stack([v for v, _ in rows]).astype(np.float32, copy=False), cost


def encode_question(embedder: object, text: str, names: list[str],
                    stored: Callable[[str], np.ndarray | None]) -> tuple[np.ndarray, float]:
    """(rows: the question's vector, then each name's; milliseconds of encoding). A name the memory already
    holds takes its stored vector (`stored`, index-time work, identical in every process that serves the
    store); only the question and names new to the memory are encoded, since each encoding is most of a
    question's latency on a CPU (~27 ms a text, one float32 thread, AVX2)."""
    known = [stored(n) for n in names]
    vecs, cost = encode_queries(embedder, [text, *(n for n, v in zip(names, known) if v is None)])
    fresh = iter(vecs[1:])
    rows = [vecs[0], *(v if v is not None else next(fresh) for v in known)]
    return np.stack(rows).astype(np.float32, copy=False), cost
