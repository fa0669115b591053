"""One data model for every benchmark, method and stage.

Dialogues are `Conversation -> Session -> Turn`; questions carry their gold evidence as turn ids.
Memory is `AtomicUnit` (+ `MemoryTrace`); what a method activates for a question is a `WorkingMemory`
of `MemoryItem`s, whatever the method (QGMem units, AnchorMem contexts/events, raw-turn baselines),
so that retrieval metrics, text serialisation and the graph builder read one shape.

All times are ISO-8601 strings (``YYYY-MM-DD`` or ``YYYY-MM-DDTHH:MM``) so records round-trip
through JSON and SQLite unchanged.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable


@dataclass
class Turn:
    id: str  # unique within its conversation, e.g. LoCoMo "D1:3"
    speaker: str
    text: str
    image_caption: str | None = None

    def render(self) -> str:
        """The turn as a line of dialogue, with the shared image described if any."""
        cap = f" [shares an image: {self.image_caption}]" if self.image_caption else ""
        return f"{self.speaker}: {self.text}{cap}"


@dataclass
class Session:
    id: str
    date: str | None  # ISO date/time of the session; None when the benchmark gives none
    turns: list[Turn] = field(default_factory=list)
    date_text: str | None = None  # the benchmark's own spelling, kept for prompts


@dataclass
class Question:
    id: str
    text: str
    answers: list[str]
    category: str  # benchmark's own label, e.g. LoCoMo "1".."5", LongMemEval "temporal-reasoning"
    evidence: list[str] = field(default_factory=list)  # gold turn ids (normalised, matched to turns)
    evidence_sessions: list[str] = field(default_factory=list)
    question_time: str | None = None
    conversation_id: str = ""
    unmatched_evidence: list[str] = field(default_factory=list)  # gold ids that name no turn
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Conversation:
    id: str
    sessions: list[Session]
    questions: list[Question] = field(default_factory=list)
    speakers: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def turns(self) -> list[Turn]:
        return [t for s in self.sessions for t in s.turns]

    def turn_index(self) -> dict[str, tuple[Session, int]]:
        """turn id -> (session, position in session)."""
        return {t.id: (s, i) for s in self.sessions for i, t in enumerate(s.turns)}


IMAGE_OBJECT = "image: "  # the object of a unit that describes a shared image, not words said (construct/rule.py)


@dataclass
class AtomicUnit:
    """One independently retrievable, source-grounded claim (QGMem §III-A1)."""

    id: str
    namespace: str  # conversation or user id
    session_id: str
    text: str  # the claim
    first_turn: str
    last_turn: str
    turn_ids: list[str]  # the source span, first..last inclusive
    speaker: str
    subject: str
    relation: str
    object: str
    entities: list[str] = field(default_factory=list)
    location: str | None = None
    fact_time_start: str | None = None  # None = unspecified (vague or absent)
    fact_time_end: str | None = None
    utterance_time: str | None = None  # the session date the claim was said at
    trace_id: str | None = None
    trace_role: Literal["origin", "update", "supplement"] | None = None
    superseded: bool = False  # a later unit of its trace updates it
    extractor: str = "rule"

    @property
    def triple(self) -> tuple[str, str, str]:
        return (self.subject, self.relation, self.object)

    @property
    def shows_image(self) -> bool:
        """A unit of a shared image's caption: it describes a picture, it tells no state of the speaker's."""
        return self.object.startswith(IMAGE_OBJECT)


@dataclass
class MemoryTrace:
    """Units of one evolving (subject, relation), ordered by memory time (QGMem §III-A2)."""

    id: str
    namespace: str
    subject: str
    relation: str
    unit_ids: list[str]  # chronological
    roles: list[Literal["origin", "update", "supplement"]]
    latest_unit_id: str  # the latest supported state


ItemKind = Literal["unit", "turn", "context", "event"]


@dataclass
class MemoryItem:
    """One entry of a working memory. `turn_ids` is what retrieval metrics score."""

    label: str  # citable label shown to the LLM, e.g. "M3"
    kind: ItemKind
    text: str
    turn_ids: list[str]
    score: float = 0.0
    unit: AtomicUnit | None = None
    source_text: str = ""  # the source dialogue span, rendered
    trajectory: list[str] = field(default_factory=list)  # earlier/later states of its trace, rendered
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class WorkingMemory:
    question: Question
    items: list[MemoryItem]
    method: str
    context_tokens: int = 0
    meta: dict[str, Any] = field(default_factory=dict)

    def turn_ids(self) -> list[str]:
        seen: dict[str, None] = {}
        for it in self.items:
            for t in it.turn_ids:
                seen.setdefault(t, None)
        return list(seen)


@runtime_checkable
class MemoryMethod(Protocol):
    """What every method (QGMem, AnchorMem, baselines) offers evaluation.

    The harness reads only these members, never a method's name: `graph_in_memory` asks for the
    local graph as triples after the entries, `answers_itself` marks a method that answers with its
    own model (`answer`), `render` is a method's own memory text (None = the shared serialisation)
    and `release` drops a conversation's in-memory index once its questions are done.
    `MethodBase` gives the defaults.
    """

    name: str
    graph_in_memory: bool
    answers_itself: bool

    def build(self, conversation: Conversation) -> None: ...

    def activate(self, question: Question, k: int = 10) -> WorkingMemory: ...

    def release(self, namespace: str) -> None: ...

    def render(self, wm: WorkingMemory) -> str | None: ...

    def answer(self, question: Question, wm: WorkingMemory, max_tokens: int) -> tuple[str, int, int]: ...


class MethodBase:
    """Defaults of the optional `MemoryMethod` members: shared serialisation without the graph,
    answered through the chat backend, nothing to release."""

    name: str = ""
    graph_in_memory: bool = False
    answers_itself: bool = False

    def release(self, namespace: str) -> None:
        """Nothing held per conversation by default."""

    def render(self, wm: WorkingMemory) -> str | None:
        """None: the answer step serialises the working memory itself."""
        return None

    def answer(self, question: Question, wm: WorkingMemory, max_tokens: int) -> tuple[str, int, int]:
        """(reply, prompt tokens, completion tokens); only for methods with `answers_itself`."""
        raise NotImplementedError(f"method {self.name!r} answers through a chat backend (answers_itself is False)")


def to_dict(obj: Any) -> Any:
    """Dataclass -> plain JSON-able dict (recursively)."""
    return dataclasses.asdict(obj) if dataclasses.is_dataclass(obj) else obj


def unit_from_dict(d: dict[str, Any]) -> AtomicUnit:
    return AtomicUnit(**d)


def conversation_from_dict(d: dict[str, Any]) -> Conversation:
    sessions = [
        Session(id=s["id"], date=s.get("date"), date_text=s.get("date_text"),
                turns=[Turn(**t) for t in s["turns"]])
        for s in d["sessions"]
    ]
    questions = [Question(**q) for q in d.get("questions", [])]
    return Conversation(id=d["id"], sessions=sessions, questions=questions,
                        speakers=list(d.get("speakers", [])), meta=dict(d.get("meta", {})))
