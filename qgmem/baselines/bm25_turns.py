"""Baseline: BM25 over raw turns (each turn rendered as "speaker: text [image caption]")."""

from __future__ import annotations

from qgmem.retrieve.lexical import LexicalIndex
from qgmem.types import Conversation, MemoryItem, MethodBase, Question, Turn, WorkingMemory


class BM25Turns(MethodBase):
    name = "bm25-turns"

    def __init__(self) -> None:
        self._convs: dict[str, tuple[list[Turn], LexicalIndex]] = {}
        self._last: str | None = None

    def build(self, conversation: Conversation) -> None:
        turns = conversation.turns()
        self._convs[conversation.id] = (turns, LexicalIndex([t.render() for t in turns]))
        self._last = conversation.id

    def release(self, namespace: str) -> None:
        """Drop a conversation's index once its questions are done."""
        self._convs.pop(namespace, None)

    def activate(self, question: Question, k: int = 10) -> WorkingMemory:
        turns, index = _lookup(self._convs, question, self._last, self.name)
        hits = index.search(question.text, k)
        items = [MemoryItem(label=f"T{r + 1}", kind="turn", text=turns[i].render(), turn_ids=[turns[i].id],
                            score=s, source_text=turns[i].render()) for r, (i, s) in enumerate(hits)]
        return WorkingMemory(question=question, items=items, method=self.name)


def _lookup(convs: dict, question: Question, last: str | None, name: str):
    ns = question.conversation_id or last
    if ns is None or ns not in convs:
        raise KeyError(f"{name}: question {question.id!r} names conversation {ns!r}, which was not built "
                       f"(built: {sorted(convs)[:5]})")
    return convs[ns]
