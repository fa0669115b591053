"""Where a speaker works, told in a sentence: one attribute, its value the organisations named (for
construct/turn_changes.py, read by construct/named_state.py).

Why: a new job is mostly told in words that share nothing with the old one ("I'm a receptionist at a dental practice
in Tarnby" -> "I've started at the Hollerby animal clinic as a veterinary care assistant"; "I answer complaints for
Blackmoss Energy" -> "I've been at the seed bank at Ostley Gardens since June"). English tells the attribute itself,
of the speaker or the one spoken to (`job`) and of third persons (`jobs_of_others`: "My husband's still a foreman at
Gethin Steel"): a role at a named place ("I'm a sous chef at the Gilded Pike"), work at or for one ("I've worked at
Pell & Marsh", "I'm still on the grill at the Tallowmere Bistro"), a habit in the present at a named organisation
("I fix buses at the Stanway depot", "you're selling houses for Drummond Lisle now"), a perfect at a named place
("Thirty-eight years I've driven for Brigstock Coaches"), a habit with the hours of work ("I weigh fish at the
cooperative, the early shift", "I ice cakes for a living"), or a beginning ("I've trained as a phlebotomist at ...",
"I took a job as a finance analyst at ...", "I've been taken on full-time at ...", "the vets took me on as a
trainee", "the forestry office hired me as a ranger", "the port office hired me in March", "I went into business
with my cousin", "the hotel made me assistant manager", "I've started an apprenticeship with ...", "signed on as a
deckhand", "I'm training as a ...", "I opened my own little shop in ..."; a job held since a recent time: "I've been
running the crane at the port since June"), or an occupation (words/occupations.txt) with a mark of its beginning
("I'm a postman now, since May", "Since December I'm the practice manager", "you're the new caretaker", "she became
a midwife"). An occupation alone ("I'm a freelance illustrator") is a job with no value: a beginning or an end
changes it, it changes nothing. Its value is the capitalised names after "at", "for", "with" or "in", else the noun
of a place of work (words/workplaces.txt: "I milk cows at my uncle's farm", "he drives a gritter for the council";
not an errand there: "I buy bread at the bakery"). A habit with no named organisation is read only as the present
one, weakly ("I operate one of the cranes now", "Since June I drive the bakery van"): it may be a pastime, so it
changes a job told with a name (not one told only by a common noun) and is no job to change. A job ended with
nothing after it ("I retired in June", "he lost his job", "she was made redundant", "I'm still unemployed", "you've
left the bank and ...", the tools of a trade hung up for good: "I hung up my hard hat in July") is a value too: it
changes a job, and a job after it changes it; told twice it is one change. Not read, beside what
construct/named_state.py says: such a habit without "now" ("I drive the airport shuttle"), the past ("I met her at
Rook's"), going, shopping or eating somewhere ("I shop at Lidl"), learning, trying or doing ("I'm learning the cello
now"). General English, no benchmark or fixture vocabulary.
"""

from __future__ import annotations

import re
from functools import lru_cache

from qgmem.construct.letters import CAP
from qgmem.construct.named_state import (OTHER, SELF, SINCE, Grammar, NamedState, Patterns, read_named,
                                        read_named_others)
from qgmem.construct.state_cues import TIME_NAMES
from qgmem.words import load_words

# a place of work named by a common noun ("the boatyard", "my uncle's farm"; words/workplaces.txt)
_WORKPLACE = "|".join(sorted((w.replace(" ", r"\s+") for w in load_words("workplaces")), key=len, reverse=True))
# after at most two words: "district hospital", "my uncle's farm"
_NOUN = rf"(?:[\w'’-]+\s+){{0,2}}?(?:{_WORKPLACE})s?\b"
# a place of work ahead: after "at", "with" or "in", or after "for" and an article ("drives a gritter for the
# council"; not "running for office", "for my dance studio", "on the hunt for ...")
_AT_NOUN = rf"(?:(?:at|with|in)\s+(?=(?:the\s+|a\s+|an\s+)?{_NOUN})|for\s+(?=(?:the|a|an)\s+{_NOUN}))"
_NAMED = (rf"(?:[\w'’&-]+\s+){{0,7}}?(?:(?:at|for|with|in|on)\s+(?:the\s+|a\s+|an\s+)?(?=(?-i:{CAP}))"  # at a name
          rf"|{_AT_NOUN})")
# a habit's object, then "at/for" a name: "fix buses at the Stanway depot" (not "use it to speak up for ...")
_OBJECT = r"(?:(?!to\b|it\b)[\w'’&-]+\s+){0,5}?"
# a month or weekday is a time, not an organisation
_WHEN = f"(?-i:{TIME_NAMES})"
_AT_NAME = rf"{_OBJECT}(?:at|for)\s+(?:the\s+)?(?!{_WHEN}\b)(?=(?-i:{CAP}))"  # not a time: "booked it for September"
# verbs of a present habit that are not work (going, shopping, eating, meeting, liking somewhere), and the
# irregular pasts a bare form cannot tell from the present: "I met her at Rook's", "I had a great time at ..."
_NOT_WORK = (r"(?!(?:also|still|now|just|really|always|never|even|only|go|shop|eat|meet|see|stay|live|play|"
             r"pray|look|wait|love|like|enjoy|hate|feel|use|have|had|has|is|does|say|met|volunteer|"
             r"went|saw|got|took|made|came|found|spent|left|was|were|did|ran|sat|stood|bought|sold|thought|kept|"
             r"ate|drank|lost|won|told|said|heard|gave|brought|caught|taught|wrote|read|"
             r"can|could|will|would|shall|should|must|might|may)"  # nor a modal: "I can solve it in my head now"
             r"(?:s|es|ing)?\b|[a-z]+ly\b)")  # nor an adverb as the verb ("We actually met in a class in college")
# an occupation (words/occupations.txt) after at most two words that qualify it ("a postman", "the practice manager";
# not a judgement of how one does it: "a good cook", "a terrible driver")
_OCCUPATIONS = "|".join(sorted(load_words("occupations"), key=len, reverse=True))
_JUDGED = (r"(?!(?:good|great|better|best|bad|worse|worst|terrible|awful|decent|lousy|proper|real|keen|big|huge|"
           r"happy|proud|nervous|slow|fast|quick|careful|natural|born|fine|excellent|brilliant|hopeless|useless|"
           r"much|far|very|pretty|really|such|little|bit)\b)")
_ROLE = rf"(?:{_JUDGED}[\w'’-]+\s+){{0,2}}?(?:{_OCCUPATIONS})s?\b"
# the hours of work: a shift, a rota, a living
_WORK_TIME = (r"(?<!\bmy\s)(?<!\bour\s)(?<!\byour\s)"  # not "before my shift"
              r"(?:\b(?:(?:early|late|night|day|morning|evening|afternoon|split|double|long|[\w-]+-hour)\s+)?shifts?\b"
              r"|\b(?:earlies|lates)\b|\bfor\s+a\s+living\b|\b(?:full|part)[-\s]time\b|\bovertime\b)")
# nor, at a place of work named by a common noun, an errand ("I buy bread at the bakery", "I pick her up at the school")
_ERRAND = (r"(?!(?:buy|order|drink|grab|pick|drop|take|sit|sleep|rest|relax|swim|study|visit|park|queue|borrow|"
           r"collect)(?:s|es|ing)?\b)")


def _patterns(g: Grammar) -> Patterns:
    """(a beginning, a job held, a work habit told as the present one) of the persons of `g`. The last is weak: a
    verb, an object, then "now" ("I operate one of the cranes now", "you're giving tours at the observatory now"),
    or opened by a date ("Since June I drive the bakery van"); not a verb of learning, trying or doing."""
    s, aux = g.subject, g.aux
    # a habit told with the hours of work ("I weigh fish at the cooperative, the early shift", "I drive the tram,
    # earlies one week and lates the next", "I ice cakes for a living"): a job held, begun when told as the present one
    shift_habit = (rf"\b{g.habit}\s+(?:still\s+|also\s+|[a-z]+ly\s+)?{_NOT_WORK}[a-z]+(?<![^e]ed)\s+"
                   rf"(?=[^.!?;]*?{_WORK_TIME})")
    begins = re.compile(
        rf"\b{s}{aux}\s+(?:just\s+|now\s+|finally\s+)*(?:(?:re)?trained|qualified|training)\s+as\b"  # "trained as a"
        rf"|\b{s}{aux}\s+(?:just\s+|now\s+|finally\s+)*(?:started|starting|begun)\s+(?:(?:at|with)\s+(?:the\s+)?"
        rf"(?=(?-i:{CAP}))|as\b|work\b|"
        rf"(?:a|an|{g.poss})\s+(?:new\s+)?(?:[\w'’-]+\s+){{0,2}}?"
        rf"(?:job|apprenticeship|traineeship|role|post|position)\b)"
        rf"|\b{s}{aux}\s+(?:just\s+|finally\s+)*(?:took|taken|got|landed|accepted)\s+(?:a|the)\s+(?:new\s+)?"
        rf"(?:[\w'’-]+\s+)?(?:job|role|post|position)\b"
        rf"|\b(?:taken on|took {g.obj} on|taking {g.obj} on|got taken on|been hired|got hired"
        rf"|hired {g.obj}\s+(?:as|in|last|on|to|at|for))\b"
        rf"|\b{s}{aux}\s+(?:\w+\s+){{0,8}}?(?:went|gone|going)\s+into\s+business\b"  # "... and went into business"
        rf"|\b(?:{s}{aux}\s+|and\s+)(?:just\s+|now\s+)?signed\s+on\s+(?:as|with|at)\b"  # "and signed on as a"
        rf"|\b(?:made|promoted) {g.obj}\s+(?:to\s+)?(?:an?\s+|the\s+)?(?:[\w'’-]+\s+)?"
        rf"(?:manager|supervisor|director|head|lead|partner|foreman|chef)\b"
        rf"|\b{g.poss} new (?:job|role|post|position)\b"
        # a business of one's own ("I opened my own little kente shop in Kpando", "we set up our own firm")
        rf"|\b{s}{aux}\s+(?:just\s+|finally\s+|now\s+)*(?:opened|started|set\s+up|launched)\s+{g.poss}\s+own\s+"
        rf"(?:[\w'’-]+\s+){{0,2}}?(?:{_WORKPLACE}|business)s?\b"
        # an occupation with a mark of its beginning: "I'm a postman now", "since May I've been the cook", "you're
        # the new caretaker", "she became a midwife"
        rf"|\b{s}(?:{g.be}|{g.have}\s+been)\s+(?:now\s+|finally\s+|officially\s+)?(?:a|an|the)\s+{_ROLE}"
        rf"(?=[^.!?;]*?\b(?:now|these days|nowadays|{SINCE}))"
        rf"|(?:^|[:;])\s*{SINCE}\s*,?\s+{s}(?:{g.be}|{g.have}\s+been)\s+(?:a\s+|an\s+|the\s+)?{_ROLE}"
        rf"|\b{s}(?:{g.be}|{g.have}\s+been)\s+(?:now\s+)?the\s+new\s+{_ROLE}|\b{s}\s+became\s+(?:a|an|the)\s+{_ROLE}"
        + (rf"|^\s*look at you,?\s+(?:the\s+)?(?:new\s+)?{_ROLE}" if g.fragments else ""),  # "Look at you, head chef!"
        re.IGNORECASE)
    holds = re.compile(
        rf"\b{s}(?:{g.be}|{g.have} been)\s+(?:still\s+|now\s+)?(?:a|an|the)\s+{_NAMED}"  # a role at a name
        rf"|\b{s}{aux}\s+(?:still\s+|been\s+|now\s+)*(?:work|works|worked|working)\s+(?:from home\s+)?"
        rf"(?:as|at|for|in)\b"
        rf"|\b{s}(?:{g.be}|{g.have} been)\s+(?:still\s+|now\s+)*"
        rf"(?:at|on|behind|with)\s+{_NAMED}"  # "I'm still on the grill at ...", "I've been at the seed bank at ..."
        rf"|\b{s}(?:{g.be}\s+still|{g.have} been)\s+(?:at|with)\s+"
        rf"(?:(?:the\s+)?(?=(?-i:{CAP}))|(?={_NOUN}))"  # "I'm still at Tellwise" (not "I'm at Disneyland!")
        # a perfect of work at a named place ("Thirty-eight years I've driven for Brigstock Coaches")
        rf"|\b{s}{g.have}\s+(?:\w+ly\s+)?(?!(?:stay|liv|play|shop|eat|see|meet|stopp|look|wait|lodg|visit|camp|"
        rf"holiday|spen|be|gon|com|go)\w*\b)[a-z]+(?:ed|en)\s+(?:for|at)\s+(?:the\s+)?(?=(?-i:{CAP}))"
        rf"|\b{g.habit}\s+(?:still\s+|now\s+|also\s+|[a-z]+ly\s+)?{_NOT_WORK}"  # "I fix"
        rf"(?:[a-z]+(?<![^e]ed)\s+{_AT_NAME}"
        rf"|{_ERRAND}[a-z]+(?<![^e]ed)\s+{_OBJECT}{_AT_NOUN})"
        rf"|\b{s}(?:{g.be}|{g.have} been)\s+(?:still\s+|now\s+)?"
        rf"{_NOT_WORK}(?:[a-z]+ing\s+{_AT_NAME}|{_ERRAND}[a-z]+ing\s+{_OBJECT}{_AT_NOUN})"  # "you're selling ..."
        # an occupation alone ("I'm a freelance illustrator"): a job, with no value a later one differs from
        rf"|\b{s}(?:{g.be}|{g.have} been)\s+(?:still\s+)?(?:a|an|the)\s+{_ROLE}"
        rf"|{shift_habit}",
        re.IGNORECASE)
    now_habit = re.compile(
        rf"\b{s}{g.be}?\s+(?:also\s+)?{_NOT_WORK}(?!(?:do|get|learn|send|spend|tr[yi]|tak|"
        rf"start|keep|want|need|think|know|feel|hop|plan)\w*\b)[a-z]+(?<![^e]ed)\s+(?:[\w'’&-]+\s+){{1,10}}?"
        rf"(?<!right\s)(?<!just\s)(?<!for\s)(?:now|these days|nowadays)\b"
        rf"|(?:^|[:;]\s*)\s*since\s+(?:the\s+\w+\s+of\s+)?\w+\s*,?\s+{s}(?:{g.have})?\s+{_NOT_WORK}[a-z]+(?<![^e]ed)\b"
        # at work, or doing a thing, since a recent time ("I've been skippering a tour boat out of Roja since August",
        # "I've been in accounts since the start of November", "I'm teaching at the music school since January")
        rf"|\b{s}(?:{g.be}|{g.have}\s+been)\s+(?:{_NOT_WORK}(?!(?:do|get|learn|tr[yi]|think|feel|hop|plan)\w*\b)"
        rf"[a-z]+ing|at|on|in|with|behind)\s+(?:[\w'’&-]+\s+){{1,8}}?{SINCE}",
        re.IGNORECASE)
    # a job ended: no job is a state too ("He retired in June", "she lost her job when the mill shut", "I'm a man of
    # leisure")
    ends = re.compile(rf"\b{s}{aux}\s+(?:just\s+|finally\s+|now\s+|officially\s+|still\s+)*(?:(?:a\s+)?retired|"
                      rf"lost {g.poss} job|(?:been|got|was|were)\s+(?:made redundant|laid off)|unemployed|"
                      rf"out of work)\b"
                      rf"|\b{s}{g.be}\s+(?:now\s+)?a\s+(?:man|woman|lady|gentleman)\s+of\s+leisure\b"
                      # a job or place of work left, as a whole clause ("you've left the bank and drive the minibus";
                      # not "I left the office at six")
                      rf"|\b{s}{aux}\s+(?:just\s+|finally\s+)?left\s+(?:{g.poss}\s+job|the\s+(?:[\w'’-]+\s+)?"
                      rf"(?:{_WORKPLACE})s?)(?=\s*(?:[.,;!]|$)|\s+(?:and|in\s+(?-i:{TIME_NAMES})|last\s+\w+|after\b|"
                      rf"for\s+good))"
                      # the tools of a trade hung up for good ("So you've finally hung up your spanners!", "I hung up
                      # my hard hat in July"; not "I hung up my coat")
                      rf"|\b{s}{aux}\s+(?:finally\s+hung\s+up\s+{g.poss}\b|hung\s+up\s+(?:{g.poss}|the)\s+"
                      rf"(?:[\w'’-]+\s+)?"
                      rf"[\w'’-]+(?=\s+(?:in\s+(?-i:{TIME_NAMES})|last\s+\w+|for\s+good|after\b)))"
                      + (r"|^\s*retired\b" if g.fragments else ""),  # "Retired, after forty years."
                      re.IGNORECASE)
    # a job held since a recent time began then ("I've been running the crane at the port since June")
    begins = re.compile(rf"{begins.pattern}|(?:{holds.pattern})(?=[^.!?;]*?\b{SINCE})"
                        rf"|{shift_habit}(?=[^.!?;]*?\b(?:now|these days|nowadays)\b)", re.IGNORECASE)
    return Patterns(begins, holds, weak=now_habit, ends=ends)


_SELF, _OTHER = _patterns(SELF), _patterns(OTHER)
# the value: a name, else the noun of a place of work ("at my uncle's farm": "farm")
_ORG = re.compile(rf"\b(?:at|for|with|in|on)\s+(?:the\s+|a\s+|an\s+)?(?:[a-z][\w'’-]*\s+){{0,2}}?"
                  rf"({CAP}[\w'’&-]*(?:\s+(?:{CAP}[\w'’&-]*|&|and(?=\s+(?!I\b){CAP})))*|(?:{_WORKPLACE})(?=s?\b))")
# a word every pattern needs: most turns have none and are passed over in one search
_ANY = re.compile(r"\b(?:at|for|with|in|as|on)\s|\bjob\b|taken on|took \w+ on|hired|made \w+|promoted|\bnow|these days|"
                  rf"\bsince\b|retired|laid off|unemployed|out of work|trained|training|qualified|became|\bnew\b"
                  rf"|hung up|\bown\b|leisure|\bleft\b|look at you|shift|earlies|lates|living|time"
                  rf"|\b(?:{_OCCUPATIONS})",
                  re.IGNORECASE)
Job = NamedState  # names: the organisations; begun: a new job


@lru_cache(maxsize=20_000)  # whole turns as keys, as turn_changes.py's memos
def job(text: str) -> Job | None:
    """Where a turn's statements tell its speaker or the one spoken to works (see the module docstring): the
    organisations of all of them, a new job if one is. None when no statement tells one."""
    if not _ANY.search(text):
        return None
    return read_named(text, _SELF, _ORG)


@lru_cache(maxsize=20_000)
def jobs_of_others(text: str) -> tuple[tuple[tuple[str, ...], int, Job], ...]:
    """Where a turn's statements tell third persons work: (the words that may name the person, the likeliest
    first, the offset of the sentence, the job), in order ("My husband's still a foreman at Gethin Steel", "she
    took a job at ...")."""
    if not _ANY.search(text):
        return ()
    return read_named_others(text, _OTHER, _ORG)
