"""LLM extraction of atomic units from dialogue windows (QGMem appendix "Prompts for QGMem").

Each window becomes one prompt; windows run concurrently through `backend.complete_many`. A reply is
repaired with `parse_json_lenient`; a reply that is still unusable is re-asked with the error quoted.
Each unit is validated (required fields, turn ids inside the window, a span that includes a new turn);
rejected units are counted and kept as failures with their raw JSON. A window whose every attempt
failed is returned as a failure (error + raw output) for the store and the build table.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from typing import Any

from qgmem.construct.extractor import WindowResult
from qgmem.construct.windows import Window
from qgmem.llm.base import ChatBackend, ChatRequest, ChatResult, LLMError, Message
from qgmem.llm.jsonfix import parse_json_lenient
from qgmem.timex import month_interval, year_interval
from qgmem.types import AtomicUnit

PHASE = "construction"
REQUIRED = ("claim", "first_turn", "last_turn", "subject", "relation", "object")


def load_prompt(name: str) -> str:
    return resources.files("qgmem.construct").joinpath("prompts", name).read_text(encoding="utf-8")


@dataclass
class LLMExtractConfig:
    max_attempts: int = 2  # first ask + re-asks after an unusable reply
    max_tokens: int = 1024
    chunk_windows: int = 0  # windows sent per complete_many batch; 0 = 2 x backend concurrency


class ExtractionError(ValueError):
    """The whole reply is unusable (not JSON, no "units" list)."""


def render_window(window: Window) -> str:
    lines = []
    for t in window.turns:
        tag = "NEW" if t in window.new_turns else "CONTEXT"
        lines.append(f"[{t.id}] [{tag}] {t.render()}")
    return "\n".join(lines)


def build_messages(window: Window, speakers: list[str], template: str) -> list[Message]:
    date = window.session_date_text or window.session_date or "unknown"
    iso = (window.session_date or "")[:10]
    date_s = f"{date} ({iso})" if iso and iso not in date else date
    prompt = template.format(speakers=" and ".join(speakers) or "the speakers", session_date=date_s,
                             window=render_window(window))
    return [{"role": "user", "content": prompt}]


_ISO = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$")


def _norm_time(value: Any, end: bool, where: str) -> str | None:
    """YYYY / YYYY-MM / YYYY-MM-DD (or null/'unspecified') -> YYYY-MM-DD of the interval's start or end."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "null", "none", "unspecified", "unknown")):
        return None
    m = _ISO.match(str(value).strip()[:10])
    if not m:
        raise ValueError(f"{where}: time {value!r} is not YYYY-MM-DD")
    y, mo, d = m.group(1), m.group(2), m.group(3)
    try:
        if d:
            from datetime import date as _date

            return _date(int(y), int(mo), int(d)).isoformat()
        if mo:
            return month_interval(int(y), int(mo))[1 if end else 0]
        return year_interval(int(y))[1 if end else 0]
    except ValueError as e:
        raise ValueError(f"{where}: time {value!r}: {e}") from None


def parse_units_payload(text: str) -> list[Any]:
    """The "units" list of a reply (repairing common JSON damage); ExtractionError if there is none."""
    try:
        data = parse_json_lenient(text)
    except ValueError as e:
        raise ExtractionError(f"reply is not valid JSON: {e}") from None
    if isinstance(data, list):
        return data
    if not isinstance(data, dict) or not isinstance(data.get("units"), list):
        raise ExtractionError('reply must be a JSON object with a "units" list')
    return data["units"]


def validate_unit(raw: Any, window: Window, ns: str, j: int, speakers: list[str], extractor: str) -> AtomicUnit:
    """One unit from the reply, or ValueError naming the field at fault."""
    where = f"units[{j}]"
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected an object, got {type(raw).__name__}")  # noqa: TRY004
    missing = [k for k in REQUIRED if not isinstance(raw.get(k), str) or not raw[k].strip()]
    if missing:
        raise ValueError(f"{where}: missing or empty field(s) {missing}")
    order = [t.id for t in window.turns]
    first, last = raw["first_turn"].strip().strip("[]"), raw["last_turn"].strip().strip("[]")
    for name, tid in (("first_turn", first), ("last_turn", last)):
        if tid not in order:
            raise ValueError(f"{where}.{name}: {tid!r} is not a turn of this window ({order[0]}..{order[-1]})")
    a, b = order.index(first), order.index(last)
    if a > b:
        raise ValueError(f"{where}: first_turn {first} comes after last_turn {last}")
    span = window.turns[a:b + 1]
    new = window.new_ids()
    if not any(t.id in new for t in span):
        raise ValueError(f"{where}: span {first}..{last} has only [CONTEXT] turns; a unit needs a [NEW] turn")
    ents = raw.get("entities") or []
    if not isinstance(ents, list):
        raise ValueError(f"{where}.entities: expected a list")  # noqa: TRY004
    start = _norm_time(raw.get("fact_time_start"), False, f"{where}.fact_time_start")
    end = _norm_time(raw.get("fact_time_end"), True, f"{where}.fact_time_end")
    if start is None and end is not None:
        start = _norm_time(raw.get("fact_time_end"), False, f"{where}.fact_time_end")
    if end is None and start is not None:
        end = _norm_time(raw.get("fact_time_start"), True, f"{where}.fact_time_start")
    if start and end and start > end:
        raise ValueError(f"{where}: fact_time_start {start} is after fact_time_end {end}")
    speaker = raw.get("speaker") if isinstance(raw.get("speaker"), str) and raw.get("speaker") in speakers \
        else next((t.speaker for t in span if t.id in new), span[0].speaker)
    loc = raw.get("location")
    loc = loc.strip() if isinstance(loc, str) and loc.strip() and loc.strip().lower() not in ("null", "none") else None
    return AtomicUnit(
        id=f"{ns}/{window.key}/u{j}", namespace=ns, session_id=window.session_id, text=raw["claim"].strip(),
        first_turn=first, last_turn=last, turn_ids=[t.id for t in span], speaker=speaker,
        subject=raw["subject"].strip(), relation=raw["relation"].strip(), object=raw["object"].strip(),
        entities=[str(e).strip() for e in ents if str(e).strip()], location=loc,
        fact_time_start=start, fact_time_end=end, utterance_time=window.session_date, extractor=extractor,
    )


class LLMExtractor:
    """Window -> units with an LLM; see module docstring for the failure policy."""

    def __init__(self, backend: ChatBackend, config: LLMExtractConfig | None = None, name: str = "llm"):
        self.backend = backend
        self.config = config or LLMExtractConfig()
        self.name = name
        self.template = load_prompt("extract.txt")

    def run(self, windows: list[Window], ns: str, speakers: list[str]) -> Iterator[WindowResult]:
        """Results in window order, one chunk of concurrent requests at a time (so a kill loses little)."""
        chunk = self.config.chunk_windows or max(1, 2 * int(getattr(self.backend, "max_concurrency", 1) or 1))
        for s in range(0, len(windows), chunk):
            yield from self._run_chunk(windows[s:s + chunk], ns, speakers)

    def _request(self, messages: list[Message]) -> ChatRequest:
        return ChatRequest(messages=messages, temperature=0.0, max_tokens=self.config.max_tokens, json_mode=True)

    def _run_chunk(self, windows: list[Window], ns: str, speakers: list[str]) -> list[WindowResult]:
        results = [WindowResult(w) for w in windows]
        convos = [build_messages(w, speakers, self.template) for w in windows]
        pending = list(range(len(windows)))
        for attempt in range(max(1, self.config.max_attempts)):
            if not pending:
                break
            sent = [self._request(convos[i]) for i in pending]
            for i, req in zip(pending, sent):
                results[i].requests.append(req)
            replies = self.backend.complete_many(sent, phase=PHASE)
            retry: list[int] = []
            for i, rep in zip(pending, replies):
                r = results[i]
                r.attempts = attempt + 1
                if isinstance(rep, LLMError):
                    r.error, r.raw = f"LLM call failed: {rep}", getattr(rep, "raw", None)
                    continue  # the backend already retried transport errors
                assert isinstance(rep, ChatResult)
                r.raw = rep.text
                try:
                    items = parse_units_payload(rep.text)
                except ExtractionError as e:
                    r.error = str(e)
                    convos[i] = convos[i] + [
                        {"role": "assistant", "content": rep.text},
                        {"role": "user", "content": f"That reply could not be used: {e}. Reply again with ONLY the "
                                                    'JSON object {"units": [...]} described above.'},
                    ]
                    retry.append(i)
                    continue
                r.error, r.units, r.rejected = None, [], []
                for j, item in enumerate(items):
                    try:
                        r.units.append(validate_unit(item, windows[i], ns, j, speakers, self.name))
                    except ValueError as e:
                        r.rejected.append({"unit": item, "reason": str(e)})
            pending = retry
        return results


def rejected_summary(rejected: list[dict[str, Any]]) -> tuple[str, str]:
    """(error, raw) for storing a window's rejected units as one failure record."""
    reasons = "; ".join(r["reason"] for r in rejected)
    return f"{len(rejected)} unit(s) rejected: {reasons}", json.dumps([r["unit"] for r in rejected], default=str)
