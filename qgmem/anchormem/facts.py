"""Fact-context units (AnchorMem §4.1): atomic facts extracted per chunk, each mapped to its chunk.

LLM path: prompts/extract_facts.txt per chunk, JSON reply parsed leniently; an unparseable reply is
re-asked `llm_retries` times, then recorded as a failure (store + stats), never silently dropped.
Rule path (no LLM): qgmem.construct's rule units serve as facts, each mapped to the chunk that
holds most of its source turns.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

from tqdm import tqdm

from ..llm.base import ChatBackend, ChatRequest, ChatResult, LLMError
from ..types import AtomicUnit, Conversation
from .prompts import fill, load_prompt
from .units import Chunk, Fact

PRONOUN_STARTS = ("i ", "you ", "he ", "she ", "they ", "we ", "my ", "his ", "her ", "their ", "our ")


@dataclass
class LLMTally:
    """Calls and tokens this component spent (cached replies included, flagged)."""

    calls: int = 0
    cached: int = 0
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, res: ChatResult | LLMError) -> None:
        self.calls += 1
        if isinstance(res, LLMError):
            self.failed_calls += 1
            return
        self.cached += int(res.cached)
        self.prompt_tokens += res.prompt_tokens
        self.completion_tokens += res.completion_tokens

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class FactStats:
    chunks: int = 0
    facts: int = 0
    failed_chunks: int = 0  # no parseable reply after retries (recorded in the store's failures)
    repaired_replies: int = 0  # parsed only after a re-ask
    facts_without_name: int = 0  # start with a pronoun although the prompt forbids it (kept, counted)
    llm: LLMTally = field(default_factory=LLMTally)


def parse_facts_reply(text: str) -> list[str]:
    """Facts from an extraction reply in the prompt's format ``{"facts": ["...", ...]}``.

    Also accepts a bare list, and fact objects ``{"fact": "..."}``; raises ValueError otherwise.
    """
    from ..llm.jsonfix import parse_json_lenient

    data: Any = parse_json_lenient(text)
    if isinstance(data, dict):
        if "facts" not in data:
            raise ValueError(f"reply JSON has no 'facts' key (keys: {sorted(data)[:8]})")
        data = data["facts"]
    if not isinstance(data, list):
        raise ValueError(f"'facts' must be a list, got {type(data).__name__}")
    out: list[str] = []
    for i, item in enumerate(data):
        if isinstance(item, dict):
            item = item.get("fact", item.get("text"))
        if not isinstance(item, str):
            raise ValueError(f"facts[{i}] is not a string: {item!r}")
        item = " ".join(item.split())
        if item:
            out.append(item)
    return out


def extraction_messages(chunk: Chunk, speakers: list[str]) -> list[dict[str, str]]:
    prompt = fill(load_prompt("extract_facts"), speakers=" and ".join(speakers) or "the speakers",
                  date=chunk.date or "unknown date", context=chunk.text)
    return [{"role": "user", "content": prompt}]


def _speaker_of(fact: str, speakers: list[str]) -> str:
    for s in speakers:
        if fact.startswith(s):
            return s
    return ""


def ask_with_repair(
    llm: ChatBackend, messages: list[dict[str, str]], first: ChatResult | LLMError, parse: Callable[[str], Any],
    retries: int, max_tokens: int, tally: LLMTally,
) -> tuple[Any | None, int, str, str]:
    """Parse `first`; on a bad reply re-ask with the error shown. Returns (value|None, re-asks, error, raw)."""
    res: ChatResult | LLMError = first
    msgs = list(messages)
    err, raw = "", ""
    for attempt in range(retries + 1):
        if attempt > 0:
            try:
                res = llm.chat(msgs, temperature=0.0, max_tokens=max_tokens, json_mode=True, phase="construction")
            except LLMError as e:
                res = e
            tally.add(res)
        if isinstance(res, LLMError):
            err, raw = f"LLMError: {res}", ""
            continue
        raw = res.text
        try:
            return parse(raw), attempt, "", raw
        except ValueError as e:
            err = f"unparseable reply: {e}"
            msgs = list(messages) + [
                {"role": "assistant", "content": raw},
                {"role": "user", "content": f"That reply could not be parsed ({e}). Answer again with the JSON only."},
            ]
    return None, retries, err, raw


def extract_facts_llm(
    chunks: list[Chunk], speakers: list[str], llm: ChatBackend, *, max_tokens: int = 512, retries: int = 1,
    done: dict[str, list[str]] | None = None, on_failure: Callable[[str, str, str], None] | None = None,
    checkpoint: Callable[[dict[str, list[str]]], None] | None = None, save_every: int = 16,
    stats: FactStats | None = None,
) -> dict[str, list[str]]:
    """chunk id -> fact texts for every chunk. `done` resumes a partial run; `checkpoint` saves progress."""
    stats = stats if stats is not None else FactStats()
    result: dict[str, list[str]] = dict(done or {})
    todo = [c for c in chunks if c.id not in result]
    bar = tqdm(total=len(chunks), initial=len(chunks) - len(todo), desc="anchormem facts", unit="chunk",
               disable=len(todo) < 8)
    for start in range(0, len(todo), max(1, save_every)):
        batch = todo[start:start + max(1, save_every)]
        msgs = [extraction_messages(c, speakers) for c in batch]
        firsts = llm.complete_many([ChatRequest(m, 0.0, max_tokens, True) for m in msgs], phase="construction")
        for chunk, m, first in zip(batch, msgs, firsts):
            stats.llm.add(first)
            facts, reasks, err, raw = ask_with_repair(llm, m, first, parse_facts_reply, retries, max_tokens, stats.llm)
            if facts is None:
                stats.failed_chunks += 1
                if on_failure:
                    on_failure(f"am_facts:{chunk.id}", err, raw)
                facts = []  # recorded above; the chunk stays retrievable through other facts/events
            elif reasks:
                stats.repaired_replies += 1
            result[chunk.id] = facts
            bar.update(1)
        if checkpoint:
            checkpoint(result)
    bar.close()
    return result


def facts_from_llm(chunks: list[Chunk], by_chunk: dict[str, list[str]], speakers: list[str],
                   stats: FactStats | None = None) -> list[Fact]:
    """Fact records in time order (chunk order, then reply order); each fact maps to its chunk."""
    facts: list[Fact] = []
    for c in chunks:
        for text in by_chunk.get(c.id, []):
            facts.append(Fact(id=f"F{len(facts)}", text=text, chunk_id=c.id, turn_ids=list(c.turn_ids),
                              order=len(facts), speaker=_speaker_of(text, speakers), source="llm"))
            if stats is not None and text.lower().startswith(PRONOUN_STARTS):
                stats.facts_without_name += 1
    if stats is not None:
        stats.chunks, stats.facts = len(chunks), len(facts)
    return facts


def chunk_of_unit(unit: AtomicUnit, chunk_by_turn: dict[str, Chunk]) -> Chunk:
    """The chunk holding most of the unit's turns (ties: the earliest)."""
    counts = Counter(t for t in unit.turn_ids if t in chunk_by_turn)
    per_chunk: dict[str, int] = {}
    by_id: dict[str, Chunk] = {}
    for t, n in counts.items():
        c = chunk_by_turn[t]
        per_chunk[c.id] = per_chunk.get(c.id, 0) + n
        by_id[c.id] = c
    if not per_chunk:
        raise ValueError(f"unit {unit.id}: none of its turns {unit.turn_ids} is in the conversation")
    best = max(per_chunk, key=lambda cid: (per_chunk[cid], -by_id[cid].order))
    return by_id[best]


def facts_from_units(chunks: list[Chunk], units: list[AtomicUnit], stats: FactStats | None = None) -> list[Fact]:
    """Rule path: each rule unit becomes a fact mapped to one chunk, in time order."""
    chunk_by_turn = {t: c for c in chunks for t in c.turn_ids}
    turn_pos = {t: i for i, t in enumerate(chunk_by_turn)}
    placed = []
    for idx, u in enumerate(units):
        c = chunk_of_unit(u, chunk_by_turn)
        first = min((turn_pos[t] for t in u.turn_ids if t in turn_pos), default=0)
        placed.append((c.order, first, idx, u, c))
    placed.sort(key=lambda x: x[:3])
    facts = [Fact(id=f"F{i}", text=u.text, chunk_id=c.id, turn_ids=list(u.turn_ids), order=i,
                  speaker=u.speaker, source="rule") for i, (_, _, _, u, c) in enumerate(placed)]
    if stats is not None:
        stats.chunks, stats.facts = len(chunks), len(facts)
    return facts


def rule_units(conversation: Conversation) -> list[AtomicUnit]:
    """The rule extractor's units over every session's windows (no LLM, no trace consolidation:
    AnchorMem needs the claims only). Each rule unit is one sentence of one turn, "Speaker: ..."."""
    from ..construct.rule import RuleExtractor
    from ..construct.windows import make_windows

    extractor = RuleExtractor()
    speakers = conversation.speakers or sorted({t.speaker for t in conversation.turns()})
    windows = [w for session in conversation.sessions for w in make_windows(session)]
    # one run over all windows: the parser sees the turns in batches
    return [u for res in extractor.run(windows, conversation.id, speakers) for u in res.units]
