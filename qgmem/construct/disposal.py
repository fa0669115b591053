"""A thing leaving its owner, told in a sentence (for construct/turn_changes.py).

Why: an ownership ends in words the old state does not use, and the thing itself is mostly a pronoun or left
out, because the other speaker has just named it: "And the motorbike?" -> "Sold in March."; "Where's the
tandem?" -> "We sold it."; "How's the Vespa?" -> "It belongs to my nephew now.". So the rule extractor keeps no
claim of it ("sold it" names nothing) and the turn shares no word with "I've still got the old tandem". The
reading here is of the sentence's grammar only, general English: the owner sells, scraps or gives the thing
away ("we sold it", "I got rid of the car", "gave him away", "we rehomed her", "traded the Renault in"), or the
thing goes to someone or somewhere ("the
Volvo went to the scrapyard", "it's gone for scrap", "Pilchard's gone to my aunt's", "it belongs to my nephew",
"the Velmont paid for the new roof", "my bike was stolen", "the Puffin has a new owner"), or someone takes it
away or has it now ("a couple drove the Dandelion away", "came for it with a trailer", "a dealer drove off with
your records", "somebody nicked it", "a neighbour took the freezer off my hands", "my brother has it now").
Not read: questions, negated sentences ("I'd never sell it"), a wish ("I want to sell it"), a person going
somewhere ("we went to the coast"; "he went to" is a person, so only "it" and names), the speaker having it ("I
have it now").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from qgmem.words import load_table

_PRONOUN = re.compile(r"^(?:it|him|her|them|one)$", re.IGNORECASE)
# the thing, where a pattern names it: a pronoun, "the/my <noun>", or a capitalised name (kept case-sensitive)
_THING = (r"(?P<thing>[Ii]t|him|her|them|(?:[Tt]he|[Mm]y|[Oo]ur) (?:old )?[A-Za-z]+"
          r"|(?!(?:I|We|You|He|She|They|This|That|There|Then|So|And|But|Yes|No|Oh|Well)\b)[A-Z][a-z]+)")
_PATTERNS: tuple[re.Pattern[str], ...] = tuple(re.compile(p) for p in (
    # the owner disposes of it
    rf"\b(?:[Ii]|[Ww]e)(?:'ve|’ve| have| had)?\s+(?:\w+ly\s+|just\s+|finally\s+)?"
    rf"(?:sold|scrapped|got rid of|traded in|part-exchanged|rehomed|re-homed|donated)\s+{_THING}",
    rf"\b(?:[Ii]|[Ww]e)(?:'ve|’ve| have| had)?\s+(?:just\s+|finally\s+)?(?:traded|part-exchanged)\s+{_THING}\s+in\b",
    rf"\b(?:[Ii]|[Ww]e)(?:'ve|’ve| have| had)?\s+(?:just\s+|finally\s+)?(?:gave|given)\s+{_THING}\s+away\b",
    r"^\s*(?:[Ss]old|[Ss]crapped)\b(?!\s+out)",  # "Sold in March." (the thing left out)
    # the thing goes
    rf"\b{_THING}(?:'s|’s| has| had)?\s+(?:gone|went)\s+(?:to|for)\b(?!\s+(?:me|us)\b)",  # "went to me": got
    rf"\b{_THING}(?:'s|’s| has)?\s+(?:gone|went)\s+in\s+\w+,?\s+to\s+(?:a|an|the|my|his|her|our|their)\b",
    rf"\b{_THING}\s+(?:now\s+)?belongs\s+to\b",
    rf"\b{_THING}\s+paid\s+for\b",
    rf"\b{_THING}\s+(?:was|were|got|has\s+been|'s\s+been|’s\s+been)\s+(?:stolen|nicked|written\s+off)\b",
    rf"\b{_THING}\s+has\s+a\s+new\s+owner\b",
    rf"\b{_THING}(?:'s|’s| has| is)\s+gone(?=\s*(?:[.;!]|$)|,?\s+too\b)",  # "the hatchback's gone, too"
    # someone takes it away, or has it now
    rf"\b(?:towed|drove|took|carted|hauled)\s+{_THING}\s+away\b",
    rf"\b(?:drove|ran|went|made)\s+off\s+with\s+{_THING}",
    rf"\b(?:nicked|stole|pinched|swiped)\s+{_THING}",
    rf"\btook\s+{_THING}\s+off\s+(?:my|our)\s+hands\b",
    r"(?<![Ii] )(?<![Ww]e )(?<![Yy]ou )\b(?:has|have)\s+(?:got\s+)?(?P<thing>it|him|her|them)\s+now\b",
    r"\bcame\s+(?:round\s+)?for\s+(?P<thing>it)\b",
))
# a person is not a thing that is sold or given away: "my sister went to Leeds", "the kids went to bed"
_PERSONS = frozenset(load_table("person_nouns")) | frozenset({"people", "children", "men", "women"})
_NEGATED = re.compile(r"(?:\bnot|n't|n’t|\bnever|\bwon't|\bwould|\bwant to|\bmight|\bthinking of)\b", re.IGNORECASE)
# a word every pattern needs: most sentences have none and are passed over in one search
_ANY = re.compile(r"sold|scrapped|rid of|traded|exchanged|gave|given|gone|went|belongs|paid for|away|came|stole|"
                  r"nicked|pinched|swiped|written off|new owner|off with|hands|(?:it|him|her|them)\s+now|rehomed|"
                  r"re-homed|donated",
                  re.IGNORECASE)


@dataclass(frozen=True)
class Disposal:
    thing: str  # the thing as the sentence names it ("the Volvo", "it"); "" when left out
    by_reference: bool  # a pronoun or nothing: the thing is named elsewhere (the question before, the turn)


@lru_cache(maxsize=200_000)  # sentences as keys, as turn_changes.py's memos
def disposal(sentence: str, people: frozenset[str] = frozenset()) -> Disposal | None:
    """The thing a sentence tells has left its owner (see the module docstring), or None. `people`: the
    namespace's speakers, whose names are persons, not things ("Mel went to the beach")."""
    if not _ANY.search(sentence) or sentence.rstrip().endswith("?"):
        return None
    for pattern in _PATTERNS:
        m = pattern.search(sentence)
        if m is None or _NEGATED.search(sentence[:m.start()]) or _NEGATED.search(m.group(0)):
            continue
        thing = (m.groupdict().get("thing") or "").strip()
        head = thing.split()[-1] if thing else ""
        if head in people or head.lower() in _PERSONS or head.lower().rstrip("s") in _PERSONS:
            continue
        return Disposal(thing, not thing or bool(_PRONOUN.match(thing)))
    return None
