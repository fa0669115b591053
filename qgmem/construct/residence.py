"""Where a speaker lives, told in a sentence: one attribute, its value the places named (for
construct/turn_changes.py).

Why: a move is mostly told in words that share nothing with the old home ("I rent a bedsit on Quayle Road" -> "my
partner and I have moved into a two-bed flat in Hollerby"; "I'm still in my old room at my parents'" -> "So you live
in Dunhallow now!"), and the old home is often in no triple the extractor keeps. English says the attribute itself,
of the speaker or the one spoken to (`home`) and of third persons (`homes_of_others`: "He still lives on his own in
the cottage at Penhallow Cross" -> "He's in Sedgecombe House now"): a verb of dwelling ("live", "rent", "share",
"staying", "crashing", "lodging"), being in a dwelling ("I'm in the top-floor flat", "we've been in the flat above
the launderette"), above a shop ("I'm still above the chemist"), still in a named place ("I'm still on Wagtail
Row"), at a relative's for a while ("I've been at my sister's farm since May"), a dwelling of one's own with a place
("my flat on Bellhanger Street"), or a move ("moved in with my brother", "got the keys to a studio", "signed for a
terrace", "my new room in Fallowmere", "new address: ...", "we left the farm for a bungalow in Jessington", a home
held since a recent time: "since November I've rented two rooms above the harbour", "I've moved away", "I took the
ground floor of an old schoolhouse", "she's back at Mum and Dad's", "I live here now"). Its value is the capitalised
places after a preposition ("Lindell Court"). Being in a named place told as the present one is read weakly ("So
you're out in Drummock Vale now!", "we've been in Cardiff since April", "you've gone over to Lowther Quay", "you're
a Pokhara man now", "In Lankaran since May."): it may be a stay, so it changes a home told with a name and is no
home to change; "my new address" is a move. Two statements of one person in different sessions are a change of home
when the later one is a move to other places, or names places the earlier one does not (construct/named_state.py
reads both attributes told with a name, this one and work). Not read, beside what that module says: a stay somewhere
("I'm in Paris this week": no dwelling, no verb of dwelling). General English, no benchmark or fixture vocabulary.
"""

from __future__ import annotations

import re
from functools import lru_cache

from qgmem.construct.letters import CAP, LETTER
from qgmem.construct.named_state import (OTHER, SELF, SINCE, Grammar, NamedState, Patterns, read_named,
                                        read_named_others)

_DWELLING = (r"(?:flat|house|cottage|room|bedroom|bedsit|studio|bungalow|terrace|place|apartment|lodge|caravan|"
             r"houseboat|farmhouse|maisonette|digs|house share|home|floor|compound|"
             r"(?:one|two|three|four|five)-bed(?:room)?)s?")
_NAME = (rf"(?!(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)days?\b)(?-i:{CAP})[\w'’-]*"  # a place, not a weekday
         rf"(?:\s+(?-i:{CAP})[\w'’-]*)*")
_DET = r"(?:a|an|the|my|our|your|that|this|his|her|their|two|three|four)"  # "two rooms above the baker's"


def _patterns(g: Grammar) -> Patterns:
    """(a move, a dwelling, being in a named place now) told of the persons of `g`. The last is weak: it may be a
    stay, so it only changes a home told with a name ("So you're out in Drummock Vale now!", "we've been in Cardiff
    since April", "you've gone over to Lowther Quay")."""
    s, aux = g.subject, g.aux
    move = re.compile(
        rf"\b{s}{aux}\s+(?:just\s+|finally\s+|recently\s+|now\s+|all\s+)*(?:moved|moving|moves|relocated)\s+"
        rf"(?:in|into|to|up|down|out|back|over|across|house|away)\b"
        rf"|\b{s}{aux}\s+(?:just\s+|finally\s+)?moved\s*!"  # "You've moved! I saw the cottage up for sale."
        rf"|\b{s}\s+(?:live|lives|living)\s+(?:here|there)\s+now\b"  # "I live here now, since October"
        # the second verb of one subject ("I took a job at the boatyard and moved up here in October")
        rf"|\b{s}{aux}\s+(?:[\w'’-]+\s+){{1,8}}?and\s+(?:then\s+)?moved\s+(?:in|into|to|up|down|out|back|over)\b"
        # had a dwelling since a time: got it then ("I've had a little house above the harbour since October")
        rf"|\b{s}{g.have}\s+(?:also\s+|now\s+)?had\s+(?:a|an|the|{g.poss})\s+(?:[\w'’-]+\s+){{0,2}}?{_DWELLING}\b"
        rf"[^.!?;]*\bsince\b"
        rf"|\b{s}{aux}\s+(?:just\s+|finally\s+|now\s+)*(?:got|bought|found|signed for|took|taken)\s+"
        rf"(?:the keys to\s+)?(?:a|an|{g.poss} own|{g.poss}|a little|a new)\s+(?:[\w'’-]+\s+){{0,2}}?"
        rf"{_DWELLING}\b(?!\s+to\b)"  # not "found a place to chill"
        # "I took the ground floor of an old schoolhouse"
        rf"|\b{s}{aux}\s+(?:just\s+|finally\s+)*(?:took|taken)\s+the\s+(?:[\w'’-]+\s+){{0,2}}?{_DWELLING}\b"
        rf"|\b{g.poss} new\s+(?:{_DWELLING}|address)\b"
        + (r"|^\s*(?:my\s+)?new address\b" if g.fragments else "")  # "New address for your book: 7 Glebe Close"
        # left one home for another ("since we left the farm for a bungalow in Jessington"), back at a family's home
        + rf"|\b{s}{aux}\s+(?:just\s+|finally\s+)?left\s+(?:the|our|my|his|her|their)\s+(?:[\w'’-]+\s+){{0,2}}?"
        rf"for\s+(?:a|an|the)\s+(?:[\w'’-]+\s+){{0,2}}?{_DWELLING}\b"
        rf"|\b{s}{g.be}\s+(?:now\s+)?back\s+(?:at|with)\s+(?:(?:my|our|his|her|their)\s+)?(?:{LETTER}+\s+and\s+)?"
        rf"{LETTER}+(?:['’]s\b|s['’](?!\w))",
        re.IGNORECASE)
    stay = re.compile(
        rf"\b{s}{aux}\s+(?:\w+\s+){{0,2}}?(?:live|lives|lived|living|rent|rents|renting|rented|lodging|lodges|board|"
        rf"boards|boarding)\s+(?:out\s+|up\s+|down\s+)?(?:in|on|at|above|over|near|with|aboard|here)\b"
        # sleeping in a room of a home, living under someone's roof ("I still live under my father's roof in Pasni")
        rf"|\b{s}{aux}\s+(?:still\s+)?(?:sleep|sleeps|sleeping)\s+in\s+{_DET}\s+(?:[\w'’-]+\s+){{0,2}}?{_DWELLING}\b"
        rf"|\b{s}{aux}\s+(?:still\s+)?(?:\w+\s+)?under\s+(?:{_DET}\s+)?(?:[\w'’-]+\s+)?{LETTER}+['’]s?\s+roof\b"
        # a dwelling had with its place ("We've a cottage on the hill above the docks")
        rf"|\b{s}{g.have}\s+(?:got\s+|had\s+)?(?:a|an)\s+(?:[\w'’-]+\s+){{0,2}}?{_DWELLING}\s+"
        rf"(?:in|on|at|above|over|near|by)\b"
        rf"|\b{s}{aux}\s+(?:\w+\s+){{0,2}}?(?:rent|rents|renting|rented|share|shares|sharing|staying|crashing)\s+"
        rf"(?:in\s+|at\s+)?{_DET}\s+(?:[\w'’-]+\s+){{0,3}}?{_DWELLING}\b"
        rf"|\b{s}(?:{g.be}|{g.have} been| was| were),?\s+(?:still\s+|now\s+|been\s+|just\s+)*(?:in|on)\s+{_DET}\s+"
        rf"(?:[\w'’-]+\s+){{0,3}}?{_DWELLING}\b"
        # above or over a shop ("I'm still above the chemist in Dunwold"), still in or on a named place ("I'm still on
        # Wagtail Row"), squeezed into a room
        rf"|\b{s}(?:{g.be}|{g.have} been)\s+(?:still\s+)?(?:above|over)\s+(?:the|a)\s+\w+"
        rf"|\b{s}(?:{g.be}|{g.have} been)\s+still\s+(?:in|on)\s+(?=(?-i:{CAP}))"
        rf"|\b{s}{g.be}\s+(?:still\s+)?(?:squeezed|squashed|crammed)\s+into\b"
        # at a relative's for a while ("I've been at my sister's farm in Wrayford since September")
        rf"|\b{s}(?:{g.have} been|{g.be}\s+still)\s+at\s+(?:my|our|his|her|their)\s+{LETTER}+"
        rf"(?:['’]s\b|s['’](?!\w))"
        + (rf"|^\s*(?:(?:still|now)\s+)?in\s+(?:the|a|an|my|our|his|her|their)\s+(?:[\w'’-]+\s+){{0,3}}?{_DWELLING}\b"
           rf"|^\s*still\s+(?:in|on)\s+(?=(?-i:{CAP}))"
           # a dwelling with its place, as an answer ("A little terrace in Wickerslade, with a garden.")
           rf"|^\s*(?:a|an)\s+(?:[\w'’-]+\s+){{0,2}}?{_DWELLING}\s+(?:in|on|at|near|by|above|over)\s+(?=(?-i:{CAP}))"
           if g.fragments else "")
        # staying with family a while ("I've been staying with my grandmother in Ville Platte since May")
        + rf"|\b{s}{g.have}\s+been\s+staying\s+with\s+(?:my|our|his|her|their)\s+{LETTER}+"
        + rf"|\b{g.poss}\s+(?:[\w'’-]+\s+){{0,2}}?{_DWELLING}\s+(?:in|on|at)\s+(?=(?-i:{CAP}))",  # a name
        re.IGNORECASE)
    there_now = re.compile(
        # of a place now ("You're a Pokhara man now", "I'm a Mariehamn woman since December")
        rf"\b{s}{g.be}\s+(?:now\s+)?an?\s+{_NAME}\s+(?:man|woman|girl|boy|lad|lass|person|resident)\b"
        rf"(?=[^.!?;]*\b(?:now|since)\b)"
        + (rf"|^\s*in\s+{_NAME}\s*,?\s*(?:now|since)\b" if g.fragments else "")  # "In Lankaran since May."
        + rf"|\b{s}(?:{g.be}|{g.have} been)\s+"
        rf"(?:out\s+|over\s+|up\s+|down\s+|back\s+)?in\s+{_NAME}\s*(?:,\s*)?(?:now|since)\b"
        rf"|\b{s}{g.have}\s+(?:just\s+|finally\s+)?gone\s+(?:over|out|up|down|back)\s+to\s+{_NAME}"
        # news heard of someone: "Your mum says you're in Zeebrugge!", "I hear she's out in Tarsk"
        rf"|\b(?:says|said|tells me|told me|hear|heard)\s+(?:that\s+)?{s}{g.be}\s+(?:out\s+|over\s+|up\s+|down\s+)?"
        rf"in\s+{_NAME}\s*[!.]",
        re.IGNORECASE)
    # a home held since a recent time began then ("Since November I've rented two rooms above the harbour")
    move = re.compile(rf"{move.pattern}|(?:{stay.pattern})(?=[^.!?;]*?\b{SINCE})|\b{SINCE}\s*,?\s+(?:{stay.pattern})",
                      re.IGNORECASE)
    return Patterns(move, stay, weak=there_now)


_SELF, _OTHER = _patterns(SELF), _patterns(OTHER)
_PLACE = re.compile(r"\b(?:in|on|at|to|near|by|above|over|off|outside|of)\s+(?:the\s+)?"
                    rf"({CAP}[\w'’-]*(?:\s+{CAP}[\w'’-]*)*)")
# a word every pattern needs: most turns have none and are passed over in one search
_ANY = re.compile(r"liv|rent|shar|stay|crash|flat|house|cottage|room|bedsit|studio|bungalow|terrace|place|back|been|"
                  r"left|apartment|lodg|caravan|maisonette|digs|home|floor|mov|reloc|address|now|since|gone|above|over|"
                  r"still|into|says|said|told|tells|hear|compound|bed|board|sleep|roof", re.IGNORECASE)
Home = NamedState  # names: the places; begun: a move


@lru_cache(maxsize=20_000)  # whole turns as keys, as turn_changes.py's memos
def home(text: str) -> Home | None:
    """The home a turn's statements tell of its speaker or the one spoken to (see the module docstring): the
    places of all of them, a move if one is. None when no statement tells one."""
    if not _ANY.search(text):
        return None
    return read_named(text, _SELF, _PLACE)


@lru_cache(maxsize=20_000)
def homes_of_others(text: str) -> tuple[tuple[tuple[str, ...], int, Home], ...]:
    """The homes a turn's statements tell of third persons: (the words that may name the person, the likeliest
    first, the offset of the sentence, the home), in order ("My dad's moved to Penzance", "She's renting a
    cottage in Kendal")."""
    if not _ANY.search(text):
        return ()
    return read_named_others(text, _OTHER, _PLACE)
