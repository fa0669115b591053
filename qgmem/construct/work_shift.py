"""The shift a speaker works, told in a sentence: one attribute, its value the shifts and hours named (for
construct/attribute_changes.py).

Why: a new rota shares no word with the old one ("I'm still on nights at the sorting depot" -> "managers work days,
so no more nights!"; "I'm on the two-till-ten at the call centre" -> "I'm on seven till three since the new year"),
and the words it does share ("the ward", "the depot") name the workplace, not what changed. English names the shift
itself, of the speaker or the one spoken to: on a shift ("I'm on nights", "we're on the day shift", "I'm only on
lates these days"), working one ("I work nights", "I do nights", "I work nine to five"), put on one ("the ward put
me on days", "they've put me on earlies"), moved to one ("I switched to the late crossings", "I swapped to weekday
shifts"), hours held ("I'm on seven till three"), a part of the day ("I work the afternoon now", "Afternoons now."),
the hours of a habit ("I clean offices, Monday to Friday from six to nine"), a shift after a habit's place ("I weigh
fish at the cooperative, the early shift"), hours by their ends ("my turn starts at one and ends at nine"), or a
shift left ("I'm off nights!", "no more nights"). Its value is the shift kinds named (night, day, early, late,
weekday, weekend, morning, afternoon, evening) and the hours, in one form ("seven till three" is "seven to three").
Two statements of one person in different sessions are a change when they share no value. Not read: a shift of
someone else ("he's on nights"), a question, a time that is no shift ("I'm on holiday", "on Tuesday"). General
English, no benchmark or fixture vocabulary.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from qgmem.construct.state_cues import IRREGULAR

_NUMBER = (r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|noon|midnight|\d{1,2}(?:[:.]\d\d)?"
           r"(?:\s*(?:am|pm|a\.m\.|p\.m\.))?)")
_HOURS = rf"{_NUMBER}(?:\s+|-)(?:till|until|to|-)(?:\s+|-){_NUMBER}"
_COUNT = r"(?:(?:one|two|three|four|five|six|seven|\d)\s+)?"  # "four night shifts a week"
_SHIFT = (rf"(?:the\s+)?{_COUNT}(?:{_HOURS}(?:\s+shifts?)?|(?:nights|days|earlies|lates|weekdays|weekends|mornings|"
          rf"afternoons|evenings)\b|(?:night|day|early|late|weekday|weekend|morning|afternoon|evening)\s+"
          rf"(?:shifts?|rota|runs?|crossings?))")
# a part of the day worked: "I work the afternoon now", "Afternoons now." (an answer: the speaker's)
_PART = r"(?:mornings|afternoons|evenings|nights)"
_PERSON = r"(?:i|we|you)"
# a verb of a present habit after the person, not a past ("I drove", "I met her at the pub")
_PAST = "|".join(sorted({"was", "were", "had", "did", *(w for w, base in IRREGULAR.items() if w != base)}))
_HABIT = rf"\b{_PERSON}\s+(?:still\s+|now\s+|only\s+)?(?!(?:{_PAST})\b)[a-z]+(?<![^e]ed)\b"
_ON = re.compile(
    rf"\b{_PERSON}(?:'m|’m|'re|’re| am| are|'ve been|’ve been| have been)\s+"
    rf"(?:still\s+|now\s+|only\s+|back\s+|just\s+)*on\s+{_SHIFT}"
    rf"|\b{_PERSON}\s+(?:still\s+|now\s+|only\s+)?(?:work|do)\s+{_SHIFT}"
    rf"|\bput\s+(?:me|us|you)\s+on\s+{_SHIFT}"
    rf"|\b{_PERSON}(?:'ve|’ve| have)?\s+(?:switched|swapped|moved|changed|gone|went)\s+(?:over\s+|back\s+)?"
    rf"to\s+{_SHIFT}"
    rf"|\b{_PERSON}\s+(?:still\s+|now\s+|only\s+)?(?:work|do)\s+the\s+(?:morning|afternoon|evening)\b"
    rf"|^\s*{_PART}\s+now\b"
    # hours of a habit: "I clean offices, Monday to Friday from six to nine in the morning" (not a past: "I drove")
    rf"|{_HABIT}[^.!?;]{{0,80}}?\bfrom\s+{_HOURS}"
    # a shift after a habit's place: "I weigh fish at the cooperative, the early shift from five to one"
    rf"|{_HABIT}[^.!?;]{{0,80}}?,\s+(?:on\s+)?{_SHIFT}",
    re.IGNORECASE)
# hours told by their ends: "since March my turn starts at one and ends at nine"
_STARTS_ENDS = re.compile(rf"\b(?:my|our)\s+(?:turn|shift|day)\s+(?:now\s+)?(?:starts|begins)\s+at\s+"
                          rf"(?P<start>{_NUMBER})\s+and\s+(?:ends|finishes|stops)\s+at\s+(?P<end>{_NUMBER})\b",
                          re.IGNORECASE)
_OFF = re.compile(rf"\b{_PERSON}(?:'m|’m|'re|’re| am| are)\s+(?:finally\s+)?off\s+{_SHIFT}"
                  rf"|\bno\s+(?:more\s+)?{_SHIFT}(?!\s+off)", re.IGNORECASE)  # "no more nights", "no nights at all"
# the value a match names: its hours as said, or the kind of shift
_VALUE = re.compile(rf"(?P<hours>{_HOURS})|\b(?P<kind>night|earl|late|weekday|weekend|day|morning|afternoon|evening)",
                    re.IGNORECASE)  # not the "day" of "Monday"
_ENDS_IN_HOURS = re.compile(rf"\bfrom\s+(?P<hours>{_HOURS})$", re.IGNORECASE)  # "... from six to nine"
_KINDS = {"earl": "early"}
# a word every pattern needs: most turns have none and are passed over in one search
_ANY = re.compile(rf"night|day|earl|late|week|morning|afternoon|evening|shift|turn|{_HOURS}", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+")


@dataclass(frozen=True)
class Shift:
    kinds: frozenset[str]  # night, day, early, late, weekday, weekend; and hours as said ("seven till three")
    left: frozenset[str] = frozenset()  # the kinds told as left ("I'm off nights!")

    def differs(self, earlier: Shift) -> bool:
        """A change: no kind of the earlier shift is held now, and one is held or the earlier one left."""
        if self.kinds & earlier.kinds:
            return False
        return bool(self.kinds) or bool(self.left & earlier.kinds)


def _value(m: re.Match[str]) -> str:
    """The value of a shift a pattern matched: its hours ("seven till three") or its kind ("night")."""
    tail = m.group(0)[max(m.group(0).lower().rfind(" on "), m.group(0).lower().rfind(" to "), 0):]
    v = _ENDS_IN_HOURS.search(m.group(0)) or _VALUE.search(tail) or _VALUE.search(m.group(0))
    if v is None:
        return m.group(0).lower()
    if v.group("hours"):
        start, end = re.split(r"[\s-]+(?:till|until|to|-)?[\s-]*", v.group("hours").lower(), maxsplit=1)
        return f"{start} to {end}"  # "six till nine" is "six to nine"
    kind = v.group("kind").lower()
    return _KINDS.get(kind, kind)


@lru_cache(maxsize=20_000)  # whole turns as keys, as turn_changes.py's memos
def work_shift(text: str) -> Shift | None:
    """The shift a turn's statements tell of its speaker or the one spoken to (see the module docstring), or None."""
    if not _ANY.search(text):
        return None
    held, left = set(), set()
    for sentence in _SENTENCE.split(text):
        if sentence.rstrip().endswith("?"):
            continue
        held |= {_value(m) for m in _ON.finditer(sentence)}
        held |= {f"{m['start'].lower()} to {m['end'].lower()}" for m in _STARTS_ENDS.finditer(sentence)}
        left |= {_value(m) for m in _OFF.finditer(sentence)}
    if not held and not left:
        return None
    return Shift(frozenset(held - left), frozenset(left))


def shifts_of_others(text: str) -> tuple[()]:
    """Third persons' shifts are not read (a rota is told of oneself)."""
    return ()
