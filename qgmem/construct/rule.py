"""Rule-based atomic-unit extraction: the CPU default, no LLM.

One unit per informative sentence of a window's new turns. The claim keeps the original sentence
(so lexical retrieval matches the user's words) prefixed by the speaker ("Caroline: I went to ..."),
which attributes first-person claims without rewriting them. Attributes are cheap heuristics:
entities (capitalised spans, quoted titles, speakers, a small lexicon of personal-life nouns),
location (gazetteer, then "in/at/to X" patterns), fact time (timex, against the session date),
utterance time (the session date) and a subject/relation/object triple.

Chit-chat sentences ("Thanks!", "Wow, that's cool!") give no unit, but a turn never loses its content:
a turn without any sentence unit still gives one whole-turn unit when it has enough content words,
and a shared image always gives a unit with its caption.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache

import Stemmer

from qgmem.construct.extractor import WindowResult
from qgmem.construct.windows import Window
from qgmem.timex import resolve_time
from qgmem.types import AtomicUnit, Turn
from qgmem.words import load_table, load_words

# word lists live in qgmem/words/*.txt; each file says what its list is for
STOPWORDS = load_words("stopwords")
CHITCHAT = load_words("chitchat")
NON_ENTITY_CAPS = STOPWORDS | CHITCHAT | load_words("non_entity_caps")  # capitalised, yet not names
LEXICON = load_words("lexicon")
PLACE_NOUNS = load_words("place_nouns")
GAZETTEER = load_words("gazetteer")
_GAZ_RE = re.compile(r"\b(" + "|".join(sorted((re.escape(g) for g in GAZETTEER), key=len, reverse=True)) + r")\b")
IRREGULAR = load_table("irregular_verbs")
AUX = load_words("auxiliaries")
LEADING = load_words("leading_words")
FIRST_PERSON = load_words("first_person")
POSSESSIVE = load_words("possessive")
SECOND_PERSON = load_words("second_person")
QUESTION_OPENERS = load_words("question_openers")
PRONOUN_SUBJECTS = load_words("pronoun_subjects")

_SENT_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_WORD_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-]*")
_CAP_SPAN_RE = re.compile(r"\b[A-Z][\w'’\-]*(?:\s+(?:of|the|de|and|&)?\s*[A-Z][\w'’\-]*)*")
_QUOTED_RE = re.compile(r"[\"“]([^\"”]{2,60})[\"”]")
_LOC_PREP_RE = re.compile(
    r"\b(?:in|at|to|from|near|around|visited|visit|visiting|toured|explored)\s+(?:the\s+)?"
    r"([A-Z][\w'’\-]*(?:\s+(?:of\s+)?[A-Z][\w'’\-]*){0,3})")
_PLACE_NOUN_RE = re.compile(r"\b(?:in|at|to|from|near|by)\s+(?:(?:the|a|an|my|our|his|her|their|this|that|local)\s+)?"
                            r"(?:\w+\s+)?(" + "|".join(sorted(PLACE_NOUNS)) + r")(?:e?s)?\b", re.IGNORECASE)
_NON_LOC_VERB_RE = re.compile(r"\b(talk|talked|talking|spoke|speak|said|say|listen|listened|listening|wrote|write|"
                              r"sent|send|gave|give|introduced|married|thanks|thank|replied|reply|devoted|"
                              r"dedicated|belong|belongs|went back|next|due|up|close|closer|compared|similar)\s+(?:to|at|in)\s+\S+$")
_stemmer = Stemmer.Stemmer("english")


def normalize_apostrophes(text: str) -> str:
    return text.replace("’", "'").replace("‘", "'")


def split_sentences(text: str) -> list[str]:
    """Sentence split on terminal punctuation followed by a capital/digit; keeps the sentence text verbatim."""
    parts = [p.strip() for p in _SENT_RE.split(text.strip())]
    return [p for p in parts if p]


def words(text: str) -> list[str]:
    return _WORD_RE.findall(normalize_apostrophes(text))


def content_words(text: str) -> list[str]:
    """Words that carry content: not stopwords, not chit-chat interjections."""
    return [w for w in words(text) if w.lower() not in STOPWORDS and w.lower() not in CHITCHAT]


@lru_cache(maxsize=50_000)
def lemma(word: str) -> str:
    """A lemma-ish verb form: irregular table, then the Snowball stem."""
    w = word.lower()
    if w in IRREGULAR:
        return IRREGULAR[w]
    return _stemmer.stemWord(w)


def extract_entities(sentence: str, speakers: list[str]) -> list[str]:
    """Capitalised spans and quoted titles (not sentence-initial function words), speakers named, lexicon nouns."""
    out: dict[str, None] = {}
    text = normalize_apostrophes(sentence)
    for m in _QUOTED_RE.finditer(text):
        out.setdefault(m.group(1).strip(), None)
    stripped = text.lstrip("\"'([ ")
    start_pos = len(text) - len(stripped)
    for m in _CAP_SPAN_RE.finditer(text):
        span = m.group(0).strip()
        toks = span.split()
        if m.start() == start_pos and len(toks) == 1 and not span.isupper() and span not in GAZETTEER \
                and span not in speakers:
            continue  # a capitalised sentence opener is usually not a name
        while toks and toks[0].lower().rstrip("'s") in NON_ENTITY_CAPS | {"i"}:
            toks = toks[1:]
        while toks and toks[-1].lower() in {"of", "the", "and", "&", "de"}:
            toks = toks[:-1]
        if not toks:
            continue
        span = " ".join(toks)
        span = span.removesuffix("'s")
        if span.lower() in NON_ENTITY_CAPS or len(span) < 2:
            continue
        out.setdefault(span, None)
    low = {w.lower() for w in words(text)}
    for s in speakers:
        if s and s.lower() in low:
            out.setdefault(s, None)
    for w in words(text):
        lw = w.lower()
        if lw in LEXICON:
            out.setdefault(lw, None)
    seen: set[str] = set()
    result = []
    for e in out:
        if e.lower() not in seen:
            seen.add(e.lower())
            result.append(e)
    return result


def extract_location(sentence: str, speakers: list[str]) -> str | None:
    """A gazetteer place, else a capitalised span after a place preposition, else 'the beach'-like nouns."""
    text = normalize_apostrophes(sentence)
    m = _GAZ_RE.search(text)
    if m:
        return m.group(1)
    people = {s.lower() for s in speakers}
    for m in _LOC_PREP_RE.finditer(text):
        span = m.group(1)
        first = span.split()[0].lower().rstrip("'s")
        if first in NON_ENTITY_CAPS or first in people or span.lower() in people:
            continue
        if _NON_LOC_VERB_RE.search(text[:m.start(1)] + span.split()[0]):
            continue
        return span
    m = _PLACE_NOUN_RE.search(text)
    if m:
        return m.group(1).lower()
    return None


COMMON_VERBS = load_words("common_verbs")
BE_HAVE = load_words("be_have")


def _verbish(tok: str) -> bool:
    w = tok.lower()
    return (w in IRREGULAR or w in COMMON_VERBS or w in BE_HAVE or (len(w) > 4 and w.endswith("ed"))
            or (w.endswith("s") and w[:-1] in COMMON_VERBS) or (w.endswith("ing") and lemma(w) in COMMON_VERBS))


def extract_triple(sentence: str, speaker: str, other: str | None) -> tuple[str, str, str]:
    """(subject, relation, object): subject = speaker for first person, 'speaker's X' for 'my X', the other
    speaker for 'you', else the leading noun phrase (or the speaker); relation = the main verb, lemma-ish
    (auxiliaries skipped, 'be'/'have' kept when nothing follows); object = the rest, trimmed."""
    toks = [t for t in words(sentence)]
    i = 0
    while i < len(toks) and toks[i].lower() in LEADING:
        i += 1
    subject = speaker
    if i < len(toks):
        w = toks[i].lower()
        if w in FIRST_PERSON:
            i += 1
        elif w in POSSESSIVE:
            j = i + 1
            while j < len(toks) and j - i <= 3 and not _verbish(toks[j]) and toks[j].lower() not in AUX:
                j += 1
            np_ = toks[i + 1:j]
            subject = f"{speaker}'s {' '.join(np_)}" if np_ else speaker
            i = j
        elif w in SECOND_PERSON:
            subject, i = (other or "you"), i + 1
        elif w.endswith("ing") and len(w) > 4 and _verbish(toks[i]):
            # a gerund opener ("Working together is great") is about the activity, not a state of the speaker
            subject, i = w, i + 1
        elif w in PRONOUN_SUBJECTS:
            subject, i = w.split("'")[0], i + 1  # unresolved pronoun: kept out of traces
        elif w not in QUESTION_OPENERS:
            j = i + 1 if w in {"the", "a", "an", "his", "her", "their"} else i
            while j < len(toks) and j - i < 4 and not _verbish(toks[j]) and toks[j].lower() not in AUX:
                j += 1
            if j < len(toks) and j > i:  # a leading noun phrase followed by a verb
                np_ = [t for t in toks[i:j] if t.lower() not in {"the", "a", "an"}]
                if np_:
                    subject, i = " ".join(np_), j
    relation, k = "say", i
    first_aux: str | None = None
    while k < len(toks):
        w = toks[k].lower()
        if w in STOPWORDS and not _verbish(toks[k]) and w not in AUX and "'" not in w:
            k += 1
            continue
        if w in AUX or w.endswith("n't") or ("'" in w and w.split("'")[0] in {"i", "we", "you", "it", "that"}):
            if first_aux is None and (w in BE_HAVE or w.split("'")[-1] in {"m", "re", "s", "ve"}):
                first_aux = w
            k += 1
            continue
        if _verbish(toks[k]) or first_aux is None:
            relation = lemma(w)
            k += 1
        else:
            relation = lemma(first_aux) if first_aux in IRREGULAR else ("have" if first_aux.endswith("ve") else "be")
        break
    obj = " ".join(toks[k:k + 12])
    return subject, relation, obj


@dataclass
class RuleConfig:
    min_sentence_content_words: int = 2  # fewer -> chit-chat, no unit of its own
    min_turn_content_words: int = 4  # a turn with no sentence unit still gives a whole-turn unit if it has this many
    speaker_prefix: bool = True  # claim text = "Speaker: sentence"


@dataclass
class RuleExtractor:
    """Extracts units from a window's new turns. Deterministic; ids are stable across runs."""

    config: RuleConfig = field(default_factory=RuleConfig)
    name: str = "rule"

    def run(self, windows: list[Window], ns: str, speakers: list[str]) -> Iterator[WindowResult]:
        for w in windows:
            yield WindowResult(w, self.extract(w, ns, speakers))

    def extract(self, window: Window, namespace: str, speakers: list[str]) -> list[AtomicUnit]:
        units: list[AtomicUnit] = []
        for turn in window.new_turns:
            for text, span_text in self._claims(turn):
                units.append(self._unit(window, namespace, speakers, turn, text, span_text, len(units)))
        return units

    def _claims(self, turn: Turn) -> list[tuple[str, str]]:
        """(claim text, text the attributes are read from) for one turn."""
        cfg = self.config
        prefix = f"{turn.speaker}: " if cfg.speaker_prefix else ""
        sentences = split_sentences(turn.text)
        kept = [s for s in sentences if len(content_words(s)) >= cfg.min_sentence_content_words]
        claims = [(prefix + s, s) for s in kept]
        if not claims and len(content_words(turn.text)) >= cfg.min_turn_content_words:
            claims = [(prefix + turn.text.strip(), turn.text)]
        if turn.image_caption:
            short = [s for s in sentences if s not in kept]
            tail = f" {prefix}{' '.join(short)}" if short and not claims else ""
            cap = turn.image_caption.strip().rstrip(".")
            claims.append((f"{turn.speaker} shared an image: {cap}.{tail}", f"{cap}. {' '.join(short)}"))
        return claims

    def _unit(self, window: Window, ns: str, speakers: list[str], turn: Turn, text: str, span_text: str,
              j: int) -> AtomicUnit:
        other = next((s for s in speakers if s != turn.speaker), None)
        subj, rel, obj = extract_triple(span_text, turn.speaker, other)
        if text.startswith(f"{turn.speaker} shared an image"):
            subj, rel, obj = turn.speaker, "share", "image: " + (turn.image_caption or "")
        ents = extract_entities(span_text, speakers)
        if turn.speaker not in ents:
            ents.insert(0, turn.speaker)
        ft = resolve_time(span_text, window.session_date)  # fact time: the same resolver questions use
        return AtomicUnit(
            id=f"{ns}/{window.key}/u{j}", namespace=ns, session_id=window.session_id, text=text,
            first_turn=turn.id, last_turn=turn.id, turn_ids=[turn.id], speaker=turn.speaker,
            subject=subj, relation=rel, object=obj, entities=ents,
            location=extract_location(span_text, speakers),
            fact_time_start=ft.start if ft else None, fact_time_end=ft.end if ft else None,
            utterance_time=window.session_date, extractor=self.name,
        )
