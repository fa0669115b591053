"""Which evolving state of its subject a unit speaks about (the rule path of QGMem §III-A2).

A unit's *state class* (employment, residence, relationship, membership, ownership, schedule, plans)
comes from the word table `qgmem/words/state_relations.txt`: first from the head word of its object
("quit my *job*", "work the night *shift*", "moved the *trip*"), else from its relation ("work at",
"live in", "break up"), else, for a relation that only says a state ended or changed ("quit Acme"),
from the subject's earlier state whose object it names (decided in construct/traces.py). The table
also gives the unit's *kind*: a value of the state, its end ("quit", "cancel", a negated relation) or
a change to a new value ("promote", "reschedule"). Relations outside the table form event groups
keyed by their own lemma; light verbs ("be", "have", "go") join a trace only through their object.

Everything is matched on Snowball stems, so relations may come as lemmas ("work at", from the NLP or
LLM extractors) or as stems (the older rule extractor), and objects in any inflection.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import Stemmer

from qgmem.words import load_rows, load_words

Kind = str  # "state" | "end" | "change"
FROM_OBJECT = "*"  # class from the object's head word, else from the earlier state the object names
LIGHT = "-"  # class from the object's head word only, else no trace
KINDS = ("state", "end", "change")

_stemmer = Stemmer.Stemmer("english")
_TOKEN_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’&\-]*|[,;:.!?()\"]")
STOPWORDS = load_words("stopwords")
IGNORED = load_words("state_ignore")
NEGATIONS = frozenset({"not", "no", "never", "n't", "don't", "doesn't", "didn't", "isn't", "wasn't", "no longer"})
AUXILIARIES = frozenset({"be", "is", "am", "are", "was", "were", "been", "being", "get", "got", "gets", "getting",
                         "have", "has", "had", "will", "would", "did", "does", "do"})
# a noun phrase's head precedes these ("a budgie called Kiwi"): they end the chunk read for a head word
_CHUNK_BREAKS = frozenset({"called", "named"})


@lru_cache(maxsize=100_000)
def stem(word: str) -> str:
    return _stemmer.stemWord(word.lower().replace("’", "'"))


def tokens(text: str) -> list[str]:
    """Words and punctuation marks, in order, lower-cased."""
    return [t.lower() for t in _TOKEN_RE.findall(text or "")]


@dataclass(frozen=True)
class Entry:
    cls: str  # a class name, FROM_OBJECT or LIGHT
    kind: Kind
    relation_only: bool = False


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
            if kind not in KINDS or use not in ("any", "rel"):
                raise ValueError(f"state_relations: {entry!r} has kind {kind!r} / use {use!r}")
            self.entries[" ".join(stem(w) for w in entry.split())] = Entry(cls, kind, use == "rel")
        self.modifiers = frozenset(stem(w) for w in modifiers)
        # words that name a class when they head an object ("job", "trip"): not part of a value
        self.class_words = frozenset(k for k, e in self.entries.items() if " " not in k and not e.relation_only
                                     and e.cls not in (FROM_OBJECT, LIGHT))
        self.max_words = max((len(k.split()) for k in self.entries), default=1)

    @classmethod
    @lru_cache(maxsize=1)
    def default(cls) -> "StateTable":
        return cls(load_rows("state_relations"), load_rows("state_classes"), load_words("subject_modifiers"))

    # ---- relations ----

    def relation(self, relation: str) -> tuple[str, Entry | None, bool]:
        """(lemma, table entry or None, negated) of a relation string such as "not work at"."""
        words = [w for w in relation.lower().replace("’", "'").split() if w]
        negated = False
        while words and (words[0] in NEGATIONS or " ".join(words[:2]) in NEGATIONS):
            negated = True
            words = words[2:] if " ".join(words[:2]) in NEGATIONS else words[1:]
        stems = [stem(w) for w in words]
        lemma = " ".join(stems)
        bare = list(stems)
        while len(bare) > 1 and words[len(stems) - len(bare)] in AUXILIARIES:
            bare = bare[1:]
        for seq in (bare, stems):  # "be engaged to" -> "engag"; "get rid of" stays itself
            for n in range(min(len(seq), self.max_words), 0, -1):
                e = self.entries.get(" ".join(seq[:n]))
                if e is not None:
                    return lemma, e, negated
        return lemma, None, negated

    def head_entry(self, text: str, skip_leading: bool = True) -> Entry | None:
        """The entry of the head word of the first noun chunk of `text` ("the night shift at the
        hospital" -> shift; "promoted to project architect" -> promote), or None."""
        toks = tokens(text)
        i = 0
        while skip_leading and i < len(toks) and toks[i] in STOPWORDS:
            i += 1  # "to the", "at my", ...
        chunk: list[str] = []
        for t in toks[i:]:
            if t in STOPWORDS or t in IGNORED or t in _CHUNK_BREAKS or not t[0].isalnum():
                break
            chunk.append(t)
        if not chunk:
            return None
        e = self.entries.get(stem(chunk[-1]))
        return e if e is not None and not e.relation_only and e.cls not in (FROM_OBJECT, LIGHT) else None

    def read(self, relation: str, obj: str, subject: str) -> Reading:
        """Class and kind of a unit from its own fields (object head, then relation, then subject head)."""
        lemma, e, negated = self.relation(relation)
        head = self.head_entry(obj)
        kind: Kind = e.kind if e is not None else "state"
        if head is not None and kind == "state":
            kind = head.kind  # "got promoted": the participle says it is a change
        if negated:
            kind = "end"
        cls = head.cls if head is not None else None
        if cls is None and e is not None and e.cls not in (FROM_OBJECT, LIGHT):
            cls = e.cls
        if cls is None and e is not None and e.cls == LIGHT and lemma.split()[-1:] == ["be"]:
            subj = self.head_entry(self.subject_key(subject), skip_leading=False) if "'s " in subject else None
            cls = subj.cls if subj is not None else None  # "my coach is X": the role's holder
        light = cls is None and e is not None and e.cls == LIGHT
        return Reading(cls=cls, kind=kind, lemma=lemma, light=light,
                       from_object=cls is None and e is not None and e.cls == FROM_OBJECT)

    # ---- subjects and objects ----

    def subject_key(self, subject: str) -> str:
        """Lower-cased subject without role modifiers ("Ana's new coach" -> "ana's coach")."""
        words = [w for w in subject.lower().replace("’", "'").split() if stem(w) not in self.modifiers]
        if words and words[0] == "the":
            words = words[1:]
        return " ".join(words)

    def object_words(self, obj: str) -> frozenset[str]:
        """Content stems of an object that name its value: no function words, no time words, no
        words of the table (a "job" or a "trip" names the class, not which one)."""
        out = set()
        for t in tokens(obj):
            if not t[0].isalnum() or t in STOPWORDS or t in IGNORED or t in _CHUNK_BREAKS or t.isdigit():
                continue
            s = stem(t.removesuffix("'s"))
            if s and s not in self.class_words:
                out.add(s)
        return frozenset(out)

    def is_single(self, cls: str) -> bool:
        return self.single.get(cls, False)


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """Overlap coefficient |a & b| / min(|a|, |b|); 0 when either side is empty."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))
