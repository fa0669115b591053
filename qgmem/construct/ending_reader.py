"""The reading that construct/leaving.py and construct/called_off.py share: a sentence's patterns tried in
order, the first one not wished or negated wins, and what it names is either named there (a capitalised
name: "the Tarnside crew", "Skerrowick") or by reference (a pronoun, a common noun or nothing: "I dropped it",
"the trip's off"), when the turn or the question before it names the thing (construct/turn_changes.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from qgmem.words import load_table

_PRONOUNS = frozenset({"it", "them", "that", "they", "this", "those"})
# a person is not a thing that ends: "my parents split up", "Mel's off", "let the kids go"
_PERSONS = frozenset(load_table("person_nouns")) | frozenset({"people", "children", "men", "women"})
# a wish, a doubt or a negation in the clause before the verb, or in what the pattern read: nothing was done
_WISH = re.compile(r"(?:\bnot\b|n't|n’t|\bnever|\bwon't|\bwould|'d\s+(?!renew)|\bwant(?:s|ed)?\s+to|\bmight"
                   r"|(?-i:\bmay\b)|\bthinking\s+(?:of|about)|\bgoing\s+to|\bgonna|\bshould|\bcould|\bif\b|\bhope"
                   r"|\bunless|\bwhether|\bcan't|\bcan’t|\bnearly|\balmost|\babout\s+to|\bin\s+case)", re.IGNORECASE)
CLAUSE = re.compile(r"[,;:.!]|\b(?:and|but|so|because)\b")  # a wish or a negation holds within its clause


@dataclass(frozen=True)
class Ending:
    thing: str  # what ended as the sentence names it ("the club", "Skerrowick", "it"); "" when left out
    by_reference: bool  # a pronoun, a common noun or nothing: the thing is named elsewhere (the question before)


def read_ending(sentence: str, patterns: Iterable[re.Pattern[str]], people: frozenset[str],
                negating: frozenset[re.Pattern[str]] = frozenset()) -> Ending | None:
    """The first of `patterns` that the sentence tells, not wished or negated, and not of a person (`people`:
    the namespace's speakers). A pattern in `negating` reads a negation itself ("we didn't renew")."""
    for pattern in patterns:
        m = pattern.search(sentence)
        if m is None:
            continue
        clause = CLAUSE.split(sentence[:m.start()])[-1]
        if _WISH.search(clause) or (pattern not in negating and _WISH.search(m.group(0))):
            continue
        thing = (m.groupdict().get("thing") or "").strip()
        words = thing.split()
        head = words[-1] if words else ""
        if head in people or head.lower() in _PERSONS or head.lower().rstrip("s") in _PERSONS:
            continue
        named = any(w[:1].isupper() for w in words[1:]) or (len(words) == 1 and words[0][:1].isupper()
                                                             and words[0].lower() not in _PRONOUNS)
        return Ending(thing, not named)
    return None
