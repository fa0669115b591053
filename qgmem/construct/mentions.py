"""Who a subject is: speakers for I/you, earlier mentions of the window for he/she/it/they.

A `Discourse` holds the mentions of one window in order: context turns first, then the new turns,
sentence by sentence. Resolution is a deliberately simple recency heuristic, no coreference model:

- I/me/we -> the speaker; you -> the other speaker (two-party chat; with more people, the latest
  other speaker of the window); "my X" -> "<speaker>'s X", "your X" -> "<other>'s X".
- he/she -> the most recent person of a compatible gender: a PERSON entity, a speaker other than
  the current one, a person noun ("my mom" -> "<speaker>'s mom") or a *named noun*. Gender comes only
  from person nouns and titles (qgmem/words/person_nouns.txt: "brother" is a he, "Ms. Varga" a she);
  names and other nouns fit both. A proper noun the recogniser did not call a person (it often calls
  an unknown name a place) counts only when no person was mentioned at all, and not when it follows a
  preposition ("in Bristol").
- it -> the most recent non-person noun phrase; they -> the most recent plural one, else as it.
- A named noun is a common noun with a name: "my dog Maya", "my sister, Ana", "a puppy named Max".
  spaCy cannot tell a pet from a person, so a named noun is compatible with he, she *and* it: after
  "My dog Maya ..." both "she" and "it" point to Maya.
- Predicate nominals are not new referents: in "She is a nurse", "a nurse" is not a later "she"; a
  name is ("My trainer is Greta. She ..." -> Greta).
A pronoun that finds nothing stays as written ("she"); traces leave such subjects out.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from qgmem.construct.textcues import CHITCHAT, STOPWORDS
from qgmem.words import load_table

if TYPE_CHECKING:
    from spacy.tokens import Span, Token

PRONOUN_CLASS = load_table("pronouns")  # word -> first | second | he | she | thing | plural
PERSON_GENDER = load_table("person_nouns")  # person noun or title -> f | m | x
NOT_A_MENTION = {"DATE", "TIME", "CARDINAL", "ORDINAL", "PERCENT", "MONEY", "QUANTITY"}
THING_LABELS = {"GPE", "LOC", "FAC", "ORG", "NORP", "PRODUCT", "EVENT", "WORK_OF_ART", "LANGUAGE", "LAW"}
_NAMING_VERBS = {"name", "call"}


@dataclass(frozen=True)
class Mention:
    text: str
    person: bool  # he/she may point here
    thing: bool  # it may point here
    plural: bool = False
    weak: bool = False  # a bare proper noun: a person only when nothing better was mentioned
    gender: str = "x"  # f | m | x (unknown)


@dataclass
class Discourse:
    """The mentions of one window so far, oldest first, and who is speaking to whom."""

    speakers: list[str]
    mentions: list[Mention] = field(default_factory=list)
    turn_speakers: list[str] = field(default_factory=list)  # speaker of each turn seen, in order

    def start_turn(self, speaker: str) -> None:
        self.turn_speakers.append(speaker)

    def other(self, speaker: str) -> str | None:
        """The addressee: the other of two speakers, else the latest other speaker of the window."""
        others = [s for s in self.speakers if s != speaker]
        if len(others) == 1:
            return others[0]
        return next((s for s in reversed(self.turn_speakers) if s != speaker), None)

    def resolve(self, cls: str, speaker: str, before: Sequence[Mention] = ()) -> str | None:
        """The referent of a pronoun class for `speaker`, or None when nothing fits."""
        if cls == "first":
            return speaker
        if cls == "second":
            return self.other(speaker)
        found = self.find(cls, speaker, before)
        return found.text if found else None

    def refresh(self, text: str) -> None:
        """Make the latest mention called `text` the most recent again (a resolved subject stays salient)."""
        found = next((m for m in reversed(self.mentions) if m.text == text), None)
        if found is not None:
            self.mentions.append(found)

    def find(self, cls: str, speaker: str, before: Sequence[Mention] = ()) -> Mention | None:
        """The most recent mention a third-person pronoun class may point to (`before`: the current
        sentence's mentions left of the pronoun)."""
        pool = [m for m in reversed(self.mentions + list(before)) if m.text != speaker]
        if cls in ("he", "she"):
            gender = "m" if cls == "he" else "f"
            people = [m for m in pool if m.person and not m.plural and m.gender in (gender, "x")]
            found = [m for m in people if not m.weak] or people
        elif cls == "plural":
            found = [m for m in pool if m.plural] or [m for m in pool if m.thing]
        else:
            found = [m for m in pool if m.thing and not m.plural]
        return found[0] if found else None


def pronoun_class(tok: Token) -> str | None:
    return PRONOUN_CLASS.get(tok.lower_) if tok.pos_ == "PRON" or tok.tag_ in ("PRP", "PRP$") else None


def name_of(tok: Token) -> str:
    """A proper noun with the proper nouns compounded to its left ("Mary Ann", "Kirk Street")."""
    parts = [c for c in tok.lefts if c.dep_ == "compound" and c.pos_ == "PROPN"]
    return " ".join([c.text for c in parts] + [tok.text])


def named_noun(tok: Token, speakers: Sequence[str] = ()) -> Token | None:
    """The name token when `tok` heads a named common noun ("my dog Maya", "a dog, Maya", "a puppy named Max");
    a speaker's name in apposition is someone addressed ("your support, Bob, ..."), not the noun's name."""
    if tok.pos_ == "PROPN" and any(c.dep_ == "compound" and c.pos_ == "NOUN" for c in tok.lefts):
        return tok
    if tok.pos_ == "NOUN":
        for c in tok.children:
            if c.dep_ == "appos" and c.pos_ == "PROPN" and c.text not in {s.split()[0] for s in speakers if s}:
                return c
            if c.dep_ == "acl" and c.lemma_ in _NAMING_VERBS:
                got = next((g for g in c.children if g.dep_ in ("oprd", "attr", "dobj", "xcomp")
                            and g.pos_ == "PROPN"), None)
                if got is not None:
                    return got
    return None


def phrase(tokens: list[Token], speaker: str, disc: Discourse, before: Sequence[Mention] = ()) -> str:
    """A noun phrase as text with its possessive determiner made explicit: "my dog" -> "Alice's dog";
    a leading article is dropped."""
    if not tokens:
        return ""
    head, rest = tokens[0], tokens[1:]
    cls = pronoun_class(head) if head.dep_ == "poss" else None
    if cls is not None and rest:
        owner = disc.resolve(cls, speaker, before)
        if owner:
            return f"{owner}'s {join_tokens(rest)}"
    if head.lower_ in ("the", "a", "an") and rest:
        tokens = rest
    return join_tokens(tokens)


def join_tokens(tokens: Sequence[Token]) -> str:
    """Tokens as written; a space where the tokens are not adjacent in the text ("sister" + "Ana")."""
    out = []
    for k, t in enumerate(tokens):
        nxt = tokens[k + 1] if k + 1 < len(tokens) else None
        out.append(t.text_with_ws if nxt is None or nxt.i == t.i + 1 else t.text + " ")
    return "".join(out).strip()


def gender_of(words: Sequence[str]) -> str:
    """The gender a person noun or a title implies (f, m), else x."""
    for w in words:
        g = PERSON_GENDER.get(w.lower().rstrip("."))
        if g is not None and g != "x":
            return g
    return "x"


def is_person_noun(tok: Token) -> bool:
    return tok.lemma_.lower() in PERSON_GENDER


def mention_of(tok: Token, chunk_tokens: list[Token], speaker: str, disc: Discourse,
               before: Sequence[Mention]) -> Mention | None:
    """What a noun phrase headed by `tok` offers to later pronouns (None: nothing, e.g. a date)."""
    if pronoun_class(tok) is not None or tok.ent_type_ in NOT_A_MENTION or (tok.dep_ == "attr" and tok.pos_ != "PROPN"):
        return None  # a predicate nominal ("she is a nurse") describes a referent; a name ("... is Ana") counts
    if tok.lower_ in CHITCHAT or (tok.pos_ != "PROPN" and (tok.is_stop or tok.lower_ in STOPWORDS or not tok.is_alpha)):
        return None  # "Thanks", "something", "the way" point nowhere
    named = named_noun(tok, disc.speakers)
    if named is not None:
        name = name_of(named)
        return Mention(name, person=True, thing=True, gender=gender_of([*name.split(), tok.lemma_]))
    return _plain_mention(tok, chunk_tokens, speaker, disc, before)


def _plain_mention(tok: Token, chunk_tokens: list[Token], speaker: str, disc: Discourse,
                   before: Sequence[Mention]) -> Mention:
    plural = tok.tag_ in ("NNS", "NNPS")
    if tok.pos_ == "PROPN":
        name = name_of(tok)
        gender = gender_of(name.split())
        if tok.ent_type_ == "PERSON" or any(tok.text == s.split()[0] for s in disc.speakers if s):
            return Mention(name, person=True, thing=False, plural=plural, gender=gender)
        placed = tok.ent_type_ in THING_LABELS and tok.dep_ == "pobj"  # "in Bristol": a place, not a person
        return Mention(name, person=not placed, thing=True, plural=plural, weak=gender == "x", gender=gender)
    text = phrase(chunk_tokens, speaker, disc, before)
    if is_person_noun(tok):
        return Mention(text, person=True, thing=False, plural=plural, gender=gender_of([tok.lemma_]))
    return Mention(text, person=False, thing=True, plural=plural)


def _possessors(sent: Span, speaker: str, disc: Discourse) -> list[tuple[int, Mention]]:
    """Persons in the possessive ("Milo's season", "your brother's move"): a later he/she may point to them."""
    out = []
    for t in sent:
        if t.dep_ != "poss":
            continue
        if t.pos_ == "PROPN":  # an organisation may own things too: then only a weak person
            name, thing = name_of(t), t.ent_type_ in THING_LABELS
            out.append((t.i, Mention(name, person=True, thing=thing, weak=thing, gender=gender_of(name.split()))))
        elif t.pos_ == "NOUN" and is_person_noun(t):
            text = phrase([x for x in t.subtree if x.i <= t.i], speaker, disc)
            out.append((t.i, Mention(text, person=True, thing=False, gender=gender_of([t.lemma_]))))
    return out


def sentence_mentions(sent: Span, speaker: str, disc: Discourse) -> list[tuple[int, Mention]]:
    """(token index, mention) of every noun phrase of the sentence, in order. A verbless fragment
    headed by a common noun ("Independent woman.", "Nice car!") is a comment: no mentions."""
    if sent.root.pos_ == "NOUN" and not any(t.pos_ in ("VERB", "AUX") for t in sent):
        return []
    out: list[tuple[int, Mention]] = []
    names: set[int] = set()  # name tokens already registered through their named noun
    for chunk in sent.noun_chunks:
        if chunk.root.i in names:
            continue
        m = mention_of(chunk.root, list(chunk), speaker, disc, [x for _, x in out])
        if m is not None:
            named = named_noun(chunk.root, disc.speakers)
            if named is not None:
                names.add(named.i)
            out.append((chunk.root.i, m))
    out += _possessors(sent, speaker, disc)
    return sorted(out, key=lambda x: x[0])
