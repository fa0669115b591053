"""Changes a whole turn tells when none of its triples carries them (rule path of QGMem §III-A2).

The rule extractor keeps one claim per clause, and often not the clause that changes a state: "I finally did it, I
handed in my notice at the ferry terminal. Friday was my last shift." gives (X | do | it) and (Friday | be | my last
shift), so no unit of the turn says what ended. The turn as a whole still does: a sentence of it tells a change (a
marker such as "now", "instead", "no longer", "anymore"; a departure or a retiming; a phrasal verb or a noun of the
word table that ends or changes a state, "dropped out", "my notice"; a unit relation of that kind, which holds an
irregular verb's lemma; construct/change_sentences.py) and shares its words with the claim of a unit of the same
person told in an earlier session ("I sell tickets at the Harwick ferry terminal"). One of the turn's units then links
that unit as a change of its state (construct/traces.py places and orders the pair). A turn telling an ending and a
beginning changes the state its ending names ("I wouldn't know the depot hours any more. I've been fixing tugs at
the airport since August." changes the job at the depot, though an application at the airport was told in between).

Words are content stems without the change markers, plus a token per kind of time a sentence names (a weekday, a
month, a clock time, a number), so "moved it to September instead" meets "going to Sardinia in July". A link needs a
shared word specific to few turns of the namespace, so in a long conversation a word every turn uses links nothing;
among the candidates the summed inverse turn frequency of the shared words decides, the latest on a tie. The person
is the speaker, or the one spoken to when the change is a claim about "you" ("So you're giving tours at the
observatory now!"). News of the one spoken to, told to them, is a change without a marker ("So you're the new
caretaker at Swaledown Primary!", "Your mum says you're in Zeebrugge!"): nobody tells a friend their own state unless
it is new to the teller. Bare verbs in a turn's words are not read: in chat "changing", "pushing", "stop" mostly change
nothing.

Three attributes need no shared word (construct/attribute_changes.py): partner status, home and job, of the speaker,
the one spoken to and third persons ("I'm single" -> "we've been together since March").

A thing leaving its owner (construct/disposal.py: "we sold it", "it belongs to my nephew now") tells a change too,
as does someone leaving a group or a pastime, or the group ending (construct/leaving.py: "I dropped it in October",
"the club folded"), and a plan called off or put back (construct/called_off.py: "we've cancelled", "they've put
Ravensby off until May"). When it names the thing by a pronoun, a common noun or not at all, the thing is what the
turn or the question just before it names ("Where's the tandem?" -> "We sold it."; "Still fencing at Greyfold?" ->
"No, I dropped it."), so those words join the turn's change words; when no word names it, it is what that person
last said they had ("We still have it, yes." -> "We sold it in July.").

A named third person's state may be told by either speaker ("He's still washing dishes at the Blue Heron" said of
Raul by one, "He took over the kitchen at the Blue Heron" by the other): the state links whoever told it.

A change told in times alone ("Mondays now.", "Thursdays and Fridays now.") is of the schedule the same person last
told in an earlier session ("I only open the stall Monday to Friday"), whatever words the two share.

The state a change links may be the state told again in a middle session ("We're still above the bakery"); that
telling, with "still" or "as ever", notes the first one its words name, and the change supersedes both.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache

from qgmem.construct.attribute_changes import attribute_links
from qgmem.construct.change_sentences import NEWS_OF_YOU, SENTENCE, change_sentences
from qgmem.construct.change_targets import Turn, best_unit, change_link, retarget
from qgmem.construct.disposal import held_before
from qgmem.construct.letters import CAP, LOWER
from qgmem.construct.state_cues import MONTHS, WEEKDAYS, read_cues, sentence, thing_words, words_of
from qgmem.construct.state_links import named_subject, speakers_of
from qgmem.construct.state_table import StateTable, stem
from qgmem.types import AtomicUnit

_SECOND_PERSON = re.compile(r"\byou(?:'re|’re|'ve|’ve| are| have| got| now| still| started| moved| left| live| work"
                            r"| rent| run| own)\b|\byou and \w+ (?:are|have|'re|’re|'ve|’ve)\b")
# a report of what the speaker heard ("I hear you've got a new man"): its "I" is not whose state it tells
_HEARSAY = re.compile(r"\bi (?:hear|heard|gather|see|saw|noticed|read)\b"
                      # or who told it, up to the news ("My cousin on the boat tells me you live in Sibu now")
                      r"|(?:^|(?<=[.!?] ))[^.!?]*?\b(?:tells|told|says|said)(?:\s+(?:me|us))?(?=\s+(?:that\s+)?you\b)")
# where the teller had news from: someone else told or saw it ("My cousin saw you two.", "Your mum told me.")
_SOURCE = re.compile(r"\s*(?:(?:my|your|his|her|their|our)\s+\w+|she|he|they)\s+(?:\w+\s+)?(?:saw|told|tells|says|said"
                     r"|noticed|phoned|rang|heard)\b")
# a state told again ("We're still above the bakery", "same as ever")
RESTATED = re.compile(r"\bstill\b|\b(?:same as|as) (?:ever|always|before)\b", re.IGNORECASE)
# a capitalised word inside a sentence: a name
_NAME_IN = re.compile(rf"(?<=[\w,;:] )(?-i:{CAP})[{LOWER}]+(?:['’]s)?\b")
# how a question opens (or it is a few words: "And the Italian?", "Coffee on Friday again?")
_ASKS = re.compile(r"\s*(?:are|is|am|do|does|did|have|has|had|was|were|will|would|can|could|should|how|what|where|who"
                   r"|which|when|why|still|and|any|so|or)\b", re.IGNORECASE)
_OWN = re.compile(r"\b(?:my|our)\s+((?:[\w'’-]+\s+){0,2}?[\w'’-]+)(?=\s*[?,]|\s+(?:and|for|with|at|in|on|to)\b)",
                  re.IGNORECASE)  # "my book group?", "our old van for ..."
_CLAUSE_HEAD = re.compile(r"\s*[:;]\s*")  # a clause a colon or semicolon closes: "Mondays now: ..."
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i’m|i've|i’ve|we|we're|we’re|my|our)\b")


@dataclass(frozen=True)
class TurnLinkConfig:
    specific_df: int = 4  # a link needs a shared word in at most this many turns of the namespace ...
    specific_share: float = 0.01  # ... or in at most this share of its turns,
    min_shared: int = 2  # and this many shared words, unless one of them is in at most `rare_df` turns
    rare_df: int = 3


def _change_words() -> frozenset[str]:
    """Stems of the change markers ("instead", "these days"): they tell that something changed, not what."""
    roles = ("replaces", "now")
    return frozenset(s for r in roles for p in words_of(r) for s in thing_words(p))


def _unnamed(t: Turn, earlier: Callable[[], Iterator[Turn]], turn_texts: Mapping[str, str], questions: set[str],
             people: frozenset[str], skip: frozenset[str]) -> Turn | None:
    """The turn of `earlier()` (the changer's turns of earlier sessions, latest first, read only as far as needed)
    whose state a change that names it by no word changes: a thing left by a pronoun is what that person last said
    they had ("We sold it in July."), a change told in times alone is of the schedule they last told ("Mondays
    now.")."""
    held = held_before(turn_texts[t.id], ((turn_texts[o.id], o) for o in earlier()), people)
    if held is None and _retimed(t.told, t.speaker, skip):
        held = next((o for o in earlier() if o.id not in questions
                     and _schedule(turn_texts[o.id], o.speaker) & t.change_words), None)
    return held


def _retimed(told: str, speaker: str, skip: frozenset[str]) -> bool:
    """A change told in times alone, a recurring time and a marker ("Thursdays and Fridays now.", "Mondays
    now.", or before a colon: "Tuesdays and Saturdays now: I follow the new hall's days"): no other word says what
    changed, so it is the person's schedule."""
    return any(_times_alone(x, speaker, skip) for x in _CLAUSE_HEAD.split(told))


def _times_alone(told: str, speaker: str, skip: frozenset[str]) -> bool:
    c = read_cues(told, speaker, "", "")
    return bool(told) and c.recurring and len(_words(told, speaker, skip) - _time_kinds(told, speaker)
                                               - c.times) <= 1


@lru_cache(maxsize=20_000)
def _schedule(text: str, speaker: str) -> frozenset[str]:
    """The kinds of recurring time a turn's statements tell ("I only open the stall Monday to Friday")."""
    said = [x for x in SENTENCE.split(text) if not x.rstrip().endswith("?")]
    return frozenset().union(*(_time_kinds(x, speaker) for x in said if read_cues(x, speaker, "", "").recurring))


def _asked(text: str | None) -> str:
    """The questions of a turn ("And the motorbike?"): what a pronoun of the answer may stand for."""
    return " ".join(x for x in SENTENCE.split(text or "") if x.rstrip().endswith("?"))


@lru_cache(maxsize=200_000)
def _words(text: str, speaker: str, skip: frozenset[str]) -> frozenset[str]:
    return (thing_words(text) - skip) | _time_kinds(text, speaker)


def _time_kinds(text: str, speaker: str) -> frozenset[str]:
    times = read_cues(text, speaker, "", "").times
    kinds = set()
    for w in times:
        kinds.add("<weekday>" if w in WEEKDAYS else "<month>" if w in MONTHS else
                  "<number>" if w.isdigit() else "<clock>")
    return frozenset(kinds)


def _person(turn: Turn, text: str, other: str | None) -> str:
    """Whose state `text` tells: `other` (the latest other speaker) for a claim about "you" only, else the turn's
    speaker. Whoever the teller heard it from ("My cousin saw you two.", "Your mum told me.") is not a claim."""
    low = text.lower()
    if other and (_SECOND_PERSON.search(low) or NEWS_OF_YOU.search(low)):
        claims = " ".join(x for x in SENTENCE.split(low) if not _SOURCE.match(x))
        if not _FIRST_PERSON.search(_HEARSAY.sub("", claims)):
            return other
    return turn.speaker


def _read_change(t: Turn, units: list[AtomicUnit], turn_texts: Mapping[str, str], before: str, table: StateTable,
                 people: frozenset[str], skip: frozenset[str], near: bool) -> None:
    """Fill in what turn `t` tells changed: its change sentences, their words and the thing they say has gone.
    `before`: the turn just before it; `near`: that turn is known to be of the same session."""
    told, by_reference, unnamed, t.gone, ending = change_sentences(
        turn_texts[t.id], t.speaker, tuple(units[r].relation for r in t.units), table, people)
    t.change_words = frozenset().union(*(_words(x, t.speaker, skip) for x in told))
    if by_reference:  # "We sold it.": the thing is named by the turn or by the question just before it; named by
        # nothing at all, by what the turn before says in the same session ("I didn't see your green bicycle." ->
        # "Stolen.")
        said_before = turn_texts.get(before) or ""
        asked = _asked(said_before) or (said_before if unnamed and near else "")
        t.change_words |= t.words | _words(asked, t.speaker, skip)
    else:  # its ending sentences name the state it ends ("We sold it." names nothing)
        t.end_words = frozenset().union(*(_words(x, t.speaker, skip) for x in ending))
    t.told = " ".join(told)
    # a name in a change is as specific as the thing it says has gone ("Mr Berthold retired in November.")
    t.things = t.gone | frozenset(stem(w) for x in told for w in _NAME_IN.findall(x)) - skip
    if NEWS_OF_YOU.search(t.told):  # news names the state in few words ("So you've handed in your keys at the
        t.things |= t.change_words  # prison!"): one rare word of it is enough; in none ("You've moved! I saw the
        if len(t.change_words) <= 1:  # cottage up for sale."), the turn's other sentences name it
            t.change_words |= t.words


def turn_links(units: list[AtomicUnit], turn_texts: Mapping[str, str], updates: Mapping[int, set[int]],
               cfg: TurnLinkConfig | None = None, table: StateTable | None = None,
               speakers: Mapping[str, str] | None = None) -> dict[int, tuple[int, str]]:
    """{unit of a change turn: (unit of an earlier session's turn whose state it changes, "change")}.

    `updates`: the units that already are updates, each with the units it supersedes. A turn whose update
    already supersedes the state its words name is left as it is; else one of its other units links it.
    `speakers`: each turn's speaker, for the questions that kept no unit (else only turns with units have one)."""
    cfg = cfg or TurnLinkConfig()
    table = table or StateTable.default()
    skip = _change_words()
    turns: dict[str, Turn] = {}
    for i, u in enumerate(units):
        t = turns.get(u.first_turn)
        if t is None:
            text = turn_texts.get(u.first_turn)
            if text is None:
                continue
            words = _words(text, u.speaker, skip)
            t = turns[u.first_turn] = Turn(u.first_turn, u.speaker, u.session_id, i, [], words)
        t.units.append(i)
    people = frozenset(w for u in units for w in u.speaker.split())
    ids = list(turn_texts)
    before = dict(zip(ids[1:], ids[:-1]))  # turn_texts is in dialogue order
    for t in turns.values():
        b = before.get(t.id, "")
        _read_change(t, units, turn_texts, b, table, people, skip, b in turns and turns[b].session == t.session)
    order = sorted(turns.values(), key=lambda t: t.position)
    df = Counter(w for t in order for w in t.words)
    n = len(order)
    idf = {w: math.log(1 + n / d) for w, d in df.items()}
    specific = max(cfg.specific_df, math.ceil(cfg.specific_share * n))
    person, changer = _whose(order, turn_texts)
    turn_of = {r: k for k, t in enumerate(order) for r in t.units}
    asked = _answered(order, turn_texts, before, speakers or {})
    said: dict[int, frozenset[str]] = {}  # unit -> words of its own sentence
    holding: dict[str, list[int]] = {}  # a specific word -> the units whose sentence holds it (a link needs one)
    questions = set(asked.values())
    unclaimed: dict[str, frozenset[str]] = {}  # turn -> words of its statements that no unit's claim holds
    extra: dict[int, frozenset[str]] = {}  # unit -> those of its turn, beside its own
    for r in turn_of:
        t = order[turn_of[r]]
        if t.id in questions:
            continue  # a question that was answered states nothing: its answer holds its words
        said[r] = _words(sentence(units[r].text, units[r].speaker), units[r].speaker, skip)
        if t.id not in unclaimed:
            unclaimed[t.id] = _unclaimed(t, units, turn_texts[t.id], skip)
        extra[r] = unclaimed[t.id] - said[r]
        if t.id in asked:
            said[r] |= _words(turn_texts[asked[t.id]], t.speaker, skip)
        for w in said[r] | extra[r]:
            if df.get(w, 0) <= specific:
                holding.setdefault(w, []).append(r)
    speakers = speakers_of(units)
    restated = {t.id for t in order if RESTATED.search(turn_texts[t.id])}  # "Still with the Marlins.": the
    # person's state, whatever its unit's subject ("The owner pays us in cider.")

    def third(r: int) -> str:
        """A unit's subject when it names a third person ("Raul", "Oren's sister"), not a speaker; else ""."""
        subj = units[r].subject.strip().lower()
        return subj if named_subject(units[r].subject, subj, speakers) and subj not in speakers else ""

    def pick(words: frozenset[str], k: int, session: str, who: str, about: frozenset[str] = frozenset(),
             things: frozenset[str] = frozenset(), first: frozenset[str] = frozenset(),
             gone: frozenset[str] = frozenset()) -> tuple[bool, bool, float, bool, int, int] | None:
        """(names a word of `gone`, names a word of `first`, weight, a claim about the person, turn position, -row)
        of the earlier-session unit before turn `k` that `words` name (one word of `gone` will do), of `who` or,
        whoever told it, about a third person of `about`. The thing named as gone outweighs other shared words ("The
        piano is gone. ... carried it down the steps" links the piano, not "her steps"). On equal weight a claim
        whose subject is the person (or a state told again) comes before a remark about the thing ("My sister says
        Toronto is colder in June." under "I'm flying up to Toronto in June to see my sister.")."""
        best: tuple[bool, bool, float, bool, int, int] | None = None  # the latest turn on a tie
        mine = about | {who.lower()}
        for r in {r for w in words for r in holding.get(w, ())}:  # a whole-turn unit ("say") is a state too
            o = order[turn_of[r]]
            if turn_of[r] >= k or o.session == session or (person[o.id] != who and third(r) not in about):
                continue
            shared = words & said[r]
            rare = [w for w in words & extra[r] if df.get(w, 0) <= cfg.rare_df]
            if len(rare) >= cfg.min_shared or things & set(rare):  # an unclaimed sentence of the turn names it: two
                shared |= frozenset(rare)  # rare words, or the thing a change says has gone ("My racing pigeons.")
            if len(shared) >= cfg.min_shared or any(df.get(w, 0) <= cfg.rare_df for w in shared) or shared & gone:
                key = (bool(shared & gone), bool(shared & first), sum(idf.get(w, 0.0) for w in sorted(shared)),
                       units[r].subject.strip().lower() in mine or o.id in restated, turn_of[r], -r)
                if best is None or key > best:
                    best = key
        return best

    out: dict[int, tuple[int, str]] = {}
    for k, t in enumerate(order):
        free = [r for r in t.units if r not in updates]
        if not t.change_words:
            continue
        about = frozenset(third(r) for r in t.units) - {""}
        # a turn telling an ending and a beginning ("I left the fish farm in August and signed on as a deckhand")
        # changes the state its ending names, though its beginning may share more words with another turn
        best = pick(t.change_words, k, t.session, changer[t.id], about, t.things, t.end_words, t.gone)
        held = None if best is not None else _unnamed(t, lambda: (o for o in reversed(order[:k]) if o.session !=
                                                                  t.session and person[o.id] == changer[t.id]),
                                                      turn_texts, questions, people, skip)
        target = -best[-1] if best is not None else best_unit(units, held.units, t.words) if held else None
        if target is not None:
            out.update(change_link(units, t, free, target, updates, said) if free else
                       retarget(units, t, target, updates, said))
    by_attribute, outranks = attribute_links(units, order, person, turn_texts, updates, said)
    for i, got in by_attribute.items():  # a new partner or home named outranks a link by shared words
        out[i] = got if i in outranks else out.get(i, got)
    for target in sorted({j for j, kind in out.values() if kind == "change"}):
        # a state told again in a later session ("We're still above the bakery") notes its first telling (the
        # earlier-session unit of that person its words name), which the change then supersedes too
        o = order[turn_of[target]]
        if target in updates or target in out or o.id not in restated:
            continue
        first = pick(said.get(target, frozenset()) | extra.get(target, frozenset()), turn_of[target], o.session,
                     person[o.id])
        if first is not None:
            out[target] = (-first[-1], "note")
    return out


def _whose(order: list[Turn], turn_texts: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Whose state each turn tells, and whose its change sentences tell (`_person`): the one spoken to is the latest
    other speaker, also when a turn between them kept no unit ("Look at you! So you're ... now!")."""
    person: dict[str, str] = {}
    changer: dict[str, str] = {}
    recent: list[str] = []  # the latest two speakers, latest last
    for t in order:
        other = next((x for x in reversed(recent) if x != t.speaker), None)
        person[t.id] = _person(t, turn_texts[t.id], other)
        changer[t.id] = _person(t, t.told, other)
        recent = [x for x in recent if x != t.speaker][-1:] + [t.speaker]
    return person, changer


def _unclaimed(t: Turn, units: list[AtomicUnit], text: str, skip: frozenset[str]) -> frozenset[str]:
    """Words of the turn's statements that no unit's claim holds ("Still bass in the Tinderbox Saints." beside the unit
    of "We've got a gig at the Drover on Saturday."): the turn's units state them too."""
    claims = [sentence(units[r].text, units[r].speaker) for r in t.units]
    said = SENTENCE.split(text)
    rest = [x for x in said if not x.rstrip().endswith("?")
            and not any(c and (c in x or x.strip() in c) for c in claims)]
    # a question beside another sentence of the turn tells what the asker has ("Can you suggest books for my book
    # group? We meet at ..."): the things it names as theirs (a turn of questions only that was answered is skipped
    # before this, its answer holds its words)
    if len(said) > 1:
        rest += [m.group(1) for x in said if x.rstrip().endswith("?") for m in _OWN.finditer(x)]
    return _words(" ".join(rest), t.speaker, skip) if rest else frozenset()


def _answered(order: list[Turn], turn_texts: Mapping[str, str], before: Mapping[str, str],
              speakers: Mapping[str, str]) -> dict[str, str]:
    """{answer turn: the question turn just before it}: a turn of questions only ("Are you still doing the Italian
    night class?") answered by the next turn, of the other speaker ("Yes, I go on Mondays at the college"). The
    answer is the state; the question names what it is about. A question opens as one ("Are", "Still", "And", a
    wh-word) or is a few words; not one that opens with what the asker tells ("I also have a grey parrot called
    Admiral, is a dehumidifier safe for him?", "Thursday's tricky, ..., so maybe Friday?")."""
    speaker = {**speakers, **{t.id: t.speaker for t in order}}  # a question that kept no unit has one too
    out = {}
    for t in order:
        q = before.get(t.id)
        text = turn_texts.get(q or "", "")
        if (q in speaker and speaker[q] != t.speaker and (_ASKS.match(text) or len(text.split()) <= 6)
                and all(x.rstrip().endswith("?") for x in SENTENCE.split(text))):
            out[t.id] = q
    return out
