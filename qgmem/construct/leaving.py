"""Someone leaving a group or a pastime, or the group itself ending, told in a sentence (for
construct/turn_changes.py).

Why: a membership ends in words the old state does not use, and the thing left is mostly a pronoun or left
out, because the other speaker has just named it: "Are you still fencing at Greyfold?" -> "No, I dropped it
in October."; "Still drawing?" -> "I packed it in after Christmas."; "And the choir?" -> "I'm not a member
any more.". The rule extractor keeps no claim of it ("dropped it" names nothing), and the turn shares no word
with "I fence with the Greyfold club". A group can also end under its members: "the club folded in
September", "the band broke up", "the team carries on without me". The reading is of the sentence's grammar
only, general English:
- a person quits: "dropped it", "gave it up", "gave up the club", "packed it in", "stopped going", "stood down",
  "stood down from the committee", "walked out of the club", "finished with the Owls", "withdrawn from the race",
  "let the membership lapse", "didn't renew", "not a member any more", "my last concert with them", "hung up his
  pads", "handed my folder back to the choir", "handed the shop over to my cousin", "I'm done with greasepaint",
  "I've put the park behind me", "I left the book group", "I've left it.", "I walked away in August", "you've put
  the oar down for good", "I let my membership of the hill club lapse", "I'm not in the chama any more", "that was
  my last with them", "I bowed out of the choir", "I handed in my rope to the band", "I withdrew my membership", or
  is let go ("the depot let me go in March");
- the group and the person part: "the cooperative and I parted in January", "the orchestra has seen the last of
  you";
- a group ends: "<the group> folded / disbanded / broke up / wound up / went under", "closed in March", "...
  carries on without me", "I let the class go on without me".
A bare quitting verb ("I dropped it", "I stopped") is read only when nothing but a time follows it ("in
October", "after six weeks", "last year"): "I dropped it on the floor" and "we stopped at the shop" end nothing.
Not read: questions, negated or wished sentences ("I'd never quit", "I want to give it up"), a person as the
group that ends ("my parents split up" is a relationship, read elsewhere).
"""

from __future__ import annotations

import re
from functools import lru_cache

from qgmem.construct.ending_reader import Ending, read_ending
from qgmem.construct.letters import CAP
from qgmem.construct.state_cues import MONTHS
from qgmem.construct.state_table import StateTable

# who quits: a person's pronoun or "my son" (before the verb), or a verb joined to the one before ("and let ...")
_SUBJECT = (r"(?:\b(?:[Ii]|[Ww]e|[Yy]ou|[Hh]e|[Ss]he|[Tt]hey|(?:[Mm]y|[Oo]ur|[Hh]is|[Hh]er)\s+\w+)"
            r"(?:'ve|’ve| have| had|'d|’d|'s|’s| has)?|\b(?:and|then))"
            r"\s+(?:\w+ly\s+|just\s+|finally\s+|already\s+)?")
_MONTH = "|".join(sorted(m.capitalize() for m in MONTHS))
# what may follow a bare quitting verb: the sentence's end, or a time ("in October", "after six weeks")
_SEASON = r"(?:spring|summer|autumn|fall|winter)"
_TAIL = r"(?=\s*(?:[.,;:!)\-—–]|$)|\s+(?:" + "|".join((
    rf"in\s+(?:{_MONTH}|the\s+(?:{_SEASON}|end|new year)|\d{{4}})", r"after\b", r"before\b",
    r"at\s+the\s+(?:end|start|beginning)\b",
    r"last\b", rf"this\s+(?:year|month|week|{_SEASON})\b", r"(?:a\s+)?(?:few|couple)\b", r"(?:ages|a\s+while)\b",
    r"(?:years?|months?|weeks?)\s+ago", r"for\s+good\b", r"(?:when|because|once|though|too)\b",
    r"(?:altogether|completely)\b", r"as\s+well\b", r"mid-")) + "))"
# the thing a pattern names: a pronoun, or a noun phrase of up to four words (kept as the sentence has it)
_THING = r"(?P<thing>it|them|that|(?:(?:the|my|our|his|her|their)\s+)?(?:[\w'’-]+\s+){0,3}?[\w'’-]+)"
# the thing between a verb and its particle: "gave it up", "given football up", "packed the Scouts in"
_HELD = r"(?P<thing>it|them|that|(?:(?:the|my|our|his|her|their)\s+)?(?:[\w'’-]+\s+){0,2}?[\w'’-]+)"
_QUIT = (
    rf"(?:dropped|ditched|quit|quitted|chucked|left)\s+(?P<thing>it|them|that){_TAIL}",  # "I've left it."
    rf"(?:walked|stepped)\s+(?:away|out){_TAIL}",  # "I walked away in August", "I stepped out at the start of ..."
    rf"bowed\s+out(?:\s+of\s+{_THING})?",  # "I bowed out of the choir after the carol service"
    # "I handed in my rope to the band"
    r"handed\s+in\s+(?P<thing>(?:my|his|her|our)\s+(?:[\w'’-]+\s+)?[\w'’-]+)\s+to\s+(?:the|our|my)\b",
    r"(?:withdrew|withdrawn|cancelled|canceled|surrendered|gave\s+up)\s+(?P<thing>(?:my|our|his|her)\s+membership)\b",
    rf"put\s+{_HELD}\s+down\s+for\s+good\b",  # "you've put the oar down for good"
    # the membership itself let go: "I let my membership of the mountain club lapse in April"
    r"let\s+(?P<thing>(?:my|our|his|her|the)\s+membership\s+(?:of|at|with)\s+(?:the\s+)?(?:[\w'’-]+\s+){0,3}?[\w'’-]+)"
    r"\s+(?:lapse|expire)\b",
    rf"(?:gave|given|give)\s+{_HELD}\s+up\b",
    rf"(?:packed|jacked|chucked|pack|jack|chuck)\s+{_HELD}\s+in\b",
    rf"(?:gave|given)\s+up\s+(?:on\s+)?{_THING}",
    rf"(?:packed|jacked|chucked)\s+in\s+{_THING}",
    rf"(?:(?:gave|given)\s+up|(?:packed|jacked|chucked)\s+in|(?:stood|stepped)\s+down){_TAIL}",
    rf"(?:stood|stepped)\s+down\s+(?:as\s+(?:[\w'’-]+\s+){{0,2}}?)?from\s+{_THING}",  # "... from the committee"
    rf"walked\s+out\s+(?:of|on)\s+{_THING}",  # "I walked out of the club in March"
    rf"(?:finished|withdrawn|withdrew|pulled\s+out)\s+(?:with|from|of)\s+{_THING}",  # "I finished with the Sharks"
    rf"(?:stopped|quit){_TAIL}",
    r"(?:stopped|quit)\s+(?:going|\w+ing)\b",
    rf"let\s+{_THING}\s+(?:lapse|expire)\b",  # "let it go" is mostly a feeling: a membership has to be named
    r"let\s+(?P<thing>(?:the|my|our)\s+(?:[\w'’-]+\s+){0,3}?[\w'’-]+)\s+go\b(?!\s+(?:to|out|in|on|and|for|with|"
    r"into|outside|home|off|ahead|first|back|of)\b)",
    r"(?:called it a day|knocked it on the head|hung up (?:my|his|her|their|your) \w+)",
    rf"put\s+{_THING}(?<!\son)\s+behind\s+(?:me|us|him|her|them)\b",  # "I've put the park behind me"
    # a role's token handed back or on: "handed my folder back to the choir", "handed the shop over to my cousin";
    # not a thing passed to a person by a pronoun ("handed the salt over to her")
    r"(?:handed|given)\s+(?P<thing>(?:my|his|her|our|their|the)\s+(?:[\w'’-]+\s+)?[\w'’-]+)\s+(?:back|over)\b"
    r"(?!\s+to\s+(?:me|him|her|us|them|you)\b)",
)
_QUITTING = tuple(re.compile(rf"{_SUBJECT}(?:{q})") for q in _QUIT)
_NOT_RENEWED = re.compile(rf"{_SUBJECT}(?:didn't|didn’t|did not|never|haven't|haven’t)\s+renew(?:ed)?\b"
                          rf"(?:\s+(?:at|with)?\s*{_THING})?", re.IGNORECASE)
_NO_MEMBER = re.compile(r"\b(?:(?:not|no longer) a member(?:\s+(?:any ?more|now))?(?!\s+of\b)"
                        r"|not in (?:it|them) any ?more|no longer in (?:it|them)"
                        r"|not in (?P<thing>(?:the|my|our)\s+(?:[\w'’-]+\s+){0,2}?[\w'’-]+) any ?more)",
                        re.IGNORECASE)
# the group and the speaker parted, or the group saw the last of them ("The cooperative and I parted in January",
# "the angklung has seen the last of you")
_A_GROUP = r"(?P<thing>(?:[Tt]he|[Oo]ur|[Mm]y)\s+(?:[\w'’-]+\s+){0,2}?[\w'’-]+)"
_PARTED = re.compile(rf"{_A_GROUP}\s+and\s+I\s+(?:have\s+|'ve\s+|’ve\s+)?(?:parted|went\s+our\s+separate\s+"
                     r"ways)\b")
_SEEN_LAST = re.compile(rf"{_A_GROUP}\s+(?:has|'s|’s)\s+seen\s+the\s+last\s+of\s+(?:me|you|us)\b")
_LAST_TIME = re.compile(r"\b(?:[Ii]|[Ww]e)\s+\w+\s+(?:my|our)\s+last\s+\w+\s+(?:with|for)\s+(?P<thing>them|it)\b"
                        r"|\b(?:[Tt]hat|[Ii]t)\s+was\s+(?:my|our)\s+last(?:\s+\w+)?\s+(?:with|for)\s+"
                        r"(?P<one>them|it)\b")  # "that was my last with them"
_GROUP = (r"(?P<thing>[Tt]hey|[Ii]t|(?:[Tt]he|[Oo]ur|[Mm]y)\s+(?:[\w'’-]+\s+){0,3}?[\w'’-]+"
          r"|(?!(?:I|We|You|He|She|This|That|There|Then|So|And|But|Yes|No|Oh|Well)\b)"
          rf"{CAP}[\w'’-]+(?:\s+{CAP}[\w'’-]+)*)")
_ENDED = re.compile(rf"{_GROUP}(?:'s|’s| has| had)?\s+(?:just\s+|finally\s+)?(?:folded|disbanded|broken up|broke up"
                    r"|split up|wound up|closed down|shut down|gone under|went under|gone bust|went bust|fallen apart"
                    r"|fell apart"  # closed at a time told ("The depot closed in March"; not "closed early today")
                    rf"|closed(?=\s+(?:for\s+good|in\s+(?:{_MONTH}|\d{{4}}|the\s+(?:{_SEASON}|new\s+year))"
                    rf"|last\s+(?:year|month|week|{_SEASON}))))\b")
_WITHOUT_ME = re.compile(rf"{_GROUP}(?:'ll| will| can| could)?\s+(?:carr(?:y|ies|ied)\s+on|go(?:es)?\s+on|manages?"
                         r"|copes?"
                         r"|gets?\s+by|(?:is|are|'s|’s)\s+(?:doing\s+)?(?:fine|carrying\s+on))"
                         r"\s+without\s+(?:me|us|my)\b")
# nouns that name a group (qgmem/words/state_relations.txt, the membership class as a head word), and "group"
_GROUP_NOUNS = "|".join(sorted({*StateTable.default().nouns("membership", uses=("head",)), "group"}))
# left a group named by its noun ("I left the book group in September"; not "left the house")
_LEFT = re.compile(rf"{_SUBJECT}(?:left|quit)\s+(?P<thing>(?:the|my|our)\s+(?:[\w'’-]+\s+){{0,3}}?"
                   rf"(?:{_GROUP_NOUNS})s?){_TAIL}")  # not "we left the gym early"
# let go by an employer or a group ("Brackley's let me go in February", "the plant let us all go", "laid off
# forty of us"), or done with it ("I'm done with greasepaint")
_US = r"(?:me|us(?:\s+all)?|[a-z]+\s+of\s+us)"  # "us all", "all of us", "twenty of us"
_LET_GO = re.compile(rf"\b(?:let|laid)\s+{_US}\s+(?:go|off)\b|\blaid\s+off\s+{_US}\b")
_DONE_WITH = re.compile(rf"\b(?:[Ii]|[Ww]e|[Yy]ou)(?:'m|’m|'re|’re| am| are| was| were)\s+(?:all\s+|so\s+)?"
                        r"done\s+with\s+(?P<thing>[^.,;:!?]*[^.,;:!?\s])")
_PATTERNS = (*_QUITTING, _NOT_RENEWED, _NO_MEMBER, _LAST_TIME, _ENDED, _WITHOUT_ME, _LEFT, _LET_GO, _DONE_WITH, _PARTED,
             _SEEN_LAST)
# a word one of the patterns needs: most sentences have none and are passed over in one search
_ANY = re.compile(r"drop|ditch|quit|chuck|gave|given|give|pack|jack|stood|stepped|stop|let |renew|member|not in|handed|"
                  r"walked|finished|withdr|pulled out|"
                  r"longer in|last|fold|disband|broke|split|wound|closed|shut|under|bust|apart|without|"
                  r"called it|knocked it|hung up|let me|let us|laid|done with|left|behind|away|out|down|parted|"
                  r"seen the last|bowed|membership", re.IGNORECASE)


@lru_cache(maxsize=200_000)  # sentences as keys, as turn_changes.py's memos
def leaving(sentence: str, people: frozenset[str] = frozenset()) -> Ending | None:
    """The sentence tells that someone left a group or a pastime, or that a group ended (see the module
    docstring), or None. `people`: the namespace's speakers, who are persons, not groups."""
    if not _ANY.search(sentence) or sentence.rstrip().endswith("?"):
        return None
    return read_ending(sentence, _PATTERNS, people, frozenset({_NOT_RENEWED, _NO_MEMBER}))
