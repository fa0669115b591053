"""Which evolving state of its subject a unit speaks about (the rule path of QGMem §III-A2).

A unit's *state class* (employment, residence, relationship, membership, ownership, schedule, plans)
comes from the word table `qgmem/words/state_relations.txt`: first from the head word of its object
("quit my *job*", "work the night *shift*", "moved the *trip*"), else from its relation ("work at",
"live in", "break up"), else, for a relation that only says a state ended or changed ("quit Acme"),
from the subject's earlier state whose object it names (decided in construct/traces.py). The table
also gives the unit's *kind*: a value of the state, its end ("quit", "cancel", a negated relation) or
a change to a new value ("promote", "reschedule"). A relation outside the table only remarks on the
state its object's head word names ("love my job"), or else forms an event group keyed by its own
lemma; light verbs ("be", "have", "go") join a trace only through their object. Grammar words (negations,
particles, prepositions) come from `qgmem/words/relation_grammar.txt`.

Words are matched in any regular inflection ("works", "working", "promoted", "classes"); a relation
may also come as a Snowball stem ("studi", from the older rule extractor). Stems are not used for head
words, where they would merge unrelated words ("positive" and "position").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TypeVar

import Stemmer

from qgmem.construct.letters import ALNUM
from qgmem.words import load_rows, load_words

Kind = str  # "state" | "end" | "change" | "note" (a remark on a state: "I love my job")
FROM_OBJECT = "*"  # class from the object's head word, else from the earlier state the object names
LIGHT = "-"  # class from the object's head word only, else no trace
KINDS = ("state", "end", "change")

K = TypeVar("K")
V = TypeVar("V")
MEMO_READINGS = 500_000  # readings, relations, subject keys and object words one table remembers
_stemmer = Stemmer.Stemmer("english")
_TOKEN_RE = re.compile(rf"{ALNUM}(?:{ALNUM}|['’&\-])*|[,;:.!?()\"]")
STOPWORDS = load_words("stopwords")
IGNORED = load_words("state_ignore")


def _grammar(role: str) -> frozenset[str]:
    """Words of one role in qgmem/words/relation_grammar.txt (the file says what each role does)."""
    return frozenset(row[0] for row in load_rows("relation_grammar") if row[1:] == (role,))


NEGATIONS = _grammar("negation")
AUXILIARIES = _grammar("auxiliary")
PARTICLES = _grammar("particle")
PREPOSITIONS = _grammar("preposition")
_COMPANION = _grammar("companion")
_CHUNK_BREAKS = _grammar("chunk_break")


@lru_cache(maxsize=100_000)
def stem(word: str) -> str:
    return _stemmer.stemWord(word.lower().replace("’", "'"))


@lru_cache(maxsize=100_000)
def forms(word: str) -> tuple[str, ...]:
    """The word and the base forms it may inflect ("promoted" -> promote, "planning" -> plan,
    "parties" -> party), most likely first."""
    w = word.lower().replace("’", "'").removesuffix("'s")
    out = [w]
    for suffix, repl in (("ies", "y"), ("ied", "y"), ("es", ""), ("s", ""), ("ing", ""), ("ing", "e"), ("ed", ""),
                         ("ed", "e"), ("d", "")):
        if w.endswith(suffix) and len(w) - len(suffix) >= 2:
            base = w[: len(w) - len(suffix)] + repl
            out.append(base)
            if suffix in ("ing", "ed") and len(base) > 2 and base[-1] == base[-2]:
                out.append(base[:-1])  # "planned" -> plan
    return tuple(dict.fromkeys(out))


def tokens(text: str) -> list[str]:
    """Words and punctuation marks, in order, lower-cased."""
    return [t.lower() for t in _TOKEN_RE.findall(text or "")]


@dataclass(frozen=True)
class Entry:
    cls: str  # a class name, FROM_OBJECT or LIGHT
    kind: Kind
    use: str = "any"  # "any" | "rel" (as a relation only) | "head" (as a head word only)


@dataclass(frozen=True)
class Reading:
    """What the table says about one unit before the grouping looks at other units."""

    cls: str | None  # a state class; None = no class of its own (yet)
    kind: Kind
    lemma: str  # the relation, stemmed and without negation: keys event groups
    light: bool  # a light verb with no class: joins no trace
    from_object: bool  # the class may come from the earlier state the object names


class StateTable:
    """The word table of state relations and classes, looked up by stems."""

    def __init__(self, rows: tuple[tuple[str, ...], ...], classes: tuple[tuple[str, ...], ...],
                 modifiers: frozenset[str]):
        self.single: dict[str, bool] = {}
        for row in classes:
            if len(row) != 2 or row[1] not in ("single", "many"):
                raise ValueError(f"state_classes: expected 'class<TAB>single|many', got {row!r}")
            self.single[row[0]] = row[1] == "single"
        self.entries: dict[str, Entry] = {}
        for row in rows:
            if not 2 <= len(row) <= 4:
                raise ValueError(f"state_relations: expected 'entry<TAB>class[<TAB>kind[<TAB>use]]', got {row!r}")
            entry, cls = row[0], row[1]
            kind = row[2] if len(row) > 2 else "state"
            use = row[3] if len(row) > 3 else "any"
            if cls not in self.single and cls not in (FROM_OBJECT, LIGHT):
                raise ValueError(f"state_relations: {entry!r} has unknown class {cls!r}")
            if kind not in KINDS or use not in ("any", "rel", "head"):
                raise ValueError(f"state_relations: {entry!r} has kind {kind!r} / use {use!r}")
            self.entries[entry.lower()] = Entry(cls, kind, use)
        # a relation given as a Snowball stem ("studi", "retir") is looked up here
        self.stemmed = {" ".join(stem(w) for w in k.split()): e for k, e in self.entries.items() if e.use != "head"}
        self.modifiers = frozenset(modifiers)
        # words that name a class when they head an object ("job", "trip"): not part of a value
        self.class_words = frozenset(k for k, e in self.entries.items() if " " not in k and e.use != "rel"
                                     and e.cls not in (FROM_OBJECT, LIGHT))
        # readings of unit fields already seen: traces are regrouped over every unit of a namespace
        # whenever it grows, and a reading depends on the unit's own strings only
        self._readings: dict[tuple[str, str, str], Reading] = {}
        self._subjects: dict[str, str] = {}
        self._objects: dict[str, frozenset[str]] = {}
        self._relations: dict[str, tuple[str, Entry | None, bool, tuple[str, ...]]] = {}

    def nouns(self, cls: str, uses: tuple[str, ...] = ("any", "head")) -> tuple[str, ...]:
        """The entries that name a state of `cls` as a word ("trip", "club"), sorted: for readers that need a
        class's nouns as a pattern (construct/called_off.py, construct/leaving.py)."""
        return tuple(sorted(k for k, e in self.entries.items() if e.cls == cls and e.kind == "state" and e.use in uses))

    @classmethod
    @lru_cache(maxsize=1)
    def default(cls) -> "StateTable":
        return cls(load_rows("state_relations"), load_rows("state_classes"), load_words("subject_modifiers"))

    # ---- relations ----

    def relation(self, relation: str) -> tuple[str, Entry | None, bool, list[str]]:
        """(lemma, table entry or None, negated, words after the matched phrase) of a relation string
        such as "not work at" or "started working at". Remembered per string: a namespace's traces are
        regrouped whenever it grows, and its relations repeat."""
        got = self._relations.get(relation)
        if got is None:
            got = _remember(self._relations, relation, self._read_relation(relation))
        return got[0], got[1], got[2], list(got[3])

    def _read_relation(self, relation: str) -> tuple[str, Entry | None, bool, tuple[str, ...]]:
        words = [w for w in relation.lower().replace("’", "'").split() if w]
        negated = False
        while words and (words[0] in NEGATIONS or " ".join(words[:2]) in NEGATIONS):
            negated = True
            words = words[2:] if " ".join(words[:2]) in NEGATIONS else words[1:]
        lemma = " ".join(stem(w) for w in words)
        bare = list(words)
        while len(bare) > 1 and bare[0] in AUXILIARIES:
            bare = bare[1:]
        for seq in (bare, words):  # "be engaged to" -> engaged; "get rid of" stays itself
            for n in range(len(seq), 0, -1):
                rest = seq[n:]
                if rest and (rest[0] in PARTICLES or (n == 1 and rest[0] in _COMPANION)):
                    continue  # "work on", "work with" are not "work"; "break up with" is "break up"
                e = self._phrase(seq[:n])
                if e is not None:
                    return lemma, e, negated, tuple(rest)
        return lemma, None, negated, ()

    def _phrase(self, words: list[str]) -> Entry | None:
        """The relation entry of a phrase: as written, with its first word in a base form, or stemmed."""
        for first in forms(words[0]):
            e = self.entries.get(" ".join([first, *words[1:]]))
            if e is not None and e.use != "head":
                return e
        return self.stemmed.get(" ".join(stem(w) for w in words))

    def head_entry(self, text: str, skip_leading: bool = True) -> Entry | None:
        """The entry of the head word of the first noun chunk of `text` ("the night shift at the
        hospital" -> shift; "promoted to project architect" -> promote), or None. Nouns count as
        nouns, verbs only as participles ("hard work" names no job, "working at Acme" does)."""
        word = self.head_word(text, skip_leading)
        if word is None:
            return None
        for f in forms(word):
            e = self.entries.get(f)
            if e is None or e.cls in (FROM_OBJECT, LIGHT) or e.use == "rel":
                continue
            participle = word.endswith(("ed", "ing"))  # "working", "promoted", or a listed "engaged"
            noun = f == word or not participle  # "wedding", "classes"; not "mentoring"
            if (e.use == "head" and noun) or (e.use == "any" and participle):
                return e  # a noun as a noun; a verb as a participle ("working at Acme", not "hard work")
        return None

    @staticmethod
    def head_word(text: str, skip_leading: bool = True) -> str | None:
        """The last word of the first noun chunk of `text` ("the night shift at the hospital" -> shift)."""
        toks = tokens(text)
        i = 0
        while skip_leading and i < len(toks) and toks[i] in STOPWORDS:
            i += 1  # "to the", "at my", ...
        chunk: list[str] = []
        for t in toks[i:]:
            if t in STOPWORDS or t in IGNORED or t in _CHUNK_BREAKS or not t[0].isalnum():
                break
            chunk.append(t)
        return chunk[-1] if chunk else None

    def read(self, relation: str, obj: str, subject: str) -> Reading:
        """Class and kind of a unit from its own fields: the object's head word, else the relation's
        class, else the head of the role a subject names ("my coach is X"). Remembered per table."""
        got = self._readings.get((relation, obj, subject))
        if got is None:
            got = _remember(self._readings, (relation, obj, subject), self._read(relation, obj, subject))
        return got

    def _read(self, relation: str, obj: str, subject: str) -> Reading:
        first = tokens(obj)[:1]
        if first and (first[0] in PARTICLES or first[0] in PREPOSITIONS) and len(relation.split()) == 1:
            relation = f"{relation} {first[0]}"  # left in the object: "work" + "on my business", "live" + "in Leeds"
        lemma, e, negated, rest = self.relation(relation)
        companion = relation.lower().split()[-1:] and relation.lower().split()[-1] in _COMPANION
        if e is None:  # not listed: a remark on a state its object names ("love my job"), else an event
            head = None if companion else self.head_entry(obj)
            kind = "end" if negated else ("note" if head is not None else "state")
            return Reading(cls=head.cls if head is not None else None, kind=kind, lemma=lemma, light=False,
                           from_object=False)
        open_class = e.cls in (FROM_OBJECT, LIGHT)
        head = (self.head_entry(" ".join(rest)) if rest and open_class else None) or \
            (None if companion else self.head_entry(obj))
        kind: Kind = e.kind if e.kind != "state" or head is None else head.kind  # "got promoted": a change
        if negated:
            kind = "end"
        elif kind == "state" and not any(t[0].isalnum() for t in tokens(obj)) and not rest:
            kind = "note"  # "I'm working hard": a state without a value replaces nothing
        cls = head.cls if head is not None else (None if open_class else e.cls)
        if cls is None and e is self.entries.get("be") and "'s " in subject:
            role = self.head_entry(self.subject_key(subject), skip_leading=False)
            cls = role.cls if role is not None else None  # "my coach is X": the role's holder
        return Reading(cls=cls, kind=kind, lemma=lemma, light=cls is None and e.cls == LIGHT,
                       from_object=cls is None and e.cls == FROM_OBJECT)

    # ---- subjects and objects ----

    def subject_key(self, subject: str) -> str:
        """Lower-cased subject without role modifiers ("Ana's new coach" -> "ana's coach")."""
        got = self._subjects.get(subject)
        if got is None:
            got = _remember(self._subjects, subject, self._subject_key(subject))
        return got

    def _subject_key(self, subject: str) -> str:
        words = [w for w in subject.lower().replace("’", "'").split() if w not in self.modifiers]
        if words and words[0] == "the":
            words = words[1:]
        return " ".join(words)

    def object_words(self, obj: str) -> frozenset[str]:
        """Content stems of an object that name its value: no function words, no time words, no
        words of the table (a "job" or a "trip" names the class, not which one)."""
        got = self._objects.get(obj)
        if got is None:
            got = _remember(self._objects, obj, self._object_words(obj))
        return got

    def _object_words(self, obj: str) -> frozenset[str]:
        out = set()
        for t in tokens(obj):
            if not t[0].isalnum() or t in STOPWORDS or t in IGNORED or t in _CHUNK_BREAKS or t.isdigit():
                continue
            if not any(f in self.class_words for f in forms(t)):
                out.add(stem(t.removesuffix("'s")))
        return frozenset(out)

    def is_single(self, cls: str) -> bool:
        return self.single.get(cls, False)


def _remember(memo: dict[K, V], key: K, value: V) -> V:
    """Store `value` in a bounded memo (emptied when full: a namespace's units fit many times over)."""
    if len(memo) >= MEMO_READINGS:
        memo.clear()
    memo[key] = value
    return value


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """Overlap coefficient |a & b| / min(|a|, |b|); 0 when either side is empty."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))
