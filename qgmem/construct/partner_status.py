"""A speaker's partner status told in a sentence: one attribute, several values (for construct/turn_changes.py).

Why: a change of partner status is mostly told in words that share nothing with the old value and often in no triple
the extractor keeps ("I'm single, and quite happy about it" -> "So, I've met someone. We've been together since
March."; "We've been going out two years" -> "We're engaged!"). The value is what English says about the status
itself: single (also after an ending: "split up", "gone our separate ways", "the divorce came through", "gave him
the ring back", "gave Fatos back his ring", "X and I have parted", "went our own ways", "called time on it", "broke
off the engagement", "you and X called it off"), seeing someone ("my girlfriend Kadri", "we've been a couple since
...", "X and I got together", "we've walked out together since the fair", "you've got a new man", a name introduced
or lasting: "I'm going out with Tavish, the boat builder", "I'm seeing Oriel now"; not an outing: "going out with
Anna tonight"), engaged ("popped the question", "my fiancé", "I asked her to marry me"), married ("tied the knot",
"X and I had our wedding", "my husband"). Two statements of one person in different sessions with different values,
or with different named partners, are a change of that person's relationship state; the same value told again
("still together") is not, nor together after married with no partner named; a partner told after an ending in the
same turn is a new one ("X and I finished in May. Since June I've been courting a schoolteacher"). `partner_status`
reads statements about the speaker ("I", "we", "X and I") or, in a turn that speaks to the other person only, about
them ("you're going out with ..."); `statuses_of_others` those about third persons (construct/holders.py says who):
a sister's marriage is her state, not the speaker's. General English, no benchmark or fixture vocabulary.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

from qgmem.construct.letters import CAP, LETTER, NAME
from qgmem.construct.named_state import HOLDER, THIRD, asks

SINGLE, SEEING, ENGAGED, MARRIED = "single", "seeing", "engaged", "married"

# a partner by a pronoun, a plain noun, or a job and a name ("a physio called Kristaps", "a farrier named Jost")
_WHO = (r"(?:someone|somebody|him|her|(?:a|the) (?:guy|girl|man|woman|lad|lass)\b"
        r"|(?:a|an) [\w'’-]+ (?:called|named)\b)")
_TITLE = r"(?!(?:Dr|Mr|Mrs|Ms|Miss|She|He|They|We)\b)"  # no partner: "seeing Dr Hale", "She and I"
# "is" after a third person ("she's", "Mum is", "they're")
_BE3 = r"(?:(?<=\w)(?:'s|’s)|\b(?:he|she|they)(?:'re|’re)|\bis|\bare)"
# (value, pattern) in the order they are tried: an ending or an engagement says more than "together"
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((v, re.compile(p, re.IGNORECASE)) for v, p in (
    (SINGLE, r"\b(?:split up|broke up|broken up|broke it off|broken it off|separated|divorced"
             r"|(?:separate|different) ways"
             r"|(?:aren't|aren’t|are not|isn't|isn’t|is not|not)\s+getting\s+married\s+after\s+all"
             r"|finished things|the divorce|called it quits)\b|\b(?:went|gone|go|going) (?:our|their) own ways\b"
             rf"|\bfinished with (?:him|her|them|(?-i:{NAME}))\b"
             rf"|\bgave (?:him|her|(?-i:{NAME})) (?:the|his|her|back the) ring(?: back)?\b"
             r"|\b(?:returned|handed back|gave back) (?:the|his|her|my) ring\b"
             rf"|\bgave (?:him|her|(?-i:{NAME})) back (?:the|his|her) ring\b"  # "Luljeta gave Fatos back his ring"
             r"|\bbroke off (?:the|our|their|his|her|my) engagement\b|\bcalled time on (?:it|us|things)\b"
             rf"|\b(?:you and (?-i:{NAME})|(?-i:{NAME}) and i)(?:'ve|’ve| have)?\s+called it off\b"  # not "we":
             # an outing is called off as often
             rf"|\b(?:we|{LETTER}+ and i)(?:'ve|’ve| have)?\s+(?:parted|ended it)\b"  # "Ayaal and I have parted"
             rf"|\b(?-i:{NAME}) and i(?:'ve|’ve| have)?\s+finished(?=\s*(?:[.,;!]|$)|\s+(?:in|last|after|when)\b)"
             rf"|\b(?:we|{LETTER}+ and i)(?:'ve|’ve| have)?\s+(?:finally\s+)?split\b"  # not "we split the bill"
             r"(?!\s+(?:the|a|an|it|our|my|his|her|their|this|that|everything|costs?|bills?|shifts?)\b)"),
    (SINGLE, rf"(?:\b(?:i'm|i am|i've been|i have been|you're|you are|still|and)|{_BE3})\s+(?:still\s+|now\s+)?"
             r"(?:(?:very|quite|happily|perfectly)\s+){0,2}single\b|\bsingle again\b"),
    (SINGLE, r"(?:\bnot|n't|\bnever)\s+(?:been\s+)?(?:dating|dated|seeing|going out with)\s+anyone\b"),
    (ENGAGED, rf"(?:\b(?:we're|we are|i'm|i am|you're|you are|got|just got|we got|we've got|(?:you|\w+) and "
              rf"(?:i|\w+) (?:are|'re|’re))|{_BE3})\s+(?:now\s+)?engaged\b"
              rf"|\bproposed to (?:me|him|her|(?-i:{NAME}))\b|\bpopped the question\b"  # not "proposed a rota"
              rf"|\basked (?:him|her|(?-i:{NAME})) to marry (?:me|him|her)\b"
              r"|\b(?:i|we)\s+(?:have|'ve got|’ve got)\s+a\s+(?:fiancée|fiancé|fiancee|fiance)\b"),  # "I have a fiancé"
    (MARRIED, rf"(?:\b(?:getting|got|been|we're|we are|i'm|i am|you're|you are|were)|{_BE3})\s+(?:still\s+)?married\b"
              rf"|\bmarried (?=(?-i:{CAP}))"  # not "want to get married"; "she married Cornelius"
              r"|\bmarried\s+(?:for\s+)?(?:\w+[\s-]+){0,2}years\b"  # "muddling along, married twelve years"
              r"|\byears\s+married\b|\bmarried\s+again\b"  # "Eleven years married to X", "my father married again"
              r"|\b(?:tied|tie|tying) the knot\b|\bgot hitched\b"
              rf"|\b(?:we|{LETTER}+ and i)\s+(?:finally\s+|just\s+)?married\b"  # "Astou and I married in May"
              rf"|\b(?:we|{LETTER}+ and i)\s+had\s+our\s+wedding\b"),  # "Nguema and I had our wedding in July"
    (SEEING, rf"\b(?:seeing|dating|going out with|been with)\s+{_WHO}|\bbeen seeing (?:a|an) [\w'’-]+ from\b"
             r"|\bbeen (?:going out|dating)\b|\bgoing steady\b"
             r"|\b(?:we're|we are|we've been|we have been|and i are|and i have been|and i've been)\s+(?:still\s+)?"
             r"(?:together|a couple|an item|a pair)\b|\b(?:years?|months?) as a couple\b"
             rf"|\b(?:we|{LETTER}+ and i)\s+(?:first\s+)?got together\b"  # "Fadi and I got together at the harvest"
             r"|\b(?:they're|they are|they've been|they have been)\s+(?:still\s+)?(?:together|a couple|an item)\b"
             r"|\b(?:i've|i have|you've|you have|he's|she's|has)\s+met someone\b|\bcourting\b"
             r"|\b(?:has|have|got|'s got|’s got|'ve got|’ve got)\s+a\s+(?:new\s+)?(?:boyfriend|girlfriend)\b"
             r"|\b(?:has|have|got|'s got|’s got|'ve got|’ve got)\s+a\s+new\s+(?:man|woman|fella|partner)\b"
             rf"|\b(?:walked|walking|walk) out (?:together|with (?:him|her|(?-i:{NAME})))\b"  # courting, told old-style
             rf"|\b(?:i'm|i am|you're|you are|he's|she's|he is|she is)\s+still\s+with\s+(?-i:{NAME})\b"
             rf"(?!\s+(?-i:{CAP}))"),
)) + (  # a named partner is capitalised, so this one keeps its case; "seeing Anna" alone is as often a meeting
    (SEEING, re.compile(rf"\b(?:[Dd]ating|been seeing|been going out with)\s+{_TITLE}{NAME}")),
    # "going out with" or "seeing" a name is a partner when the person is introduced or it has lasted: "I'm going out
    # with Sebastiano, the tree surgeon, since the fair", "I'm seeing Ochieng now" (not "going out with Anna tonight")
    (SEEING, re.compile(rf"\b(?:[Gg]oing out with|[Ss]eeing)\s+{_TITLE}{NAME}(?:,\s+(?:the|a|an)\s"
                        r"|(?=[^.!?;]*\b(?:since|now)\b))")),
    # a partner by a possessive: "my girlfriend Kadri", "his fiancée" (not "my ex-boyfriend")
    (SEEING, re.compile(r"\b(?:[Mm]y|[Hh]is|[Hh]er) (?:girlfriend|boyfriend)\b")),
    (ENGAGED, re.compile(r"\b(?:[Mm]y|[Hh]is|[Hh]er) (?:fiancée|fiancé|fiancee|fiance)\b")),
    (MARRIED, re.compile(r"\b(?:[Mm]y|[Hh]is|[Hh]er) (?:husband|wife)\b(?!['’]s)")),)  # not "my wife's sister"
# the partner a status names (case-sensitive: a name is capitalised)
_SEEING_NAME = re.compile(rf"\b(?:[Ss]eeing|[Dd]ating|[Gg]oing out with|[Ee]ngaged to|[Mm]arried to)\s+"
                          rf"(?:an? [\w'’-]+ (?:called|named) )?{_TITLE}({NAME})")
_PARTNER = re.compile(rf"\b{_TITLE}({NAME}) and I\b|\b{_TITLE}({NAME}) proposed\b"
                      rf"|\b(?:girlfriend|boyfriend|fiancée|fiancé|fiancee|fiance|husband|wife),? {_TITLE}({NAME})")
# whose status: the speaker ("I", "we", "X and I") or the one spoken to, unless a third person is named after them
_FIRST = re.compile(rf"\b(?:i|i'm|i've|we|we're|we've|you|you're|you've)\b|\b{LETTER}+ and i\b", re.IGNORECASE)
_NEGATED = re.compile(r"(?:\bnot|n't|\bnever)\s+(?:\w+\s+){0,2}(?:engaged|married|together|seeing|dating)\b",
                      re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
# a word every pattern above needs: most turns have none and are passed over in one search
_ANY = re.compile(r"split|broke|separate|divorce|finished|parted|ended it|single|dat(?:ing|ed)|seeing|going out"
                  r"|been with|together|met someone|engaged|proposed|married|courting|ring|question|friend|fianc"
                  r"|still with|quits|own ways|couple|item|knot|hitched|husband|wife|split|steady|engagement"
                  r"|time on|called it off|got together|pair|marry|new|walk|wedding", re.IGNORECASE)


@dataclass(frozen=True)
class Status:
    value: str  # SINGLE | SEEING | ENGAGED | MARRIED
    partner: str | None  # a partner named in the sentence, when one is
    after_end: bool = False  # told after an ending in the same turn ("X and I finished in May. Since June I've been
    # courting a schoolteacher"): a new partner

    def differs(self, earlier: Status) -> bool:
        """A change of status: another value, or the same value with another named partner, or a new partner told
        after an ending. Together after married, with no partner named, is no change ("my husband" ... "we've been
        together ten years")."""
        if self.after_end and self.value != SINGLE:
            return True
        if self.value != earlier.value and not (earlier.value == MARRIED and self.value == SEEING and not self.partner):
            return True
        return self.value != SINGLE and None not in (self.partner, earlier.partner) and self.partner != earlier.partner


@lru_cache(maxsize=20_000)  # whole turns as keys, as turn_changes.py's memos
def partner_status(text: str) -> Status | None:
    """The last partner status a turn's statements tell about its speaker or the one spoken to (see the
    module docstring), or None. Questions ("are you still seeing him?") tell none."""
    found: Status | None = None
    for sentence, _, status, m in _statements(text):
        first = max((x.start() for x in _FIRST.finditer(sentence[:m.end()])), default=-1)  # "I'm" may open it
        if m.group(0)[:3].lower() == "my ":
            first = m.start()  # "my girlfriend Kadri": the speaker's
        if first >= 0 and first >= max((x.start() for x in THIRD.finditer(sentence[:m.start()])), default=-1):
            # else the nearest subject is not the speaker: "I think she's seeing someone"
            ended = found is not None and (found.value == SINGLE or found.after_end) and status.value != SINGLE
            found = replace(status, after_end=True) if ended else status
    return found


@lru_cache(maxsize=20_000)
def statuses_of_others(text: str) -> tuple[tuple[tuple[str, ...], int, Status], ...]:
    """The partner statuses a turn's statements tell of third persons: (the words that may name the person, the
    likeliest first, the offset of the sentence, the status), in order ("My sister's still married to Aldo", "He
    and Aurelie finished things"): the third persons after the sentence's last first person, the first first."""
    out = []
    for sentence, at, status, m in _statements(text):
        first = max((x.end() for x in _FIRST.finditer(sentence[:m.end()])), default=0)
        who = tuple(x.group(0) for x in [*HOLDER.finditer(sentence, first, max(m.start(), first)),
                                         *HOLDER.finditer(sentence, max(m.start(), first), m.end())])
        if who:
            out.append((who, at, status))
    return tuple(out)


def _statements(text: str) -> list[tuple[str, int, Status, re.Match[str]]]:
    """(sentence, its offset, the status it tells, the match) for each statement of a status, whoever's."""
    if not _ANY.search(text):
        return []
    out = []
    at = 0
    for sentence in _SENTENCE.split(text):
        start = text.find(sentence, at)
        at = start + len(sentence)
        if asks(sentence):
            continue
        for value, pattern in _PATTERNS:
            m = pattern.search(sentence)
            if m is None or (value != SINGLE and _NEGATED.search(sentence)):
                continue
            named = _SEEING_NAME.search(sentence) or _PARTNER.search(sentence)
            out.append((sentence, start, Status(value, next((g for g in named.groups() if g), None) if named else None),
                        m))
            break
    return out
