"""Baseline: the whole conversation as context, cut to a token budget (newest turns kept).

Long-context models are the upper-bound-or-not baseline of every memory paper; when the dialogue
does not fit the budget the oldest turns are dropped, and the working memory says how many
(`meta["truncated"]`, `meta["dropped_turns"]`) so that the report can say so.
"""

from __future__ import annotations

from qgmem.answer import context_tokens, count_tokens
from qgmem.types import Conversation, MemoryItem, MethodBase, Question, Session, WorkingMemory


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
        """Every turn (k is ignored), one item per session, newest turns kept so that the rendered
        transcript (session headers and the cut note included) fits the budget."""
        conv = self._conversation(question)
        budget = self.max_context_tokens
        total = sum(len(s.turns) for s in conv.sessions)
        keep = _newest_within(conv, budget)
        if len(keep) < total:  # the note is shown too: cut again with its cost reserved
            keep = _newest_within(conv, budget - count_tokens(_note(0)))
        items: list[MemoryItem] = []
        for si, sess in enumerate(conv.sessions):
            turns = [t for ti, t in enumerate(sess.turns) if (si, ti) in keep]
            if not turns:
                continue
            text = "\n".join(t.render() for t in turns)
            items.append(MemoryItem(label=f"S{si + 1}", kind="context", text=f"{_header(sess)}\n{text}",
                                    turn_ids=[t.id for t in turns], source_text=text, meta={"time": sess.date}))
        dropped = total - len(keep)
        wm = WorkingMemory(question=question, items=items, method=self.name,
                           meta={"truncated": dropped > 0, "dropped_turns": dropped, "budget": budget})
        wm.context_tokens = context_tokens(self, wm)  # the transcript as rendered, headers and note included
        return wm

    def render(self, wm: WorkingMemory) -> str:
        """The transcript, session by session, with a note when old turns were cut."""
        note = _note(wm.meta["dropped_turns"]) + "\n\n" if wm.meta.get("truncated") else ""
        return note + "\n\n".join(it.text for it in wm.items)


def _header(sess: Session) -> str:
    return f"Session {sess.id} ({sess.date_text or sess.date or 'unknown date'}):"


def _note(dropped: int) -> str:
    return f"(The oldest {dropped} turns were cut to fit the context budget.)"


def _newest_within(conv: Conversation, budget: int) -> set[tuple[int, int]]:
    """(session index, turn index) of the newest contiguous stretch of turns whose rendering, with the
    header of every session it reaches, fits in `budget` tokens."""
    kept: set[tuple[int, int]] = set()
    used = 0
    for si in range(len(conv.sessions) - 1, -1, -1):
        sess = conv.sessions[si]
        for ti in range(len(sess.turns) - 1, -1, -1):
            first_of_session = ti == len(sess.turns) - 1  # the session's header is shown with it
            cost = count_tokens(sess.turns[ti].render()) + (count_tokens(_header(sess)) if first_of_session else 0)
            if used + cost > budget:
                return kept
            kept.add((si, ti))
            used += cost
    return kept
