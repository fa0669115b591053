"""AnchorMem as a MemoryMethod: build (chunks -> facts -> events, persisted, resumable), activate.

Everything lives in the shared MemoryStore under the conversation's namespace: records "am_chunks",
"am_facts", "am_events", "am_meta" (fingerprints + statistics) and embeddings "am_facts",
"am_events". Each stage is keyed by a fingerprint of the settings it depends on, so a rerun with
the same settings loads instead of rebuilding, a changed tau/N rebuilds only the events, and an
interrupted LLM stage resumes from its last checkpoint ("am_facts_partial", "am_events_partial").
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..answer import context_tokens
from ..llm.base import ChatBackend
from ..types import Conversation, MemoryItem, MethodBase, Question, WorkingMemory
from .config import AnchorMemConfig
from .events import EventStats, build_events, find_clusters
from .facts import FactStats, extract_facts_llm, facts_from_llm, facts_from_units, rule_units
from .prompts import prompt_hash
from .units import Chunk, Event, Fact, from_record, make_chunks, to_record

K_CHUNKS, K_FACTS, K_EVENTS, K_META = "am_chunks", "am_facts", "am_events", "am_meta"
K_FACTS_PART, K_EVENTS_PART = "am_facts_partial", "am_events_partial"


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass
class _Index:
    chunks: dict[str, Chunk]
    facts: list[Fact]
    fact_emb: np.ndarray
    events: list[Event]
    event_emb: np.ndarray


@dataclass
class FactStage:
    """The fact-context units of one conversation (what every event-graph setting starts from)."""

    chunks: list[Chunk]
    facts: list[Fact]
    fact_emb: np.ndarray
    speakers: list[str]
    fact_stats: dict[str, Any]
    fingerprint: str


class AnchorMemMethod(MethodBase):
    """Facts as retrieval anchors, immutable chunks as context, events as associations (AnchorMem)."""

    name = "anchormem"

    def __init__(self, store: Any, cfg: AnchorMemConfig | None = None, llm: ChatBackend | None = None,
                 embedder: Any = None):
        self.store = store if not isinstance(store, (str, Path)) else _open_store(store)
        self.cfg = cfg or AnchorMemConfig()
        if llm is None and self.cfg.llm is not None and (self.cfg.extractor == "llm" or self.cfg.integrator == "llm"):
            from ..llm import make_backend

            llm = make_backend(self.cfg.llm)
        if self.cfg.extractor == "llm" and llm is None:
            raise ValueError("AnchorMemConfig.extractor='llm' needs an LLM: set the `llm` section or pass llm=")
        if self.cfg.integrator == "llm" and llm is None:
            raise ValueError("AnchorMemConfig.integrator='llm' needs an LLM: set the `llm` section or pass llm=")
        self.llm = llm
        self._embedder = embedder
        self._index: dict[str, _Index] = {}
        self._last_ns: str | None = None

    # ------------------------------------------------------------------ settings
    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            from ..embed import get_embedder

            self._embedder = get_embedder(self.cfg.embedder)
        return self._embedder

    @property
    def integrates_with_llm(self) -> bool:
        return self.cfg.integrator == "llm" or (self.cfg.integrator == "auto" and self.llm is not None)

    def _llm_id(self) -> str:
        return getattr(self.llm, "model", "unknown") if self.llm is not None else ""

    def facts_fingerprint(self) -> str:
        c = self.cfg
        key: dict[str, Any] = {"chunk_turns": c.chunk_turns, "extractor": c.extractor}
        if c.extractor == "llm":
            key |= {"llm": self._llm_id(), "prompt": prompt_hash("extract_facts"), "max_tokens": c.fact_max_tokens}
        return _digest(key)

    def events_fingerprint(self) -> str:
        c = self.cfg
        key: dict[str, Any] = {"facts": self.facts_fingerprint(), "tau": c.tau, "n": c.n_neighbors,
                               "dedupe": c.dedupe_identical_clusters, "event_turns": c.event_turns,
                               "max_clusters": c.max_clusters,
                               "embedder": c.embedder, "integrator": "llm" if self.integrates_with_llm else "concat"}
        if self.integrates_with_llm:
            key |= {"llm": self._llm_id(), "prompt": prompt_hash("integrate_event"), "max_tokens": c.event_max_tokens}
        return _digest(key)

    # ------------------------------------------------------------------ build
    def build(self, conversation: Conversation) -> None:
        """Index every session of `conversation` (never only those the questions name)."""
        stage = self.build_facts(conversation)
        ns, efp = conversation.id, self.events_fingerprint()
        meta = self._meta(ns)
        if not (meta.get("events_fp") == efp and self.store.is_done(ns, f"am_events:{efp}")):
            es = self._build_events(ns, stage.facts, stage.fact_emb, stage.chunks, stage.speakers, efp)
            self._put_meta(ns, {"facts_fp": stage.fingerprint, "fact_stats": stage.fact_stats, "events_fp": efp,
                                "event_stats": es.as_dict(), "config": asdict(self.cfg) | {"llm": None},
                                "llm_model": self._llm_id()})
            self.store.mark_done(ns, f"am_events:{efp}")
        self._index.pop(ns, None)
        self._last_ns = ns

    def build_facts(self, conversation: Conversation) -> FactStage:
        """Chunks + facts + fact embeddings of every session, persisted; loaded when already built."""
        ns = conversation.id
        if not ns:
            raise ValueError("AnchorMem.build: conversation has no id (the store namespace)")
        self.store.put_conversation(conversation)
        meta = self._meta(ns)
        chunks = make_chunks(conversation, self.cfg.chunk_turns)
        speakers = conversation.speakers or sorted({t.speaker for t in conversation.turns()})
        self.store.put_records(ns, K_CHUNKS, [to_record(c) for c in chunks])
        ffp = self.facts_fingerprint()
        if meta.get("facts_fp") == ffp and self.store.is_done(ns, f"am_facts:{ffp}"):
            facts = self._load(ns, K_FACTS, Fact)
            return FactStage(chunks, facts, self._fact_matrix(ns, facts), speakers, meta.get("fact_stats", {}), ffp)
        fs = FactStats()
        facts = self._build_facts(ns, conversation, chunks, speakers, ffp, fs)
        emb = self._encode([f.text for f in facts])
        self.store.put_records(ns, K_FACTS, [to_record(f) for f in facts])
        self.store.set_embeddings(ns, K_FACTS, [f.id for f in facts], emb, self.cfg.embedder)
        self.store.put_records(ns, K_FACTS_PART, [])
        self._put_meta(ns, {"facts_fp": ffp, "fact_stats": asdict(fs)})  # events (if any) now stale
        self.store.mark_done(ns, f"am_facts:{ffp}")
        return FactStage(chunks, facts, emb, speakers, asdict(fs), ffp)

    def _build_facts(self, ns: str, conv: Conversation, chunks: list[Chunk], speakers: list[str], fp: str,
                     stats: FactStats) -> list[Fact]:
        if self.cfg.extractor == "rule":
            return facts_from_units(chunks, rule_units(conv), stats)
        assert self.llm is not None
        done = {r["chunk_id"]: list(r["facts"]) for r in self.store.get_records(ns, K_FACTS_PART)
                if r.get("fp") == fp}

        def checkpoint(by_chunk: dict[str, list[str]]) -> None:
            self.store.put_records(ns, K_FACTS_PART, [{"fp": fp, "chunk_id": k, "facts": v} for k, v in by_chunk.items()])

        by_chunk = extract_facts_llm(
            chunks, speakers, self.llm, max_tokens=self.cfg.fact_max_tokens, retries=self.cfg.llm_retries,
            done=done, on_failure=lambda key, err, raw: self.store.record_failure(ns, key, err, raw),
            checkpoint=checkpoint, save_every=self.cfg.save_every, stats=stats)
        return facts_from_llm(chunks, by_chunk, speakers, stats)

    def _build_events(self, ns: str, facts: list[Fact], fact_emb: np.ndarray, chunks: list[Chunk],
                      speakers: list[str], fp: str) -> EventStats:
        c = self.cfg
        clusters, cstats = find_clusters(fact_emb, [f.chunk_id for f in facts], c.tau, c.n_neighbors,
                                         c.dedupe_identical_clusters, max_clusters=c.max_clusters)
        stats = EventStats(clusters=cstats)
        llm = self.llm if self.integrates_with_llm else None
        done = {int(r["cluster"]): r["text"] for r in self.store.get_records(ns, K_EVENTS_PART) if r.get("fp") == fp}

        def checkpoint(texts: dict[int, str]) -> None:
            self.store.put_records(ns, K_EVENTS_PART, [{"fp": fp, "cluster": k, "text": v} for k, v in texts.items()])

        events = build_events(clusters, facts, chunks, speakers, llm=llm, max_tokens=c.event_max_tokens,
                              retries=c.llm_retries, event_turns=c.event_turns, done=done,
                              on_failure=lambda key, err, raw: self.store.record_failure(ns, key, err, raw),
                              checkpoint=checkpoint, save_every=c.save_every, stats=stats)
        self.store.put_records(ns, K_EVENTS, [to_record(e) for e in events])
        self.store.set_embeddings(ns, K_EVENTS, [e.id for e in events], self._encode([e.text for e in events]),
                                  c.embedder)
        self.store.put_records(ns, K_EVENTS_PART, [])
        return stats

    # ------------------------------------------------------------------ store helpers
    def _encode(self, texts: list[str]) -> np.ndarray:
        emb = self.embedder.encode(texts)
        if emb.shape[0] == 0:
            return np.zeros((0, getattr(self.embedder, "dim", 384)), dtype=np.float32)
        return np.asarray(emb, dtype=np.float32)

    def _encode_query(self, text: str) -> np.ndarray:
        """One short string: a single torch thread is several times faster than many on a busy CPU."""
        import torch

        prev = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return self._encode([text])[0]
        finally:
            torch.set_num_threads(prev)

    def _fact_matrix(self, ns: str, facts: list[Fact]) -> np.ndarray:
        got = self.store.get_embeddings(ns, K_FACTS)
        if got is not None and got[0] == [f.id for f in facts] and got[2] == self.cfg.embedder:
            return got[1]
        emb = self._encode([f.text for f in facts])
        self.store.set_embeddings(ns, K_FACTS, [f.id for f in facts], emb, self.cfg.embedder)
        return emb

    def _load(self, ns: str, kind: str, cls: type) -> list[Any]:
        return [from_record(cls, r, f"store namespace {ns!r}, records {kind!r}[{i}]")
                for i, r in enumerate(self.store.get_records(ns, kind))]

    def _meta(self, ns: str) -> dict[str, Any]:
        recs = self.store.get_records(ns, K_META)
        return dict(recs[0]) if recs else {}

    def _put_meta(self, ns: str, meta: dict[str, Any]) -> None:
        self.store.put_records(ns, K_META, [meta])

    def stats(self, ns: str) -> dict[str, Any]:
        """Table-5 statistics and LLM cost of the last build of `ns` (facts, events, discarded clusters)."""
        return self._meta(ns)

    # ------------------------------------------------------------------ retrieval
    def _load_index(self, ns: str) -> _Index:
        if ns in self._index:
            return self._index[ns]
        meta = self._meta(ns)
        if not meta.get("events_fp"):
            raise KeyError(f"AnchorMem: namespace {ns!r} is not built in {getattr(self.store, 'root', self.store)}")
        if meta["events_fp"] != self.events_fingerprint():
            raise ValueError(f"AnchorMem: namespace {ns!r} was built with other settings "
                             f"({_settings(meta)}); call build() with this configuration first")
        chunks = {c.id: c for c in self._load(ns, K_CHUNKS, Chunk)}
        facts = self._load(ns, K_FACTS, Fact)
        events = self._load(ns, K_EVENTS, Event)
        idx = _Index(chunks, facts, self._matrix(ns, K_FACTS, [f.id for f in facts]),
                     events, self._matrix(ns, K_EVENTS, [e.id for e in events]))
        self._index[ns] = idx
        return idx

    def release(self, ns: str) -> None:
        """Drop the in-memory index of `ns` (evaluation calls this after a conversation)."""
        self._index.pop(ns, None)

    def _matrix(self, ns: str, kind: str, ids: list[str]) -> np.ndarray:
        got = self.store.get_embeddings(ns, kind)
        if got is None or got[0] != ids:
            raise ValueError(f"AnchorMem: store namespace {ns!r}: embeddings {kind!r} missing or out of step "
                             f"with its records; rebuild the namespace")
        return got[1]

    def activate(self, question: Question, k: int | None = None) -> WorkingMemory:
        """Top-k facts -> their chunks (dedup, order of first hit) plus top-k events (paper eq. 12-15).

        Up to k contexts and k events; with item_order="score" they are merged by query similarity
        (a context scores as its best anchor fact), so ranked metrics see the most similar first.
        """
        k = k or self.cfg.top_k
        ns = question.conversation_id or self._last_ns
        if not ns:
            raise ValueError(f"question {question.id!r} has no conversation_id and nothing was built")
        idx = self._load_index(ns)
        q = self._encode_query(question.text)
        items: list[MemoryItem] = []
        if idx.facts:
            scores = idx.fact_emb @ q
            top = sorted(range(len(scores)), key=lambda i: (-float(scores[i]), i))[:k]
            by_chunk: dict[str, list[int]] = {}
            for i in top:
                by_chunk.setdefault(idx.facts[i].chunk_id, []).append(i)
            for n, (cid, hits) in enumerate(by_chunk.items()):
                ch = idx.chunks[cid]
                items.append(MemoryItem(
                    label=f"C{n + 1}", kind="context", text=ch.text, turn_ids=list(ch.turn_ids),
                    score=float(scores[hits[0]]),  # the text is the raw context: no separate source
                    meta={"chunk_id": cid, "session_id": ch.session_id, "time": ch.date,
                          "anchor_facts": [idx.facts[i].text for i in hits]}))
        if idx.events:
            escores = idx.event_emb @ q
            etop = sorted(range(len(escores)), key=lambda i: (-float(escores[i]), i))[:k]
            for n, i in enumerate(etop):
                ev = idx.events[i]
                items.append(MemoryItem(
                    label=f"E{n + 1}", kind="event", text=ev.text, turn_ids=list(ev.turn_ids),
                    score=float(escores[i]),
                    meta={"event_id": ev.id, "fact_ids": ev.fact_ids, "integrator": ev.integrator}))
        if self.cfg.item_order == "score":  # one ranked list for metrics@k; the set is the same
            items.sort(key=lambda it: -it.score)
        for n, it in enumerate(items):  # citable labels as the shared answer prompt expects them
            it.meta["am_label"] = it.label
            it.label = f"M{n + 1}"
        wm = WorkingMemory(question=question, items=items, method=self.name, meta={"namespace": ns, "k": k})
        wm.context_tokens = context_tokens(self, wm)  # the one count of every method (qgmem.answer)
        return wm


def _settings(meta: dict[str, Any]) -> str:
    c = meta.get("config") or {}
    keys = ("extractor", "chunk_turns", "tau", "n_neighbors", "integrator")
    return ", ".join(f"{k}={c.get(k)}" for k in keys) + (f", llm={meta['llm_model']}" if meta.get("llm_model") else "")


def _open_store(root: str | Path) -> Any:
    from ..store import MemoryStore

    return MemoryStore(root)
