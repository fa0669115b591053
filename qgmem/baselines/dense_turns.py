"""Baseline `dense-turns` (naive RAG): sentence-embedding similarity over raw turns (packaged MiniLM by default),
each embedded and shown as "speaker: text [image caption] (session date)"."""

from __future__ import annotations

import time

import numpy as np

from qgmem.answer import context_tokens
from qgmem.baselines.bm25_turns import _lookup
from qgmem.baselines.turn_docs import turn_items
from qgmem.retrieve.turns import dated_turns
from qgmem.embed import get_embedder
from qgmem.retrieve.dense import DenseIndex
from qgmem.retrieve.qcache import encode_queries
from qgmem.types import Conversation, MethodBase, Question, Turn, WorkingMemory


class DenseTurns(MethodBase):
    name = "dense-turns"

    def __init__(self, embedder: str = "minilm", device: str | None = None, store: object | None = None) -> None:
        self.embedder = get_embedder(embedder, device)
        self.store = store  # optional MemoryStore: turn embeddings are cached there
        self._convs: dict[str, tuple[list[tuple[Turn, str]], DenseIndex]] = {}
        self._last: str | None = None

    def build(self, conversation: Conversation) -> None:
        turns = dated_turns(conversation)
        texts = [doc for _, doc in turns]
        def encode(todo: list[str]) -> np.ndarray:
            return self.embedder.encode(todo, show_progress=len(todo) > 2000)

        if self.store is not None:  # the same rows as QGMem's turn-dense channel ("turns"), keyed by text hash
            emb = self.store.cached_vectors(conversation.id, "turns", texts, encode, self.embedder.name)[0]
        else:
            emb = encode(texts) if texts else np.zeros((0, self.embedder.dim), np.float32)
        self._convs[conversation.id] = (turns, DenseIndex(emb))
        self._last = conversation.id

    def release(self, namespace: str) -> None:
        """Drop a conversation's index (the store keeps its embeddings)."""
        self._convs.pop(namespace, None)

    def activate(self, question: Question, k: int = 10) -> WorkingMemory:
        t0 = time.perf_counter()
        turns, index = _lookup(self._convs, question, self._last, self.name)
        t1 = time.perf_counter()
        qv, encode_ms = encode_queries(self.embedder, [question.text])  # cached texts report their first cost
        t_skip = time.perf_counter() - t1
        hits = index.search(qv[0], k)
        latency_ms = (time.perf_counter() - t0 - t_skip) * 1000 + encode_ms
        wm = WorkingMemory(question=question, items=turn_items(turns, hits), method=self.name,
                           meta={"encode_ms": encode_ms, "latency_ms": latency_ms})
        wm.context_tokens = context_tokens(self, wm)
        return wm
