"""Baseline: the whole conversation as context, cut to a token budget (newest turns kept).

Long-context models are the upper-bound-or-not baseline of every memory paper; when the dialogue
does not fit the budget the oldest turns are dropped, and the working memory says how many
(`meta["truncated"]`, `meta["dropped_turns"]`) so that the report can say so.
"""

from __future__ import annotations

from qgmem.answer import count_tokens
from qgmem.types import Conversation, MemoryItem, MethodBase, Question, WorkingMemory


class FullContext(MethodBase):
    name = "full-context"

    def __init__(self, max_context_tokens: int = 100_000) -> None:
        if max_context_tokens < 1:
            raise ValueError(f"full-context: max_context_tokens must be >= 1, got {max_context_tokens}")
        self.max_context_tokens = max_context_tokens
        self._convs: dict[str, Conversation] = {}
        self._last: str | None = None

    def build(self, conversation: Conversation) -> None:
        self._convs[conversation.id] = conversation
        self._last = conversation.id

    def release(self, namespace: str) -> None:
        self._convs.pop(namespace, None)

    def _conversation(self, question: Question) -> Conversation:
        cid = question.conversation_id or self._last
        if cid not in self._convs:
            raise KeyError(f"full-context: conversation {cid!r} of question {question.id!r} was not built")
        return self._convs[cid]

    def activate(self, question: Question, k: int = 10) -> WorkingMemory:
        """Every turn (k is ignored), one item per session, newest turns kept within the budget."""
        conv = self._conversation(question)
        budget = self.max_context_tokens
        kept: list[tuple[int, int]] = []  # (session index, turn index), newest first
        used = 0
        total = sum(len(s.turns) for s in conv.sessions)
        full = False
        for si in range(len(conv.sessions) - 1, -1, -1):
            sess = conv.sessions[si]
            for ti in range(len(sess.turns) - 1, -1, -1):
                cost = count_tokens(sess.turns[ti].render())
                if full or used + cost > budget:  # keep a contiguous newest stretch
                    full = True
                    break
                kept.append((si, ti))
                used += cost
        keep = set(kept)
        items: list[MemoryItem] = []
        for si, sess in enumerate(conv.sessions):
            turns = [t for ti, t in enumerate(sess.turns) if (si, ti) in keep]
            if not turns:
                continue
            when = sess.date_text or sess.date or "unknown date"
            text = "\n".join(t.render() for t in turns)
            items.append(MemoryItem(label=f"S{si + 1}", kind="context", text=f"Session {sess.id} ({when}):\n{text}",
                                    turn_ids=[t.id for t in turns], source_text=text, meta={"time": sess.date}))
        dropped = total - len(kept)
        return WorkingMemory(question=question, items=items, method=self.name, context_tokens=used,
                             meta={"truncated": dropped > 0, "dropped_turns": dropped, "budget": budget})

    def render(self, wm: WorkingMemory) -> str:
        """The transcript, session by session, with a note when old turns were cut."""
        note = (f"(The oldest {wm.meta['dropped_turns']} turns were cut to fit the context budget.)\n\n"
                if wm.meta.get("truncated") else "")
        return note + "\n\n".join(it.text for it in wm.items)
