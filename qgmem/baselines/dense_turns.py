"""Baseline: naive RAG, sentence-embedding similarity over raw turns (packaged MiniLM by default)."""

from __future__ import annotations

from qgmem.baselines.bm25_turns import _lookup
from qgmem.embed import get_embedder
from qgmem.retrieve.dense import DenseIndex
from qgmem.types import Conversation, MemoryItem, Question, Turn, WorkingMemory


class DenseTurns:
    name = "dense-turns"

    def __init__(self, embedder: str = "minilm", device: str | None = None) -> None:
        self.embedder = get_embedder(embedder, device)
        self._convs: dict[str, tuple[list[Turn], DenseIndex]] = {}
        self._last: str | None = None

    def build(self, conversation: Conversation) -> None:
        turns = conversation.turns()
        emb = self.embedder.encode([t.render() for t in turns])
        self._convs[conversation.id] = (turns, DenseIndex(emb))
        self._last = conversation.id

    def activate(self, question: Question, k: int = 10) -> WorkingMemory:
        turns, index = _lookup(self._convs, question, self._last, self.name)
        hits = index.search(self.embedder.encode([question.text])[0], k)
        items = [MemoryItem(label=f"T{r + 1}", kind="turn", text=turns[i].render(), turn_ids=[turns[i].id],
                            score=s, source_text=turns[i].render()) for r, (i, s) in enumerate(hits)]
        return WorkingMemory(question=question, items=items, method=self.name)
