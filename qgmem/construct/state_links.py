"""Links from a claim that changes a state to the earlier claim of that state, when the two differ in
subject or class (construct/traces.py groups the rest by subject and class).

A change is often told without the subject or the class of the state it changes:
- *the thing a change acts on*: "The centre moved the class to Thursdays" changes "I signed up for a life
  drawing class", "we pushed the Porto visit back to September" the plan "to visit my grandparents in
  Porto", "Spanish moved to Wednesdays" the class "my Spanish class is on Monday evenings";
- *a departure of a role's holder*: "Mrs. Albright retired" ends "his teacher is Mrs. Albright";
- *a new holder told by the role's counterpart*: "I see a new therapist now" follows "my therapist is X";
- *a change told in another clause of the sentence* than the triple's, moving something to a time ("...,
  the wedding has moved to the 7th of October"): the latest earlier unit sharing two words with the sentence;
- *a marker without a class of its own*: "I'm the museum's head of collections now" changes the
  subject's state whose words it shares ("I work at the county museum").
The target is the latest earlier unit in memory time, not said in the same turn, that matches. Words are
compared by the overlap coefficient against `threshold` (TraceConfig.update_threshold).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from qgmem.construct.state_cues import MONTHS, Cues, read_cues, sentence, thing_words
from qgmem.construct.state_table import LIGHT, Reading, StateTable, forms, overlap
from qgmem.types import AtomicUnit
from qgmem.words import load_table

PRONOUN_OBJECTS = frozenset({"it", "them", "that", "this"})
# the thing an end or a retiming stands for by a pronoun ("we sold her" of a boat): the objects `_antecedent` reads
PRONOUN_THINGS = PRONOUN_OBJECTS | {"her"}
POSSESSION = frozenset({"have", "get", "got", "own", "keep"})  # light verbs of having: "I've had the Vespa"
DESTINATION_PREPS = ("to", "until", "till", "into", "for")
ROLE_CLASS = "relationship"  # the class whose head words name a role held by someone ("teacher", "coach")
SCHEDULE = "schedule"  # the class whose values are times
PERSON_NOUNS = frozenset(load_table("person_nouns"))


def speakers_of(units: list[AtomicUnit]) -> frozenset[str]:
    """The namespace's speakers, lower-cased: "user" and "user's therapist" are named subjects too."""
    return frozenset(u.speaker.strip().lower() for u in units if u.speaker)


def named_subject(subject: str, key: str, speakers: frozenset[str]) -> bool:
    """A subject that names someone or something (a name, a speaker or a speaker's "user's therapist"), not a
    pronoun or an activity; `key` is the subject as compared (lower-cased)."""
    return subject.strip()[:1].isupper() or key.split("'s ", 1)[0] in speakers


@dataclass(frozen=True)
class Facts:
    """What links read of one unit."""

    subject: str  # the subject key (construct/state_table.py)
    owner: str  # the possessor of a possessive subject ("user's climbing sessions" -> "user"), else the subject (a
    # person of theirs is not theirs: "Valji's brother joined the troupe" is the brother's state)
    own_words: frozenset[str]  # thing words of the subject itself ("Spanish", "the recital")
    values: frozenset[str]  # words of the value: object words, and a possessive subject's thing
    mentions: frozenset[str]  # every thing the unit names: subject, object, entities (what a change may match)
    cues: Cues
    head: str | None  # the head word of the object
    turn: str
    say: bool  # a whole-turn unit (relation "say"): a target only, never a source
    light: bool  # a light verb or copula ("be", "have"): the claim restates what the subject is or has
    said: frozenset[str]  # thing words of the whole sentence


def read_facts(u: AtomicUnit, table: StateTable, speakers: frozenset[str]) -> Facts:
    """What links read of `u` (remembered: a namespace's units are read again whenever it grows)."""
    return _facts(u.subject, u.relation, u.object, tuple(u.entities), u.text, u.speaker, u.first_turn, table,
                  speakers)


@lru_cache(maxsize=50_000)  # a 10,000-unit namespace fits; a long one's memory stays bounded
def _facts(subject_text: str, relation: str, object_text: str, entities: tuple[str, ...], text: str, speaker: str,
           turn: str, table: StateTable, speakers: frozenset[str]) -> Facts:
    subject = table.subject_key(subject_text)
    person = "'s " in subject and _person_head(subject, table)
    owner = subject.split("'s ", 1)[0] if "'s " in subject and not person else subject
    own = frozenset() if subject in speakers or subject in ("i", "we") else thing_words(subject_text)
    possessed = thing_words(subject_text) if "'s " in subject and not person else frozenset()
    say = relation.strip().lower() == "say"
    ents = frozenset(w for e in entities if e.lower() not in speakers for w in thing_words(e))
    mentions = thing_words(subject_text) | thing_words(object_text) | thing_words(relation) | ents
    return Facts(subject=subject, owner=owner, own_words=own,
                 values=table.object_words(object_text) | possessed, mentions=mentions,
                 cues=read_cues(text, speaker, relation, object_text),
                 head=table.head_word(object_text), turn=turn, say=say, light=_light(relation, table),
                 said=thing_words(sentence(text, speaker)))


def _light(relation: str, table: StateTable) -> bool:
    e = table.relation(relation)[1]
    return e is not None and e.cls == LIGHT


def _person_head(subject: str, table: StateTable) -> bool:
    """The subject names a person ("Ana's brother", "Ana's coach"), not a thing of hers."""
    head = subject.split()[-1] if subject else ""
    e = table.head_entry(head, skip_leading=False)
    return any(f in PERSON_NOUNS for f in forms(head)) or (e is not None and e.cls == ROLE_CLASS)


def _changed_thing(u: AtomicUnit, f: Facts) -> frozenset[str]:
    """What a change verb acts on: its object, else (an intransitive or passive change, or a move *to* a
    time) its thing subject; nothing for a pronoun object (which thing it is, the triple does not say)."""
    obj = u.object.strip().lower()
    rel = u.relation.strip().lower().split()
    if obj in PRONOUN_OBJECTS:
        return frozenset()
    if obj and not (rel and rel[-1] in DESTINATION_PREPS):
        return thing_words(u.object)
    return f.own_words


class Linker:
    """Finds the earlier unit a change links to; `add` each unit after asking, in dialogue order."""

    def __init__(self, units: list[AtomicUnit], facts: list[Facts], readings: list[Reading | None],
                 table: StateTable, threshold: float):
        self.units, self.facts, self.readings, self.table = units, facts, readings, table
        self.threshold = threshold
        self.position: dict[int, int] = {}  # unit so far -> its place in dialogue order
        self.classes: set[tuple[str, str]] = set()  # (subject, class) of the units so far
        # every test of a target needs a shared word (of its value, or of what it mentions) or its subject:
        # these say which earlier units can pass, so a long namespace is not scanned per change
        self.by_value: dict[str, list[int]] = {}
        self.by_mention: dict[str, list[int]] = {}
        self.by_subject: dict[str, list[int]] = {}

    def add(self, i: int) -> None:
        self.position[i] = len(self.position)
        f = self.facts[i]
        for w in f.values:
            self.by_value.setdefault(w, []).append(i)
        for w in f.mentions:
            self.by_mention.setdefault(w, []).append(i)
        self.by_subject.setdefault(f.subject, []).append(i)
        r = self.readings[i]
        if r is not None and r.cls is not None:
            self.classes.add((self.facts[i].subject, r.cls))

    def _having(self, index: dict[str, list[int]], keys: frozenset[str] | tuple[str, ...]) -> list[int]:
        """The earlier units filed under any of `keys`, latest first (a key's list is in dialogue order, each
        unit once: one key needs no sort)."""
        distinct = set(keys)
        if len(distinct) == 1:
            return list(reversed(index.get(next(iter(distinct)), ())))
        found = {j for k in distinct for j in index.get(k, ())}
        return sorted(found, key=self.position.__getitem__, reverse=True)

    def _latest(self, i: int, ok: Callable[[int], bool], candidates: list[int],
                prefer: Callable[[int], bool] | None = None) -> int | None:
        """The latest of `candidates` (earlier units, latest first), outside i's turn, for which `ok` holds; with
        `prefer`, the latest for which it holds too, if there is one."""
        turn = self.facts[i].turn
        fallback = None
        for j in candidates:
            if self.facts[j].turn == turn or not ok(j):
                continue
            if prefer is None or prefer(j):
                return j
            fallback = j if fallback is None else fallback
        return fallback

    def _own(self, i: int) -> Callable[[int], bool]:
        """Said by i's speaker or about i's subject (a reply that repeats the thing is no state of it)."""
        f, speaker = self.facts[i], self.units[i].speaker
        return lambda j: self.units[j].speaker == speaker or self.facts[j].owner in (f.subject, f.owner)

    def _near(self, a: frozenset[str], b: frozenset[str]) -> bool:
        return overlap(a, b) >= self.threshold

    @staticmethod
    def _names(thing: frozenset[str], mentions: frozenset[str]) -> bool:
        """Most of the thing's words are among the unit's mentions ("the Porto visit" in "to visit my
        grandparents in Porto"; one shared word of two is not enough)."""
        return bool(thing) and 2 * len(thing & mentions) > len(thing)

    def _classed(self, j: int) -> bool:
        r = self.readings[j]
        return r is not None and r.cls is not None and not self.facts[j].say

    def _same_owner(self, i: int, j: int) -> bool:
        f, g = self.facts[i], self.facts[j]
        return g.owner in (f.subject, f.owner) or g.subject == f.owner

    def link(self, i: int) -> tuple[int, str] | None:
        """(target unit, kind of the link: "end", "change" or "note") or None."""
        f, r, u = self.facts[i], self.readings[i], self.units[i]
        if f.say:
            return None
        # an end of a class of its own ("sold the Fiat"), a departure ("quit judo"; not "lost my keys"), "no
        # longer", a thing given away, an end of the state its object names ("gave up the sea swimmers")
        ends = f.cues.transfer or (r is not None and r.kind == "end" and (
            f.cues.ends or ((r.cls is not None or f.cues.departure or _phrasal_end(r)) and not _negated(u.relation))))
        if (f.cues.departure or ends) and f.own_words:  # "Mrs. X retired", "Northgate laid off forty of us"
            j = self._latest(i, lambda j: self._held_by(i, j, departure=f.cues.departure),
                             self._having(self.by_value, f.own_words))
            if j is not None:
                return j, "end"
        if f.cues.told_departure and not f.cues.departure:  # "Dr. Weiland retired, so we see Dr. Oyelaran"
            j = self._latest(i, lambda j: self._role(j) and self._names(self.facts[j].values, f.said),
                             self._having(self.by_value, f.said))
            if j is not None:
                return j, "change"
        if f.cues.told_retime and not f.cues.change:  # "..., the wedding has moved to the 7th of October"
            j = self._latest(i, lambda j: len(self.facts[j].mentions & f.said) >= 2,
                             self._having(self.by_mention, f.said), prefer=self._own(i))
            if j is not None:
                return j, "change"
        if f.cues.change:
            thing = _changed_thing(u, f)
            j = self._latest(i, lambda j: self._names(thing, self.facts[j].mentions),
                             self._having(self.by_mention, thing), prefer=self._own(i)) if thing else None
            if j is not None:
                return j, "change"
        if ends:  # "I sold the Fiat" after "I drive a battered old Fiat"; "I gave my goldfish to my nephew"
            thing = thing_words(u.object) if u.object.strip() else f.own_words
            j = self._latest(i, lambda j: self._same_owner(i, j) and not self.facts[j].say
                             and self._names(thing, self.facts[j].mentions),
                             self._having(self.by_mention, thing), prefer=self._state) if thing else None
            if j is not None:
                return j, "end"
        if r is not None and r.cls == ROLE_CLASS and f.head and f.owner == f.subject:
            role = self.table.subject_key(f"{u.subject}'s {f.head}")
            j = self._latest(i, lambda j: self.facts[j].subject == role and self._classed(j),
                             self._having(self.by_subject, (role,)))
            if j is not None:
                return j, "change"
        alone = r is not None and (r.cls is None or (f.subject, r.cls) not in self.classes)
        if alone and (f.cues.present or f.cues.replaces) and f.values:  # not a "new ..." inside a phrase
            j = self._latest(i, lambda j: self.facts[j].subject in (f.subject, f.owner) and self._classed(j)
                             and self._one_value(i, j) and self._near(f.values, self.facts[j].values),
                             self._having(self.by_subject, (f.subject, f.owner)))
            if j is not None:  # "I'm the museum's head ... now" restates the value; "I run X now" adds to it
                return j, ("change" if f.light else "note")
        return self._antecedent(i)

    def _antecedent(self, i: int) -> tuple[int, str] | None:
        """What a pronoun object of an end or a retiming stands for: "I sold it" ends the latest earlier thing
        the same owner had ("I've had the Vespa serviced"), "we've put it back to April" / "we cancelled it"
        changes the latest earlier plan of the owner's (a claim about a time after it was said, or of a
        plan or schedule class). The pronoun says which thing no better than that: the latest one the
        verb can act on, one that a word of its sentence names first ("the Bechstein's gone; we gave it to the
        school")."""
        f, r, u = self.facts[i], self.readings[i], self.units[i]
        if r is None or u.object.strip().lower() not in PRONOUN_THINGS:
            return None
        tests: list[Callable[[int], bool]]
        if ends_ownership(r, f.cues):
            tests = [self._possession]
        elif (r.cls == "plans" and r.kind == "end") or (f.cues.timed and (f.cues.change or _moved_along(u))):
            # a move to a month or a date moves a plan, a move to a weekday a schedule: that kind first
            want = False if f.cues.times & MONTHS and not f.cues.recurring else True if f.cues.recurring else None
            tests = [lambda j: self._plan(j) and want in (None, self.facts[j].cues.recurring), self._plan]
        else:
            return None
        candidates = self._having(self.by_subject, (f.subject, f.owner))
        for ok in tests:
            j = self._latest(i, lambda j: self._same_owner(i, j) and not self.facts[j].say and ok(j), candidates,
                             prefer=lambda j: bool(self.facts[j].mentions & f.said))
            if j is not None:
                return j, ("end" if r.kind == "end" or f.cues.transfer else "change")
        return None

    def _thing(self, j: int) -> bool:
        """j's object names a thing (not a pronoun, not empty)."""
        obj = self.units[j].object.strip().lower()
        return bool(obj) and obj not in PRONOUN_THINGS and bool(thing_words(obj))

    def _state(self, j: int) -> bool:
        """j tells a state its thing is in (had, or of a class), not a mention of it in passing ("Sold the
        houseboat" ends "I've got a houseboat", not "my mate wants to come fishing off the houseboat")."""
        rj = self.readings[j]
        return self._possession(j) or (self._classed(j) and rj is not None and rj.kind == "state")

    def _possession(self, j: int) -> bool:
        """j says its subject has a thing: a verb of having with a thing object, or an ownership state."""
        rj = self.readings[j]
        if rj is not None and rj.cls == "ownership":
            return rj.kind == "state"
        verb = self.units[j].relation.strip().lower().split()[:1]
        return bool(verb) and verb[0] in POSSESSION and self._thing(j)

    def _plan(self, j: int) -> bool:
        """j tells a plan or a schedule: a claim of those classes, or one about a time after it was said or
        whose sentence names a time ("we're getting married on the ninth of June")."""
        rj = self.readings[j]
        if rj is not None and rj.cls in ("plans", SCHEDULE) and rj.kind != "end":
            return True
        timed = told_ahead(self.units[j]) or bool(self.facts[j].cues.times)
        return timed and (self._thing(j) or bool(self.facts[j].own_words) or rj is not None)

    def _one_value(self, i: int, j: int) -> bool:
        """j's state holds one value at a time (a job, a home), or both claims tell a recurring time (the
        schedule of one activity): what a restatement can replace. Plans and clubs coexist."""
        rj = self.readings[j]
        return (rj is not None and rj.cls is not None and self.table.is_single(rj.cls)) or (
            self.facts[i].cues.recurring and self.facts[j].cues.recurring)

    def _role(self, j: int) -> bool:
        """j states who holds a role for someone ("his teacher is Mrs. Albright")."""
        rj = self.readings[j]
        return self._classed(j) and "'s " in self.facts[j].subject and self.table.is_single(rj.cls)  # type: ignore

    def _held_by(self, i: int, j: int, departure: bool) -> bool:
        """j states a one-value state whose value names i's subject, of another subject: a role the subject
        left ("his teacher is Mrs. X"), or, for an end verb of j's class, the employer that ended it."""
        g, rj = self.facts[j], self.readings[j]
        if not self._classed(j) or g.subject == self.facts[i].subject:
            return False
        if not self._near(self.facts[i].own_words, g.values):
            return False
        assert rj is not None and rj.cls is not None
        if departure:
            return self._role(j)
        ri = self.readings[i]
        return ri is not None and ri.cls == rj.cls


def ends_ownership(r: Reading | None, c: Cues) -> bool:
    """The claim gives its thing away ("I gave it to my cousin") or ends an ownership ("I sold it")."""
    return c.transfer or (r is not None and r.cls == "ownership" and r.kind == "end")


def told_ahead(u: AtomicUnit) -> bool:
    """The claim's fact time lies after the day it was said: a plan."""
    fact, said = (u.fact_time_start or "")[:10], (u.utterance_time or "")[:10]
    return bool(fact and said and fact > said)


def _moved_along(u: AtomicUnit) -> bool:
    """A pronoun object moved in time by a verb and particle ("put it back to April", "brought it forward")."""
    obj = re.escape(u.object.strip().lower())
    return bool(re.search(rf"\b{obj}\s+(?:back|forward|up)\b", sentence(u.text, u.speaker).lower()))


def _phrasal_end(r: Reading) -> bool:
    """A phrasal verb that ends the state its object names ("gave up the sea swimmers", "pulled out of the
    race"): a deliberate end, unlike a bare "lost a friend"."""
    return r.from_object and " " in r.lemma


def _negated(relation: str) -> bool:
    return relation.strip().lower().split()[:1] in (["not"], ["no"], ["never"])
