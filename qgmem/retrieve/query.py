"""Query parsing: entity, location and time constraints of a question (QGMem §III-B1).

Two paths give the same `QueryConstraints`: a rule parser (CPU default, no LLM) and an LLM prompt
returning JSON. Both resolve relative time expressions ("last May", "two weeks ago") against the
question time, so the attribute channel can match intervals against unit fact times.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, field
from datetime import date, timedelta
from importlib import resources
from typing import Any

from qgmem.llm.base import ChatBackend, LLMError

MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
MONTHS.update({m.lower(): i for i, m in enumerate(calendar.month_abbr) if m})
_FULL_MONTHS = "|".join(m.lower() for m in calendar.month_name if m)
NUM_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
             "eight": 8, "nine": 9, "ten": 10, "few": 3, "couple of": 2, "several": 3}
_STOP_CAPS = {"what", "when", "where", "who", "whom", "whose", "which", "why", "how", "is", "are", "was", "were",
              "did", "does", "do", "has", "have", "had", "can", "could", "would", "should", "will", "i", "the",
              "a", "an", "in", "on", "at", "and", "or", "if", "my", "me", "according", "besides", "after",
              "before", "during", "since", "last", "next", "this", "that", "these", "those", "yes", "no",
              "considering", "based", "given", "apart", "other", "also", "both", "between", "while", "any",
              "some", "for", "from", "to", "of", "with", "about", "as", "by", "not", "it", "its", "so"}
_LOC_PREP = re.compile(r"\b(?:in|at|near|around|visit(?:ed|ing)?|moved to|trip to|travel(?:led|ed)? to)\s+((?:[A-Z][\w'-]+)(?:\s+[A-Z][\w'-]+)*)")
_CAP_SEQ = re.compile(r"\b([A-Z][\w'-]*(?:\s+(?:of\s+|the\s+)?[A-Z][\w'-]*)*)")


@dataclass
class QueryConstraints:
    """What the attribute channel matches; times are ISO dates, inclusive."""

    entities: list[str] = field(default_factory=list)
    location: str | None = None
    time_start: str | None = None
    time_end: str | None = None
    source: str = "rule"  # "rule" | "llm" | "rule-fallback" (LLM reply unusable; counted)

    def empty(self) -> bool:
        return not self.entities and not self.location and not self.time_start


def _parse_day(s: str | None) -> date | None:
    if not s:
        return None
    try:
        return date.fromisoformat(s[:10])
    except ValueError:
        return None


def _month_span(y: int, m: int) -> tuple[date, date]:
    return date(y, m, 1), date(y, m, calendar.monthrange(y, m)[1])


def _shift_months(d: date, months: int) -> date:
    y, m = divmod(d.month - 1 + months, 12)
    y += d.year
    return date(y, m + 1, min(d.day, calendar.monthrange(y, m + 1)[1]))


def resolve_time(text: str, now: date | None) -> tuple[date, date] | None:
    """The date interval a time expression in `text` names, relative ones resolved against `now`."""
    t = text.lower()
    # explicit "May 7, 2023" / "7 May 2023"
    m = re.search(r"\b(\d{1,2})\s+(" + "|".join(MONTHS) + r")\.?,?\s+(\d{4})\b", t)
    if m:
        y, mon, day = int(m.group(3)), MONTHS[m.group(2)], int(m.group(1))
        if _valid(y, mon, day):
            return date(y, mon, day), date(y, mon, day)
    m = re.search(r"\b(" + "|".join(MONTHS) + r")\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b", t)
    if m and _valid(int(m.group(3)), MONTHS[m.group(1)], int(m.group(2))):
        d = date(int(m.group(3)), MONTHS[m.group(1)], int(m.group(2)))
        return d, d
    m = re.search(r"\b(" + "|".join(MONTHS) + r")\.?,?\s+(\d{4})\b", t)
    if m:
        return _month_span(int(m.group(2)), MONTHS[m.group(1)])
    m = re.search(r"\b(?:in|during|since|of)\s+((?:19|20)\d{2})\b", t)
    if m:
        y = int(m.group(1))
        return date(y, 1, 1), date(y, 12, 31)
    if now is None:
        return None
    if re.search(r"\byesterday\b", t):
        d = now - timedelta(days=1)
        return d, d
    if re.search(r"\btoday\b", t):
        return now, now
    m = re.search(r"\b(\d+|" + "|".join(NUM_WORDS) + r")\s+(day|week|month|year)s?\s+ago\b", t)
    if m:
        n = int(m.group(1)) if m.group(1).isdigit() else NUM_WORDS[m.group(1)]
        unit = m.group(2)
        if unit == "day":
            d = now - timedelta(days=n)
            return d, d
        if unit == "week":
            d = now - timedelta(weeks=n)
            return d - timedelta(days=3), d + timedelta(days=3)
        if unit == "month":
            d = _shift_months(now, -n)
            return _month_span(d.year, d.month)
        return date(now.year - n, 1, 1), date(now.year - n, 12, 31)
    m = re.search(r"\b(last|this|next)\s+(week|month|year|weekend)\b", t)
    if m:
        rel, unit = m.groups()
        step = {"last": -1, "this": 0, "next": 1}[rel]
        if unit in ("week", "weekend"):
            start = now - timedelta(days=now.weekday()) + timedelta(weeks=step)
            return (start + timedelta(days=5), start + timedelta(days=6)) if unit == "weekend" else (start, start + timedelta(days=6))
        if unit == "month":
            d = _shift_months(now.replace(day=1), step)
            return _month_span(d.year, d.month)
        return date(now.year + step, 1, 1), date(now.year + step, 12, 31)
    m = re.search(r"\b(last|this|next)\s+(" + _FULL_MONTHS + r")\b", t)
    if m:
        rel, mon = m.group(1), MONTHS[m.group(2)]
        y = now.year
        if rel == "last":
            y = now.year if mon < now.month else now.year - 1
        elif rel == "next":
            y = now.year if mon > now.month else now.year + 1
        return _month_span(y, mon)
    m = re.search(r"\bin\s+(" + _FULL_MONTHS + r")\b", t)
    if m:
        mon = MONTHS[m.group(1)]
        y = now.year if mon <= now.month else now.year - 1
        return _month_span(y, mon)
    return None


def _valid(y: int, m: int, d: int) -> bool:
    return 1 <= d <= calendar.monthrange(y, m)[1]


def parse_rule(question: str, question_time: str | None = None, known_entities: list[str] | None = None) -> QueryConstraints:
    """Constraints from capitalised phrases, location prepositions and time expressions.

    `known_entities` (e.g. the memory's entity vocabulary) are matched case-insensitively as whole
    words, so lower-case mentions ("my dog rex") are found too.
    """
    ents: dict[str, None] = {}
    loc = None
    lm = _LOC_PREP.search(question)
    if lm and lm.group(1).lower() not in _STOP_CAPS and lm.group(1).lower() not in MONTHS:
        loc = lm.group(1)
    for m in _CAP_SEQ.finditer(question):
        words = [w for w in m.group(1).split() if w.lower() not in _STOP_CAPS and w.lower() not in MONTHS]
        phrase = " ".join(words).strip(" '")
        phrase = re.sub(r"'s$", "", phrase)
        if phrase and not phrase.isdigit() and phrase != loc:
            ents.setdefault(phrase, None)
    if known_entities:
        low = question.lower()
        for e in known_entities:
            el = e.lower()
            if len(el) > 2 and re.search(r"(?<!\w)" + re.escape(el) + r"(?!\w)", low):
                ents.setdefault(e, None)
    span = resolve_time(question, _parse_day(question_time))
    return QueryConstraints(
        entities=list(ents), location=loc,
        time_start=span[0].isoformat() if span else None, time_end=span[1].isoformat() if span else None,
        source="rule",
    )


def _prompt() -> str:
    return resources.files("qgmem.retrieve").joinpath("prompts/parse_query.txt").read_text(encoding="utf-8")


def _validate(value: Any) -> QueryConstraints:
    if not isinstance(value, dict):
        raise ValueError("reply must be a JSON object with keys entities, location, time_start, time_end")
    ents = value.get("entities") or []
    if isinstance(ents, str):
        ents = [ents]
    if not isinstance(ents, list):
        raise ValueError("'entities' must be a list of strings")
    loc = value.get("location") or None
    ts, te = value.get("time_start") or None, value.get("time_end") or None
    for name, v in (("time_start", ts), ("time_end", te)):
        if v is not None and _parse_day(str(v)) is None:
            raise ValueError(f"'{name}' must be an ISO date YYYY-MM-DD or null, got {v!r}")
    if ts and not te:
        te = ts
    if te and not ts:
        ts = te
    return QueryConstraints(entities=[str(e).strip() for e in ents if str(e).strip()],
                            location=str(loc).strip() if loc else None,
                            time_start=str(ts)[:10] if ts else None, time_end=str(te)[:10] if te else None,
                            source="llm")


class QueryParser:
    """Rule or LLM parsing; LLM failures fall back to the rule parser and are counted in `failures`."""

    def __init__(self, kind: str = "rule", llm: ChatBackend | None = None, max_tokens: int = 160):
        if kind not in ("rule", "llm"):
            raise ValueError(f"query_parser must be 'rule' or 'llm', got {kind!r}")
        if kind == "llm" and llm is None:
            raise ValueError("query_parser='llm' needs an LLM backend")
        self.kind = kind
        self.llm = llm
        self.max_tokens = max_tokens
        self.failures: list[dict[str, str]] = []

    def parse(self, question: str, question_time: str | None = None,
              known_entities: list[str] | None = None) -> QueryConstraints:
        if self.kind == "rule":
            return parse_rule(question, question_time, known_entities)
        from qgmem.llm.jsonfix import chat_json

        user = _prompt().replace("{question_time}", question_time or "unknown").replace("{question}", question)
        try:
            return chat_json(self.llm, [{"role": "user", "content": user}], validate=_validate, retries=1,
                             phase="retrieval", max_tokens=self.max_tokens)
        except (LLMError, ValueError) as e:
            self.failures.append({"question": question, "error": str(e), "raw": getattr(e, "raw", "")})
            c = parse_rule(question, question_time, known_entities)
            c.source = "rule-fallback"
            return c
