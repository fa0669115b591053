"""Raw turns as the raw-turn baselines show them: "speaker: text (session date)".

The dated document itself is `qgmem.retrieve.turns.dated_turns` (one spelling for the baselines and QGMem's
raw-turn channels): a baseline that hid the date would lose every "when" question for a reason that has
nothing to do with retrieval.
"""

from __future__ import annotations

from qgmem.types import MemoryItem, Turn


def turn_items(turns: list[tuple[Turn, str]], hits: list[tuple[int, float]]) -> list[MemoryItem]:
    """Ranked hits as working-memory entries labelled M1.. (the labels the answer prompt cites); the dated
    document is the entry's text, so the turn is shown once, with its date."""
    return [MemoryItem(label=f"M{r + 1}", kind="turn", text=turns[i][1], turn_ids=[turns[i][0].id], score=float(s))
            for r, (i, s) in enumerate(hits)]
