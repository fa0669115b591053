"""Baseline: BM25 over raw turns, each indexed and shown as "speaker: text [image caption] (session date)"."""

from __future__ import annotations

from qgmem.answer import context_tokens
from qgmem.baselines.turn_docs import turn_items
from qgmem.retrieve.turns import dated_turns
from qgmem.retrieve.lexical import LexicalIndex
from qgmem.types import Conversation, MethodBase, Question, Turn, WorkingMemory


class BM25Turns(MethodBase):
    name = "bm25-turns"

    def __init__(self) -> None:
        self._convs: dict[str, tuple[list[tuple[Turn, str]], LexicalIndex]] = {}
        self._last: str | None = None

    def build(self, conversation: Conversation) -> None:
        turns = dated_turns(conversation)
        self._convs[conversation.id] = (turns, LexicalIndex([doc for _, doc in turns]))
        self._last = conversation.id

    def release(self, namespace: str) -> None:
        """Drop a conversation's index once its questions are done."""
        self._convs.pop(namespace, None)

    def activate(self, question: Question, k: int = 10) -> WorkingMemory:
        turns, index = _lookup(self._convs, question, self._last, self.name)
        hits = index.search(question.text, k)
        wm = WorkingMemory(question=question, items=turn_items(turns, hits), method=self.name)
        wm.context_tokens = context_tokens(self, wm)
        return wm


def _lookup(convs: dict, question: Question, last: str | None, name: str):
    ns = question.conversation_id or last
    if ns is None or ns not in convs:
        raise KeyError(f"{name}: question {question.id!r} names conversation {ns!r}, which was not built "
                       f"(built: {sorted(convs)[:5]})")
    return convs[ns]
