"""Which sentences of a turn tell a change (for construct/turn_changes.py), and which of them tell an ending.

A claim tells a change with a marker ("now", "instead", "no longer", "anymore"; "new" before a state's noun), a
departure or a retiming, a beginning at a date ("since October"), news of the one spoken to told to them ("So you're
the new caretaker!"), or a phrasal verb or a noun of the word table that ends or changes a state ("dropped out", "my
notice"); not negated, not a question, not "for five years now". A thing leaving its owner, a person leaving a group
and a plan called off tell one too (construct/disposal.py, leaving.py, called_off.py). An ending (a departure, "no
longer", a thing gone) names the state a change ends, which the turn's other sentences may not.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from qgmem.construct.called_off import called_off
from qgmem.construct.disposal import disposal
from qgmem.construct.leaving import leaving
from qgmem.construct.letters import CAP
from qgmem.construct.state_cues import IRREGULAR, MONTHS, WEEKDAYS, read_cues, thing_words
from qgmem.construct.state_table import AUXILIARIES, NEGATIONS, PARTICLES, PREPOSITIONS, StateTable, tokens

SENTENCE = re.compile(r"(?<=[.!?])\s+")  # how a turn splits into sentences (construct/turn_changes.py too)
# news of the one spoken to, told to them: heard from someone ("Your mum says you're in Zeebrugge!", "I hear you've
# stopped ringing") or just found out ("So you've left Lyon!", "Look at you, head chef at the Ostler's Table!").
# Nobody tells a friend their own state unless it is new to the teller; not praise ("Congrats on the trophy!")
NEWS_OF_YOU = re.compile(r"^\s*(?:so|oh|wow|well)\b,?\s+(?:you(?:'re|’re|'ve|’ve| are| have)"
                         r"|you and \w+ (?:are|have))\b"
                         r"|\b(?:i|we)\s+(?:hear|heard|gather)\s+(?:that\s+)?you(?:'re|’re|'ve|’ve|\s+(?!know)\w)"
                         r"|\b(?:says|said)\s+(?:that\s+)?you\b"
                         r"|\b(?:tells|told)\s+(?:me|us|(?:my|our|his|her)\s+\w+)\s+(?:that\s+)?you\b"
                         r"|\byou\b[^.!?]*,\s+(?:\w+\s+){1,2}(?:says|tells me|told me)\b"
                         r"|^\s*look at you\b", re.IGNORECASE)
# a state left, told as being off it ("I'm off the trucks.", "we're off the night rota"); not "off the hook"
_OFF_THE = re.compile(r"\b(?:i'm|i’m|i am|we're|we’re|we are|you're|you’re|you are)\s+(?:finally\s+)?off\s+the\s+"
                      r"(?!hook\b|phone\b|mark\b|record\b|top\b|wall\b)\w+", re.IGNORECASE)
# "now" that tells no change: a duration ("I've lived here for five years now"), "for now", "right now" or "by now"
# (for the time being) and "for" with a pronoun before it in its clause ("it's quiet for us now"; not "I do
# Wednesdays for the food bank now"), "now" as a conjunction ("now the weather's cold"), a plan ("we're going to try
# that now"; not a trip: "I'm going to Penang in August now"), a skill that grew ("I can play two songs now", "these
# days I can gut a fish in eight seconds"); a "for" in an earlier clause is not one ("Odile left for another firm,
# so Bastien is my manager now")
_DURATION = r"(?:\w+\s+){0,3}?(?:years?|months?|weeks?|days?|decades?|ages|a\s+while|some\s+time|long)\b"
_NOT_A_CHANGE = re.compile(rf"\bfor\s+{_DURATION}.*\bnow\b|\bfor\s+(?:me|us|you|him|her|them|it)\b[^,;:]*\bnow\b"
                           rf"|\b(?:for|right|just|by)\s+now\b"
                           rf"|\bnow\s+(?:that|the)\b"
                           rf"|\b(?:going to|gonna|about to|off to)\b(?!\s+(?-i:{CAP}))[^,;:]*\bnow\b"
                           r"|\b(?:can|could)\b.*\bnow\b"
                           r"|\b(?:now|these\s+days|nowadays),?\s+(?:\w+\s+){1,2}?(?:can|could)\b", re.IGNORECASE)
# a state begun at a time: "since <a date>" ("I'm on days since the new year", "Thursdays since October", "since the
# first of April"), or to begin at one ("From August I'm on earlies"); not a duration from an event ("since I was
# a kid", "since we last talked")
_DATE = (r"(?:(?:the\s+)?(?:start|end|middle|beginning|first|second|third|\w+th)\s+of\s+)?(?:"
         + "|".join(sorted(MONTHS | WEEKDAYS)) + r"|spring|summer|autumn|winter|new\s+year|christmas|easter|\d{4})")
_BEGAN = re.compile(rf"\bsince\s+(?:last\s+|the\s+)?{_DATE}\b|^\s*(?:and\s+)?from\s+(?:next\s+|the\s+)?{_DATE}\b",
                    re.IGNORECASE)
_PARTICLES = PARTICLES | PREPOSITIONS


@lru_cache(maxsize=200_000)
def tells_change(sentence: str, speaker: str, table: StateTable) -> bool:
    """A claim (not a question) with a marker ("now", "instead", "no longer"; "new" only before a state's noun: "my new
    job"; not "for five years now" or "I can play two songs now"), a retiming, a departure or a beginning at a date
    ("since October") told in it, or a relation or noun of the word table that ends or changes a state, not negated."""
    if sentence.rstrip().endswith("?"):
        return False
    c = read_cues(sentence, speaker, "", "")
    toks = [t for t in tokens(sentence) if t[0].isalpha()]
    negated = any(map(_negation, toks))
    if c.replaces or c.ends or (c.present and not _NOT_A_CHANGE.search(sentence)):
        return True
    if (NEWS_OF_YOU.search(sentence) or _OFF_THE.search(sentence)) and not negated:
        return True
    if (c.told_departure or c.told_retime or _BEGAN.search(sentence)) and not negated:  # not "I won't quit"
        return True
    for k, t in enumerate(toks):
        if any(map(_negation, toks[max(0, k - 3):k])):
            continue  # "I won't quit", "not gonna give up"
        # a phrasal verb ("dropped out", "split up", "gave up"); a bare verb says too little here ("would quit")
        if k + 1 < len(toks) and toks[k + 1] in _PARTICLES and t not in AUXILIARIES:
            _, e, neg, rest = table.relation(f"{IRREGULAR.get(t, t)} {toks[k + 1]}")
            if e is not None and not neg and not rest and e.kind in ("end", "change") and e.use != "head":
                return True
        e = table.head_entry(t, skip_leading=False)
        if e is not None and e.kind in ("end", "change"):  # "handed in my notice", "got a promotion"
            return True
        if t == "new" and any(table.head_entry(w, skip_leading=False) is not None for w in toks[k + 1:k + 3]):
            return True  # "my new job", "a new flat"
    return False


def _negation(token: str) -> bool:
    return token in NEGATIONS or token.endswith(("n't", "n’t"))


class Told(NamedTuple):
    """What a turn tells changed (`change_sentences`)."""

    sentences: tuple[str, ...]  # the sentences that tell a change
    by_reference: bool  # one tells a thing gone, a group left or a plan called off by a pronoun or by nothing
    unnamed: bool  # by nothing at all: "Stolen.", "Called off.", "Sold in October."
    things: frozenset[str]  # the words of such a thing where a sentence names it ("The pigeons went to ...")
    ending: tuple[str, ...]  # those of the sentences that tell an ending: a departure, "no longer", a thing gone


@lru_cache(maxsize=20_000)  # whole turns as keys: a 10,000-turn namespace fits, a long one's memory stays bounded
def change_sentences(text: str, speaker: str, relations: tuple[str, ...], table: StateTable,
                     people: frozenset[str]) -> Told:
    """What a turn tells changed (`Told`). The whole turn when one of its units' relations (which hold an irregular
    verb's lemma: "broke up" -> "break up") ends or changes a state. Remembered: a namespace's turns are read again
    whenever it grows."""
    sentences = SENTENCE.split(text)
    # every reading of a sentence: "The Reelers folded when the church hall was sold" ends the Reelers too
    read = [[d for d in (disposal(x, people), leaving(x, people), called_off(x, people)) if d is not None]
            for x in sentences]
    found = [d for ds in read for d in ds]
    things = frozenset().union(*(thing_words(d.thing) for d in found if not d.by_reference))
    # a pronoun after the thing is named names it ("The canoe is gone, too. I let my neighbour buy it in August.")
    by_reference = not things and any(d.by_reference for d in found)
    unnamed = by_reference and any(not d.thing for d in found)
    # a sentence whose thing is a pronoun for the one another names adds only who got it ("I let my neighbour buy it")
    gone = [None if things and ds and all(d.by_reference for d in ds) else ds[0] if ds else None for ds in read]
    for rel in relations:
        e = table.relation(rel)[1]
        if e is not None and e.kind in ("end", "change") and e.use != "head" and not rel.startswith("not "):
            return Told((text,), by_reference, unnamed, things, ())
    told = tuple(x for x, d in zip(sentences, gone) if d is not None or tells_change(x, speaker, table))
    ending = tuple(x for x, d in zip(sentences, gone) if x in told and (d is not None or _tells_ending(x, speaker)))
    return Told(told, by_reference, unnamed, things, ending)


def _tells_ending(sentence: str, speaker: str) -> bool:
    """A sentence telling that a state ended: a departure ("I left the fish farm in August"), "no longer", "not ...
    any more"."""
    c = read_cues(sentence, speaker, "", "")
    return c.ends or c.told_departure
