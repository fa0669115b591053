"""Lexical channel: BM25 (bm25s's scoring, English stop words, Snowball stemming) over an
impact-ordered inverted index.

The BM25 weight of every (term, document) posting is computed at index time; we keep each term's
postings sorted by weight, so a query only accumulates the postings of its own terms. With
`max_postings` > 0 each query term contributes at most its `max_postings` highest-impact postings
(impact-ordered early termination): latency is then bounded independently of the number of documents,
at the cost of exactness for very common terms. `max_postings=0` is exact BM25.

Tokens and weights are those of `bm25s` (its tokenizer's pattern and stop words, its "lucene" BM25
in float32; tests/test_retrieve_channels.py compares them), computed here so that a growing memory
does not pay for its old documents again: a document's term counts are kept per process by the
hash of its text, and the weights of all postings are computed in one vectorised pass. Re-indexing
a 10,000-turn namespace after one new session then tokenises only the new session's documents.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from qgmem.ranking import top_k

_TOKEN_RE = re.compile(r"(?u)\b\w\w+\b")  # bm25s.tokenize's default token pattern
MEMO_DOCS = 500_000  # documents whose term counts one process remembers (about 0.5 GB at the cap, ~1 KB each)


class _TermCounts:
    """Stemmed, stop-word-free terms of texts as (term ids, counts, token count), remembered per
    process by the text's hash (not the text). Term ids index one process-wide vocabulary."""

    def __init__(self) -> None:
        import Stemmer
        from bm25s.stopwords import STOPWORDS_EN

        self._stemmer = Stemmer.Stemmer("english")
        self._stop = frozenset(STOPWORDS_EN)
        self._stems: dict[str, str] = {}  # token -> stem
        self.term_id: dict[str, int] = {}  # stem -> process-wide id
        self.terms: list[str] = []  # process-wide id -> stem
        self._docs: OrderedDict[bytes, tuple[np.ndarray, np.ndarray, int]] = OrderedDict()
        self._lock = threading.Lock()

    def tokens(self, text: str) -> list[str]:
        """The text's terms in order, as bm25s.tokenize(stopwords="en", stemmer=english) gives them."""
        out = []
        for tok in _TOKEN_RE.findall(text.lower()):
            if tok in self._stop:
                continue
            s = self._stems.get(tok)
            if s is None:
                s = self._stems[tok] = self._stemmer.stemWord(tok)
            out.append(s)
        return out

    def counts(self, text: str) -> tuple[np.ndarray, np.ndarray, int]:
        """(distinct term ids, their counts, number of tokens) of one document."""
        key = hashlib.sha1(text.encode()).digest()
        with self._lock:
            got = self._docs.get(key)
            if got is not None:
                self._docs.move_to_end(key)
                return got
            ids = np.asarray([self._id(t) for t in self.tokens(text)], dtype=np.int64)
            uniq, cnt = np.unique(ids, return_counts=True)
            got = self._docs[key] = (uniq, cnt, len(ids))
            while len(self._docs) > MEMO_DOCS:
                self._docs.popitem(last=False)
            return got

    def _id(self, term: str) -> int:
        i = self.term_id.get(term)
        if i is None:
            i = self.term_id[term] = len(self.terms)
            self.terms.append(term)
        return i


_COUNTS: list[_TermCounts] = []


def term_counts() -> _TermCounts:
    """The process's term counts (made on first use: loading the stemmer is not free)."""
    if not _COUNTS:
        _COUNTS.append(_TermCounts())
    return _COUNTS[0]


def _lucene_idf(df: int, n: int) -> float:
    """bm25s's "lucene" idf, in double precision like bm25s (stored as float32 afterwards)."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


CHUNK_DOCS = 100_000  # documents counted per chunk: only a chunk's per-document arrays exist at once


def _count_chunk(texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(term ids, counts, distinct terms per document, tokens per document) of a chunk, as flat arrays."""
    tc = term_counts()
    per_doc = [tc.counts(t) for t in texts]
    distinct = np.fromiter((len(ids) for ids, _, _ in per_doc), dtype=np.int32, count=len(per_doc))
    lens = np.fromiter((n for _, _, n in per_doc), dtype=np.int64, count=len(per_doc))
    if not distinct.sum():
        return np.zeros(0, np.int32), np.zeros(0, np.int32), distinct, lens
    ids = np.concatenate([i for i, _, _ in per_doc]).astype(np.int32)
    cnt = np.concatenate([c for _, c, _ in per_doc]).astype(np.int32)
    return ids, cnt, distinct, lens


def _weights(idf: np.ndarray, term: np.ndarray, tf: np.ndarray, norm: np.ndarray, doc: np.ndarray,
             step: int = 1 << 22) -> np.ndarray:
    """idf * tf / (tf + norm) per posting in float64, stored as float32, a slice at a time (bounded temporaries)."""
    out = np.empty(len(term), dtype=np.float32)
    for lo in range(0, len(term), step):
        sl = slice(lo, lo + step)
        f = tf[sl].astype(np.float32).astype(np.float64)
        out[sl] = (idf[term[sl]].astype(np.float64) * (f / (norm[doc[sl]] + f))).astype(np.float32)
    return out


class Postings(NamedTuple):
    terms: list[str]  # vocabulary, by term id
    term: np.ndarray  # per posting (int32)
    doc: np.ndarray  # per posting, document order (int32)
    weight: np.ndarray  # per posting (float32)
    n_docs: int


def bm25_postings_chunks(chunks: Iterable[list[str]], k1: float, b: float) -> Postings:
    """The postings of the documents of all chunks (documents numbered in order) with bm25s's "lucene" BM25
    weight idf * tf / (tf + k1 * (1 - b + b * len / avg len)), computed in float64 and stored as float32
    exactly as bm25s does, so weights match it bit for bit. Only one chunk's per-document arrays exist at
    a time; the postings are flat int32 / float32 arrays (12 bytes each), so 10^7 documents fit in memory."""
    parts = [_count_chunk(list(c)) for c in chunks]
    lens = np.concatenate([p[3] for p in parts]) if parts else np.zeros(0, np.int64)
    g = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int32)
    if not len(g):
        return Postings([], np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.float32), len(lens))
    tf = np.concatenate([p[1] for p in parts])
    distinct = np.concatenate([p[2] for p in parts])
    del parts
    doc = np.repeat(np.arange(len(lens), dtype=np.int32), distinct)
    df_all = np.bincount(g)  # by process-wide term id; the vocabulary is the ids that occur, in id order
    uniq = np.flatnonzero(df_all)
    remap = np.cumsum(df_all > 0, dtype=np.int64) - 1
    term = remap[g].astype(np.int32)
    del g, remap
    df = df_all[uniq]
    idf_of = {int(d): _lucene_idf(int(d), len(lens)) for d in np.unique(df)}
    idf = np.asarray([idf_of[int(d)] for d in df], dtype=np.float32)
    norm = k1 * ((1 - b) + b * lens.astype(np.float64) / lens.mean())  # per document
    weight = _weights(idf, term, tf, norm, doc)
    tc = term_counts()
    return Postings([tc.terms[i] for i in uniq], term, doc, weight, len(lens))


def bm25_postings(texts: list[str], k1: float, b: float) -> Postings:
    """`bm25_postings_chunks` of one list of texts, counted `CHUNK_DOCS` documents at a time."""
    return bm25_postings_chunks((texts[i:i + CHUNK_DOCS] for i in range(0, len(texts), CHUNK_DOCS)), k1, b)


class LexicalIndex:
    def __init__(self, texts: list[str], k1: float = 1.2, b: float = 0.75, max_postings: int = 0):
        self._build(bm25_postings(texts, k1, b), max_postings)

    @classmethod
    def from_chunks(cls, chunks: Iterable[list[str]], k1: float = 1.2, b: float = 0.75,
                    max_postings: int = 0) -> LexicalIndex:
        """The index of the concatenated chunks, without ever holding every text (very large memories)."""
        ix = cls.__new__(cls)
        ix._build(bm25_postings_chunks(chunks, k1, b), max_postings)
        return ix

    def _build(self, posts: Postings, max_postings: int) -> None:
        self.n = posts.n_docs
        self.max_postings = max_postings
        self.vocab: dict[str, int] = {}
        if not self.n:
            return
        terms, term, doc, weight, _ = posts
        self.vocab = {t: i for i, t in enumerate(terms)}
        order = np.lexsort((doc, -weight, term))  # per term: highest weight first, then document order
        self.data = weight[order]
        self.indices = doc[order]
        del order
        self.indptr = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum(np.bincount(term, minlength=len(terms)), out=self.indptr[1:])

    def search(self, query: str, n: int) -> list[tuple[int, float]]:
        """Top-n (document index, score) with score > 0, best first."""
        if not self.n or n <= 0:
            return []
        terms = [self.vocab[t] for t in term_counts().tokens(query) if t in self.vocab]
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
        top = top_k(acc, n)  # uniq is increasing: ties in document order
        return [(int(uniq[i]), float(acc[i])) for i in top if acc[i] > 0]
