"""Time expressions -> inclusive ISO date intervals, resolved against a reference date.

One resolver for both sides of retrieval: a memory unit's *fact time* is resolved against its session
date ("I joined a beekeeping course yesterday" said on 14 March 2019 -> 2019-03-13), a question's time
constraint against the question time, so the same words always name the same interval. Vague
expressions ("recently", "a few days ago", "the other day", "the week before") resolve to None =
unspecified, as the paper asks: there is nothing to anchor them to.

Besides the interval, a `TimeSpan` says which unit the expression counts in (`grain`): "two weeks ago"
names a single day but is only known to the week. Whether to widen the interval for that when
matching is the matcher's decision (see `qgmem.retrieve.attributes`), not the resolver's.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
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
_ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "eleventh",
             "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth", "eighteenth", "nineteenth"]
ORDINAL_DAYS = {w: i for i, w in enumerate(_ORDINALS, 1)}
ORDINAL_DAYS.update({"twentieth": 20, "thirtieth": 30, "thirty-first": 31, "thirty first": 31})
ORDINAL_DAYS.update({f"twenty{sep}{w}": 20 + i for sep in ("-", " ") for i, w in enumerate(_ORDINALS[:9], 1)})
# a day in words: "the fourteenth of October", "October the second"; longest first ("twenty-first" before "first")
_DAY_WORD = "((?i:" + "|".join(sorted(ORDINAL_DAYS, key=len, reverse=True)) + "))"
_YEAR = r"((?:19|20)\d\d)"
_NUM = r"(\d+|" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + ")"
_SEP = r"(?:,\s*|\s+)"  # "May 1, 2023", "May 1 2023", "December 1,2023"
_WD = r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday)"

_BARE_YEAR_AHEAD = 5  # a bare number further ahead of the reference is a name ("Cyberpunk 2077"), not a year
_FUTURE = re.compile(r"\b(will|won't|gonna|going to|(?:am|are|is|'m|'re)\s+going|'ll|plan(?:ning)? to|planning|"
                     r"next|tomorrow|upcoming|soon|can't wait|looking forward)\b", re.IGNORECASE)


@dataclass(frozen=True)
class TimeSpan:
    """An inclusive ISO interval and the unit its expression counts in ("day", "week", "month", "year")."""

    start: str
    end: str
    grain: str = "day"

    @property
    def interval(self) -> Interval:
        return self.start, self.end


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


def _day(d: date, grain: str = "day") -> TimeSpan:
    return TimeSpan(d.isoformat(), d.isoformat(), grain)


def _days(start: date, end: date, grain: str) -> TimeSpan:
    return TimeSpan(start.isoformat(), end.isoformat(), grain)


def _month(y: int, m: int) -> TimeSpan:
    last = calendar.monthrange(y, m)[1]
    return TimeSpan(date(y, m, 1).isoformat(), date(y, m, last).isoformat(), "month")


def _year(y: int) -> TimeSpan:
    return TimeSpan(f"{y:04d}-01-01", f"{y:04d}-12-31", "year")


def month_interval(y: int, m: int) -> Interval:
    """First and last ISO day of a month."""
    return _month(y, m).interval


def year_interval(y: int) -> Interval:
    """First and last ISO day of a year."""
    return _year(y).interval


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


def _absolute(text: str, r: date | None) -> TimeSpan | None:
    """Dates that name their month: "8 May, 2023", "May 8th 2023", "May 2023", "on 8 May", "in August"."""
    m = re.search(rf"\b{_DAY}\s+(?:of\s+)?{_MON}{_SEP}{_YEAR}\b", text)
    if m:
        d = _safe_date(int(m.group(3)), MONTHS[m.group(2).lower()], int(m.group(1)))
        if d:
            return _day(d)
    m = re.search(rf"\b{_MON}\s+{_DAY}{_SEP}{_YEAR}\b", text)
    if m:
        d = _safe_date(int(m.group(3)), MONTHS[m.group(1).lower()], int(m.group(2)))
        if d:
            return _day(d)
    words = _day_in_words(text)
    if words is not None and words[2] is not None:
        d = _safe_date(words[2], words[1], words[0])
        if d:
            return _day(d)
    m = re.search(rf"\b{_MON},?\s+{_YEAR}\b", text)
    if m:
        return _month(int(m.group(2)), MONTHS[m.group(1).lower()])
    m = re.search(rf"\b{_DAY}\s+(?:of\s+)?{_MON}\b", text) or None
    m2 = re.search(rf"\b{_MON}\s+{_DAY}\b(?!\s*(?:am|pm|%|years?|kids|people|minutes|hours))", text)
    day_mon = ((int(m.group(1)), MONTHS[m.group(2).lower()]) if m else
               (int(m2.group(2)), MONTHS[m2.group(1).lower()]) if m2 else words[:2] if words else None)
    if day_mon is not None and r is not None:
        d = _safe_date(r.year, day_mon[1], day_mon[0])
        if d and d > r and not _FUTURE.search(text):
            d = _safe_date(r.year - 1, d.month, d.day)  # "we met on Aug 15th", said in January: last August
        if d:
            return _day(d)
    # not "of <Month>": "as of November" means up to it, not during it, so "the second week of November"
    # stays unspecified too (resolving it would also move one LoCoMo question's result)
    m = re.search(rf"\b(?:in|during|by|until|since|early|late|mid|this|last|next)[\s-]+{_MON}(?![\w-])", text)
    if m and r is not None:
        return _named_month(text[m.start():m.start() + 5].lower(), MONTHS[m.group(1).lower()], r,
                            bool(_FUTURE.search(text)))
    return None


def _day_in_words(text: str) -> tuple[int, int, int | None] | None:
    """(day, month, year or None) of a day written as an ordinal word: "the fourteenth of October",
    "October the fourteenth, 2023", "May second". Before a month the word needs "of" ("my second May in
    Lisbon" names no day)."""
    m = re.search(rf"\b{_DAY_WORD}\s+of\s+{_MON}(?:{_SEP}{_YEAR})?\b", text)
    if m:
        day_s, mon_s, year_s = m.group(1), m.group(2), m.group(3)
    else:
        m = re.search(rf"\b{_MON}\s+(?:the\s+)?{_DAY_WORD}\b(?:{_SEP}{_YEAR}\b)?", text)
        if not m:
            return None
        mon_s, day_s, year_s = m.group(1), m.group(2), m.group(3)
    return ORDINAL_DAYS[day_s.lower()], MONTHS[mon_s.lower()], int(year_s) if year_s else None


def _named_month(word: str, mon: int, r: date, future: bool) -> TimeSpan:
    """A month named without a year: "last May" is the latest May before this month, "next May" the first
    one after it; otherwise the tense of the sentence picks the year ("in August" said in May: last August)."""
    year = r.year
    if word.startswith("last"):
        year -= 1 if mon >= r.month else 0
    elif word.startswith("next"):
        year += 1 if mon <= r.month else 0
    elif future and mon < r.month:
        year += 1
    elif not future and mon > r.month:
        year -= 1
    return _month(year, mon)


def _counted(low: str, r: date) -> TimeSpan | None:
    """ "three days ago", "two weeks ago", "in 2 months" (future sentences only)."""
    m = re.search(rf"\b{_NUM}\s+(day|week|month|year)s?\s+ago\b", low)
    sign = -1
    if not m or low[max(0, m.start() - 6):m.start()].endswith("few "):
        m = re.search(rf"\bin\s+{_NUM}\s+(day|week|month|year)s?\b", low) if _FUTURE.search(low) else None
        sign = 1
    if not m:
        return None
    n = _num(m.group(1))
    if n is None:
        return None
    unit = m.group(2)
    if unit == "day":
        return _day(r + timedelta(days=sign * n))
    if unit == "week":
        return _day(r + timedelta(weeks=sign * n), "week")
    if unit == "month":
        return _month(*_shift_month(r.year, r.month, sign * n))
    return _year(r.year + sign * n)


def _deictic(low: str, r: date) -> TimeSpan | None:
    """Words anchored at the reference day: yesterday, tomorrow, tonight, last/this/next week|weekend|month|year."""
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
    if not m:
        return None
    which, unit = m.group(1), m.group(2)
    off = {"last": -1, "this": 0, "next": 1}[which]
    if unit == "week":
        start = monday + timedelta(weeks=off)
        return _days(start, start + timedelta(days=6), "week")
    if unit == "weekend":
        if which == "last":
            sat = r - timedelta(days=(r.weekday() - 5) % 7 or 7)  # most recent Saturday before today
            if r.weekday() == 6:
                sat = r - timedelta(days=8)
        else:
            sat = monday + timedelta(days=5 + 7 * off)
        return _days(sat, sat + timedelta(days=1), "day")
    if unit == "month":
        return _month(*_shift_month(r.year, r.month, off))
    return _year(r.year + off)


def _weekday(low: str, r: date, future: bool) -> TimeSpan | None:
    """ "last Friday", "next Monday", "on Sunday": the nearest such day in the sentence's direction."""
    m = re.search(rf"\b(last|this past|past|next|this|on)\s+{_WD}\b", low) or re.search(rf"\b{_WD}\b()", low)
    if not m:
        return None
    if m.lastindex == 2 and m.group(2):
        which, wd = m.group(1), WEEKDAYS[m.group(2)]
    else:
        which, wd = "on", WEEKDAYS[m.group(1)]
    if which == "next" or (which in ("on", "this") and future):
        return _day(r + timedelta(days=(wd - r.weekday()) % 7 or 7))
    return _day(r - timedelta(days=(r.weekday() - wd) % 7 or 7))


def resolve_time(text: str, ref: str | date | datetime | None) -> TimeSpan | None:
    """The first resolvable time expression in `text` as a `TimeSpan`, or None.

    Absolute dates need no reference; relative ones ("yesterday", "last week", "two weeks ago") need
    `ref` and give None without it. Vague ones ("a few weeks ago", "recently") give None.
    """
    r = parse_ref(ref)
    span = _absolute(text, r)
    if span is not None:
        return span
    if r is not None:
        low = text.lower()
        span = _counted(low, r) or _deictic(low, r) or _weekday(low, r, bool(_FUTURE.search(text)))
        if span is not None:
            return span
    # bare years ("in 2022", "since 2016"); after relative ones so "2 years ago" wins
    m = re.search(rf"\b(?:in|since|from|of|back in|around|by|during|year)\s+{_YEAR}\b", text)
    if m:
        return _year(int(m.group(1)))
    m = re.search(rf"(?<![\d:/$.,]){_YEAR}(?![\d:/%])", text)
    if m and (r is None or int(m.group(1)) <= r.year + _BARE_YEAR_AHEAD):
        return _year(int(m.group(1)))
    return None
