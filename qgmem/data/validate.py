"""Checks every conversation before it enters memory: one clear line per problem, nothing half-written.

A memory is only as good as what goes in. Duplicate ids would give a unit the wrong source turn, a
null or numeric text would crash extraction halfway, a date that is not a date would silently stop
relative times from resolving, and one pasted megabyte would become tens of thousands of units. So
`check_conversation` runs before a build touches the store: structural problems raise `DataError`
naming the file, the record and the field; dates are normalised to ISO when a known spelling is
recognised, else dropped, and each such repair comes back as a counted warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from qgmem.data.dates import parse_beam_date, parse_locomo_date, parse_longmemeval_date
from qgmem.data.errors import DataError
from qgmem.types import Conversation


@dataclass
class InputLimits:
    """Size caps; a conversation over a cap is refused with the number and the setting to change."""

    max_turn_chars: int = 500_000  # the longest benchmark turn (BEAM 128K) has 348,853
    max_conversation_chars: int = 50_000_000

    def __post_init__(self) -> None:
        if self.max_turn_chars < 1 or self.max_conversation_chars < 1:
            raise ValueError(f"InputLimits: caps must be >= 1, got {self}")


def iso_date(text: str) -> str | None:
    """`text` as an ISO date/datetime string, or None when it is not a date in any known spelling."""
    t = text.strip()
    try:
        return date.fromisoformat(t).isoformat()
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(t).strftime("%Y-%m-%dT%H:%M")
    except ValueError:
        pass
    for parse in (parse_locomo_date, parse_longmemeval_date, parse_beam_date):
        got = parse(t)
        if got:
            return got
    return None


def _new_id(value: object, seen: set[str], source: str, at: str, duplicate: str) -> None:
    """A non-empty string id not seen before in its conversation (added to `seen`)."""
    if not isinstance(value, str) or not value:
        raise DataError(source, at, "field 'id' must be a non-empty string")
    if value in seen:
        raise DataError(source, at, duplicate)
    seen.add(value)


def check_conversation(conv: Conversation, source: str = "<input>", limits: InputLimits | None = None) -> list[str]:
    """Raise DataError on the first structural problem; repair dates in place; return the warnings."""
    limits = limits or InputLimits()
    where = f"conversation {conv.id!r}"
    if not isinstance(conv.id, str) or not conv.id.strip():
        raise DataError(source, where, "field 'id' must be a non-empty string")
    warnings: list[str] = []
    sessions: set[str] = set()
    turns: set[str] = set()
    total = 0
    for s in conv.sessions:
        at = f"{where}, session {s.id!r}"
        _new_id(s.id, sessions, source, at, "duplicate session id")
        if s.date is not None:
            fixed = iso_date(s.date) if isinstance(s.date, str) else None
            if fixed is None:
                warnings.append(f"{source}: {at}: field 'date' {s.date!r} is not a date; the session is kept undated")
                s.date_text = s.date_text or (s.date if isinstance(s.date, str) else None)
            elif fixed != s.date:
                warnings.append(f"{source}: {at}: field 'date' {s.date!r} normalised to {fixed!r}")
            s.date = fixed
        for t in s.turns:
            tat = f"{at}, turn {t.id!r}"
            _new_id(t.id, turns, source, tat, "duplicate turn id (turn ids must be unique within a conversation)")
            for name in ("speaker", "text"):
                val = getattr(t, name)
                if not isinstance(val, str):
                    got = "null" if val is None else type(val).__name__
                    raise DataError(source, tat, f"field {name!r} must be a string, got {got}")
            if len(t.text) > limits.max_turn_chars:
                raise DataError(source, tat, f"text has {len(t.text):,} characters, over the cap of "
                                f"{limits.max_turn_chars:,} (build.limits.max_turn_chars)")
            total += len(t.text)
    if total > limits.max_conversation_chars:
        raise DataError(source, where, f"{total:,} characters of text, over the cap of "
                        f"{limits.max_conversation_chars:,} (build.limits.max_conversation_chars)")
    return warnings
