"""Lexical channel: BM25 (bm25s, English stop words, Snowball stemming).

bm25s stores a sparse score matrix, so a query touches only the postings of its own terms;
latency grows with posting-list length, not with the number of documents.
"""

from __future__ import annotations

import numpy as np


class LexicalIndex:
    def __init__(self, texts: list[str], k1: float = 1.2, b: float = 0.75):
        import bm25s
        import Stemmer

        self.n = len(texts)
        self._stemmer = Stemmer.Stemmer("english")
        self._bm25 = None
        if self.n:
            tokens = bm25s.tokenize(texts, stopwords="en", stemmer=self._stemmer, show_progress=False)
            self._bm25 = bm25s.BM25(k1=k1, b=b)
            self._bm25.index(tokens, show_progress=False)

    def search(self, query: str, n: int) -> list[tuple[int, float]]:
        """Top-n (document index, score) with score > 0, best first."""
        import bm25s

        if not self.n or n <= 0:
            return []
        q = bm25s.tokenize([query], stopwords="en", stemmer=self._stemmer, show_progress=False,
                           return_ids=False)
        terms = [t for t in q[0] if t in self._bm25.vocab_dict]
        if not terms:
            return []
        scores = self._bm25.get_scores(terms)
        n = min(n, self.n)
        top = np.argpartition(-scores, n - 1)[:n] if n < self.n else np.arange(self.n)
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(int(i), float(scores[i])) for i in top if scores[i] > 0]
