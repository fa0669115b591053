"""Which sessions of a long history enter a prepared example's memory.

QGMem builds memory from a whole history; `qgmem prepare` may cut it to ``max_sessions`` sessions
to fit a CPU budget. How the cut is made decides whether an evaluation is honest:

- ``"retrieved"``: the sessions BM25 ranks highest for the kept questions' *text* over whole
  sessions (a coarse first retrieval stage; the answer key is never read);
- ``"recent"``: the last sessions of the history (no question, no labels);
- ``"evidence"``: every session holding evidence of a kept question, plus seeded distractors. The
  answer key decides what is in memory, so the answer is always there: allowed for the train
  split only, and a set built that way is named "oracle" in its meta and reports.
"""

from __future__ import annotations

import dataclasses
import random

from qgmem.types import Conversation, Question

CHOICES = ("retrieved", "recent", "evidence")
LABEL_FREE = ("retrieved", "recent")


def reduce_sessions(conv: Conversation, questions: list[Question], max_sessions: int | None, seed: int) -> Conversation:
    """Evidence sessions of `questions` + seeded distractors, in the original order (oracle)."""
    if max_sessions is None or len(conv.sessions) <= max_sessions:
        return conv
    turn_session = {t.id: s.id for s in conv.sessions for t in s.turns}
    keep = {sid for q in questions for sid in q.evidence_sessions}
    keep |= {turn_session[t] for q in questions for t in q.evidence if t in turn_session}
    keep &= {s.id for s in conv.sessions}
    others = [s.id for s in conv.sessions if s.id not in keep]
    rng = random.Random(f"{seed}:{conv.id}")
    keep |= set(rng.sample(others, max(0, min(len(others), max_sessions - len(keep)))))
    return _keep(conv, keep)


def retrieved_sessions(conv: Conversation, questions: list[Question], max_sessions: int | None) -> Conversation:
    """The sessions BM25 ranks highest for the questions' text, taken round-robin over the questions
    (each question's best first), topped up with the latest sessions; original order kept."""
    if max_sessions is None or len(conv.sessions) <= max_sessions:
        return conv
    from qgmem.retrieve.lexical import LexicalIndex

    docs = [" ".join(f"{t.speaker}: {t.text}" for t in s.turns) for s in conv.sessions]
    index = LexicalIndex(docs)
    rankings = [[conv.sessions[i].id for i, _ in index.search(q.text, max_sessions)] for q in questions]
    keep: list[str] = []
    for rank in range(max_sessions):
        for ranking in rankings:
            if rank < len(ranking) and ranking[rank] not in keep and len(keep) < max_sessions:
                keep.append(ranking[rank])
    for s in reversed(conv.sessions):  # questions without matching words: the latest sessions
        if len(keep) >= max_sessions:
            break
        if s.id not in keep:
            keep.append(s.id)
    return _keep(conv, set(keep))


def recent_sessions(conv: Conversation, max_sessions: int | None) -> Conversation:
    """The last `max_sessions` sessions of the history."""
    if max_sessions is None or len(conv.sessions) <= max_sessions:
        return conv
    return _keep(conv, {s.id for s in conv.sessions[-max_sessions:]})


def choose_sessions(conv: Conversation, questions: list[Question], choice: str, max_sessions: int | None,
                    seed: int) -> Conversation:
    """`conv` cut to `max_sessions` sessions by `choice` (one of `CHOICES`)."""
    if choice == "retrieved":
        return retrieved_sessions(conv, questions, max_sessions)
    if choice == "recent":
        return recent_sessions(conv, max_sessions)
    if choice == "evidence":
        return reduce_sessions(conv, questions, max_sessions, seed)
    raise ValueError(f"session choice must be one of {CHOICES}, got {choice!r}")


def _keep(conv: Conversation, keep: set[str]) -> Conversation:
    return dataclasses.replace(conv, sessions=[s for s in conv.sessions if s.id in keep],
                               meta={**conv.meta, "sessions_total": len(conv.sessions)})
