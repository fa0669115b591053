"""A plan called off or put back, told in a sentence (for construct/turn_changes.py).

Why: a plan changes in words the rule extractor keeps no claim of, because the plan is a pronoun, a name
between a verb and its particle, or left out: "Still off to the solstice walk?" -> "No, we've cancelled.";
"they've put Ravensby off until next May"; "Holm Fair's off for me"; "the post in Leeds fell through"; "we
never made it to Porto". The reading is of the sentence's grammar only, general English:
- a verb and its particle around the plan: "put X off / back", "pushed X back", "called X off", "moved it to
  June" (with a time after "back", "forward", "put ... off" and a moved pronoun: "put the kettle back" and
  "moved it upstairs" move no plan);
- the plan is off: "X is off / dead / on hold" (a name, or a noun of a plan: "the boat trip's off", "the Orkney
  plan's dead"), what the speaker was doing is off ("the trek is off"; not a machine or a supply: "the heating's
  off"), a plan moved to a date by its noun ("we had to move the dinner to the eleventh of November"; not to a
  place), "has been brought forward", "is now on the twelfth of October", "the wedding's now the fourteenth of
  December", "we moved the wedding", "Next summer now.", "we're going in December instead", "won't open till next
  spring", "isn't in December any more", "we've put the extension on hold", "X's been cancelled / postponed /
  withdrawn", "X fell through", "it never happened", "it didn't happen";
- the plan did not happen: "we never made it to X", "we didn't go to X" (a name: not "to the gym"), "I never went to
  X", "we didn't go (up) in September", "I never went.", "none of us went in the end", "I'm not going to X after
  all", "we're not coming in October", "there was no chalet in the end";
- a verb that ends or moves a plan with a pronoun object or none ("we've cancelled", "I deferred it"), or
  drops a plan noun ("we've dropped the Orkney idea").
When the plan is a pronoun, a common noun or nothing, it is what the turn or the question just before it
names, as for construct/disposal.py. Not read: questions, wishes ("we might cancel"), a person ("I'm off").
"""

from __future__ import annotations

import re
from functools import lru_cache

from qgmem.construct.ending_reader import Ending, read_ending
from qgmem.construct.letters import CAP
from qgmem.construct.state_cues import TIME_NAMES
from qgmem.construct.state_table import StateTable

_WHEN = TIME_NAMES
# a time after the particle: "back to September", "off until next May", "forward a week"
_TIME = (rf"(?:to|till|until|til|for|by|into)\s+(?:the\s+|next\s+|a\s+|an\s+|late\s+|early\s+|mid-?)?(?:{_WHEN}|\d"
         r"|spring|summer|autumn|fall|winter|week|month|year|weekend|new year|end|first|second|third|fourth|fifth"
         r"|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|\w+teenth|twent|thirt)"
         r"|(?:a|an|one|two|three|four|six)\s+(?:day|week|"
         r"month|year)s?\b|indefinitely\b")
# what may follow "the plan is off / cancelled": the sentence's end, or a reason or a time
_AFTER = (r"(?=\s*(?:[.,;:!\-—–]|$)|\s+(?:for|after|because|now|then|too|as|until|till|to|since|in|at|due|"
          r"when)\b)")
# the plan: a pronoun, or a noun phrase of up to four words
_PLAN = r"(?P<thing>it|them|that|(?:(?:the|my|our|his|her|their)\s+)?(?:[\w'’-]+\s+){0,3}?[\w'’-]+)"
_SUBJECT = r"(?:\b(?:[Ii]|[Ww]e|[Hh]e|[Ss]he|[Tt]hey)(?:'ve|’ve| have| had|'s|’s| has)?\s+(?:just\s+|finally\s+)?)"
_NOT_PLAN = (r"(?!(?:[Ii]|[Ww]e|[Yy]ou|[Hh]e|[Ss]he|[Tt]hey|[Tt]his|[Tt]hat|[Tt]here|[Tt]hen|[Ss]o|[Aa]nd|[Bb]ut"
             r"|[Yy]es|[Nn]o|[Oo]h|[Ww]ell|[Ww]hat|[Ww]ho|[Hh]ow)\b)")
# the plan as a subject: a pronoun it, "the/our <noun>", or a capitalised name
_SUBJECT_PLAN = (rf"(?P<thing>[Ii]t|(?:[Tt]he|[Oo]ur|[Mm]y)\s+(?:[\w'’-]+\s+){{0,3}}?[\w'’-]+"
                 rf"|{_NOT_PLAN}{CAP}[\w'’-]+(?:\s+{CAP}[\w'’-]+)*)")
# nouns that name a plan (qgmem/words/state_relations.txt, the plans class as a head word), and "plan", "idea"
_PLAN_NOUNS = "|".join(sorted({*StateTable.default().nouns("plans"), "plan", "idea"}))
_PLAN_NOUN = rf"(?:{_PLAN_NOUNS})(?:s|es)?\b"
# what may be "off" (not "the heating's off"): a name, or a plan noun ("the cycling trip")
_OFF_PLAN = (rf"(?P<thing>(?:[Tt]he|[Oo]ur|[Mm]y)\s+(?:[\w'’-]+\s+){{0,3}}?{_PLAN_NOUN}"
             rf"|{_NOT_PLAN}{CAP}[\w'’-]+(?:\s+{CAP}[\w'’-]+)*)")
# what the speaker was doing is off too ("the trek is off", "the rafting is off until he can paddle"), but not a
# machine, a supply or a light that is switched off
_SWITCHED = (r"(?!(?:[\w'’-]+\s+){0,3}?(?:heating|heater|power|electricity|lights?|lamp|gas|water|tv|telly|radio|"
             r"engine|motor|phone|alarm|oven|cooker|fridge|freezer|boiler|wifi|internet|signal|tap|fan|music|sound|"
             r"volume|computer|laptop|machine)\b)")
_OFF_DOING = rf"(?P<thing>(?:[Tt]he|[Oo]ur|[Mm]y)\s+{_SWITCHED}(?:[\w'’-]+\s+){{0,3}}?[\w'’-]+)"
# a time a plan moved to, told with a noun for the plan: a date, not a place ("moved the dinner to the eleventh of
# November", "moved the party to Saturday"; not "moved the sofa to the first floor")
_DATE = (rf"(?:to|till|until|for)\s+(?:the\s+|next\s+|late\s+|early\s+|mid-?)?(?:{_WHEN}|spring|summer|autumn|"
         rf"winter|new year|\w+\s+of\s+(?:{_WHEN})|\w+\s+(?:week|month|year)\b)")
_PATTERNS: tuple[re.Pattern[str], ...] = tuple(re.compile(p) for p in (
    # a verb and its particle around the plan; a pronoun moved to a time
    rf"{_SUBJECT}(?:put|pushed|moved|shifted|bumped)\s+{_PLAN}\s+(?:back|forward)\s+(?:{_TIME})",
    rf"{_SUBJECT}(?:put|pushed)\s+{_PLAN}\s+off\s+(?:{_TIME})",
    rf"{_SUBJECT}(?:called|kicked)\s+{_PLAN}\s+off\b",
    rf"{_SUBJECT}(?:put)\s+{_PLAN}\s+on\s+(?:hold|ice)\b",
    rf"{_SUBJECT}(?:moved|shifted|changed|switched|rebooked)\s+(?P<thing>it|them|that)\s+(?:{_TIME})",
    rf"{_SUBJECT}(?:had\s+to\s+|have\s+to\s+)?(?:move|moved|shift|shifted|rebook|rebooked|brought|bring)\s+"
    rf"{_PLAN}\s+(?:forward\s+)?{_DATE}",  # "we had to move the dinner to the eleventh of November"
    rf"{_SUBJECT_PLAN}(?:'s| is| was| has been|'s been|’s been| had been)\s+(?:now\s+)?(?:(?:moved|shifted)\s+"
    rf"(?:{_TIME}|{_DATE})|brought forward|pushed back|put back|put off|rescheduled)",  # "has been brought forward"
    rf"{_OFF_DOING}(?:'s|’s| is)\s+now\s+(?:(?:on|in|for)\s+)?(?:the\s+)?(?:{_WHEN}|\w+\s+of\s+(?:{_WHEN}))",  # "now on
    # the twelfth of October"
    # the plan is off
    rf"{_OFF_PLAN}(?:'s|’s| is| was| has been|'s been|’s been| had been)\s+(?:now\s+)?"
    rf"(?:off|dead|on\s+hold|on\s+ice){_AFTER}",
    rf"{_OFF_DOING}(?:'s|’s| is| was| has been|'s been|’s been| had been)\s+(?:now\s+)?off{_AFTER}",
    rf"{_SUBJECT_PLAN}(?:'s|’s| is| was| has been|'s been|’s been| got| had been)\s+(?:now\s+)?"
    rf"(?:cancelled|canceled|called off|postponed|shelved|scrapped|withdrawn|put back|pushed back){_AFTER}",
    rf"{_SUBJECT_PLAN}\s+(?:fell|has fallen|'s fallen|’s fallen)\s+through\b",
    # a verb that ends or moves a plan, with a pronoun object or none
    rf"{_SUBJECT}(?:cancelled|canceled|postponed|deferred|shelved|scrapped|dropped|ditched)"
    rf"(?:\s+(?P<thing>it|them|that))?(?=\s*(?:[.,;:!\-—–]|$)|\s+(?:to|till|until|for|after|because|when|in|at)\b)",
    rf"{_SUBJECT}(?:deferred|postponed)\s+{_PLAN}\s+(?:to|till|until)\b",
    rf"{_SUBJECT}(?:scrapped|dropped|ditched|abandoned|shelved)\s+(?P<thing>(?:the|our|my|his|her)\s+"
    rf"(?:[\w'’-]+\s+){{0,3}}?{_PLAN_NOUN})",
    # a plan noun moved, or a plan put back to a time alone ("We moved the wedding, by the way.", "Next summer now.",
    # "The guesthouse won't open till next spring", "We're going in December instead")
    rf"{_SUBJECT}(?:moved|shifted)\s+(?P<thing>(?:the|our|my)\s+(?:[\w'’-]+\s+){{0,2}}?{_PLAN_NOUN})"
    r"(?=\s*[.,;:!]|$)",
    r"^\s*[Nn]ext\s+(?:year|spring|summer|autumn|winter|month|week|" + _WHEN + r")\s*,?\s+now\b",
    rf"\b(?:[Ii]'m|[Ii]’m|[Ww]e're|[Ww]e’re|[Ii] am|[Ww]e are)\s+(?:going|coming|flying|leaving|travelling)\s+"
    rf"in\s+(?:{_WHEN})\s+instead\b",
    # the plan left out, as an answer: "Called off.", "Cancelled, sadly."
    r"^\s*(?:[Cc]ancell?ed|[Cc]alled\s+off|[Pp]ostponed|[Ss]crapped|[Ss]helved)(?=\s*(?:[.,;!]|$))"
    r"|^\s*[Pp]ostponed\s+(?:to|till|until)\b",  # "Postponed until May."
))
# the plan did not happen: the negation is the reading here, not a negated one
_NOT_DONE = tuple(re.compile(p) for p in (
    rf"{_SUBJECT_PLAN}\s+(?:never\s+happened|(?:didn't|didn’t|did\s+not)\s+happen)\b",
    r"\b(?:[Ii]|[Ww]e)\s+(?:never|didn't|didn’t|did not)\s+(?:go|make it|made it|get|got)\s+(?:up\s+|out\s+|down\s+)?"
    rf"(?:to\s+(?=(?-i:{CAP}))|there\b|in\s+the\s+end\b|after\s+all\b|in\s+(?:{_WHEN})\b)",  # "didn't go in May"
    rf"\b(?:[Ii]|[Ww]e)\s+never\s+went\s+to\s+(?=(?-i:{CAP}))",  # "I never went to Ouagadougou."
    r"^\s*(?:[Ii]|[Ww]e)\s+never\s+went(?=\s*[.!;]|$)",  # "I never went." (what the question before names)
    r"\b[Nn]one\s+of\s+us\s+(?:went|made\s+it|got\s+there)\b",  # "none of us went in the end"
    # "I'm not going to Sorrelbury after all", "We're not coming in October", "I'm not going."
    rf"\b(?:[Ii]'m|[Ii]’m|[Ii] am|[Ww]e're|[Ww]e’re|[Ww]e are)\s+not\s+(?:going|coming)\b(?=\s*(?:[.!;:]|$)|\s+(?:to\s+"
    rf"(?=(?-i:{CAP}))|in\s+(?:{_WHEN})\b|after\s+all\b|any\s*more\b))",
    r"^\s*[Tt]here\s+(?:was|were)\s+no\s+(?P<thing>[\w'’-]+)\s+(?:in\s+the\s+end|after\s+all)\b",  # "no chalet"
    # not before a later time: "The guesthouse won't open till next spring", "I won't open before next spring"
    rf"(?:{_SUBJECT_PLAN}|\b(?:[Ii]|[Ww]e))\s+(?:won't|won’t|will\s+not)\s+(?:open|start|happen|go\s+ahead|take\s+"
    rf"place)\s+(?:till|until|before)\s+(?:next\s+\w+|{_WHEN})",
    # the plan is no longer at its time: "the wedding isn't in December any more"
    rf"{_OFF_PLAN}\s+(?:isn't|isn’t|is\s+not|won't\s+be|won’t\s+be)\s+(?:in|on)\s+[^.!?;]*?\bany\s*more\b",
))
# a word one of the patterns needs: most sentences have none and are passed over in one search
_ANY = re.compile(r"\b(?:off|back|forward|cancel|postpone|defer|shelve|scrap|withdrawn|through|never|didn|"
                  r"did not|dropped|ditched|moved|move|shift|rebook|brought|bring|abandon|hold|ice|dead|happen|now|"
                  r"any\s*more|none of us|next|won't|won’t|will not|instead|not going|not coming|there w)",
                  re.IGNORECASE)


@lru_cache(maxsize=200_000)  # sentences as keys, as turn_changes.py's memos
def called_off(sentence: str, people: frozenset[str] = frozenset()) -> Ending | None:
    """The sentence tells a plan was called off or put back (see the module docstring), or None. `people`: the
    namespace's speakers, who are persons, not plans ("Mel's off")."""
    if not _ANY.search(sentence) or sentence.rstrip().endswith("?"):
        return None
    return read_ending(sentence, _PATTERNS + _NOT_DONE, people, frozenset(_NOT_DONE))
