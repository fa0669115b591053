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
from qgmem.timex import resolve_time
from qgmem.construct.windows import Window
from qgmem.types import AtomicUnit, Turn

STOPWORDS = frozenset(["a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "aren't", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "can't", "cannot", "could", "couldn't", "did", "didn't", "do", "does", "doesn't", "doing", "don't", "down", "during", "each", "few", "for", "from", "further", "had", "hadn't", "has", "hasn't", "have", "haven't", "having", "he", "he'd", "he'll", "he's", "her", "here", "here's", "hers", "herself", "him", "himself", "his", "how", "how's", "i", "i'd", "i'll", "i'm", "i've", "if", "in", "into", "is", "isn't", "it", "it's", "its", "itself", "let's", "me", "more", "most", "mustn't", "my", "myself", "no", "nor", "not", "of", "off", "on", "once", "only", "or", "other", "ought", "our", "ours", "ourselves", "out", "over", "own", "same", "shan't", "she", "she'd", "she'll", "she's", "should", "shouldn't", "so", "some", "such", "than", "that", "that's", "the", "their", "theirs", "them", "themselves", "then", "there", "there's", "these", "they", "they'd", "they'll", "they're", "they've", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "wasn't", "we", "we'd", "we'll", "we're", "we've", "were", "weren't", "what", "what's", "when", "when's", "where", "where's", "which", "while", "who", "who's", "whom", "why", "why's", "with", "won't", "would", "wouldn't", "you", "you'd", "you'll", "you're", "you've", "your", "yours", "yourself", "yourselves", "just", "really", "also", "so", "too", "yeah", "yes", "yep", "oh", "ok", "okay", "well", "im", "ive", "id", "ill", "youre", "thats", "dont", "its", "got", "get", "gets", "go", "going", "gonna", "wanna", "lot", "lots", "much", "many", "thing", "things", "way", "anything", "something", "everything", "new", "up"])

CHITCHAT = frozenset(["hi", "hey", "hello", "thanks", "thank", "wow", "haha", "hahaha", "lol", "omg", "awesome", "cool", "great", "nice", "amazing", "totally", "sure", "glad", "congrats", "congratulations", "aww", "awww", "yay", "bye", "cheers", "love", "sounds", "sound", "good", "right", "absolutely", "definitely", "indeed", "agree", "true", "sorry", "wish", "luck", "care", "see", "soon", "talk", "later", "catch", "take"])

# Words that may start a sentence capitalised without being names.
NON_ENTITY_CAPS = STOPWORDS | CHITCHAT | frozenset(["anyway", "anyways", "btw", "by", "actually", "also", "and", "but", "so", "well", "oh", "yeah", "yes", "no", "not", "maybe", "sometimes", "speaking", "plus", "definitely", "absolutely", "totally", "really", "honestly", "seriously", "wow", "aww", "awesome", "cool", "great", "nice", "amazing", "congrats", "thanks", "thank", "hey", "hi", "hello", "sounds", "glad", "sure", "yep", "nope", "hmm", "hah", "lol", "omg", "lately", "recently", "gonna", "wanna", "let", "that's", "what's", "it's", "i'm", "i've", "i'd", "i'll", "we're", "you're", "they're", "there's", "here's", "mine", "good", "bad", "happy", "sad", "exciting", "nothing", "everything", "something", "anything", "everyone", "someone", "anyone", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december", "today", "yesterday", "tomorrow", "last", "next", "this", "these", "those"])

LEXICON = frozenset(["pottery", "painting", "paintings", "painter", "art", "artwork", "drawing", "sketch", "sculpture", "photography", "photo", "photos", "camera", "camping", "hiking", "hike", "trip", "travel", "vacation", "road", "beach", "mountains", "mountain", "forest", "lake", "river", "ocean", "sea", "park", "garden", "museum", "concert", "festival", "parade", "conference", "workshop", "class", "classes", "course", "school", "college", "university", "degree", "job", "career", "work", "office", "company", "business", "startup", "boss", "promotion", "interview", "internship", "shop", "store", "bakery", "restaurant", "cafe", "coffee", "dinner", "lunch", "breakfast", "recipe", "cooking", "baking", "cake", "cookies", "pie", "food", "dog", "dogs", "puppy", "cat", "cats", "kitten", "pet", "pets", "horse", "bird", "birds", "fish", "turtle", "turtles", "snake", "kids", "kid", "children", "child", "son", "daughter", "baby", "husband", "wife", "partner", "boyfriend", "girlfriend", "mom", "mother", "dad", "father", "parents", "sister", "brother", "family", "grandma", "grandmother", "grandpa", "grandfather", "friend", "friends", "mentor", "neighbor", "team", "guitar", "piano", "violin", "drums", "music", "song", "songs", "band", "singing", "dance", "dancing", "yoga", "gym", "running", "marathon", "race", "swimming", "surfing", "skiing", "soccer", "football", "basketball", "baseball", "tennis", "volleyball", "golf", "chess", "games", "game", "video", "book", "books", "novel", "reading", "writing", "poem", "poetry", "blog", "movie", "movies", "film", "show", "series", "podcast", "car", "bike", "bicycle", "house", "home", "apartment", "garden", "church", "charity", "volunteering", "volunteer", "shelter", "fundraiser", "adoption", "agency", "counseling", "therapy", "therapist", "support", "group", "lgbtq", "transgender", "pride", "community", "birthday", "wedding", "anniversary", "graduation", "party", "christmas", "thanksgiving", "halloween", "holiday", "holidays", "instrument", "clarinet", "saxophone", "flute", "cello", "ukulele", "trumpet"])

PLACE_NOUNS = frozenset(["beach", "park", "museum", "mountains", "mountain", "forest", "lake", "river", "ocean", "gym", "church", "school", "library", "cafe", "restaurant", "zoo", "concert", "festival", "office", "hospital", "shelter", "store", "mall", "market", "studio", "theater", "theatre", "cinema", "stadium", "campus", "airport", "station", "bar", "pub", "club", "pool", "garden", "farm", "camp", "campsite", "countryside", "city", "downtown", "island", "desert", "neighborhood", "neighbourhood", "town", "village", "hometown", "backyard", "yard", "trail", "coast", "shore", "hills", "woods", "countryside", "church", "temple", "hotel", "resort", "spa", "bakery", "clinic", "center", "centre", "gallery", "aquarium", "arcade", "bookstore"])

_GAZ_TEXT = """
Afghanistan|Argentina|Australia|Austria|Bahamas|Belgium|Brazil|Canada|Chile|China|Colombia|Costa Rica|Croatia|
Cuba|Czech Republic|Denmark|Egypt|England|Ethiopia|Finland|France|Germany|Ghana|Greece|Hawaii|Iceland|India|
Indonesia|Iran|Iraq|Ireland|Israel|Italy|Jamaica|Japan|Kenya|Korea|Mexico|Morocco|Nepal|Netherlands|New Zealand|
Nigeria|Norway|Pakistan|Peru|Philippines|Poland|Portugal|Russia|Scotland|Singapore|Spain|Sweden|Switzerland|
Thailand|Turkey|Ukraine|Vietnam|Wales|Europe|Asia|Africa|America|Caribbean|Scandinavia|UK|USA|
Alabama|Alaska|Arizona|Arkansas|California|Colorado|Connecticut|Delaware|Florida|Idaho|Illinois|Indiana|
Iowa|Kansas|Kentucky|Louisiana|Maine|Maryland|Massachusetts|Michigan|Minnesota|Mississippi|Missouri|Montana|
Nebraska|Nevada|New Hampshire|New Jersey|New Mexico|New York|North Carolina|North Dakota|Ohio|Oklahoma|Oregon|
Pennsylvania|Rhode Island|South Carolina|South Dakota|Tennessee|Texas|Utah|Vermont|Virginia|
West Virginia|Wisconsin|Wyoming|Amsterdam|Athens|Atlanta|Austin|Bali|Bangkok|Barcelona|Beijing|Berlin|Boston|
Brooklyn|Budapest|Buenos Aires|Cairo|Chicago|Copenhagen|Dallas|Denver|Detroit|Dubai|Dublin|Edinburgh|Florence|
Hong Kong|Honolulu|Houston|Istanbul|Las Vegas|Lisbon|London|Los Angeles|Madrid|Manhattan|Melbourne|Miami|
Milan|Montreal|Moscow|Mumbai|Munich|Nashville|New Orleans|Orlando|Oslo|Paris|Philadelphia|Phoenix|Portland|
Prague|Rome|San Diego|San Francisco|Seattle|Seoul|Shanghai|Stockholm|Sydney|Tokyo|Toronto|Vancouver|Venice|
Vienna|Yosemite|Yellowstone|Grand Canyon|Central Park|Disneyland|Disney World|Alps|Himalayas|Rockies
"""
GAZETTEER = frozenset(p.strip() for p in _GAZ_TEXT.replace("\n", "").split("|") if p.strip())
_GAZ_RE = re.compile(r"\b(" + "|".join(sorted((re.escape(g) for g in GAZETTEER), key=len, reverse=True)) + r")\b")

IRREGULAR = {
    "went": "go", "gone": "go", "goes": "go", "got": "get", "gotten": "get", "made": "make", "saw": "see",
    "seen": "see", "took": "take", "taken": "take", "gave": "give", "given": "give", "came": "come",
    "found": "find", "felt": "feel", "kept": "keep", "left": "leave", "met": "meet", "ran": "run", "read": "read",
    "said": "say", "says": "say", "told": "tell", "thought": "think", "bought": "buy", "brought": "bring",
    "taught": "teach", "caught": "catch", "began": "begin", "begun": "begin", "wrote": "write", "written": "write",
    "drew": "draw", "drawn": "draw", "sang": "sing", "sung": "sing", "swam": "swim", "won": "win", "lost": "lose",
    "built": "build", "spent": "spend", "sent": "send", "heard": "hear", "held": "hold", "knew": "know",
    "known": "know", "became": "become", "grew": "grow", "grown": "grow", "had": "have", "has": "have",
    "did": "do", "does": "do", "done": "do", "was": "be", "were": "be", "is": "be", "am": "be", "are": "be",
    "'m": "be", "'re": "be", "'s": "be", "been": "be", "ate": "eat", "eaten": "eat", "flew": "fly", "drove": "drive",
    "rode": "ride", "chose": "choose", "fell": "fall", "led": "lead", "paid": "pay", "sold": "sell", "stood": "stand",
    "understood": "understand", "woke": "wake", "wore": "wear", "joined": "join", "loved": "love", "lived": "live",
    "moved": "move", "tried": "try", "studied": "study", "married": "marry", "adopted": "adopt", "started": "start",
    "finished": "finish", "visited": "visit", "played": "play", "painted": "paint", "used": "use", "decided": "decide",
    "loves": "love", "likes": "like", "liked": "like", "hoped": "hope", "changed": "change", "baked": "bake",
    "danced": "dance", "hiked": "hike", "practiced": "practice", "received": "receive", "shared": "share",
    "created": "create", "closed": "close", "graduated": "graduate", "celebrated": "celebrate", "enjoyed": "enjoy",
}
AUX = frozenset(["am", "is", "are", "was", "were", "be", "been", "being", "'m", "'re", "'s", "'ve", "'d", "'ll", "have", "has", "had", "do", "does", "did", "will", "would", "shall", "should", "can", "could", "may", "might", "must", "just", "really", "also", "finally", "recently", "actually", "still", "already", "always", "never", "even", "totally", "definitely", "now", "then", "so", "gonna", "wanna", "gotta", "able", "to", "not", "n't", "never", "ever", "kinda", "sorta", "absolutely", "truly", "currently", "lately"])
LEADING = frozenset(["yeah", "yes", "no", "oh", "well", "so", "and", "but", "also", "actually", "btw", "anyway", "anyways", "hey", "hi", "wow", "haha", "lol", "aww", "ah", "plus", "honestly", "sure", "totally", "okay", "ok", "hmm", "like", "um", "right"])
FIRST_PERSON = frozenset(["i", "i'm", "i've", "i'd", "i'll", "we", "we're", "we've", "we'd", "we'll"])
POSSESSIVE = frozenset(["my", "our"])
SECOND_PERSON = frozenset(["you", "you're", "you've", "you'd", "you'll"])
PRONOUN_SUBJECTS = frozenset(["it", "it's", "that", "that's", "this", "there", "there's", "they", "they're", "they've", "he", "he's", "she", "she's", "these", "those"])

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


COMMON_VERBS = frozenset(["love", "like", "want", "need", "feel", "think", "hope", "plan", "enjoy", "try", "start", "finish", "join", "visit", "play", "paint", "make", "take", "go", "get", "see", "work", "live", "move", "adopt", "study", "learn", "teach", "read", "write", "watch", "listen", "sing", "dance", "run", "swim", "hike", "cook", "bake", "travel", "buy", "help", "support", "volunteer", "keep", "decide", "mean", "believe", "remember", "forget", "meet", "call", "give", "find", "lose", "win", "build", "create", "draw", "share", "open", "close", "change", "care", "wish", "miss", "check", "attend", "celebrate", "graduate", "marry", "raise", "grow", "look", "sound", "seem", "appreciate", "thank", "agree", "understand", "know", "love", "hate", "prefer", "become", "stay", "spend", "pass", "use", "bring", "put", "set", "teach"])
BE_HAVE = frozenset(["am", "is", "are", "was", "were", "be", "been", "being", "'m", "'re", "'s", "have", "has", "had", "'ve"])


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
        elif w not in {"what", "how", "why", "where", "when", "who", "which", "did", "do", "does", "are", "is",
                       "have", "has", "can", "could", "would", "will"}:
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
        ft = resolve_time(span_text, window.session_date)
        return AtomicUnit(
            id=f"{ns}/{window.key}/u{j}", namespace=ns, session_id=window.session_id, text=text,
            first_turn=turn.id, last_turn=turn.id, turn_ids=[turn.id], speaker=turn.speaker,
            subject=subj, relation=rel, object=obj, entities=ents,
            location=extract_location(span_text, speakers),
            fact_time_start=ft[0] if ft else None, fact_time_end=ft[1] if ft else None,
            utterance_time=window.session_date, extractor=self.name,
        )
