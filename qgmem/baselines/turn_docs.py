"""Raw turns as the raw-turn baselines index and show them: "speaker: text (session date)".

QGMem's index documents carry the session date ("(<date>)", `qgmem.retrieve.documents.UnitTexts.index_text`)
and its working memory shows it; a baseline that hid the date would lose every "when" question for a reason
that has nothing to do with retrieval. The date is spelled the same way (the benchmark's own text, else ISO).
"""

from __future__ import annotations

from qgmem.retrieve.turns import dated_turns, session_date, turn_document  # noqa: F401  (re-exported: one spelling)
from qgmem.types import MemoryItem, Turn


def turn_items(turns: list[tuple[Turn, str]], hits: list[tuple[int, float]]) -> list[MemoryItem]:
    """Ranked hits as working-memory entries labelled M1.. (the labels the answer prompt cites); the dated
    document is the entry's text, so the turn is shown once, with its date."""
    return [MemoryItem(label=f"M{r + 1}", kind="turn", text=turns[i][1], turn_ids=[turns[i][0].id], score=float(s))
            for r, (i, s) in enumerate(hits)]
