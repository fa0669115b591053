"""Query parsing: entity, location and time constraints of a question (QGMem §III-B1).

Two paths give the same `QueryConstraints`: a rule parser (CPU default, no LLM) and an LLM prompt
returning JSON. Both resolve relative time expressions ("last May", "two weeks ago") against the
question time; the rule parser uses `qgmem.timex`, the resolver that gives memory units their fact
times, so a question and a unit that use the same words get the same interval.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from qgmem.construct.letters import CAP
from qgmem.llm.base import ChatBackend, LLMError
from qgmem.timex import MONTHS, parse_ref, resolve_time
from qgmem.words import load_words


# capitalised words of a question that are not names ("What", "According", "Last")
_STOP_CAPS = load_words("query_stop_caps")
_LOC_PREP = re.compile(rf"\b(?:in|at|near|around|visit(?:ed|ing)?|moved to|trip to|travel(?:led|ed)? to)\s+"
                       rf"((?:{CAP}[\w'-]+)(?:\s+{CAP}[\w'-]+)*)")
_CAP_SEQ = re.compile(rf"\b({CAP}[\w'-]*(?:\s+(?:of\s+|the\s+)?{CAP}[\w'-]*)*)")


@dataclass
class QueryConstraints:
    """What the attribute channel matches; times are ISO dates, inclusive."""

    entities: list[str] = field(default_factory=list)
    location: str | None = None
    time_start: str | None = None
    time_end: str | None = None
    source: str = "rule"  # "rule" | "llm" | "rule-fallback" (LLM reply unusable; counted)
    time_grain: str = "day"  # the unit the time expression counts in ("two weeks ago": "week"); see timex

    def empty(self) -> bool:
        return not self.entities and not self.location and not self.time_start


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
    span = resolve_time(question, question_time)
    return QueryConstraints(
        entities=list(ents), location=loc,
        time_start=span.start if span else None, time_end=span.end if span else None,
        source="rule", time_grain=span.grain if span else "day",
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
        if v is not None and parse_ref(str(v)) is None:
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
