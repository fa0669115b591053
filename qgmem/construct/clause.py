"""One parsed sentence -> at most one (subject, relation, object) fact, its entities and location.

A sentence states a fact when it is not a question, not chit-chat (enough content words, not all of
them interjections like "wow", "thanks") and has a clause: a verb with a subject, or a sentence-opening
past/-ing verb whose subject is the elided speaker ("Went to the beach yesterday!"). Imperatives
("Take care!") and verbless fragments ("Happy birthday!") state none.

Relation: the verb's lemma, with its particle ("give up", "give away") or the preposition that
governs its object ("work at", "move to"); "be" for a copula; "be <participle>" for a passive; "not "
in front when negated. Auxiliaries are skipped, and "going to <verb>" reads the inner verb. After a
framing verb ("I think ...", qgmem/words/framing_verbs.txt), a reporting verb ("Your sister told me you
...", "I heard you ...", qgmem/words/reporting_verbs.txt) or adjective ("I'm afraid ...") the fact is
read from the complement clause; of several clauses ("I quit the class, it clashed with my job") the
one about the speaker wins.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from qgmem.construct.mentions import (Discourse, Mention, is_person_noun, join_tokens, name_of, named_noun, phrase,
                                      pronoun_class)
from qgmem.construct.textcues import CHITCHAT, STOPWORDS, dedupe
from qgmem.words import load_words

if TYPE_CHECKING:
    from spacy.tokens import Span, Token

FRAMING_VERBS = load_words("framing_verbs")
REPORTING_VERBS = load_words("reporting_verbs")
ENTITY_LABELS = {"PERSON", "ORG", "GPE", "LOC", "FAC", "PRODUCT", "EVENT", "WORK_OF_ART", "NORP", "LANGUAGE"}
PLACE_LABELS = ("GPE", "LOC", "FAC")
SUBJECT_DEPS = ("nsubj", "nsubjpass", "csubj", "csubjpass", "expl")
CLAUSE_DEPS = ("conj", "ccomp", "parataxis", "dep")  # clauses beside the root that may carry the fact
FUNCTION_POS = {"INTJ", "PRON", "DET", "AUX", "PART", "CCONJ", "SCONJ", "ADP", "PUNCT", "SYM", "SPACE", "X"}
MAX_SUBJECT_WORDS = 8
ARGUMENT_DEPS = ("dobj", "attr", "acomp", "xcomp", "ccomp", "prep", "oprd", "dative", "agent", "prt")
PARTICLE_ADVERBS = {"away"}  # tagged as adverbs, yet part of the verb: "gave Kiwi away", "passed away"
OBJECT_PRONOUNS = {"me", "him", "her", "us", "them"}
COPULAS = {"be", "seem", "feel", "sound", "look", "become", "get"}


@dataclass(frozen=True)
class Fact:
    subject: str
    relation: str
    object: str
    resolved: tuple[str, str] | None = None  # (pronoun as written, who it points to)


def is_question(sent: Span) -> bool:
    """The sentence ends in a question mark (emoji and quotes after it allowed)."""
    for t in reversed(sent):
        if "?" in t.text:
            return True
        if t.is_alpha or t.like_num:
            return False
    return False


def _vocative(t: Token, speakers: Sequence[str]) -> bool:
    """A name said to someone ("That's great, Noor!"), not about them."""
    if t.text in {s.split()[0] for s in speakers if s}:
        return True
    if t.pos_ != "PROPN" or t.dep_ not in ("npadvmod", "intj", "dep", "appos", "attr", "nsubj"):
        return False
    doc = t.doc
    left = doc[t.i - 1].text if t.i > t.sent.start else ""
    right = doc[t.i + 1].text if t.i + 1 < t.sent.end else ""
    return left in (",", "") and right in (",", "!", ".", "?", "")


def content_tokens(sent: Span, speakers: Sequence[str] = ()) -> list[Token]:
    """Words that carry content; a main verb does even when common ("she *gets* weekends off"), but
    not be/have/do, and so does a word of a named entity ("in *May*"); a name said to the listener
    does not."""
    return [t for t in sent if (t.is_alpha or t.like_num) and not _vocative(t, speakers) and (
        (t.pos_ == "VERB" and t.lemma_ not in ("be", "have", "do")) or t.ent_type_ != ""
        or (t.pos_ not in FUNCTION_POS and not t.is_stop and t.lower_ not in STOPWORDS))]


def is_chitchat(sent: Span, min_words: int, speakers: Sequence[str] = ()) -> bool:
    """Too few content words, or only interjection-like ones ("Wow, that's so cool!")."""
    toks = content_tokens(sent, speakers)
    return len(toks) < min_words or all(t.lower_ in CHITCHAT or t.lemma_.lower() in CHITCHAT for t in toks)


def _subject(tok: Token) -> Token | None:
    """The verb's subject (also when the parser hung it on the auxiliary)."""
    got = next((c for c in tok.children if c.dep_ in SUBJECT_DEPS), None)
    if got is None:
        aux = [c for c in tok.children if c.dep_ in ("aux", "auxpass")]
        got = next((g for a in aux for g in a.children if g.dep_ in SUBJECT_DEPS), None)
    return got


def _about(subj: Token) -> int:
    """0: the speaker (I, we, my X, "my mom and I"); 1: a person (he, she, a name, a person noun); 2: else."""
    if pronoun_class(subj) == "first" or any(pronoun_class(c) == "first" for c in subj.conjuncts) or any(
            c.dep_ == "poss" and pronoun_class(c) == "first" for c in subj.children):
        return 0
    if pronoun_class(subj) in ("he", "she") or subj.ent_type_ == "PERSON" or is_person_noun(subj):
        return 1
    return 2


def clauses(sent: Span) -> list[Token]:
    """Verbs with their own subject: the root and the clauses beside it ("..., and I ...", comma splices;
    under a verbless root "Big news: my sister got married" its clause too), in sentence order."""
    root = sent.root
    deps = CLAUSE_DEPS + (("acl", "appos") if root.pos_ in ("NOUN", "PROPN") else ())
    return [t for t in sent if (t == root or (t.head == root and t.dep_ in deps))
            and t.pos_ in ("VERB", "AUX") and _subject(t) is not None and not _small_clause(t)]


def _small_clause(verb: Token) -> bool:
    """ "lets me play", "makes him cry": the complement of a causative is not a clause of its own."""
    subj = _subject(verb)
    return verb.dep_ == "ccomp" and subj is not None and subj.lower_ in OBJECT_PRONOUNS


def predicate(sent: Span) -> tuple[Token, bool] | None:
    """(the verb the fact is read from, whether its subject is the elided speaker), or None.

    Among the sentence's clauses a full one beats one reduced to its auxiliary ("I can't, I work the
    morning shift"), one after a colon beats the announcement before it ("I have news: I got hired"),
    then the one about the speaker wins, then one about a person, then the root ("I quit the class in
    March, it clashed with my job" is about quitting). Within a rank the leftmost clause wins.
    """
    root = sent.root
    cands = clauses(sent)
    lemma = root.lemma_.lower()
    if root in cands and (lemma in REPORTING_VERBS or (lemma in FRAMING_VERBS and _about(_subject(root)) == 0)):
        comp = next((c for c in root.children if c.dep_ == "ccomp" and _subject(c) is not None), None)
        if comp is not None:
            return comp, False
    if not cands:
        if root.pos_ == "VERB" and root.tag_ in ("VBD", "VBG") and not any(c.dep_.startswith("aux") for c in root.children):
            return root, True
        return None  # an imperative ("Take care!") or a fragment ("Happy birthday!") states nothing
    if root.lemma_ == "let" and root not in cands:
        return None  # a suggestion: "Let's plan something"
    colon = next((t.i for t in sent if t.text == ":" and t.i > sent.start), None)

    def key(t: Token) -> tuple[bool, bool, int, bool, int]:
        about = _about(_subject(t))
        return (_elliptical(t), colon is not None and t.i < colon, about, about == 2 and t != root, t.i)

    best = min(cands, key=key)
    return _framed(best) or best, False


def _framed(verb: Token) -> Token | None:
    """The clause an adjective frames: "I'm afraid I called off the party", "I'm glad I quit"."""
    if verb.lemma_ != "be":
        return None
    for a in verb.children:
        if a.dep_ == "acomp":
            comp = next((c for c in [*a.children, *verb.children] if c.dep_ == "ccomp" and c.i > a.i
                         and _subject(c) is not None), None)
            if comp is not None:
                return comp
    return None


def _elliptical(verb: Token) -> bool:
    """A clause reduced to its auxiliary or a bare "to" ("I can't, ...", "He did, ...", "I'd love to,
    but ..."): it says nothing on its own."""
    dangling = [c for c in verb.children if c.lower_ == "to" and not list(c.children)]
    if not (dangling or verb.pos_ == "AUX" or verb.lemma_ in ("do", "be", "have")):
        return False
    return not any(c.dep_ in ARGUMENT_DEPS and c not in dangling for c in verb.children)


def inner_verb(verb: Token) -> Token:
    """ "going to move" -> move: the future "going to" is not the relation."""
    if verb.lemma_ == "go" and verb.tag_ == "VBG":
        for c in verb.children:
            if c.dep_ == "xcomp" and c.pos_ in ("VERB", "AUX") and any(
                    g.dep_ == "aux" and g.lower_ in ("to", "na") for g in c.children):
                return c
    return verb


def argument_text(tok: Token, max_words: int) -> str:
    """The subtree of an argument as written, cut to `max_words` words, no trailing punctuation."""
    out: list[Token] = []
    n = 0
    for t in tok.subtree:
        if not (t.is_punct or t.is_space):
            n += 1
            if n > max_words:
                break
        out.append(t)
    while out and _loose(out[-1]):
        out.pop()
    while out and _loose(out[0]):
        out.pop(0)
    return join_tokens(out)


def _loose(t: Token) -> bool:
    """Punctuation an argument does not start or end with (quotes and brackets stay)."""
    return t.is_space or (t.is_punct and not (t.is_quote or t.is_bracket))


def _prep_object(verb: Token) -> tuple[Token, Token] | None:
    """(preposition, its object) right of the verb; time phrases ("in May") are not objects."""
    for c in verb.rights:
        if c.dep_ == "prep":
            pobj = next((g for g in c.children if g.dep_ in ("pobj", "pcomp")), None)
            if pobj is not None and pobj.ent_type_ not in ("DATE", "TIME"):
                return c, pobj
    return None


def _first_child(verb: Token, deps: tuple[str, ...]) -> Token | None:
    return next((c for c in verb.children if c.dep_ in deps), None)


def _argument(verb: Token, order: tuple[str, ...]) -> tuple[str, Token] | None:
    """(preposition or "", argument) of the first dependency in `order` the verb has."""
    for dep in order:
        if dep == "prep":
            got = _prep_object(verb)
            if got is not None:
                return got[0].lower_, got[1]
        else:
            arg = _first_child(verb, (dep,))
            if arg is not None and not (dep == "ccomp" and arg.i < verb.i):  # "He did, he retired": no object
                return "", arg
    return None


def relation_object(outer: Token, max_words: int) -> tuple[str, str]:
    """(relation, object) of the clause headed by `outer` (see the module doc)."""
    verb = inner_verb(outer)
    negated = any(c.dep_ == "neg" for c in [*verb.children, *outer.children])
    passive = verb.lemma_ != "be" and any(c.dep_ in ("auxpass", "nsubjpass") for c in verb.children)
    if verb.lemma_ == "be":
        base, order = "be", ("attr", "acomp", "prep", "xcomp", "ccomp")
    else:
        base = f"be {verb.lower_}" if passive else verb.lemma_.lower()
        prt = next((c for c in verb.children if c.dep_ == "prt" or (c.dep_ == "advmod" and c.lower_ in PARTICLE_ADVERBS)), None)
        base = f"{base} {prt.lower_}" if prt is not None else base
        order = ("dobj", "prep", "xcomp", "ccomp", "acomp", "attr", "oprd", "dative")
    got = _argument(verb, order)
    if got is not None and got[0]:
        base = f"{base} {got[0]}"
    relation = f"not {base}" if negated else base
    return relation, argument_text(got[1], max_words) if got is not None else ""


def _subject_tokens(subj: Token, speakers: list[str]) -> list[Token]:
    """The subject phrase: its left part up to the head, plus a name in apposition ("my sister, Ana")."""
    toks = [t for t in subj.subtree if t.i <= subj.i and not _loose(t)]
    named = named_noun(subj, speakers)
    if named is not None and named.i > subj.i:
        toks.append(named)
    return toks[-MAX_SUBJECT_WORDS:]


def _extraposed(subj: Token) -> bool:
    """ "It" of a copula-like verb whose real subject is a later clause ("It was great to see them",
    "It feels good that ...")."""
    verb = subj.head
    if verb.lemma_ not in COPULAS:
        return False
    return any(t.dep_ in ("xcomp", "ccomp", "csubj") and t.i > verb.i for t in verb.subtree)


def read_subject(subj: Token | None, speaker: str, disc: Discourse, before: list[tuple[int, Mention]]
                 ) -> tuple[str, tuple[str, str] | None]:
    """(subject, (pronoun, referent) when a pronoun other than I/we was resolved)."""
    if subj is None:
        return speaker, None  # the elided subject of "Went to the beach yesterday"
    left = [m for i, m in before if i < subj.i]
    if any(pronoun_class(c) == "first" for c in subj.conjuncts):
        return speaker, None  # "My mom and I went ..."
    cls = pronoun_class(subj)
    if cls == "thing" and _extraposed(subj):
        return subj.lower_, None  # "It was great to see them": the "it" points to the clause, not back
    if cls == "first":
        return speaker, None  # the claim text already names the speaker
    if cls is not None:
        ref = disc.resolve(cls, speaker, left)
        return (ref, (subj.text, ref)) if ref else (subj.lower_, None)
    toks = _subject_tokens(subj, disc.speakers) or [subj]
    text = phrase(toks, speaker, disc, left)
    named = [t for t in toks if t.lower_ not in ("the", "a", "an")][:1]
    if pronoun_class(toks[0]) is None and named and named[0].pos_ != "PROPN":
        text = text[:1].lower() + text[1:]  # "The weather" -> "weather": only names start upper case
    return text, None


def read_fact(sent: Span, speaker: str, disc: Discourse, before: list[tuple[int, Mention]],
              max_words: int) -> Fact | None:
    """The sentence's fact, or None when it has no clause to read one from."""
    got = predicate(sent)
    if got is None:
        return None
    verb, elided = got
    subj = None if elided else _subject(verb)
    subject, resolved = read_subject(subj, speaker, disc, before)
    relation, obj = relation_object(verb, max_words)
    return Fact(subject, relation, obj, resolved)


def _clean(text: str) -> str:
    text = text.removesuffix("'s").removesuffix("’s").strip()
    return text[4:] if text.lower().startswith("the ") else text


def entities(span: Span, speaker: str, speakers: Sequence[str], extra: Sequence[str] = ()) -> list[str]:
    """The speaker, `extra`, named entities, speakers named, then noun-phrase heads: common nouns as
    lemma in lower case, proper nouns the recogniser missed as written."""
    out = [speaker, *extra]
    out += [_clean(e.text) for e in span.ents if e.label_ in ENTITY_LABELS]
    names = {t.text for t in span}
    out += [s for s in speakers if s and s.split()[0] in names]
    for chunk in span.noun_chunks:
        r = chunk.root
        if r.ent_type_ or not r.is_alpha or r.is_stop or r.lower_ in STOPWORDS or r.lower_ in CHITCHAT:
            continue  # named entities are in already; dates and numbers are no entities
        if r.pos_ == "PROPN":
            out.append(name_of(r))  # a name the recogniser missed, as written
        elif r.pos_ == "NOUN":
            out.append(r.lemma_.lower())
    return dedupe(out)


def location(span: Span) -> str | None:
    """The first place entity (GPE, LOC, FAC)."""
    return next((_clean(e.text) for e in span.ents if e.label_ in PLACE_LABELS), None)
