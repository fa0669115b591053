"""Rule-based atomic-unit extraction with a spaCy pipeline: the CPU default, no LLM.

Each window's turns are parsed (in batches over all windows of a run) and every sentence of a new turn
that states a fact gives one unit (construct/clause.py): greetings, chit-chat and questions give none.
The claim keeps the sentence verbatim (lexical retrieval matches the user's words) prefixed by the
speaker, "Alice: I work at the bakery."; when its subject is a pronoun resolved from earlier in the
window (construct/mentions.py; context turns are there for this), the resolution is appended in
brackets, "Alice: She was a retired racer. [she = Maya]". Attributes: a (subject, relation, object)
triple, entities (named entities, noun-phrase heads, the speaker), location (first place entity), fact
time (qgmem.timex against the session date) and utterance time (the session date).

A turn never loses its content: one without a fact but with enough content words gives a whole-turn
"dialogue" unit (relation "say"), and a shared image gives "X shared an image: caption". A turn longer
than `max_parse_chars` (a long assistant message) is not parsed: it gives one whole-turn unit (or passage
units of about `passage_chars` characters) with entities from capitalised spans.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from qgmem.construct.clause import Fact, entities, is_chitchat, is_question, location, read_fact
from qgmem.construct.extractor import WindowResult
from qgmem.construct.mentions import Discourse, sentence_mentions
from qgmem.construct.nlp import DEFAULT_MODEL
from qgmem.construct.textcues import STOPWORDS, capitalised_entities, content_words, dedupe, passages
from qgmem.construct.turn_docs import TurnDocs
from qgmem.construct.windows import Window
from qgmem.timex import resolve_time
from qgmem.types import IMAGE_OBJECT, AtomicUnit, Turn

if TYPE_CHECKING:
    from spacy.tokens import Span

__all__ = ["RULE_VERSION", "RULE_WORDS", "STOPWORDS", "Claim", "RuleConfig", "RuleExtractor"]

# part of every rule window's extraction key: bump it when a change of this extractor's code changes its
# units, so stores built by the older code extract those windows again instead of serving stale units
RULE_WORDS = ("chitchat", "framing_verbs", "non_entity_caps", "person_nouns", "pronouns", "relation_grammar",
              "reporting_verbs", "stopwords")
# 1: regex sentences (qgmem 0.1); 2: spaCy clauses; 3: reduced clauses give way to full ones; 4: a reported
# clause ("your sister told me you live in York") is the fact; 5: a day in words ("the fourteenth of October")
# has a fact time; 6: the capitals and words of every Latin, Greek and Cyrillic alphabet (construct/letters.py)
RULE_VERSION = 6
MEMO_WINDOWS = 100_000  # windows whose claims one process remembers by content (~9 KB each on LongMemEval haystacks)
_CLAIMS: OrderedDict[str, list[tuple[int, Claim]]] = OrderedDict()


@dataclass
class RuleConfig:
    min_sentence_content_words: int = 2  # fewer -> chit-chat, no fact
    min_turn_content_words: int = 4  # a turn with no fact still gives a whole-turn unit if it has this many
    speaker_prefix: bool = True  # claim text = "Speaker: sentence"
    # a chat turn is parsed; a longer message (LoCoMo turns stay under 600 characters, most assistant replies in
    # user-assistant chats do not) is a document: not parsed, one unit (or passages), found by its own words
    max_parse_chars: int = 600
    passage_chars: int = 0  # 0: a long turn is one unit (retrieval embeds it once, as its turn); >0: passages of this size
    max_object_words: int = 12
    nlp_model: str = DEFAULT_MODEL  # spaCy pipeline package (its installed version joins the build identity)


@dataclass
class Claim:
    """One unit of a turn before ids and times are attached."""

    text: str
    subject: str
    relation: str
    object: str
    entities: list[str]
    location: str | None
    time_text: str  # the text the fact time is read from


def forget_remembered_claims() -> None:
    """Empty this process's claims-by-content memory (forgetting calls it: no forgotten sentence stays in RAM)."""
    _CLAIMS.clear()


@dataclass
class RuleExtractor:
    """Extracts units from a window's new turns. Deterministic; ids are stable across runs."""

    config: RuleConfig = field(default_factory=RuleConfig)
    name: str = "rule"
    batch_size: int = 128  # texts per spaCy batch (does not change the output)

    def run(self, windows: list[Window], ns: str, speakers: list[str]) -> Iterator[WindowResult]:
        """One result per window, in order; the turns of windows not seen before go through spaCy in batches.

        A window's claims depend on its turns' words, its speakers and this config only (ids, dates and the
        namespace are attached after), so they are remembered per process by a hash of that content: a
        session shared by several conversations (LongMemEval haystacks) is parsed once."""
        cfg = self.config
        keys = [self._content_key(w, speakers) for w in windows]
        # read once: another thread's build (a server writing other namespaces) may evict or clear the memo
        known = {k: c for k in keys if (c := _CLAIMS.get(k)) is not None}
        fresh = [w for w, k in zip(windows, keys) if k not in known]
        docs = TurnDocs([t for w in fresh for t in w.turns], cfg.nlp_model, self.batch_size, cfg.max_parse_chars)
        for w, key in zip(windows, keys):
            claims = known.get(key)
            if claims is not None:
                _CLAIMS[key] = _CLAIMS.pop(key, claims)  # most recently used
            else:
                docs.keep_only(w.turns)
                claims = known[key] = _CLAIMS[key] = self._window_claims(w, speakers, docs)
                while len(_CLAIMS) > MEMO_WINDOWS:
                    _CLAIMS.popitem(last=False)
            yield WindowResult(w, [self._unit(w, ns, w.new_turns[i], c, j) for j, (i, c) in enumerate(claims)])

    def extract(self, window: Window, namespace: str, speakers: list[str]) -> list[AtomicUnit]:
        return next(self.run([window], namespace, speakers)).units

    def _content_key(self, window: Window, speakers: list[str]) -> str:
        turns = [[t.speaker, t.text, t.image_caption] for t in window.turns]
        blob = json.dumps([repr(self.config), self.name, speakers, len(window.context_turns), turns])
        return hashlib.sha1(blob.encode()).hexdigest()

    def _window_claims(self, window: Window, speakers: list[str], docs: TurnDocs) -> list[tuple[int, Claim]]:
        """(index of the new turn, claim) for every unit of the window, in order."""
        disc = Discourse(list(speakers))
        for turn in window.context_turns:  # read for their mentions only
            self._facts(turn, docs, disc)
        return [(i, claim) for i, turn in enumerate(window.new_turns)
                for claim in self._claims(turn, docs, disc, speakers)]

    def _facts(self, turn: Turn, docs: TurnDocs, disc: Discourse) -> list[tuple[Span, Fact | None]]:
        """(sentence, its fact or None) for a parsed turn; registers the turn's mentions in `disc`."""
        disc.start_turn(turn.speaker)
        doc = docs.get(turn)
        if doc is None:
            return []
        cfg = self.config
        out: list[tuple[Span, Fact | None]] = []
        for sent in doc.sents:
            found = sentence_mentions(sent, turn.speaker, disc)
            fact = None
            if not is_question(sent) and not is_chitchat(sent, cfg.min_sentence_content_words, disc.speakers):
                fact = read_fact(sent, turn.speaker, disc, found, cfg.max_object_words)
            disc.mentions.extend(m for _, m in found)
            if fact is not None and fact.resolved is not None:
                disc.refresh(fact.resolved[1])  # the referent stays the most recent
            out.append((sent, fact))
        return out

    def _claims(self, turn: Turn, docs: TurnDocs, disc: Discourse, speakers: list[str]) -> list[Claim]:
        """The units of one new turn: facts, else a whole-turn unit; passages for a long turn; its image."""
        cfg = self.config
        prefix = f"{turn.speaker}: " if cfg.speaker_prefix else ""
        claims: list[Claim] = []
        if len(turn.text) > cfg.max_parse_chars:
            disc.start_turn(turn.speaker)
            for chunk in passages(turn.text, cfg.passage_chars) if cfg.passage_chars else [turn.text.strip()]:
                ents = [turn.speaker, *capitalised_entities(chunk, speakers)]
                claims.append(Claim(prefix + chunk, turn.speaker, "say", chunk, dedupe(ents), None, chunk))
        else:
            for sent, fact in self._facts(turn, docs, disc):
                if fact is not None:
                    claims.append(_fact_claim(prefix, turn.speaker, speakers, sent, fact))
            doc = docs.get(turn)
            text = turn.text.strip()
            if not claims and doc is not None and len(content_words(text)) >= cfg.min_turn_content_words:
                span = doc[:]
                claims.append(Claim(prefix + text, turn.speaker, "say", text,
                                    entities(span, turn.speaker, speakers), location(span), text))
        if turn.image_caption:
            claims.append(_image_claim(turn, prefix, speakers, with_text=not claims))
        return claims

    def _unit(self, window: Window, ns: str, turn: Turn, claim: Claim, j: int) -> AtomicUnit:
        ft = resolve_time(claim.time_text, window.session_date)  # fact time: the same resolver questions use
        return AtomicUnit(
            id=f"{ns}/{window.key}/u{j}", namespace=ns, session_id=window.session_id, text=claim.text,
            first_turn=turn.id, last_turn=turn.id, turn_ids=[turn.id], speaker=turn.speaker,
            subject=claim.subject, relation=claim.relation, object=claim.object, entities=list(claim.entities),
            location=claim.location, fact_time_start=ft.start if ft else None,
            fact_time_end=ft.end if ft else None, utterance_time=window.session_date, extractor=self.name,
        )


def _fact_claim(prefix: str, speaker: str, speakers: list[str], sent: Span, fact: Fact) -> Claim:
    """A fact sentence, verbatim, with the resolution of a pronoun subject appended in brackets."""
    note = f" [{fact.resolved[0].lower()} = {fact.resolved[1]}]" if fact.resolved else ""
    extra = [fact.resolved[1]] if fact.resolved else []
    text = sent.text.strip()
    return Claim(prefix + text + note, fact.subject, fact.relation, fact.object,
                 entities(sent, speaker, speakers, extra), location(sent), text)


def _image_claim(turn: Turn, prefix: str, speakers: list[str], with_text: bool) -> Claim:
    """"X shared an image: caption." (with the turn's words when they gave no unit of their own)."""
    cap = (turn.image_caption or "").strip().rstrip(".")
    text = turn.text.strip()
    tail = f" {prefix}{text}" if with_text and text else ""
    ents = [turn.speaker, *capitalised_entities(f"{cap}. {text}" if with_text else cap, speakers)]
    return Claim(f"{turn.speaker} shared an image: {cap}.{tail}", turn.speaker, "share", f"{IMAGE_OBJECT}{cap}",
                 dedupe(ents), None, f"{cap}. {text}" if with_text else cap)
