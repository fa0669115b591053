"""A thing leaving its owner, told in a sentence (for construct/turn_changes.py).

Why: an ownership ends in words the old state does not use, and the thing itself is mostly a pronoun or left out,
because the other speaker has just named it: "And the motorbike?" -> "Sold in March."; "Where's the tandem?" -> "We
sold it."; "How's the Vespa?" -> "It belongs to my nephew now.". So the rule extractor keeps no claim of it ("sold
it" names nothing) and the turn shares no word with "I've still got the old tandem". The reading here is of the
sentence's grammar only, general English: the owner sells, scraps, gives the thing away or lets someone have it ("we
sold it", "I got rid of the car", "gave him away", "gave him to my nephew", "gave it to him", "I passed it on to
him", "I let her go in August to a teacher", "we rehomed her", "traded the Renault in", "I let them have her", "I
let my brother buy it"), or is paid for it ("a breeder paid me well for her", "I took his money for it", "I let it
go for a school fee"), or the thing goes to someone or somewhere, or is no longer the owner's ("the Volvo went to
the scrapyard", "it's gone for scrap", "Pilchard's gone to my aunt's", "she went to my brother as his wedding gift",
"it belongs to my nephew", "the canoe is my wife's brother's now", "the skiff has been his since May", "the Velmont
paid for the new roof", "my bike was stolen", "the upright was collected by a school", "the Puffin has a new owner",
"the grocery has new owners", "Kipper lives on a farm now", "she's not mine any more"), or someone takes it away or
has it now ("a couple drove the Dandelion away", "came for it with a trailer", "a dealer drove off with your
records", "somebody nicked it", "a neighbour took the freezer off my hands", "my brother has it now", "my cousin has
had it since April", "a riding school bought her off me", "a couple from Pendeen bought it", "a school took it",
"the scouts have it"). Not read: questions, negated sentences ("I'd never sell it"), a wish ("I want to sell it"), a
person going somewhere ("we went to the coast"; "he went to" is a person, so only "it" and names), the speaker
having it ("I have it now"). When a pronoun names the thing and no word of the dialogue does ("We sold it in
July."), it is what the same person last said they had (`holding`: "We still have it, yes.", "I've got two rabbits";
`held_before`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import TypeVar

from qgmem.construct.ending_reader import CLAUSE
from qgmem.construct.letters import CAP, LETTER, NAME
from qgmem.words import load_table

T = TypeVar("T")
_PRONOUN = re.compile(r"^(?:it|him|her|them|one)$", re.IGNORECASE)
# the thing, where a pattern names it: a pronoun, "the/my <noun>", or a capitalised name (kept case-sensitive)
_THING = (rf"(?P<thing>[Ii]t|him|her|them|(?:[Tt]he|[Mm]y|[Oo]ur|[Bb]oth|all(?: my| our| the)?) "
          rf"(?:(?!and\b|or\b|I\b)(?:{LETTER}|-)+ ){{0,2}}?"
          rf"(?!I\b){LETTER}+"  # "the rowing machine", "my old estate car"; not "my colleagues and I"
          rf"|(?!(?:I|We|You|He|She|They|This|That|There|Then|So|And|But|Yes|No|Oh|Well)\b){NAME})")
# a thing of the speaker's, possessed as people say it: "it", "my grandfather's red tractor"
_OWNED = (rf"(?P<thing>it|him|her|them|(?:[Mm]y|[Oo]ur) (?:{LETTER}+['’]s )?(?:(?:{LETTER}|-)+ )?{LETTER}+)"
          r"(?=\s*(?:[.,;:!]|$)|\s+(?:in|on|at|for|last|this|to|off|from|and|with|back|after|before)\b)")
_OR_SUBJECT = _THING.replace("(?P<thing>", "(?P<thing>[Ss]he|[Hh]e|[Tt]hey|")  # "she's not mine": an animal
_PATTERNS: tuple[re.Pattern[str], ...] = tuple(re.compile(p) for p in (
    # the owner disposes of it
    rf"\b(?:[Ii]|[Ww]e)(?:'ve|’ve| have| had)?\s+(?:\w+ly\s+|just\s+|finally\s+)?"
    rf"(?:sold|scrapped|got rid of|traded in|part-exchanged|rehomed|re-homed|donated)\s+{_THING}",
    rf"\b(?:[Ii]|[Ww]e)(?:'ve|’ve| have| had)?\s+(?:just\s+|finally\s+)?(?:traded|part-exchanged)\s+{_THING}\s+in\b",
    rf"\b(?:[Ii]|[Ww]e)(?:'ve|’ve| have| had)?\s+(?:just\s+|finally\s+)?(?:gave|given)\s+{_THING}\s+away\b",
    rf"\b(?:[Ii]|[Ww]e)(?:'ve|’ve| have| had)?\s+(?:just\s+|finally\s+)?(?:gave|given)\s+{_THING}\s+to\s+"
    rf"(?:my|our|a|an|the|him|her|them|(?-i:{CAP}))\b",  # "I gave him to my nephew in August", "gave it to him"
    rf"\b(?:[Ii]|[Ww]e)(?:'ve|’ve| have| had)?\s+(?:just\s+|finally\s+)?let\s+{_THING}\s+go\s+"
    r"(?:[\w'’-]+\s+){0,3}?to\s+(?:my|our|a|an|the)\b",  # "I let her go in August to a teacher from Tvøroyri"
    rf"\b(?:[Ii]|[Ww]e)(?:'ve|’ve| have| had)?\s+(?:just\s+|finally\s+)?(?:swapped|exchanged)\s+{_THING}\s+for\b",
    # the owner took money for it, or was paid ("A breeder paid me well for her", "I let it go for a school fee")
    r"\b(?:[Ii]|[Ww]e)\s+took\s+(?:his|her|their|the)\s+(?:\w+\s+)?money\s+for\s+(?P<thing>it|him|her|them)\b",
    r"\bpaid\s+(?:me|us)\s+(?:\w+\s+)?for\s+(?P<thing>it|him|her|them)\b",
    rf"\b(?:[Ii]|[Ww]e)(?:'ve|’ve| have| had)?\s+(?:just\s+|finally\s+)?let\s+{_THING}\s+go\s+for\b",
    rf"\b(?:[Ii]|[Ww]e)(?:'ve|’ve| have| had)?\s+(?:just\s+|finally\s+)?passed\s+{_THING}\s+on\s+to\b",  # "on to him"
    r"^\s*(?:[Ss]old|[Ss]crapped|[Ss]tolen|[Nn]icked)\b(?!\s+out)",  # "Sold in March." (the thing left out)
    r"^\s*(?:[Bb]ought|[Tt]aken|[Cc]ollected|[Tt]owed)\s+(?:away\s+)?by\b",  # "Bought by a shepherd in July."
    r"^\s*(?:[Tt]aken|[Ss]tolen|[Nn]icked)\s+from\s+outside\b",  # "Taken from outside the market in March."
    r"^\s*[Gg]one\s+to\s+(?:my|our|his|her|their)\b",  # "Gone to my cousin's boy in July."
    # the owner lets someone have it: "I let them have her in June"
    rf"\b(?:[Ii]|[Ww]e)(?:'ve|’ve| have)?\s+(?:just\s+)?let\s+(?:him|her|them|my\s+[\w'’-]+|\w+|(?:a|an|the)\s+"
    rf"(?:[\w'’-]+\s+){{1,4}}?)\s*(?:have|buy|take|keep)\s+{_THING}",  # "I let a teacher in Alta have it"
    # the thing goes
    rf"\b{_THING}(?:'s|’s| has| had)?\s+(?:gone|went)\s+(?:to|for)\b(?!\s+(?:me|us)\b)",  # "went to me": got
    rf"\b{_THING}(?:'s|’s| has)?\s+(?:gone|went)\s+in\s+\w+,?\s+to\s+(?:a|an|the|my|his|her|our|their)\b",
    rf"\b{_THING}\s+(?:now\s+)?(?:belongs|has\s+belonged)\s+to\b",
    rf"\b{_THING}\s+paid\s+for\b",
    rf"\b{_THING}\s+(?:was|were|got|has\s+been|'s\s+been|’s\s+been)\s+(?:stolen|nicked|written\s+off|sold|"
    rf"collected\s+by|bought\s+by|given\s+away|towed(?:\s+away)?|taken\s+(?:off|away|from\s+outside))\b",
    # it is someone else's now ("the canoe is my wife's brother's now", "It's a dentist's from Trnava now", "The
    # mokoro has been his since the floods")
    rf"\b{_OR_SUBJECT}(?:'s|’s| is| are|'re|’re)\s+(?:(?:my|our|his|her|their|a|an|the)\s+)?(?:[\w'’-]+\s+){{0,2}}?"
    rf"[\w-]+['’]s(?:\s+from\s+(?-i:{CAP})[\w'’-]*)?\s+now\b",
    rf"\b{_THING}\s+has\s+been\s+(?:his|hers|theirs|(?-i:{CAP})[\w'’-]*['’]s)\s+since\b",
    # given as a gift ("She went to my brother as his wedding gift")
    rf"\b{_OR_SUBJECT}\s+went\s+to\s+(?:[\w'’-]+\s+){{1,3}}?as\s+(?:a|an|his|her|their)\s+(?:[\w'’-]+\s+)?"
    r"(?:gift|present)\b",
    rf"\b{_OR_SUBJECT}(?:'s|’s| is| are|'re|’re)(?=\s+(?:not|no\s+longer)\s+"
    r"(?:mine|ours)\b)",  # "she's not mine any more"
    rf"\b{_THING}\s+has\s+(?:a\s+)?new\s+owners?\b",
    rf"\b{_THING}\s+(?:disappeared|vanished|went\s+missing)\b",  # "the cargo bike disappeared from the rack"
    rf"\b{_THING}\s+(?:now\s+)?lives\s+(?:with|at|on|in)\b[^.!?;]*\bnow\b",  # "Kipper lives on a farm now"
    rf"\b{_THING}(?:'s|’s| has| is)\s+gone(?=\s*(?:[.;:!]|$)|,?\s+too\b)",  # "the hatchback's gone, too"
    # someone takes it away, or has it now
    rf"\b(?:towed|drove|took|carted|hauled)\s+{_THING}\s+away\b",
    rf"\b(?:drove|ran|went|made)\s+off\s+with\s+{_THING}",
    rf"\b(?:nicked|stole|pinched|swiped)\s+{_THING}",
    rf"\btook\s+{_THING}\s+off\s+(?:my|our)\s+hands\b",
    rf"(?<![Ii] )(?<![Ww]e )\bbought\s+{_THING}\s+(?:off|from)\s+(?:me|us)\b",  # "a riding school bought her off me"
    # a stranger bought it: "a couple from Pendeen bought it in May", "an enthusiast bought my grandfather's tractor"
    rf"(?<!\w)(?:[Aa]n?|[Ss]ome)\s+(?:[\w'’-]+\s+){{1,5}}?bought\s+{_OWNED}",
    rf"(?<![Ii] )(?<![Ww]e )\b(?:took|adopted)\s+(?P<thing>it|him|her|them)\s+(?:in\s+(?-i:{CAP})\w+|last\s+\w+)\b",
    r"(?<![Ii] )(?<![Ww]e )(?<![Yy]ou )\b(?:has|have)\s+(?:got\s+)?(?P<thing>it|him|her|them)\s+now\b",
    # another has had it since a time ("My cousin Yeng has had it since April", "he's had it since Easter")
    r"(?<![Ii] )(?<![Ww]e )(?<![Yy]ou )(?<![Tt]hey )(?<![Ii]’ve )(?<![Ii]'ve )(?<![Ww]e've )(?<![Ww]e’ve )"
    r"\b(?:has|'s|’s)\s+had\s+(?P<thing>it|him|her|them)\s+since\b",
    # someone else took it or has it, told as the whole clause: "A school in Elderwick took it.", "The scouts have it."
    r"(?<![Ii] )(?<![Ww]e )(?<![Yy]ou )(?<![Tt]hey )(?<![Tt]o )\b(?:took\s+(?P<thing>it|him|her|them)|(?:has|have)\s+"
    r"(?P<one>it))(?=\s*(?:[.;!]|$))",
    r"\bcame\s+(?:round\s+)?for\s+(?P<thing>it)\b",
))
# a person is not a thing that is sold or given away: "my sister went to Leeds", "the kids went to bed"
_PERSONS = frozenset(load_table("person_nouns")) | frozenset({"people", "children", "men", "women"})
_NEGATED = re.compile(r"(?:\bnot|n't|n’t|\bnever|\bwon't|\bwould|\bwant to|\bmight|\bthinking of)\b", re.IGNORECASE)
# a word every pattern needs: most sentences have none and are passed over in one search
_ANY = re.compile(r"sold|scrapped|stolen|let|collected|bought|towed|taken|mine|ours|rid of|traded|exchanged|gave|"
                  r"given|gone|went|belong|paid for|away|came|stole|nicked|pinched|swiped|written off|new owner|"
                  r"off with|hands|(?:it|him|her|them)\s+now|ha(?:s|ve)\s+it\b|rehomed|re-homed|donated|lives|"
                  r"swapped|took|adopted|disappeared|vanished|missing|now|since|paid|gift|present|passed",
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
        if m is None or _NEGATED.search(CLAUSE.split(sentence[:m.start()])[-1]) or _NEGATED.search(m.group(0)):
            continue
        thing = (m.groupdict().get("thing") or m.groupdict().get("one") or "").strip()
        thing = {"she": "her", "he": "him", "they": "them"}.get(thing.lower(), thing)  # "she's not mine": her
        head = thing.split()[-1] if thing else ""
        if head in people or head.lower() in _PERSONS or head.lower().rstrip("s") in _PERSONS:
            continue
        return Disposal(thing, not thing or bool(_PRONOUN.match(thing)))
    return None


# the speaker has a thing: "I've still got the old motorbike", "I've got two rabbits", "We still have it", "I've had
# that dinghy since I was twelve" (not "I've got to go", "I have a question", "I had a great time")
_HOLDING = re.compile(
    r"\b(?:[Ii]|[Ww]e)(?:'ve|’ve| have)\s+(?:still\s+|finally\s+|just\s+|now\s+)?(?:got|had)\s+"
    r"(?P<thing>(?:a|an|the|that|this|my|our|two|three|four|five|\d+)\s+[^.,;!?]+|it|him|her|them)"
    r"|\b(?:[Ii]|[Ww]e)\s+(?:still\s+)?(?:have|own)\s+(?P<still>it|him|her|them)\b")
_MANY = re.compile(r"^(?:them|(?:two|three|four|five|\d+)\s|\w+\s+\w+s$|\w+s$)")


@lru_cache(maxsize=200_000)
def disposed(text: str, people: frozenset[str] = frozenset()) -> str | None:
    """"one", "many" or "any" when a sentence of the text tells a thing by a pronoun, or by nothing, left its
    owner ("We sold it.": one; "They live at my brother's farm now": many; "Sold in March.": any), else None."""
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        d = disposal(sentence, people)
        if d is not None and d.by_reference:
            return {"": "any", "them": "many"}.get(d.thing.lower(), "one")
    return None


def held_before(text: str, earlier: Iterable[tuple[str, T]], people: frozenset[str] = frozenset()) -> T | None:
    """When a thing left its owner by a pronoun and no word of the text names it ("We sold it in July."): the key
    of the first of `earlier` (the same person's turns of earlier sessions, latest first, as (text, key)) that says
    they have one, or several for "them" ("We still have it, yes."; "I've got two rabbits")."""
    number = disposed(text, people)
    if number is None:
        return None
    return next((key for said, key in earlier if (got := holding(said)) is not None and number in ("any", got)), None)


@lru_cache(maxsize=200_000)
def holding(text: str) -> str | None:
    """"one" or "many" when a statement of the text says the speaker has a thing (one or several: "two rabbits",
    "them"), else None: what a later "we sold it" or "they live at my brother's now" may have ended."""
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        m = _HOLDING.search(sentence)
        if m is None or sentence.rstrip().endswith("?") or _NEGATED.search(sentence[:m.start()]):
            continue
        thing = (m.group("thing") or m.group("still") or "").strip()
        if any(w in _PERSONS for w in thing.lower().split()[:4]):
            continue  # "I've got a new neighbour": a person
        return "many" if _MANY.match(thing.lower()) and not thing.lower().startswith(("a ", "an ")) else "one"
    return None
