"""Questions that aggregate, and the person a question is about, read from the question's form.

A question such as "What sports does Ann play?" or "How many times has Ben moved?" asks for every fact of one
kind about a person; its evidence is spread over many sessions, each piece only weakly similar to the
question as a whole (the name in it makes the person's shortest, emptiest remarks look closest). These
rules recognise such questions from general English only: "how many", "in what ways", "which/what ...
all", a wh-word followed by a plural head noun and an auxiliary ("What books has ...", "Which cities
did ..."), "what kind/type of", "what does X like/love/enjoy/do", and a perfect with nothing after the
verb ("What has X painted?", "Where have they travelled?"). No benchmark word is involved.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_AUX = ("is", "are", "was", "were", "does", "do", "did", "has", "have", "had", "can", "could", "would", "will",
        "should", "might", "may")
# words ending in "s" that are not plural nouns where a plural head noun would stand
_NOT_PLURAL = frozenset({"this", "his", "its", "hers", "yours", "ours", "theirs", "was", "is", "has", "does", "us",
                         "yes", "news", "always", "perhaps", "less", "series", "species", "plus", "thus", "towards"})
_WORDS = re.compile(r"[a-z0-9][a-z0-9'+/-]*")
_PLURAL_HEAD = re.compile(r"^(?:what|which)\s+(?:[a-z0-9'+/-]+\s+){0,2}?([a-z'/-]+s)\s+(?:" + "|".join(_AUX) + r")\b")
_KIND_OF = re.compile(r"^(?:what|which)\s+(?:kinds?|types?|sorts?)\s+of\b")
_LIKES = re.compile(r"^what\s+(?:does|do)\s+.{1,60}?\s(?:like|love|enjoy|do)\b")
_PERFECT_BARE = re.compile(r"^(?:what|where|who)\s+(?:has|have)\s+[a-z0-9' ]{1,60}?\s[a-z]+ed$")
_FIRST_PERSON = re.compile(r"(?i)\b(?:i|me|my|mine|myself|i've|i'm|i'd)\b")


def _normal(text: str) -> str:
    return " ".join(_WORDS.findall(text.lower().replace("\u2019", "'")))


def is_aggregate(text: str) -> bool:
    """True when the question asks for every fact of a kind (a list, a count, a person's likes)."""
    s = _normal(text)
    if not s:
        return False
    words = s.split()
    if re.search(r"\bhow many\b", s):
        return True
    if re.search(r"\bin what ways\b", s) or (words[0] in ("what", "which", "who", "where") and "all" in words):
        return True
    m = _PLURAL_HEAD.match(s)
    if m and m.group(1) not in _NOT_PLURAL and not m.group(1).endswith(("'s", "ss", "us")):
        return True
    return bool(_KIND_OF.match(s) or _LIKES.match(s) or _PERFECT_BARE.match(s))


def persons_asked(text: str, entities: Iterable[str], speakers: Iterable[str], self_speaker: str) -> list[str]:
    """The speakers of the memory a question is about: the speakers it names (the query parser's
    entities matched to them, case aside), else `self_speaker` when the question speaks in the first
    person ("what did I buy?": the asker is that speaker) and the memory has that speaker."""
    by_lower = {s.lower(): s for s in speakers if s}
    named = list(dict.fromkeys(by_lower[e.lower()] for e in entities if e.lower() in by_lower))
    if named:
        return named
    if self_speaker and self_speaker.lower() in by_lower and _FIRST_PERSON.search(text):
        return [by_lower[self_speaker.lower()]]
    return []
