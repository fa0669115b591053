"""Dense channel: cosine similarity over normalised sentence embeddings.

Exact search (one matrix-vector product) up to `ann_threshold` vectors; above it a FAISS HNSW index
(inner product) keeps query latency roughly logarithmic in the number of units. Above `IVFSpec.threshold`
units (very large memories) the float32 vectors are not kept at all: a FAISS IVF index holds compressed
codes (8-bit scalar quantisation: 384 B + 16 B of ids per 384-d unit instead of 1.5 KB + the HNSW graph),
trained on a sample and filled a chunk at a time, so the build never holds more than a chunk of floats.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING

import numpy as np

from qgmem.ranking import rank_scores, top_k, top_k_rows

if TYPE_CHECKING:
    from .config import RetrievalConfig

try:  # a single BLAS thread: multi-threaded sgemv spins badly on a busy CPU (10x slower on 2 shared cores)
    from threadpoolctl import ThreadpoolController

    _CTL = ThreadpoolController()
except ImportError:  # pragma: no cover
    _CTL = None


def matvec(m: np.ndarray, v: np.ndarray) -> np.ndarray:
    if _CTL is None:
        return np.einsum("ij,j->i", m, v)
    with _CTL.limit(limits=1, user_api="blas"):
        return m @ v


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b on one BLAS thread (see `matvec`)."""
    if _CTL is None:
        return a @ b
    with _CTL.limit(limits=1, user_api="blas"):
        return a @ b


@dataclass(frozen=True)
class IVFSpec:
    """A compressed dense channel for memories above `threshold` units: FAISS IVF over `codec` codes.
    SQ8 had the best recall per byte of SQ8 / SQ4 / PQ96 / HNSW+SQ8 on the scale bench (bench/RESULTS.md)."""

    threshold: int = 1_000_000  # above this many units (0: always)
    codec: str = "SQ8"  # FAISS code of a vector ("SQ8", "SQ4", "PQ96", ...)
    nlist: int = 0  # coarse cells; 0: 4 * sqrt(units), within [64, 4096] (more cells: slower build)
    nprobe: int = 64  # cells scanned per query
    train_size: int = 0  # vectors that train the cells; 0: 40 per cell
    chunk: int = 100_000  # vectors encoded at once

    def cells(self, n: int) -> int:
        """Coarse cells for n vectors (never fewer than 40 training vectors per cell)."""
        return self.nlist or int(min(4096, max(64, 4 * np.sqrt(n)), max(1, n // 40)))

    def train_count(self, n: int) -> int:
        return min(n, self.train_size or 40 * self.cells(n))


def ivf_spec(cfg: RetrievalConfig) -> IVFSpec:
    """The compressed-channel settings of a retrieval configuration."""
    return IVFSpec(cfg.dense_compress_above, cfg.ivf_codec, cfg.ivf_nlist, cfg.ivf_nprobe, cfg.ivf_train_size)


def _ivf_index(dim: int, n: int, sample: np.ndarray, spec: IVFSpec):
    """An empty IVF index trained on `sample`, with a direct map so rows can be decoded (`scores_for`)."""
    import faiss

    idx = faiss.index_factory(dim, f"IVF{spec.cells(n)},{spec.codec}", faiss.METRIC_INNER_PRODUCT)
    idx.train(np.ascontiguousarray(sample, dtype=np.float32))
    idx.set_direct_map_type(faiss.DirectMap.Array)
    idx.nprobe = spec.nprobe
    return idx


def _ivf_add(idx, centroids: np.ndarray, chunk: np.ndarray) -> None:
    """Add a chunk (rows numbered on from the index's count). The nearest cell is found with one BLAS
    product (3x faster than FAISS's own flat assignment on one thread)."""
    import faiss

    x = np.ascontiguousarray(chunk, dtype=np.float32)
    cell = np.empty(len(x), dtype=np.int64)
    for lo in range(0, len(x), 8192):  # 8192 x cells scores at a time (134 MB at 4096 cells)
        cell[lo:lo + 8192] = matmul(x[lo:lo + 8192], centroids.T).argmax(axis=1)
    idx.add_core(len(x), faiss.swig_ptr(x), None, faiss.swig_ptr(cell))


def _rechunk(chunks: Iterable[np.ndarray], size: int) -> Iterator[np.ndarray]:
    for c in chunks:
        for lo in range(0, len(c), size):
            yield c[lo:lo + size]


def _drain(items: list[np.ndarray]) -> Iterator[np.ndarray]:
    """The list's items in order, each dropped from the list once yielded (memory freed as the build goes)."""
    items.reverse()
    while items:
        yield items.pop()


class DenseIndex:
    def __init__(self, matrix: np.ndarray, ann_threshold: int = 50_000, m: int = 32,
                 ef_construction: int = 80, ef_search: int = 128, ivf: IVFSpec | None = None):
        if matrix.ndim != 2:
            raise ValueError(f"embedding matrix must be 2-D, got shape {matrix.shape}")
        self.n, self.dim = matrix.shape
        self._index = None
        if ivf is not None and self.n > ivf.threshold:
            rows = np.random.default_rng(0).choice(self.n, ivf.train_count(self.n), replace=False)
            self._fill_ivf(matrix[np.sort(rows)], (matrix,), ivf)
            return
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        self.kind = "hnsw" if self.n > ann_threshold else "exact"
        if self.kind == "hnsw":
            import faiss

            idx = faiss.IndexHNSWFlat(self.dim, m, faiss.METRIC_INNER_PRODUCT)
            idx.hnsw.efConstruction = ef_construction
            idx.add(self.matrix)
            idx.hnsw.efSearch = ef_search
            self._index = idx

    @classmethod
    def from_chunks(cls, chunks: Iterable[np.ndarray], n: int, dim: int, ivf: IVFSpec,
                    sample: np.ndarray | None = None) -> DenseIndex:
        """A compressed index of n vectors given a chunk at a time (the float32 matrix of a very large memory
        need never exist). Without `sample`, the first `ivf.train_count(n)` vectors train the cells: fine for
        shuffled or i.i.d. chunks, biased when the chunks come in topic or time order."""
        ix = cls.__new__(cls)
        ix.n, ix.dim = n, dim
        it = _rechunk(chunks, ivf.chunk)
        head: list[np.ndarray] = []
        if sample is None:
            want = ivf.train_count(n)
            while sum(len(h) for h in head) < want and (c := next(it, None)) is not None:
                head.append(np.asarray(c, dtype=np.float32))
            sample = np.concatenate(head)[:want] if head else np.zeros((0, dim), np.float32)
        ix._fill_ivf(sample, chain(_drain(head), it), ivf)
        return ix

    def _fill_ivf(self, sample: np.ndarray, chunks: Iterable[np.ndarray], ivf: IVFSpec) -> None:
        self.kind, self.matrix = "ivf", None
        self._index = _ivf_index(self.dim, self.n, sample, ivf)
        centroids = self._index.quantizer.reconstruct_n(0, self._index.nlist)
        for c in _rechunk(chunks, ivf.chunk):
            _ivf_add(self._index, centroids, c)
        if self._index.ntotal != self.n:
            raise ValueError(f"{self._index.ntotal} vectors given for a compressed index of {self.n}")

    @property
    def ann(self) -> bool:
        """Whether search is approximate (HNSW or compressed IVF)."""
        return self.kind != "exact"

    def search(self, qvec: np.ndarray, n: int) -> list[tuple[int, float]]:
        """Top-n (row, cosine) best first (compressed: cosine with the decoded vector)."""
        if not self.n or n <= 0:
            return []
        q = np.asarray(qvec, dtype=np.float32).reshape(1, -1)
        if q.shape[1] != self.dim:
            raise ValueError(f"query dimension {q.shape[1]} != index dimension {self.dim}")
        n = min(n, self.n)
        if self._index is not None:
            if self.kind == "hnsw":
                self._index.hnsw.efSearch = max(self._index.hnsw.efSearch, n)
            scores, ids = self._index.search(q, n)
            return [(int(i), float(s)) for i, s in zip(ids[0], scores[0]) if i >= 0]
        scores = matvec(self.matrix, q[0])
        return [(int(i), float(scores[i])) for i in top_k(rank_scores(scores), n)]

    def above(self, qvec: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
        """(rows, cosines) of every row at or above the threshold, rows increasing (exact or compressed IVF:
        a compressed index finds only the rows in its `nprobe` cells nearest the query)."""
        q = np.asarray(qvec, dtype=np.float32).reshape(-1)
        if self.kind == "hnsw":
            raise ValueError("an HNSW dense index answers top-n searches only")
        if self.kind == "exact":
            sims = matvec(self.matrix, q) if self.n else np.zeros(0, np.float32)
            rows = np.flatnonzero(sims >= threshold)
            return rows, sims[rows]
        radius = float(np.nextafter(np.float32(threshold), np.float32(-np.inf)))  # FAISS keeps sim > radius
        _, sims, rows = self._index.range_search(q.reshape(1, -1), radius)
        keep = sims >= threshold
        order = np.argsort(rows[keep], kind="stable")
        return rows[keep][order].astype(np.int64), sims[keep][order]

    def scores_for(self, qvec: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Cosine of the query with the given rows only (used to order attribute matches); a compressed
        index decodes the rows' codes (the same approximate vectors its search scores)."""
        if len(rows) == 0:
            return np.zeros(0, dtype=np.float32)
        q = np.asarray(qvec, dtype=np.float32).reshape(-1)
        if self.kind == "ivf":
            return matvec(self._index.reconstruct_batch(np.asarray(rows, dtype=np.int64)), q)
        return matvec(self.matrix[rows], q)


def exact_top_k(chunks: Iterable[np.ndarray], queries: np.ndarray, k: int) -> np.ndarray:
    """Rows of each query's exact top-k inner products over the concatenated chunks, best first, holding
    one chunk at a time: the reference for the recall of an index whose float vectors were never kept."""
    q = np.asarray(queries, dtype=np.float32)
    best_s = np.zeros((len(q), 0), dtype=np.float64)
    best_i = np.zeros((len(q), 0), dtype=np.int64)
    base = 0
    for c in chunks:
        s = rank_scores(matmul(q, np.asarray(c, dtype=np.float32).T))
        top = top_k_rows(s, k)
        s = np.concatenate([best_s, np.take_along_axis(s, top, 1)], axis=1)
        i = np.concatenate([best_i, top + base], axis=1)
        base += len(c)
        keep = np.argsort(-s, axis=1, kind="stable")[:, :k]  # earlier rows first among equal scores
        best_s, best_i = np.take_along_axis(s, keep, 1), np.take_along_axis(i, keep, 1)
    return best_i


def recall_at_k(found: Sequence[Sequence[int]], exact: np.ndarray, k: int) -> float:
    """Mean share of each query's exact top-k that its approximate top-k found."""
    if not len(found):
        return float("nan")
    return float(np.mean([len(set(list(f)[:k]) & set(e[:k].tolist())) / k for f, e in zip(found, exact)]))
