"""What a claim's own words say about a change of state, beyond its relation (rule path of QGMem §III-A2).

The word table (construct/state_table.py) names a unit's state class from its relation and object head.
These cues come from the structure of the claim's sentence, read from the unit's strings (no parser: traces
are regrouped over every unit of a namespace whenever it grows), with the general English words of
`qgmem/words/state_changes.txt`:
- a *marker* that the value is new: "instead", "no longer", "switched" replace an earlier value; "now",
  "these days", "a new ..." say the value is the present one;
- a *change verb* as the relation ("rescheduled the lesson", "handed the class over"), or a *retiming* verb
  followed by a time ("moved the class to Thursdays", "pushed the visit back to May"): the state changed is
  the thing the verb acts on;
- a *departure* ("Mrs. Albright retired"): the subject left the role it held;
- a *recurring time* ("on Tuesday evenings", "every Sunday", "nine till five", "weekends"): the value of a
  schedule, compared by its time words, not by the words of the activity;
- a *role at an organisation* in a copula ("I'm a line cook at Saffron Row"): an employment.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from functools import lru_cache

from qgmem.construct.letters import CAP, UPPER
from qgmem.construct.state_table import IGNORED, PARTICLES, PREPOSITIONS, STOPWORDS, forms, stem, tokens
from qgmem.words import load_rows, load_table

WEEKDAYS = frozenset(d.lower() for d in calendar.day_name)
MONTHS = frozenset(m.lower() for m in calendar.month_name if m)
# the names of the months and weekdays as written, capitalised, as one alternation ("May|Monday|...")
TIME_NAMES = "|".join(sorted(m.capitalize() for m in MONTHS | WEEKDAYS))
_NOTE_RE = re.compile(r"\s*\[[^\]=]+=[^\]]*\]\s*$")  # "[she = Maya]" appended by the rule extractor


@lru_cache(maxsize=1)
def _roles() -> dict[str, frozenset[str]]:
    """role -> phrases of qgmem/words/state_changes.txt."""
    out: dict[str, set[str]] = {}
    for row in load_rows("state_changes"):
        if len(row) != 2:
            raise ValueError(f"state_changes: expected 'phrase<TAB>role', got {row!r}")
        out.setdefault(row[1], set()).add(row[0].lower())
    return {k: frozenset(v) for k, v in out.items()}


def words_of(role: str) -> frozenset[str]:
    return _roles().get(role, frozenset())


def _time_re() -> re.Pattern[str]:
    clock = "|".join(sorted(words_of("clock") | {"noon", "midnight"}))
    return re.compile(rf"\b(?:\d{{1,2}}(?::\d\d)?\s*(?:am|pm)?|{clock})\s*(?:till|until|to|-|–)\s*"
                      rf"(?:half\s+)?(?:\d{{1,2}}(?::\d\d)?|{clock})\b")


_CLOCK_RANGE = _time_re()


def _target_re() -> re.Pattern[str]:
    when = "|".join(sorted(WEEKDAYS | MONTHS | words_of("time") | words_of("date")))
    return re.compile(rf"\b(?:to|until|till|into|for)\s+(?:the\s+|a\s+)?(?:[a-z]+\s+)?"
                      rf"(?:(?:{when})s?\b|\d{{1,2}}(?:st|nd|rd|th)?\b)")


_TIME_TARGET = _target_re()
# "put" something on a day ("put my life-drawing class on Tuesdays"): the object, then the weekday
_ON_DAY = re.compile(r"(?!on\b)(?:[\w'’-]+\s+){0,4}?on\s+(?:(?:" + "|".join(sorted(WEEKDAYS)) + r")s?)\b")


def sentence(text: str, speaker: str) -> str:
    """The claim's sentence: the unit text without the "Speaker: " prefix and the pronoun note."""
    s = text[len(speaker) + 2:] if speaker and text.startswith(f"{speaker}: ") else text
    return _NOTE_RE.sub("", s).strip()


def _has_phrase(toks: list[str], phrases: frozenset[str]) -> bool:
    line = f" {' '.join(toks)} "
    return any(f" {p} " in line for p in phrases)


# irregular pasts that no suffix rule undoes ("hung" -> hang), and what may stand before one used as a noun or
# adjective ("on the left", "a broken arm")
IRREGULAR = load_table("irregular_verbs")
_DETERMINERS = frozenset({"the", "a", "an", "my", "your", "his", "her", "our", "their", "to", "on"})


def verb_forms(toks: list[str], k: int) -> tuple[str, ...]:
    """The base forms token `k` may inflect, its irregular verb's too ("left" -> leave), unless a determiner stands
    before it."""
    past = IRREGULAR.get(toks[k])
    return (*forms(toks[k]), past) if past and not (k and toks[k - 1] in _DETERMINERS) else forms(toks[k])


def _tells(toks: list[str], phrases: frozenset[str]) -> bool:
    """Some word of the sentence, in a base form, starts one of `phrases` that the next words complete. An irregular
    past is read as its verb ("Dr Haddrell's left the surgery"), not after a determiner ("sitting on the left")."""
    for k in range(len(toks)):
        for f in verb_forms(toks, k):
            if f in phrases or any(f"{f} {' '.join(toks[k + 1:k + n])}" in phrases for n in (2, 3)):
                return True
    return False


def _told_retime(toks: list[str]) -> bool:
    """A change or retiming verb of the sentence with a time right after its "to" ("switched the long run to
    Saturday mornings", "has moved to the 7th of October"), or "put" with one after "on" ("the college put my class
    on Wednesdays")."""
    verbs = words_of("change") | words_of("retime")
    for k, t in enumerate(toks):
        after = " ".join(toks[k + 1:k + 9])
        if (any(f in verbs for f in verb_forms(toks, k)) and _TIME_TARGET.search(after)
                or t == "put" and _ON_DAY.match(after)):
            return True
    return False


def _verb_in(relation: str, phrases: frozenset[str]) -> bool:
    """The relation (without a leading negation, "be" or "get") is one of `phrases` in any inflection:
    as a verb and particle ("hand over"), or as a bare verb unless a particle changes its sense ("move
    to" is "move", "move away" is not)."""
    ws = [w for w in relation.lower().replace("’", "'").split() if w not in ("not", "be", "get", "got")]
    if not ws:
        return False
    nxt = ws[1] if len(ws) > 1 else None
    if nxt is not None and any(f"{f} {nxt}" in phrases for f in forms(ws[0])):
        return True
    if nxt is not None and nxt in PARTICLES and nxt not in PREPOSITIONS:
        return False
    return any(f in phrases for f in forms(ws[0]))


@dataclass(frozen=True)
class Cues:
    replaces: bool  # "instead", "no longer", "switched": the claim replaces an earlier value
    now: bool  # "now", "these days", "a new ...": the claim's value is the present one
    present: bool  # "now", "these days" (not "a new ..."): said of the claim as a whole
    change: bool  # a change verb, or a retiming verb with a time after it ("moved X to Thursdays")
    timed: bool  # a time follows the verb ("to Thursdays", "back to May"): the change is a schedule or plan
    departure: bool  # the subject left a role or place ("retired", "moved away", "stepped down")
    told_departure: bool  # the sentence tells of a departure, in any clause ("Dr. X retired, so we see ...")
    told_retime: bool  # the sentence moves something to a time, in any clause ("..., the wedding has moved to
    # the 7th of October")
    recurring: bool  # a recurring time: the claim states a schedule
    role_at: bool  # "a line cook at Saffron Row", "started as content lead at X": a role at an organisation
    works_at: bool  # "I pack bottles at the Milbrook plant": the relation's verb, in the present, at a named place
    ends: bool  # "no longer", "not ... any more": the relation's own state ended
    transfer: bool  # "gave my goldfish to my nephew": the thing went to someone else
    times: frozenset[str]  # time words of the sentence (weekdays, parts of the day, hours, months)


@lru_cache(maxsize=200_000)
def read_cues(text: str, speaker: str, relation: str, obj: str) -> Cues:
    """The cues of one unit, from its own strings (remembered: traces are regrouped as a namespace grows)."""
    raw = sentence(text, speaker)
    low = raw.lower().replace("’", "'")
    toks = tokens(low)
    new_word = bool(re.search(r"\bnew\s+[a-z]", raw))  # "a new job", not "New York"
    day_parts = words_of("time")
    times = frozenset(w for k, t in enumerate(toks) for w in forms(t)[:3] if w in WEEKDAYS or w in MONTHS or (
        w in day_parts and (w not in ("am", "pm") or (k and toks[k - 1][:1].isdigit()))) or w in words_of("clock")
        or w.isdigit())  # "9 am", not "I am"
    plural_time = any(t.endswith("s") and (t[:-1] in WEEKDAYS or t in day_parts) for t in toks)
    every = re.search(r"\b(?:" + "|".join(sorted(words_of("recurring"))) + r")\s+(?:\w+\s+)?(?:"
                      + "|".join(sorted(WEEKDAYS | day_parts | {"day", "week", "month"})) + r")", low)
    span = re.search(r"\b(?:" + "|".join(sorted(WEEKDAYS)) + r")s?\s+(?:to|till|until|-)\s+(?:"
                     + "|".join(sorted(WEEKDAYS)) + r")", low)
    recurring = bool(plural_time or every or span or _CLOCK_RANGE.search(low))
    timed = bool(_TIME_TARGET.search(low))
    change = _verb_in(relation, words_of("change")) or (_verb_in(relation, words_of("retime"))
                                                         and _retimed(relation, obj, low, timed, times))
    rel = relation.strip().lower()
    role_at = (rel == "be" or rel.endswith(" as")) and bool(
        re.match(rf"(?:(?:a|an)\s+)?(?:[\w'’-]+\s+){{1,6}}?(?:at|for)\s+(?:the\s+)?[{UPPER}0-9]", obj.strip())) and (
        rel != "be" or obj.strip().lower().startswith(("a ", "an ")))
    ends = bool(re.search(r"\bno longer\b|\bnot\b.*\b(?:any ?more)\b|n't\b.*\b(?:any ?more)\b", low))
    transfer = _verb_in(relation, words_of("transfer")) and bool(obj.strip()) and bool(
        re.search(r"\bto\s+(?:my|his|her|their|our|your|the|a|an)\s", low))  # not "give us strength to try"
    return Cues(replaces=_has_phrase(toks, words_of("replaces")),
                now=_has_phrase(toks, words_of("now") - {"new"}) or new_word,
                present=_has_phrase(toks, words_of("now") - {"new"}),
                change=change, timed=timed, departure=_verb_in(relation, words_of("departure")),
                told_departure=_tells(toks, words_of("departure")), told_retime=_told_retime(toks),
                recurring=recurring, role_at=role_at, works_at=_works_at(relation, raw), ends=ends, transfer=transfer,
                times=times)


_HABITUAL_AT = re.compile(rf"^[^.!?;]{{0,60}}?\b(?:at|for)\s+(?:the\s+)?{CAP}[\w'’&-]*")


def _works_at(relation: str, raw: str) -> bool:
    """What a person does at a named organisation, said in the present ("I sell tickets at the Harwick ferry
    terminal", "she teaches geography at Fairhaven High", "he's still washing dishes at the Blue Heron"):
    the relation's verb in a present form (base, -s, -ing; not the past) with "at"/"for" and a capitalised
    name in the words after it. A habit at a place of work is how chat tells a job."""
    verb = relation.strip().lower().split()[:1]
    if not verb or verb[0] in ("be", "have", "get", "go", "come", "say", "not"):
        return False
    for m in re.finditer(r"[A-Za-z]+", raw):
        w = m.group(0).lower()
        if verb[0] in forms(w) and not w.endswith("ed") and (w == verb[0] or w.endswith(("s", "ing"))):
            return bool(_HABITUAL_AT.match(raw[m.end():]))
    return False


def _is_time(phrase: str) -> bool:
    """A phrase that names a time ("the second Thursday of the month", "September", "the 7th")."""
    words = [t for t in tokens(phrase) if t[0].isalnum() and t not in STOPWORDS and not re.fullmatch(
        r"\d{1,2}(?:st|nd|rd|th)?|first|second|third|fourth|last", t)]
    when = WEEKDAYS | MONTHS | words_of("time") | words_of("date")
    return bool(words) and any(f in when for f in forms(words[0])) or bool(re.fullmatch(
        r"(?:the\s+)?\d{1,2}(?:st|nd|rd|th)?(?:\s+of\s+\w+)?", phrase.strip().lower()))


def _retimed(relation: str, obj: str, low: str, timed: bool, times: frozenset[str]) -> bool:
    """A retiming verb ("move", "push") moves a state in time: "moved to the second Thursday" (its object a
    time), "Spanish moved to Wednesdays" (no object: a time after "to"), "moved our quiz nights to the Crown
    on Tuesdays" (an object, "to" and a time); "moved to Singapore in May" moves a home, not a time."""
    if relation.strip().lower().split()[-1:] and relation.strip().lower().split()[-1] in ("to", "until", "till",
                                                                                         "into", "for"):
        return _is_time(obj)
    if not obj.strip():
        return timed
    return timed or (bool(re.search(r"\b(?:to|until|till|back|forward)\b", low)) and bool(times))


# words after "X's" that make it "X is" / "X has", not a possessor
_IS_HAS = frozenset("gone got been left moved finished done still now just finally not never off back in at on with "
                    "a an the my his her their our your going doing living working staying sold retired".split())


@lru_cache(maxsize=100_000)
def thing_words(phrase: str) -> frozenset[str]:
    """Content stems of a phrase that name a thing ("Liv's ballet class" -> ballet, class): no function
    words, no time words, no possessor ("Liv's"); class nouns ("class", "trip") are kept, since the thing a
    change acts on is often named by one alone ("moved the class to Fridays")."""
    toks = tokens(phrase)
    out = set()
    for k, t in enumerate(toks):
        if not t[0].isalnum() or t in STOPWORDS or t in IGNORED or t.isdigit() or t in words_of("time"):
            continue
        if t.endswith(("'s", "’s")) and k + 1 < len(toks) and toks[k + 1][0].isalnum() and toks[k + 1] not in _IS_HAS:
            continue  # a possessor: whose thing it is, not which ("Pilchard's gone to ..." is "has": kept)
        out.add(stem(t.removesuffix("'s")))
    return frozenset(out)
