"""Who a third person of a statement is, from the words of the dialogue alone (for construct/turn_changes.py).

Why: a relative's change is told with pronouns across turns ("How's your dad?" - "He retired at the end of
May."), and the extractor often leaves "he" unresolved or keeps another clause of the turn. A person is keyed by
names that hold across sessions: "<speaker>'s <noun>" for "my dad", "Dad" and the other speaker's "your dad",
and a name itself ("Pia"; "my partner Joost" is both). A pronoun takes the latest person mentioned before it,
in the turn or the few turns before, of its gender (qgmem/words/person_nouns.txt: "dad" is a he), else the latest
of either (a name); "they" only a plural ("my parents"). A capitalised word is a name only where the conversation also
writes it capitalised inside a sentence and not after a preposition of place ("in Penzance"): "Still" and
"Brilliant" open sentences, names occur anywhere. Nothing resolves where nothing fits: that statement is left
out, as traces leave out an unresolved subject.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from qgmem.construct.letters import LOWER, NAME
from qgmem.construct.state_cues import MONTHS, WEEKDAYS
from qgmem.words import load_table

PERSON_GENDER = load_table("person_nouns")  # person noun -> f | m | x
_PLURAL = {"parents", "kids", "children", "grandparents", "folks", "in-laws", "twins"}
# kin words a speaker uses for their own (capitalised as a name: "Dad's moved"), with their gender
_KIN = {"mum": "f", "mom": "f", "dad": "m", "gran": "f", "granny": "f", "nan": "f", "nana": "f", "grandma": "f",
        "grandad": "m", "granddad": "m", "grandpa": "m"}
_GENDER = {**PERSON_GENDER, **_KIN}


def person_nouns(words: Iterable[str]) -> str:
    """A regex alternation of the person nouns of `words` (longest first, so "grandma" before "gran")."""
    return "|".join(sorted((w for w in words if len(w) > 2), key=lambda w: (-len(w), w)))


_NOUNS = person_nouns({*PERSON_GENDER, *_KIN})
_MENTION = re.compile(
    rf"\b(?P<poss>my|our|your)\s+(?:(?:little|big|older|younger|eldest|youngest|new|old)\s+)?"
    rf"(?P<noun>{_NOUNS}|parents|folks|in-laws|children)(?P<pl>s)?\b(?:,?\s+(?P<alias>(?-i:{NAME})))?"
    rf"|(?P<name>(?-i:{NAME}))",
    re.IGNORECASE)
_PLACE_BEFORE = re.compile(r"\b(?:in|at|to|from|near|outside|over|above|into|round)\s+(?:the\s+)?$", re.IGNORECASE)
_CALENDAR = MONTHS | WEEKDAYS
_INSIDE = re.compile(rf"(?<=[{LOWER},;:] )(?-i:{NAME})")  # a capitalised word inside a sentence
_PRONOUN = {"he": "m", "him": "m", "his": "m", "she": "f", "her": "f", "they": "p", "them": "p", "their": "p"}


@dataclass(frozen=True)
class Mention:
    keys: frozenset[str]  # the names the person goes by ("Mette's dad"; "Kai's partner" and "Joost")
    gender: str  # m | f | x (either) | p (plural)


def proper_names(texts: Iterable[str]) -> frozenset[str]:
    """Capitalised words the conversation writes inside a sentence, not only after a preposition of place: the
    names of its persons (not "Still", "Brilliant", "Marlow" in "still in Marlow", "Sunday")."""
    return frozenset(m.group(0) for t in texts for m in _INSIDE.finditer(t)
                     if not _PLACE_BEFORE.search(t[:m.start()]) and m.group(0).lower() not in _CALENDAR)


def mentions(text: str, speaker: str | None, addressee: str | None, names: frozenset[str]) -> list[Mention]:
    """The persons a text mentions, in order."""
    out = []
    for m in _MENTION.finditer(text):
        if m.group("name"):
            word = m.group("name")
            kin = word.lower()
            if kin in _KIN and speaker:
                out.append(Mention(frozenset({f"{speaker}'s {kin}"}), _KIN[kin]))
            elif word in names and not _PLACE_BEFORE.search(text[:m.start()]):
                out.append(Mention(frozenset({word}), "x"))
            continue
        owner = addressee if m.group("poss").lower() == "your" else speaker
        if owner is None:
            continue
        noun = m.group("noun").lower()
        plural = bool(m.group("pl")) or noun in _PLURAL
        keys = {f"{owner}'s {noun}{'s' if m.group('pl') else ''}"}
        if m.group("alias") and m.group("alias") in names:
            keys.add(m.group("alias"))
        out.append(Mention(frozenset(keys), "p" if plural else _GENDER.get(noun, "x")))
    return out


def resolve(words: Sequence[str], context: Sequence[Mention], speaker: str | None, addressee: str | None,
            names: frozenset[str]) -> frozenset[str] | None:
    """The keys of the person the first resolvable of `words` names ("my dad", "she", "Pia"), with `context`
    the persons mentioned before them, oldest first; None when none resolves."""
    for w in words:
        low = w.lower()
        gender = _PRONOUN.get(low)
        if gender is None:
            found = mentions(w, speaker, addressee, names)
            if found:
                return found[0].keys
            continue
        # a person of that gender, else the latest of either ("My brother will bring Aurelie. He's been with her");
        # not a speaker: the one spoken to is "you"
        persons = [m for m in context if not m.keys & {speaker, addressee}]
        hit = next((m for m in reversed(persons) if m.gender == gender), None)
        if hit is None and gender != "p":
            hit = next((m for m in reversed(persons) if m.gender == "x"), None)
        if hit is not None:
            return hit.keys
    return None


CONTEXT_TURNS = 8  # a pronoun's person is mentioned in its turn or this many turns before it


class Persons:
    """Who the third persons of a conversation's statements are: the persons a turn mentions before the
    statement and those of the few turns before it, each turn's "my" its speaker's and "your" the other's.
    `speakers` holds the turns whose speaker is known (those with units); a turn without one takes the other of
    two speakers from its neighbours."""

    def __init__(self, turn_texts: Mapping[str, str], speakers: Mapping[str, str]):
        self.texts = turn_texts
        self.ids = list(turn_texts)  # in dialogue order
        self.at = {tid: i for i, tid in enumerate(self.ids)}
        self.people = sorted(set(speakers.values()))
        self.speaker: dict[str, str | None] = {}
        for i, tid in enumerate(self.ids):
            near = {speakers.get(self.ids[j]) for j in (i - 1, i + 1) if 0 <= j < len(self.ids)}
            other = [p for p in self.people if p not in near]
            guess = other[0] if len(self.people) == 2 and len(other) == 1 else None
            self.speaker[tid] = speakers.get(tid, guess)
        self.names = proper_names(turn_texts.values()) | frozenset(w for p in self.people for w in p.split())
        self._whole: dict[int, list[Mention]] = {}  # the mentions of a whole turn, as a context for later turns

    def _addressee(self, speaker: str | None) -> str | None:
        others = [p for p in self.people if p != speaker]
        return others[0] if speaker is not None and len(others) == 1 else None

    def resolve(self, tid: str, words: tuple[str, ...], at: int) -> frozenset[str] | None:
        """The keys of the person `words` name in the sentence at offset `at` of turn `tid`, or None."""
        i = self.at[tid]
        context: list[Mention] = []
        for j in range(max(0, i - CONTEXT_TURNS), i):
            if j not in self._whole:
                sp = self.speaker[self.ids[j]]
                self._whole[j] = mentions(self.texts[self.ids[j]], sp, self._addressee(sp), self.names)
            context += self._whole[j]
        sp = self.speaker[tid]
        context += mentions(self.texts[tid][:at], sp, self._addressee(sp), self.names)
        return resolve(words, context, sp, self._addressee(sp), self.names)
