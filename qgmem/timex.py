"""Time expressions -> ISO dates or intervals, resolved against a reference date.

Units keep *fact time* (when the thing happened) apart from *utterance time* (the session date).
"I went to a support group yesterday" said on 8 May 2023 has fact time 2023-05-07. Vague
expressions ("recently", "a few days ago", "the other day") resolve to None = unspecified, as the
paper asks. The same resolver serves question parsing (resolve against the question time).
"""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime, timedelta

Interval = tuple[str, str]  # ISO start, ISO end (inclusive); a single day has start == end

MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
MONTHS.update({m.lower(): i for i, m in enumerate(calendar.month_abbr) if m})
MONTHS["sept"] = 9
WEEKDAYS = {d.lower(): i for i, d in enumerate(calendar.day_name)}
NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20,
    "a couple of": 2, "a couple": 2, "couple of": 2,
}

_MON = r"(January|February|March|April|May|June|July|August|September|October|November|December|" \
       r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_NUM = r"(\d+|a couple of|a couple|couple of|an|a|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty)"
_WD = r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday)"

_FUTURE = re.compile(r"\b(will|won't|gonna|going to|(?:am|are|is|'m|'re)\s+going|'ll|plan(?:ning)? to|planning|"
                     r"next|tomorrow|upcoming|soon|can't wait|looking forward)\b", re.IGNORECASE)
_VAGUE = re.compile(r"\b(recently|lately|a while ago|a few (?:days|weeks|months|years) ago|the other day|"
                    r"some time ago|sometime|once|back then|in the past)\b", re.IGNORECASE)


def parse_ref(ref: str | date | datetime | None) -> date | None:
    """Accept an ISO date/datetime string (or a date) as reference; None stays None."""
    if ref is None:
        return None
    if isinstance(ref, datetime):
        return ref.date()
    if isinstance(ref, date):
        return ref
    try:
        return date.fromisoformat(str(ref)[:10])
    except ValueError:
        return None


def _day(d: date) -> Interval:
    return d.isoformat(), d.isoformat()


def _month(y: int, m: int) -> Interval:
    last = calendar.monthrange(y, m)[1]
    return date(y, m, 1).isoformat(), date(y, m, last).isoformat()


def _year(y: int) -> Interval:
    return f"{y:04d}-01-01", f"{y:04d}-12-31"


def _shift_month(y: int, m: int, delta: int) -> tuple[int, int]:
    idx = y * 12 + (m - 1) + delta
    return idx // 12, idx % 12 + 1


def _safe_date(y: int, m: int, d: int) -> date | None:
    try:
        return date(y, m, d)
    except ValueError:
        return None


def _num(word: str) -> int | None:
    word = word.lower()
    if word.isdigit():
        return int(word)
    return NUMBER_WORDS.get(word)


def resolve_time(text: str, ref: str | date | datetime | None) -> Interval | None:
    """The first resolvable time expression in `text` as an inclusive ISO interval, or None.

    Absolute dates need no reference; relative ones ("yesterday", "last week", "two weeks ago") need
    `ref` and give None without it. Vague ones give None.
    """
    r = parse_ref(ref)
    future = bool(_FUTURE.search(text))

    # --- absolute, most specific first
    m = re.search(rf"\b{_DAY}\s+(?:of\s+)?{_MON},?\s+{_YEAR}\b", text)
    if m:
        d = _safe_date(int(m.group(3)), MONTHS[m.group(2).lower()], int(m.group(1)))
        if d:
            return _day(d)
    m = re.search(rf"\b{_MON}\s+{_DAY},?\s+{_YEAR}\b", text)
    if m:
        d = _safe_date(int(m.group(3)), MONTHS[m.group(1).lower()], int(m.group(2)))
        if d:
            return _day(d)
    m = re.search(rf"\b{_MON},?\s+{_YEAR}\b", text)
    if m:
        return _month(int(m.group(2)), MONTHS[m.group(1).lower()])
    m = re.search(rf"\b{_DAY}\s+(?:of\s+)?{_MON}\b", text) or None
    m2 = re.search(rf"\b{_MON}\s+{_DAY}\b(?!\s*(?:am|pm|%|years?|kids|people|minutes|hours))", text)
    if (m or m2) and r is not None:
        day_s, mon_s = (m.group(1), m.group(2)) if m else (m2.group(2), m2.group(1))
        d = _safe_date(r.year, MONTHS[mon_s.lower()], int(day_s))
        if d:
            return _day(d)

    m = re.search(rf"\b(?:in|during|by|until|since|early|late|mid|of|this|last|next)[\s-]+{_MON}(?![\w-])", text)
    if m and r is not None:
        mon = MONTHS[m.group(1).lower()]
        year = r.year
        word = text[m.start():m.start() + 5].lower()
        if word.startswith("next") or (future and mon < r.month):
            year += 1 if mon < r.month else 0
        elif word.startswith("last") or (not future and mon > r.month):
            year -= 1
        return _month(year, mon)

    low = text.lower()
    # --- relative to the reference date
    if r is not None:
        m = re.search(rf"\b{_NUM}\s+(day|week|month|year)s?\s+ago\b", low)
        if m and not low[max(0, m.start() - 6):m.start()].endswith("few "):
            n = _num(m.group(1))
            unit = m.group(2)
            if n is not None:
                if unit == "day":
                    return _day(r - timedelta(days=n))
                if unit == "week":
                    return _day(r - timedelta(weeks=n))
                if unit == "month":
                    return _month(*_shift_month(r.year, r.month, -n))
                return _year(r.year - n)
        m = re.search(rf"\bin\s+{_NUM}\s+(day|week|month|year)s?\b", low)
        if m and future:
            n = _num(m.group(1))
            unit = m.group(2)
            if n is not None:
                if unit == "day":
                    return _day(r + timedelta(days=n))
                if unit == "week":
                    return _day(r + timedelta(weeks=n))
                if unit == "month":
                    return _month(*_shift_month(r.year, r.month, n))
                return _year(r.year + n)
        if re.search(r"\bday before yesterday\b", low):
            return _day(r - timedelta(days=2))
        if re.search(r"\b(yesterday|last night)\b", low):
            return _day(r - timedelta(days=1))
        if re.search(r"\btomorrow\b", low):
            return _day(r + timedelta(days=1))
        if re.search(r"\b(today|tonight|this morning|this afternoon|this evening|right now)\b", low):
            return _day(r)
        monday = r - timedelta(days=r.weekday())
        m = re.search(r"\b(last|this|next)\s+(week|weekend|month|year)\b", low)
        if m:
            which, unit = m.group(1), m.group(2)
            off = {"last": -1, "this": 0, "next": 1}[which]
            if unit == "week":
                start = monday + timedelta(weeks=off)
                return start.isoformat(), (start + timedelta(days=6)).isoformat()
            if unit == "weekend":
                if which == "last":
                    sat = r - timedelta(days=(r.weekday() - 5) % 7 or 7)  # most recent Saturday before today
                    if r.weekday() == 6:
                        sat = r - timedelta(days=8)
                elif which == "this":
                    sat = monday + timedelta(days=5)
                else:
                    sat = monday + timedelta(days=12)
                return sat.isoformat(), (sat + timedelta(days=1)).isoformat()
            if unit == "month":
                return _month(*_shift_month(r.year, r.month, off))
            return _year(r.year + off)
        m = re.search(rf"\b(last|this past|past|next|this|on)\s+{_WD}\b", low) or \
            re.search(rf"\b{_WD}\b()", low)
        if m:
            if m.lastindex == 2 and m.group(2):
                which, wd = m.group(1), WEEKDAYS[m.group(2)]
            else:
                which, wd = "on", WEEKDAYS[m.group(1)]
            if which == "next" or (which in ("on", "this") and future):
                delta = (wd - r.weekday()) % 7 or 7
                return _day(r + timedelta(days=delta))
            delta = (r.weekday() - wd) % 7 or 7
            return _day(r - timedelta(days=delta))
    # --- bare years ("in 2022", "since 2016"); after relative ones so "2 years ago" wins
    m = re.search(rf"\b(?:in|since|from|of|back in|around|by|during|year)\s+{_YEAR}\b", text) or \
        re.search(rf"(?<![\d:/$.,]){_YEAR}(?![\d:/%])", text)
    if m:
        return _year(int(m.group(1)))
    if r is not None and _VAGUE.search(text):
        return None
    return None
