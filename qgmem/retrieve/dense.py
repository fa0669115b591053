"""Dense channel: cosine similarity over normalised sentence embeddings.

Exact search (one matrix-vector product) up to `ann_threshold` vectors; above it a FAISS HNSW index
(inner product) keeps query latency roughly logarithmic in the number of units.
"""

from __future__ import annotations

import numpy as np

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


class DenseIndex:
    def __init__(self, matrix: np.ndarray, ann_threshold: int = 50_000, m: int = 32,
                 ef_construction: int = 80, ef_search: int = 128):
        if matrix.ndim != 2:
            raise ValueError(f"embedding matrix must be 2-D, got shape {matrix.shape}")
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        self.n, self.dim = self.matrix.shape
        self.ann = self.n > ann_threshold
        self._index = None
        if self.ann:
            import faiss

            idx = faiss.IndexHNSWFlat(self.dim, m, faiss.METRIC_INNER_PRODUCT)
            idx.hnsw.efConstruction = ef_construction
            idx.add(self.matrix)
            idx.hnsw.efSearch = ef_search
            self._index = idx

    def search(self, qvec: np.ndarray, n: int) -> list[tuple[int, float]]:
        """Top-n (row, cosine) best first."""
        if not self.n or n <= 0:
            return []
        q = np.asarray(qvec, dtype=np.float32).reshape(1, -1)
        if q.shape[1] != self.dim:
            raise ValueError(f"query dimension {q.shape[1]} != index dimension {self.dim}")
        n = min(n, self.n)
        if self._index is not None:
            self._index.hnsw.efSearch = max(self._index.hnsw.efSearch, n)
            scores, ids = self._index.search(q, n)
            return [(int(i), float(s)) for i, s in zip(ids[0], scores[0]) if i >= 0]
        scores = matvec(self.matrix, q[0])
        top = np.argpartition(-scores, n - 1)[:n] if n < self.n else np.arange(self.n)
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(int(i), float(scores[i])) for i in top]

    def scores_for(self, qvec: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Cosine of the query with the given rows only (used to order attribute matches)."""
        if len(rows) == 0:
            return np.zeros(0, dtype=np.float32)
        return matvec(self.matrix[rows], np.asarray(qvec, dtype=np.float32).reshape(-1))
