"""Raw-turn channels: BM25 and dense similarity over the conversation's own turns, mapped onto units.

Units are the method's memory, but a unit is only as good as its extraction: a claim cut from its turn
loses words the question may use, and a badly parsed sentence loses its meaning. The turn channels
keep the raw signal in the fusion, so the pipeline sees everything a raw-turn baseline sees and the
unit channels can only add to it. A turn's rank is shared by every unit drawn from that turn (a tied
group in RRF); the selection step keeps one unit per turn span, so these ties cost no working-memory slot.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qgmem.types import AtomicUnit, Conversation, Session, Turn

from .dense import DenseIndex
from .lexical import LexicalIndex


def session_date(session: Session) -> str:
    """The session date as every document spells it: the benchmark's text, else the ISO date, else ''."""
    return str(session.date_text or session.date or "")


def turn_document(turn: Turn, date: str) -> str:
    """One turn with its session date appended: what the raw-turn channels and the raw-turn baselines
    index and show (one spelling, so both share the turn's cached vector)."""
    return f"{turn.render()} ({date})" if date else turn.render()


def dated_turns(conversation: Conversation) -> list[tuple[Turn, str]]:
    """(turn, its document) for every turn, in dialogue order."""
    return [(t, turn_document(t, session_date(s))) for s in conversation.sessions for t in s.turns]


@dataclass
class TurnIndex:
    """Lexical and dense indexes over turns, and which unit rows each turn gave."""

    lexical: LexicalIndex
    dense: DenseIndex | None
    unit_rows: list[list[int]]  # turn position -> rows of the units whose span holds that turn
    position: dict[str, int]  # turn id -> position

    @classmethod
    def build(cls, turn_ids: list[str], docs: list[str], units: list[AtomicUnit], vectors: np.ndarray | None,
              max_postings: int = 0) -> TurnIndex:
        pos = {t: i for i, t in enumerate(turn_ids)}
        rows: list[list[int]] = [[] for _ in turn_ids]
        for r, u in enumerate(units):
            for t in u.turn_ids:
                if t in pos:
                    rows[pos[t]].append(r)
        return cls(LexicalIndex(docs, max_postings=max_postings),
                   DenseIndex(vectors) if vectors is not None else None, rows, pos)

    def positions(self, turn_ids: list[str]) -> list[int]:
        return [self.position[t] for t in turn_ids if t in self.position]

    def groups(self, hits: list[tuple[int, float]]) -> list[list[int]]:
        """Turn hits, best first, as tied groups of unit rows (turns that gave no unit are dropped)."""
        return [self.unit_rows[i] for i, _ in hits if self.unit_rows[i]]

    def lexical_hits(self, query: str, depth: int) -> list[tuple[int, float]]:
        """(turn position, BM25 score), best first."""
        return self.lexical.search(query, depth)

    def dense_hits(self, qvec: np.ndarray, depth: int) -> list[tuple[int, float]]:
        """(turn position, cosine), best first."""
        return self.dense.search(qvec, depth) if self.dense is not None else []
