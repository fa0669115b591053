"""Baseline: flat BM25 as LongMemEval's own retrieval script runs it (its ``flat-bm25`` retriever).

One document per turn of the chosen speakers (``flat-bm25``; the script's turn granularity) or per
session, the session's turns of those speakers joined by a space (``flat-bm25-session``); raw text,
no date. Text is split on single spaces (``str.split(" ")``: no lower-casing, punctuation kept, empty
strings are tokens too), query alike, and scored by Okapi BM25 with the semantics of ``rank_bm25``'s
``BM25Okapi`` (k1 1.5, b 0.75, epsilon 0.25), which the script calls:

- idf(t) = ln(N - df + 0.5) - ln(df + 0.5); a negative idf becomes epsilon x the mean idf of all
  distinct corpus tokens (taken before that replacement); a query token outside the corpus adds 0;
- score(d) = sum over the query's tokens, repeats included, of
  idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl)).

The arithmetic is done in the same order, so scores equal rank_bm25's (tests compare them when it is
installed). Ranking: score descending, ties by document order (a stable sort), so results do not depend
on the machine and a top-5 is a prefix of the top-50; the script's own ``np.argsort(...)[::-1]`` leaves
tied documents in an order of NumPy's choosing (bench/RESULTS.md measures what that changes).
Documents are in the conversation's order (sessions, then turns).
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from qgmem.answer import context_tokens
from qgmem.types import Conversation, MemoryItem, MethodBase, Question, Turn, WorkingMemory

K1, B, EPSILON = 1.5, 0.75, 0.25


def tokens(text: str) -> list[str]:
    """The official tokenisation: split on single spaces, nothing else."""
    return text.split(" ")


class OkapiIndex:
    """BM25Okapi over pre-tokenised documents (see the module docstring for the formula)."""

    def __init__(self, docs: list[list[str]]) -> None:
        if not docs:
            raise ValueError("BM25 needs at least one document")
        self.n = len(docs)
        self.doc_len = np.array([len(d) for d in docs])
        self.avgdl = sum(len(d) for d in docs) / self.n
        self.postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        rows: dict[str, list[tuple[int, int]]] = {}
        for i, d in enumerate(docs):
            for term, tf in Counter(d).items():  # Counter keeps first-seen order, so terms are met in corpus order
                rows.setdefault(term, []).append((i, tf))
        idf: dict[str, float] = {}
        for term, hits in rows.items():
            self.postings[term] = (np.array([i for i, _ in hits]), np.array([tf for _, tf in hits]))
            idf[term] = math.log(self.n - len(hits) + 0.5) - math.log(len(hits) + 0.5)
        floor = EPSILON * (sum(idf.values()) / len(idf))
        self.idf = {t: (floor if v < 0 else v) for t, v in idf.items()}
        self.norm = K1 * (1 - B + B * self.doc_len / self.avgdl)

    def scores(self, query: list[str]) -> np.ndarray:
        out = np.zeros(self.n)
        for term in query:
            if term not in self.postings:
                continue
            docs, tf = self.postings[term]
            q_freq = np.zeros(self.n, dtype=np.int64)
            q_freq[docs] = tf
            out += self.idf[term] * (q_freq * (K1 + 1) / (q_freq + self.norm))
        return out

    def rank(self, query: list[str], k: int) -> list[tuple[int, float]]:
        """(document, score) of the k best, score descending, ties by document order."""
        s = self.scores(query)
        order = np.argsort(-s, kind="stable")[:max(k, 0)]
        return [(int(i), float(s[i])) for i in order]


class FlatBM25(MethodBase):
    """``flat-bm25`` (``granularity="turn"``) and ``flat-bm25-session`` (``"session"``)."""

    def __init__(self, granularity: str = "turn", speakers: list[str] | None = None) -> None:
        if granularity not in ("turn", "session"):
            raise ValueError(f"flat BM25 granularity is 'turn' or 'session', not {granularity!r}")
        self.granularity = granularity
        self.ranks = "sessions" if granularity == "session" else "turns"  # what the official protocol scores
        self.name = "flat-bm25" if granularity == "turn" else "flat-bm25-session"
        self.speakers = list(speakers if speakers is not None else ["user"])
        self._convs: dict[str, tuple[list[MemoryItem], OkapiIndex | None]] = {}
        self._last: str | None = None

    def _kept(self, turns: list[Turn]) -> list[Turn]:
        return [t for t in turns if not self.speakers or t.speaker in self.speakers]

    def build(self, conversation: Conversation) -> None:
        docs: list[MemoryItem] = []
        for s in conversation.sessions:
            kept = self._kept(s.turns)
            if self.granularity == "turn":
                docs += [MemoryItem(label="", kind="turn", text=t.text, turn_ids=[t.id], meta={"session_id": s.id})
                         for t in kept]
            else:
                docs.append(MemoryItem(label="", kind="session", text=" ".join(t.text for t in kept),
                                       turn_ids=[t.id for t in kept], meta={"session_id": s.id}))
        index = OkapiIndex([tokens(d.text) for d in docs]) if docs else None
        self._convs[conversation.id] = (docs, index)
        self._last = conversation.id

    def release(self, namespace: str) -> None:
        self._convs.pop(namespace, None)

    def activate(self, question: Question, k: int = 10) -> WorkingMemory:
        ns = question.conversation_id or self._last
        if ns is None or ns not in self._convs:
            raise KeyError(f"{self.name}: question {question.id!r} names conversation {ns!r}, which was not built")
        docs, index = self._convs[ns]
        hits = index.rank(tokens(question.text), k) if index is not None else []
        items = [MemoryItem(label=f"M{r + 1}", kind=docs[i].kind, text=docs[i].text, turn_ids=list(docs[i].turn_ids),
                            score=s, meta=dict(docs[i].meta)) for r, (i, s) in enumerate(hits)]
        wm = WorkingMemory(question=question, items=items, method=self.name)
        wm.context_tokens = context_tokens(self, wm)
        return wm
