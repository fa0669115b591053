"""Counts that tell whether a data set loaded completely and how clean its gold evidence is.

`qgmem data stats` prints these; the data tests compare them with the counts published in the
data READMEs, so a loader that drops sessions, turns or questions is caught.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from ..types import Conversation


@dataclass
class DatasetStats:
    name: str
    conversations: int = 0
    sessions: int = 0
    sessions_with_turns: int = 0
    turns: int = 0
    questions: int = 0
    questions_by_category: dict[str, int] = field(default_factory=dict)
    evidence_turns: int = 0  # matched gold turn ids, summed over questions
    questions_without_evidence: int = 0
    unmatched_evidence: int = 0  # gold ids that name no turn, summed over questions
    questions_with_unmatched: int = 0
    abstention: int = 0
    abstention_by_category: dict[str, int] = field(default_factory=dict)
    sessions_without_date: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def table(self) -> str:
        """A readable two-column table."""
        rows: list[tuple[str, str]] = [
            ("conversations", f"{self.conversations:,}"),
            ("sessions", f"{self.sessions:,}"),
            ("sessions with turns", f"{self.sessions_with_turns:,}"),
            ("sessions without date", f"{self.sessions_without_date:,}"),
            ("turns", f"{self.turns:,}"),
            ("questions", f"{self.questions:,}"),
        ]
        for cat in _sorted_keys(self.questions_by_category):
            rows.append((f"  category {cat}", f"{self.questions_by_category[cat]:,}"))
        rows += [
            ("gold evidence turns", f"{self.evidence_turns:,}"),
            ("questions without evidence", f"{self.questions_without_evidence:,}"),
            ("unmatched evidence ids", f"{self.unmatched_evidence:,}"),
            ("questions with unmatched ids", f"{self.questions_with_unmatched:,}"),
            ("abstention questions", f"{self.abstention:,}"),
        ]
        for cat in _sorted_keys(self.abstention_by_category):
            rows.append((f"  abstention in {cat}", f"{self.abstention_by_category[cat]:,}"))
        w = max(len(k) for k, _ in rows)
        v = max(len(x) for _, x in rows)
        line = "-" * (w + v + 3)
        return "\n".join([self.name, line] + [f"{k:<{w}}   {x:>{v}}" for k, x in rows] + [line])


def _sorted_keys(d: dict[str, int]) -> list[str]:
    return sorted(d, key=lambda k: (0, int(k)) if k.isdigit() else (1, k))


def compute_stats(name: str, conversations: Iterable[Conversation]) -> DatasetStats:
    """Stats over conversations; accepts a generator so a big set can be counted while streaming."""
    st = DatasetStats(name=name)
    cats: Counter[str] = Counter()
    abst: Counter[str] = Counter()
    for conv in conversations:
        st.conversations += 1
        for s in conv.sessions:
            st.sessions += 1
            st.sessions_with_turns += bool(s.turns)
            st.sessions_without_date += s.date is None
            st.turns += len(s.turns)
        for q in conv.questions:
            st.questions += 1
            cats[q.category] += 1
            st.evidence_turns += len(q.evidence)
            st.questions_without_evidence += not q.evidence
            st.unmatched_evidence += len(q.unmatched_evidence)
            st.questions_with_unmatched += bool(q.unmatched_evidence)
            if q.meta.get("abstention"):
                st.abstention += 1
                abst[q.category] += 1
    st.questions_by_category = dict(cats)
    st.abstention_by_category = dict(abst)
    return st
