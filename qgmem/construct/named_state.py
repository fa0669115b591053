"""An attribute a speaker tells with a name as its value: where they live, where they work (for
construct/residence.py and construct/occupation.py; linked by construct/turn_changes.py).

Why one reader: both are told the same two ways. A statement of the state ("I rent a bedsit on Quayle Road",
"I'm a sous chef at the Gilded Pike") names the value; a beginning ("we've moved into a flat in Hollerby",
"I've started at the Hollerby animal clinic") says the value changed, whether or not it names the new one.
Two statements of one person in different sessions are a change when the later one begins something other
than the earlier names, or names only what the earlier does not. `read_named` reads the
statements about the speaker ("I", "we", "X and I") or the one spoken to ("you"); `read_named_others` those
about a third person ("my dad", "your sister", "she", a name), each with the words that name that person, for
construct/holders.py to say who it is: a parent's move is theirs, and changes their home, not the speaker's.
Both are told in one grammar of a subject, its "be" and its "have" (`Grammar`: SELF, OTHER). Not read:
questions, negated or wished statements ("we'd love to move"), in `read_named` a third person before the verb
("my sister says they've moved").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from qgmem.construct.holders import person_nouns
from qgmem.construct.letters import LETTER, NAME
from qgmem.construct.state_cues import MONTHS, WEEKDAYS
from qgmem.words import load_table



@dataclass(frozen=True)
class Grammar:
    """Whose state a pattern reads: its subject, the forms of "be" and "have" after it, its possessive and its
    object pronoun ("took me on"); `habit` is the subject of a bare present ("I fix buses at ...")."""

    subject: str
    be: str
    have: str
    poss: str
    obj: str
    habit: str
    fragments: bool  # subjectless answers ("Still in the flat over the bakery.") are the speaker's

    @property
    def aux(self) -> str:
        return rf"(?:{self.be}|{self.have}| had|'d|’d)?"


_PERSON_NOUNS = person_nouns(load_table("person_nouns"))
# the speaker ("X and I" too) or the one spoken to
SELF = Grammar(subject=rf"(?:i|we|you|{LETTER}+ and i)", be=r"(?:'m|’m|'re|’re| am| are)",
               have=r"(?:'ve|’ve| have)", poss=r"(?:my|our|your)", obj="me", habit=rf"(?:i|we|{LETTER}+ and i)",
               fragments=True)
# a third person: a pronoun, a person noun of a speaker ("my dad", "your big sister", "Mum"), or a name
_NAME_SUBJECT = (rf"(?!(?:we|you|it|my|our|your|this|that|there|here)\b)(?-i:{NAME})"
                 rf"(?:\s+and\s+(?:him|her|(?-i:{NAME})))?")
THIRD_SUBJECT = (rf"(?:he|she|they|(?:my|your|our)\s+(?:(?:little|big|older|younger|eldest|youngest|new|old)\s+)?"
                 rf"(?:{_PERSON_NOUNS})s?|{_NAME_SUBJECT})")
OTHER = Grammar(subject=THIRD_SUBJECT, be=r"(?:'s|’s| is|'re|’re| are)", have=r"(?:'s|’s| has|'ve|’ve| have)",
                poss=r"(?:his|her|their)", obj=r"(?:him|her|them)", habit=THIRD_SUBJECT, fragments=False)
SUBJECT, AUX = SELF.subject, SELF.aux
# a recent time a state began from: "since May", "since the spring", "since the start of June" (not a year: "I've
# been a nurse since 1990" tells an old state)
SINCE = (rf"since\s+(?:the\s+(?:start|end|beginning|middle)\s+of\s+|the\s+|last\s+|early\s+|late\s+)?"
         rf"(?:{'|'.join(sorted(MONTHS))}|spring|summer|autumn|fall|winter|new year)\b")
_NEGATED = re.compile(r"(?:\bnot|n't|n’t|\bnever|\bwant to|\bwould|'d love|'d like|\bif\b|\bmight|\bhope)\b",
                      re.IGNORECASE)
# a third person before the verb: the statement is about them (also read by construct/partner_status.py)
THIRD = re.compile(r"\b(?:he|she|they|he's|she's|they're|his|her|their)\b", re.IGNORECASE)
_NOT_NAME = frozenset(w.capitalize() for w in MONTHS | WEEKDAYS) | {"I", "Mum", "Dad", "Mr", "Mrs", "Ms", "Dr"}
_SENTENCE = re.compile(r"(?<=[.!?;])\s+")
# the words that name a third person in a statement about them: its subject, or the possessive or object
# pronoun the pattern holds ("her flat in Leeds", "the vets took him on"); a first person after them is the subject
HOLDER = re.compile(rf"\b(?:{THIRD_SUBJECT}|his|her|their|him|them)\b", re.IGNORECASE)
_PRONOUNS = frozenset({"he", "she", "they", "his", "her", "their", "him", "them"})
_FIRST = re.compile(r"\b(?:i|we|i'm|i’m|we're|we’re|i've|i’ve|we've|we’ve)\b", re.IGNORECASE)


@dataclass(frozen=True)
class NamedState:
    names: frozenset[str]  # the capitalised names the statements give ("Lindell Court", "Gilded Pike"), else a noun
    # a reader takes for the value ("farm": construct/occupation.py)
    begun: bool  # told as a beginning ("moved in with", "got the keys to", "started at")
    weak: bool = False  # told only as a present habit ("I operate one of the cranes now"): it may be the attribute
    ended: bool = False  # told as ended, with nothing after it ("he retired in June"): none is a value too

    @property
    def changeable(self) -> bool:
        """A state a later one can change: not a weak statement without a name ("I can solve a quadratic in my head
        these days"), which `differs` never counts as changed; a change is of the statement before it."""
        return not (self.weak and not any(map(_is_name, self.names)))

    def differs(self, earlier: NamedState) -> bool:
        """A change: a beginning of something other than the earlier statement names, or other names only.
        A name is the same as one whose words it holds or is held by ("Fairholme", "Fairholme Observatory").
        A weak statement changes only a state that names its value, and is none to change."""
        if (self.weak or earlier.weak) and not any(map(_is_name, earlier.names)):
            return False  # nor one whose value is only a common noun ("at the shop"): too weak against too weak
        if self.ended or earlier.ended:  # told ended twice is one change; a job after the end is another
            return not (self.ended and earlier.ended) and (self.ended or self.begun or bool(self.names))
        if self.begun:
            return not self.names or self.names != earlier.names
        same = any(_same(a, b) for a in self.names for b in earlier.names)
        return bool(self.names and earlier.names) and not same


def _is_name(value: str) -> bool:
    """A capitalised name, not a common noun a reader took for the value ("farm")."""
    return value[:1].isupper()


def _same(a: str, b: str) -> bool:
    x, y = set(a.split()), set(b.split())
    return x <= y or y <= x


# a tag after a statement ("..., did I tell you?", "..., didn't I say?", "..., isn't it?"): still a statement
_TAG = re.compile(r",\s*(?:did|didn't|didn’t|do|don't|don’t|have|haven't|haven’t|is|isn't|isn’t|was|wasn't|"
                  r"wasn’t|are|aren't|aren’t)\s+(?:i|you|we|he|she|it|they)"
                  r"(?:\s+(?:tell|say|mention)(?:\s+you)?)?\s*\?\s*$",
                  re.IGNORECASE)


def asks(sentence: str) -> bool:
    """A question, not a statement with a tag ("Lina's started at the clinic in Preston, did I tell you?")."""
    return sentence.rstrip().endswith("?") and not _TAG.search(sentence)


class Patterns(NamedTuple):
    """How an attribute is told: a beginning, a state held, a weak beginning (tried last; NamedState.weak) and an
    end with nothing after it (NamedState.ended)."""

    begins: re.Pattern[str]
    holds: re.Pattern[str]
    weak: re.Pattern[str] | None = None
    ends: re.Pattern[str] | None = None


def read_named(text: str, patterns: Patterns, names: re.Pattern[str]) -> NamedState | None:
    """What a turn's statements tell of the speaker or the one spoken to (see the module docstring): the names
    of all of them, a beginning if one is. `names` finds a name after a preposition (group 1). None when no
    statement tells the attribute."""
    found = [state for sentence, _, state, m in _statements(text, patterns, names)
             if not THIRD.search(sentence[:m.start()])]
    return merge(found) if found else None


def read_named_others(text: str, patterns: Patterns,
                      names: re.Pattern[str]) -> tuple[tuple[tuple[str, ...], int, NamedState], ...]:
    """What a turn's statements tell of third persons, one (person, offset of the sentence, state) each: the
    person as the words that may name them, the likeliest first ("my dad", "she", "Ilse"; construct/holders.py
    says who it is). The patterns are the OTHER grammar's."""
    out = []
    for sentence, at, state, m in _statements(text, patterns, names):
        inside = [x.group(0) for x in HOLDER.finditer(sentence, m.start(), m.end())  # the subject, or a pronoun
                  if x.start() == m.start() or x.group(0).lower() in _PRONOUNS]
        before = [x for x in HOLDER.finditer(sentence, 0, m.start()) if not _FIRST.search(sentence, x.end(), m.start())]
        who = tuple(inside + [x.group(0) for x in reversed(before)])
        if who:
            out.append((who, at, state))
    return tuple(out)


def merge(states: list[NamedState]) -> NamedState:
    """One person's statements of a turn as one: all their names, a beginning if one is, weak or ended if all
    are."""
    return NamedState(frozenset().union(*(x.names for x in states)), any(x.begun for x in states),
                      weak=all(x.weak for x in states), ended=all(x.ended for x in states))


def _statements(text: str, patterns: Patterns,
                names: re.Pattern[str]) -> list[tuple[str, int, NamedState, re.Match[str]]]:
    """(sentence, its offset, the state it tells, the match) for each statement of the attribute."""
    out = []
    at = 0
    for sentence in _SENTENCE.split(text):  # "So you live in Dunhallow now! Your sister said you moved in June."
        start = text.find(sentence, at)
        at = start + len(sentence)
        if asks(sentence):
            continue
        begin = patterns.begins.search(sentence)
        m = begin or patterns.holds.search(sentence)
        ended = m is None and patterns.ends is not None and (m := patterns.ends.search(sentence)) is not None
        maybe = m is None and patterns.weak is not None and (m := patterns.weak.search(sentence)) is not None
        if m is None or _NEGATED.search(sentence[:m.end()]):
            continue
        found = frozenset(n for n in (" ".join(w for w in g.split() if w not in _NOT_NAME).strip("'’")
                                      for g in names.findall(sentence[m.start():])) if n) if not ended else frozenset()
        if any(map(_is_name, found)):  # a name says more than a common noun ("the seed bank at Ostley")
            found = frozenset(filter(_is_name, found))
        out.append((sentence, start, NamedState(found, begin is not None or maybe, weak=maybe, ended=ended), m))
    return out
