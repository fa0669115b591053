"""Overlapping dialogue windows (QGMem appendix "Memory construction").

Each session is cut into windows of `size` turns that advance by `size - overlap` turns. The first
`overlap` turns of every window but the first are context only (they resolve pronouns and local
references) and cannot alone support a unit; the rest are the window's *new* turns. Every turn of a
session is a new turn in exactly one window, so extraction covers the dialogue once.
"""

from __future__ import annotations

from dataclasses import dataclass

from qgmem.types import Session, Turn


@dataclass(frozen=True)
class Window:
    session_id: str
    index: int  # position of the window within its session, 0-based
    turns: list[Turn]  # context_turns + new_turns, in dialogue order
    context_turns: list[Turn]
    new_turns: list[Turn]
    session_date: str | None = None
    session_date_text: str | None = None

    @property
    def key(self) -> str:
        """Stable id of the window inside its namespace (used for resume markers and unit ids)."""
        return f"{self.session_id}#w{self.index}"

    def new_ids(self) -> set[str]:
        return {t.id for t in self.new_turns}


def make_windows(session: Session, size: int = 6, overlap: int = 2) -> list[Window]:
    """Cut one session into windows of `size` turns with `overlap` context turns (step = size - overlap)."""
    if size < 1:
        raise ValueError(f"window size must be >= 1, got {size}")
    if not 0 <= overlap < size:
        raise ValueError(f"window overlap must be in [0, size), got overlap={overlap} size={size}")
    turns = list(session.turns)
    step = size - overlap
    windows: list[Window] = []
    start = 0  # first turn of the window, context included
    new_start = 0  # first new turn
    while new_start < len(turns):
        end = min(start + size, len(turns))
        windows.append(Window(
            session_id=session.id, index=len(windows), turns=turns[start:end],
            context_turns=turns[start:new_start], new_turns=turns[new_start:end],
            session_date=session.date, session_date_text=session.date_text,
        ))
        start += step
        new_start = end
    return windows
