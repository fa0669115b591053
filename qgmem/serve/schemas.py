"""Request and reply models of the API (pydantic): the HTTP routes, the MCP tools and the OpenAPI page
at /docs read the same ones. Unknown fields are refused, so a typo is a 422 naming it, never ignored.
Sizes depend on the server's limits and are checked in `service.py`, which names the same fields."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Message(_Strict):
    speaker: str = Field(description="who said it (a user or agent name)")
    text: str = Field(description="what was said")
    time: str | None = Field(None, description="when, ISO 8601 (a new session takes its first message's time)")
    id: str | None = Field(None, description="a stable id for the message; a retry with the same id and text "
                                             "is stored once. Default: '<session>:<n>'")


class Turn(_Strict):
    id: str
    speaker: str
    text: str


class SessionIn(_Strict):
    id: str
    date: str | None = Field(None, description="ISO 8601 date or date-time of the session")
    turns: list[Turn]


class AddRequest(_Strict):
    messages: list[Message] | None = Field(None, description="messages appended to `session_id` (default: a "
                                                             "new session)")
    session_id: str | None = None
    sessions: list[SessionIn] | None = Field(None, description="whole sessions instead of messages; a stored "
                                                               "session with the same id is replaced")


class AddReply(BaseModel):
    namespace: str
    session_ids: list[str]
    turn_ids: list[str] = Field(description="ids of the messages stored by this request")
    duplicate_ids: list[str] = Field(description="ids already stored with the same text (not stored again)")
    unit_ids: list[str] = Field(description="memory units that this request created")
    timings: dict[str, float]


class SearchRequest(_Strict):
    question: str
    question_time: str | None = Field(None, description="when the question is asked, ISO 8601 (for 'last week')")


class Item(BaseModel):
    label: str
    text: str
    unit_id: str | None
    turn_ids: list[str]
    session_id: str | None
    time: str | None = Field(description="when it was said (the session date)")
    fact_time: list[str | None] = Field(description="[start, end] of the fact itself, when known")
    superseded: bool
    trajectory: list[str]
    source: str
    score: float


class SearchReply(BaseModel):
    namespace: str
    question: str
    items: list[Item]
    context_tokens: int
    timings: dict[str, float]
    meta: dict[str, Any]


class AnswerReply(SearchReply):
    answer: str
    cited_labels: list[str]
    cited_turn_ids: list[str]
    invalid_labels: list[str]
    raw: str


class ForgetTurns(_Strict):
    turn_ids: list[str]


class ForgetReply(BaseModel):
    namespace: str
    forgotten: str = Field(description="'namespace', 'session <id>' or '<n> turn(s)'")
    remaining_turns: int


class HistoryReply(BaseModel):
    namespace: str
    unit_id: str
    states: list[dict[str, Any]] = Field(description="the unit's trace, in memory-time order")


class MessagesReply(BaseModel):
    namespace: str
    sessions: list[dict[str, Any]]


class NamespacesReply(BaseModel):
    namespaces: list[str]
