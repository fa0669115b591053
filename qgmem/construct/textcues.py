"""Cheap text cues that need no parser: word counts, regex sentences, passages, capitalised names.

Used where parsing is not worth it: counting a turn's content words, and the long turns the rule
extractor does not parse (their passages get entities from capitalised spans).
"""

from __future__ import annotations

import re

from qgmem.construct.letters import ALNUM, CAP, UPPER
from qgmem.words import load_words

# word lists live in qgmem/words/*.txt; each file says what its list is for
STOPWORDS = load_words("stopwords")
CHITCHAT = load_words("chitchat")
NON_ENTITY_CAPS = STOPWORDS | CHITCHAT | load_words("non_entity_caps")  # capitalised, yet not names

_SENT_RE = re.compile(rf"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[{UPPER}0-9])|\n\s*\n")
_WORD_RE = re.compile(rf"{ALNUM}(?:{ALNUM}|['’\-])*")  # "café" is one word, not "caf" and "e"
_CAP_SPAN_RE = re.compile(rf"\b{CAP}[\w'’\-]*(?:\s+(?:of|the|de|and|&)?\s*{CAP}[\w'’\-]*)*")
_EDGE_WORDS = {"of", "the", "and", "&", "de"}


def normalize_apostrophes(text: str) -> str:
    return text.replace("’", "'").replace("‘", "'")


def words(text: str) -> list[str]:
    return _WORD_RE.findall(normalize_apostrophes(text))


def content_words(text: str) -> list[str]:
    """Words that carry content: not stopwords, not chit-chat interjections."""
    return [w for w in words(text) if w.lower() not in STOPWORDS and w.lower() not in CHITCHAT]


def split_sentences(text: str) -> list[str]:
    """Sentences on terminal punctuation followed by a capital/digit (or a blank line); text kept verbatim."""
    parts = [p.strip() for p in _SENT_RE.split(text.strip()) if p]
    return [p for p in parts if p]


def _pieces(sentence: str, max_chars: int) -> list[str]:
    """A sentence longer than `max_chars` cut at whitespace (code, lists without full stops)."""
    if len(sentence) <= max_chars:
        return [sentence]
    out, cur = [], ""
    for w in sentence.split():
        if cur and len(cur) + 1 + len(w) > max_chars:
            out.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}" if cur else w
    return out + [cur] if cur else out


def passages(text: str, max_chars: int) -> list[str]:
    """Consecutive sentences grouped into chunks of at most `max_chars` characters (a long sentence is cut)."""
    chunks: list[str] = []
    cur = ""
    for sent in split_sentences(text):
        for piece in _pieces(sent, max_chars):
            if cur and len(cur) + 1 + len(piece) > max_chars:
                chunks.append(cur)
                cur = piece
            else:
                cur = f"{cur} {piece}" if cur else piece
    if cur:
        chunks.append(cur)
    return chunks


def capitalised_entities(text: str, speakers: list[str]) -> list[str]:
    """Capitalised spans that are not sentence openers or capitalised function words, and speakers named."""
    out: dict[str, None] = {}
    text = normalize_apostrophes(text)
    openers = {0} | {m.end() for m in re.finditer(r"[.!?:]\s+|\n", text)}
    for m in _CAP_SPAN_RE.finditer(text):
        toks = m.group(0).split()
        if m.start() in openers and len(toks) == 1 and not toks[0].isupper() and toks[0] not in speakers:
            continue  # a capitalised sentence opener is usually not a name
        while toks and toks[0].lower().removesuffix("'s") in NON_ENTITY_CAPS | {"i"}:
            toks = toks[1:]
        while toks and toks[-1].lower() in _EDGE_WORDS:
            toks = toks[:-1]
        span = " ".join(toks).removesuffix("'s")
        if len(span) >= 2 and span.lower() not in NON_ENTITY_CAPS:
            out.setdefault(span, None)
    low = {w.lower() for w in words(text)}
    for s in speakers:
        if s and s.lower() in low:
            out.setdefault(s, None)
    return dedupe(list(out))


def dedupe(items: list[str]) -> list[str]:
    """Order kept, case-insensitive repeats dropped."""
    seen: set[str] = set()
    out = []
    for e in items:
        if e and e.lower() not in seen:
            seen.add(e.lower())
            out.append(e)
    return out
