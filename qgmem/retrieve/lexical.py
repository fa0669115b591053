"""Lexical channel: BM25 (bm25s scoring, English stop words, Snowball stemming) over an
impact-ordered inverted index.

bm25s computes the BM25 weight of every (term, document) posting at index time; we keep each term's
postings sorted by weight, so a query only accumulates the postings of its own terms. With
`max_postings` > 0 each query term contributes at most its `max_postings` highest-impact postings
(impact-ordered early termination): latency is then bounded independently of the number of documents,
at the cost of exactness for very common terms. `max_postings=0` is exact BM25.
"""

from __future__ import annotations

import numpy as np


class LexicalIndex:
    def __init__(self, texts: list[str], k1: float = 1.2, b: float = 0.75, max_postings: int = 0):
        import bm25s
        import Stemmer

        self.n = len(texts)
        self.max_postings = max_postings
        self._stemmer = Stemmer.Stemmer("english")
        self.vocab: dict[str, int] = {}
        if not self.n:
            return
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=self._stemmer, show_progress=False)
        bm = bm25s.BM25(k1=k1, b=b)
        bm.index(tokens, show_progress=False)
        self.vocab = dict(bm.vocab_dict)
        data = np.asarray(bm.scores["data"], dtype=np.float32)
        indices = np.asarray(bm.scores["indices"], dtype=np.int64)
        self.indptr = np.asarray(bm.scores["indptr"], dtype=np.int64)
        term_of = np.repeat(np.arange(len(self.indptr) - 1), np.diff(self.indptr))
        order = np.lexsort((-data, term_of))  # within each term: highest weight first
        self.data = data[order]
        self.indices = indices[order]

    def search(self, query: str, n: int) -> list[tuple[int, float]]:
        """Top-n (document index, score) with score > 0, best first."""
        import bm25s

        if not self.n or n <= 0:
            return []
        q = bm25s.tokenize([query], stopwords="en", stemmer=self._stemmer, show_progress=False, return_ids=False)
        terms = [self.vocab[t] for t in q[0] if t in self.vocab]
        if not terms:
            return []
        ids, ws = [], []
        for j in terms:
            lo, hi = int(self.indptr[j]), int(self.indptr[j + 1])
            if self.max_postings:
                hi = min(hi, lo + self.max_postings)
            ids.append(self.indices[lo:hi])
            ws.append(self.data[lo:hi])
        all_ids = np.concatenate(ids)
        uniq, inv = np.unique(all_ids, return_inverse=True)
        acc = np.bincount(inv, weights=np.concatenate(ws).astype(np.float64))
        m = min(n, len(uniq))
        top = np.argpartition(-acc, m - 1)[:m] if m < len(uniq) else np.arange(len(uniq))
        top = top[np.lexsort((uniq[top], -acc[top]))]
        return [(int(uniq[i]), float(acc[i])) for i in top if acc[i] > 0]
