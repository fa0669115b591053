"""AnchorMem's three node types (paper Def. 3): immutable context chunks, atomic facts, events.

They are stored as generic JSON records in the shared MemoryStore (kinds "am_chunks", "am_facts",
"am_events"); `from_record` checks fields so a damaged store fails with the record and field named.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..types import Conversation

T = TypeVar("T")


@dataclass
class Chunk:
    """One interaction content C_i: consecutive turns of one session, never rewritten."""

    id: str
    session_id: str
    order: int  # position in the conversation
    turn_ids: list[str]
    text: str  # rendered turns, with the session date as a header line
    date: str | None = None


@dataclass
class Fact:
    """An atomic fact (retrieval anchor); maps to exactly one chunk (E_map)."""

    id: str
    text: str
    chunk_id: str
    turn_ids: list[str]  # the chunk's turns (LLM facts) or the source unit's span (rule facts)
    order: int  # extraction order; chunk order first, so sorting by it is time order
    speaker: str = ""
    source: str = "llm"  # "llm" | "rule"


@dataclass
class Event:
    """An associative event integrating a retained fact cluster (paper eq. 10-11)."""

    id: str
    text: str
    fact_ids: list[str]  # one fact per distinct context, time order
    chunk_ids: list[str]
    turn_ids: list[str]
    seed_fact_id: str
    integrator: str  # "llm" | "concat" (deterministic concatenation, no LLM)


def to_record(obj: Any) -> dict[str, Any]:
    return dataclasses.asdict(obj)


def from_record(cls: type[T], rec: Any, where: str) -> T:
    """Build `cls` from a stored dict; errors name `where` (namespace/kind/index) and the field."""
    if not isinstance(rec, dict):
        raise ValueError(f"{where}: expected an object, got {type(rec).__name__}")
    names = {f.name: f for f in dataclasses.fields(cls)}
    missing = [n for n, f in names.items()
               if n not in rec and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if missing:
        raise ValueError(f"{where}: missing field(s) {missing} for {cls.__name__}")
    unknown = sorted(set(rec) - set(names))
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {unknown} for {cls.__name__}")
    for key in ("turn_ids", "fact_ids", "chunk_ids"):
        if key in rec and not isinstance(rec[key], list):
            raise ValueError(f"{where}: field {key!r} must be a list, got {rec[key]!r}")
    return cls(**rec)


def make_chunks(conversation: Conversation, chunk_turns: int = 2) -> list[Chunk]:
    """Split every session (all of them: the questions never choose what is indexed) into chunks.

    `chunk_turns=0` keeps each session whole. Chunks never cross sessions.
    """
    if chunk_turns < 0:
        raise ValueError(f"chunk_turns must be >= 0, got {chunk_turns}")
    chunks: list[Chunk] = []
    for s in conversation.sessions:
        if not s.turns:
            continue
        size = chunk_turns or len(s.turns)
        for start in range(0, len(s.turns), size):
            turns = s.turns[start:start + size]
            header = f"[{s.date_text or s.date}]" if (s.date_text or s.date) else f"[session {s.id}]"
            text = "\n".join([header] + [t.render() for t in turns])
            chunks.append(Chunk(id=f"{s.id}#{start // size}", session_id=s.id, order=len(chunks),
                                turn_ids=[t.id for t in turns], text=text, date=s.date))
    return chunks
