"""Knowledge-update fixture conversations (tests/fixtures/updates/, schema in its README.md).

Each conversation is a short dated chat in which a state changes (a job, a home, a partner, a
class, a plan, a schedule); it labels which turn's state a later turn updates, who the main claim
of a first-person or pronoun turn is about, and questions about the current state ("now"), the
moment of change ("when") and the earlier state ("before"). This module turns the JSON into the
package's `Conversation`/`Question`s plus those labels, checking that every label names a turn.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qgmem.types import Conversation, Question, Session, Turn

KINDS = ("now", "when", "before")
STATES = ("employment", "residence", "relationship", "membership", "ownership", "schedule", "plans")

# The held-out sets written so far, stated once for the tests and bench/update_fixtures.py: tests/fixtures/
# updates_heldout/, then updates_heldout2/ .. updates_heldout<HELD_OUT_NEWEST>/ in the order they were written.
# A new set is committed with its number in HELD_OUT_UNMEASURED (only its labels are checked, and no measurement
# reads it) and leaves it once it has been measured.
HELD_OUT_NEWEST = 34
HELD_OUT_UNMEASURED: tuple[int, ...] = ()
HELD_OUT_LATER = tuple(range(2, HELD_OUT_NEWEST + 1))  # the numbered held-out sets, as written


@dataclass
class Update:
    old: str  # turn id of the earlier state
    new: str  # turn id of the turn that updates it
    state: str  # one of STATES


@dataclass
class UpdateCase:
    conversation: Conversation  # questions carry kind/latest/superseded in `meta`
    updates: list[Update] = field(default_factory=list)
    subjects: dict[str, str] = field(default_factory=dict)  # turn id -> who its main claim is about


def _case(raw: dict[str, Any], where: str) -> UpdateCase:
    cid = raw["id"]
    sessions, subjects = [], {}
    for s in raw["sessions"]:
        turns = []
        for t in s["turns"]:
            if t["speaker"] not in raw["speakers"]:
                raise ValueError(f"{where}: {cid} turn {t['id']}: speaker {t['speaker']!r} is not in speakers")
            turns.append(Turn(t["id"], t["speaker"], t["text"]))
            if t.get("subject"):
                subjects[t["id"]] = t["subject"]
        sessions.append(Session(s["id"], s["date"], turns))
    ids = {t.id for s in sessions for t in s.turns}

    def known(tid: str | None, what: str) -> str | None:
        if tid is not None and tid not in ids:
            raise ValueError(f"{where}: {cid} {what} names turn {tid!r}, which it does not have")
        return tid

    updates = []
    for u in raw.get("updates", []):
        if u["state"] not in STATES:
            raise ValueError(f"{where}: {cid} update state {u['state']!r} is not one of {STATES}")
        updates.append(Update(known(u["old"], "update") or "", known(u["new"], "update") or "", u["state"]))
    questions = []
    for q in raw.get("questions", []):
        if q["kind"] not in KINDS:
            raise ValueError(f"{where}: {cid} question {q['id']}: kind {q['kind']!r} is not one of {KINDS}")
        meta = {"kind": q["kind"], "latest": known(q["latest"], q["id"]),
                "superseded": known(q.get("superseded"), q["id"])}
        questions.append(Question(q["id"], q["text"], [], q["kind"], evidence=[known(e, q["id"]) or "" for e in
                                                                                q["evidence"]],
                                  question_time=q["question_time"], conversation_id=cid, meta=meta))
    conv = Conversation(cid, sessions, questions, speakers=list(raw["speakers"]), meta={"source": where})
    return UpdateCase(conv, updates, subjects)


def load_update_fixtures(path: str | Path) -> list[UpdateCase]:
    """All conversations of a fixture file (a JSON list), in file order; ValueError on a bad label."""
    p = Path(path)
    data = json.loads(p.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{p}: expected a JSON list of conversations")
    cases = [_case(raw, str(p)) for raw in data]
    seen: set[str] = set()
    for c in cases:
        if c.conversation.id in seen:
            raise ValueError(f"{p}: conversation id {c.conversation.id!r} appears twice")
        seen.add(c.conversation.id)
    return cases
