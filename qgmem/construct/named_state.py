"""An attribute a speaker tells with a name as its value: where they live, where they work (for
construct/residence.py and construct/occupation.py; linked by construct/turn_changes.py).

Why one reader: both are told the same two ways. A statement of the state ("I rent a bedsit on Quayle Road",
"I'm a sous chef at the Gilded Pike") names the value; a beginning ("we've moved into a flat in Hollerby",
"I've started at the Hollerby animal clinic") says the value changed, whether or not it names the new one.
Two statements of one person in different sessions are a change when the later one begins something other
than the earlier names, or names only what the earlier does not. Only statements about the speaker ("I",
"we", "X and I") or the one spoken to ("you"): a parent's move is theirs. Not read: questions, negated or
wished statements ("we'd love to move"), a third person before the verb ("my sister says they've moved").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from qgmem.construct.state_cues import MONTHS, WEEKDAYS

SUBJECT = r"(?:i|we|you|[a-z]+ and i)"  # the speaker ("X and I" too) or the one spoken to
AUX = r"(?:'ve|’ve|'m|’m|'re|’re| have| am| are| had|'d)?"
_NEGATED = re.compile(r"(?:\bnot|n't|n’t|\bnever|\bwant to|\bwould|'d love|'d like|\bif\b|\bmight|\bhope)\b",
                      re.IGNORECASE)
# a third person before the verb: the statement is about them (also read by construct/partner_status.py)
THIRD = re.compile(r"\b(?:he|she|they|he's|she's|they're|his|her|their)\b", re.IGNORECASE)
_NOT_NAME = frozenset(w.capitalize() for w in MONTHS | WEEKDAYS) | {"I", "Mum", "Dad", "Mr", "Mrs", "Ms", "Dr"}
_SENTENCE = re.compile(r"(?<=[.!?;])\s+")


@dataclass(frozen=True)
class NamedState:
    names: frozenset[str]  # the capitalised names the statements give ("Lindell Court", "Gilded Pike")
    begun: bool  # told as a beginning ("moved in with", "got the keys to", "started at")
    weak: bool = False  # told only as a present habit ("I operate one of the cranes now"): it may be the attribute

    def differs(self, earlier: NamedState) -> bool:
        """A change: a beginning of something other than the earlier statement names, or other names only.
        A name is the same as one whose words it holds or is held by ("Fairholme", "Fairholme Observatory").
        A weak statement changes only a state that names its value, and is none to change."""
        if (self.weak or earlier.weak) and not earlier.names:
            return False
        if self.begun:
            return not self.names or self.names != earlier.names
        same = any(_same(a, b) for a in self.names for b in earlier.names)
        return bool(self.names and earlier.names) and not same


def _same(a: str, b: str) -> bool:
    x, y = set(a.split()), set(b.split())
    return x <= y or y <= x


def read_named(text: str, begins: re.Pattern[str], holds: re.Pattern[str], names: re.Pattern[str],
               weak: re.Pattern[str] | None = None) -> NamedState | None:
    """What a turn's statements tell (see the module docstring): the names of all of them, a beginning if one
    is. `names` finds a name after a preposition (group 1); `weak`, tried last, a beginning that may not be of
    the attribute (NamedState.weak). None when no statement tells the attribute."""
    told = begun = strong = False
    found: set[str] = set()
    for sentence in _SENTENCE.split(text):  # "So you live in Dunhallow now! Your sister said you moved in June."
        if sentence.rstrip().endswith("?"):
            continue
        begin = begins.search(sentence)
        m = begin or holds.search(sentence)
        maybe = m is None and weak is not None and (m := weak.search(sentence)) is not None
        if m is None or _NEGATED.search(sentence[:m.end()]) or THIRD.search(sentence[:m.start()]):
            continue
        told, begun, strong = True, begun or begin is not None or maybe, strong or not maybe
        found.update(n for n in (" ".join(w for w in g.split() if w not in _NOT_NAME).strip("'’")
                                 for g in names.findall(sentence[m.start():])) if n)
    return NamedState(frozenset(found), begun, weak=not strong) if told else None
