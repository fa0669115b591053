"""Raw turns as the raw-turn baselines index and show them: "speaker: text (session date)".

QGMem's index documents carry the session date ("(<date>)", `qgmem.retrieve.documents.UnitTexts.index_text`)
and its working memory shows it; a baseline that hid the date would lose every "when" question for a reason
that has nothing to do with retrieval. The date is spelled the same way (the benchmark's own text, else ISO).
"""

from __future__ import annotations

from qgmem.types import Conversation, MemoryItem, Session, Turn


def session_date(session: Session) -> str:
    """The session date as QGMem's documents spell it: the benchmark's text, else the ISO date, else ''."""
    return str(session.date_text or session.date or "")


def turn_document(turn: Turn, date: str) -> str:
    """One turn with its session date appended, as indexed and as shown to the answer model."""
    return f"{turn.render()} ({date})" if date else turn.render()


def dated_turns(conversation: Conversation) -> list[tuple[Turn, str]]:
    """(turn, its document) for every turn, in conversation order."""
    return [(t, turn_document(t, session_date(s))) for s in conversation.sessions for t in s.turns]


def turn_items(turns: list[tuple[Turn, str]], hits: list[tuple[int, float]]) -> list[MemoryItem]:
    """Ranked hits as working-memory entries labelled M1.. (the labels the answer prompt cites); the dated
    document is the entry's text, so the turn is shown once, with its date."""
    return [MemoryItem(label=f"M{r + 1}", kind="turn", text=turns[i][1], turn_ids=[turns[i][0].id], score=float(s))
            for r, (i, s) in enumerate(hits)]
