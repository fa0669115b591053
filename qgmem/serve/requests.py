"""What a request may hold and what it adds: size and spelling checks that name the field (422), and the
sessions an add request turns into, merged with what the namespace already stores.

Kept apart from the service so that every check runs before a lock is taken or a byte is written.
Message ids make adds idempotent: an id already stored with the same speaker and text is reported as a
duplicate and not stored again (a client retrying after a lost reply stores its message once); the same
id with other content is a conflict (409).
"""

from __future__ import annotations

import dataclasses
import uuid
from datetime import datetime, timezone

from qgmem.data.validate import iso_date
from qgmem.serve.config import Limits
from qgmem.serve.errors import ServeError
from qgmem.serve.schemas import Message, SessionIn
from qgmem.types import Conversation, Session, Turn

Added = tuple[list[Session], list[str], list[str]]  # (sessions to store, new turn ids, duplicate ids)


def text(value: str, field: str, cap: int, setting: str) -> None:
    if not value.strip():
        raise ServeError(422, f"{field}: must not be empty", field)
    if len(value) > cap:
        raise ServeError(422, f"{field}: {len(value):,} characters, over the cap of {cap:,} (limits.{setting})", field)


def ident(value: str | None, field: str, limits: Limits) -> None:
    if value is not None:
        text(value, field, limits.max_id_chars, "max_id_chars")


def when(value: str | None, field: str) -> str | None:
    """`value` as an ISO date or date-time (None stays None); 422 naming `field` otherwise."""
    if value is None:
        return None
    got = iso_date(value)
    if got is None:
        raise ServeError(422, f"{field}: {value[:40]!r} is not an ISO 8601 date or date-time", field)
    return got


def check_add(limits: Limits, messages: list[Message] | None, session_id: str | None,
              sessions: list[SessionIn] | None) -> None:
    if (messages is None) == (sessions is None):
        raise ServeError(422, "give exactly one of 'messages' and 'sessions'", "messages")
    if sessions is not None and session_id is not None:
        raise ServeError(422, "session_id goes with 'messages'; each of 'sessions' names its own id", "session_id")
    ident(session_id, "session_id", limits)
    if messages is not None:
        if not messages:
            raise ServeError(422, "messages: must hold at least one message", "messages")
        rows = [(f"messages[{i}]", m.id, m.speaker, m.text) for i, m in enumerate(messages)]
        for i, m in enumerate(messages):
            when(m.time, f"messages[{i}].time")
    else:
        assert sessions is not None
        if not sessions or len(sessions) > limits.max_sessions:
            raise ServeError(422, f"sessions: give 1-{limits.max_sessions} sessions (limits.max_sessions)", "sessions")
        rows = []
        for i, s in enumerate(sessions):
            ident(s.id, f"sessions[{i}].id", limits)
            when(s.date, f"sessions[{i}].date")
            if not s.turns:
                raise ServeError(422, f"sessions[{i}].turns: must hold at least one turn", f"sessions[{i}].turns")
            rows += [(f"sessions[{i}].turns[{j}]", t.id, t.speaker, t.text) for j, t in enumerate(s.turns)]
        if len({s.id for s in sessions}) != len(sessions):
            raise ServeError(422, "sessions: a session id is repeated in this request", "sessions")
    if len(rows) > limits.max_messages:
        raise ServeError(422, f"{len(rows):,} messages in one request, over the cap of {limits.max_messages:,} "
                         "(limits.max_messages)", "messages")
    seen: set[str] = set()
    for at, mid, speaker, body in rows:
        ident(mid, f"{at}.id", limits)
        text(speaker, f"{at}.speaker", limits.max_id_chars, "max_id_chars")
        text(body, f"{at}.text", limits.max_message_chars, "max_message_chars")
        if mid is not None:
            if mid in seen:
                raise ServeError(422, f"{at}.id: {mid!r} is repeated in this request", f"{at}.id")
            seen.add(mid)


def append(old: Conversation | None, messages: list[Message], session_id: str | None) -> Added:
    """Messages appended to `session_id` (a new session, dated by its first message or now, when it
    is not stored); turn ids default to `<session>:<n>`."""
    stored = {t.id: t for t in old.turns()} if old is not None else {}
    base = next((s for s in old.sessions if s.id == session_id), None) if old is not None and session_id else None
    sid = session_id or f"s{datetime.now(timezone.utc):%Y%m%d%H%M%S}-{uuid.uuid4().hex[:6]}"
    turns = list(base.turns) if base is not None else []
    added, dups = [], []
    n = len(turns)
    for i, m in enumerate(messages):
        if m.id is not None and m.id in stored:
            t = stored[m.id]
            if (t.speaker, t.text) != (m.speaker, m.text):
                raise ServeError(409, f"messages[{i}].id: {m.id!r} is already stored with other content",
                                 f"messages[{i}].id")
            dups.append(m.id)
            continue
        tid = m.id
        while tid is None or tid in stored:
            n += 1
            tid = f"{sid}:{n}"
        stored[tid] = Turn(tid, m.speaker, m.text)
        turns.append(stored[tid])
        added.append(tid)
    if not added:
        return [], [], dups
    if base is not None:
        return [dataclasses.replace(base, turns=turns)], added, dups
    first = next((m.time for m in messages if m.time), None)
    date = when(first, "messages[].time") if first else datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M")
    return [Session(sid, date, turns)], added, dups


def whole_sessions(old: Conversation | None, sessions: list[SessionIn]) -> Added:
    """Sessions that replace the stored ones of the same id (or are new); only those that differ are kept."""
    given = {s.id for s in sessions}
    current = {s.id: s for s in old.sessions} if old is not None else {}
    elsewhere = {t.id for sid, s in current.items() if sid not in given for t in s.turns}
    known = {t.id for s in current.values() for t in s.turns}
    out, added = [], []
    for i, s in enumerate(sessions):
        for j, t in enumerate(s.turns):
            if t.id in elsewhere:
                at = f"sessions[{i}].turns[{j}].id"
                raise ServeError(409, f"{at}: {t.id!r} is a turn of another stored session", at)
        out.append(Session(s.id, when(s.date, f"sessions[{i}].date"), [Turn(t.id, t.speaker, t.text) for t in s.turns]))
        added += [t.id for t in s.turns if t.id not in known]
    return [s for s in out if current.get(s.id) != s], added, []
