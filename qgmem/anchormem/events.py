"""Associative event graph (AnchorMem §4.2): fact clusters -> pruning -> dedupe by context -> events.

For each fact f_i, the top-N other facts with cosine similarity > tau plus f_i form a candidate
cluster (eq. 8). If one context holds >= ceil(N/2) of the cluster's facts, the cluster is locally
redundant and discarded (eq. 9). Retained clusters keep one fact per context, the one most similar
to the seed (eq. 10), and are integrated into an event by the LLM (eq. 11) or, without an LLM, by
a deterministic concatenation of the facts in time order (integrator "concat", not the paper's).

Two choices the paper leaves open, both counted in the stats: a fact with no neighbour above tau
makes no cluster ("isolated"), and a retained cluster left with a single context after dedupe
makes no event ("single_context"; an event needs facts from two contexts to associate anything).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np
from tqdm import tqdm

from ..llm.base import ChatBackend, ChatRequest
from .facts import LLMTally, ask_with_repair
from .prompts import fill, load_prompt
from .units import Chunk, Event, Fact


@dataclass
class Cluster:
    seed: int  # index of the seed fact
    members: list[int]  # fact indices after dedupe by context, time order


@dataclass
class ClusterStats:
    facts: int = 0
    isolated_facts: int = 0  # no neighbour above tau: no candidate cluster
    candidate_clusters: int = 0
    discarded_clusters: int = 0  # O_max >= ceil(N/2) (paper Table 5 "Discarded Clusters")
    single_context_clusters: int = 0  # kept by the rule but one context after dedupe: no event
    duplicate_clusters: int = 0  # same fact set as an earlier retained cluster
    retained_clusters: int = 0
    skipped_clusters: int = 0  # retained but beyond `max_clusters` (quick runs): no event


@dataclass
class EventStats:
    clusters: ClusterStats = field(default_factory=ClusterStats)
    events: int = 0
    failed_events: int = 0  # no parseable integration after retries (recorded in the store)
    repaired_replies: int = 0
    integrator: str = "concat"
    llm: LLMTally = field(default_factory=LLMTally)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def redundancy_threshold(n_neighbors: int) -> int:
    """ceil(N/2): a context holding this many of a cluster's facts makes it redundant."""
    return math.ceil(n_neighbors / 2)


def is_redundant(chunk_ids: list[str], n_neighbors: int) -> bool:
    """Eq. 9: O_max >= ceil(N/2), O_max = most facts of the cluster mapped to one context."""
    if not chunk_ids:
        return False
    return max(Counter(chunk_ids).values()) >= redundancy_threshold(n_neighbors)


def _top_neighbours(sims: np.ndarray, i: int, tau: float, n: int) -> list[int]:
    row = sims.copy()
    row[i] = -np.inf
    cand = np.flatnonzero(row > tau)
    if cand.size == 0:
        return []
    # highest similarity first; ties by index so the result never depends on sort stability
    order = sorted(cand.tolist(), key=lambda j: (-float(row[j]), j))
    return order[:n]


def find_clusters(
    emb: np.ndarray, fact_chunks: list[str], tau: float = 0.85, n_neighbors: int = 3,
    dedupe_identical: bool = True, block: int = 1024, max_clusters: int = 0,
) -> tuple[list[Cluster], ClusterStats]:
    """Candidate clusters, pruned and deduplicated by context. `emb` rows are L2-normalised."""
    n = len(fact_chunks)
    stats = ClusterStats(facts=n)
    if emb.shape[0] != n:
        raise ValueError(f"find_clusters: {emb.shape[0]} embeddings for {n} facts")
    clusters: list[Cluster] = []
    seen: set[tuple[int, ...]] = set()
    for b0 in range(0, n, block):
        sims_block = emb[b0:b0 + block] @ emb.T
        for r, sims in enumerate(sims_block):
            i = b0 + r
            nbrs = _top_neighbours(sims, i, tau, n_neighbors)
            if not nbrs:
                stats.isolated_facts += 1
                continue
            stats.candidate_clusters += 1
            members = [i] + nbrs
            if is_redundant([fact_chunks[j] for j in members], n_neighbors):
                stats.discarded_clusters += 1
                continue
            best: dict[str, int] = {}  # context -> its fact most similar to the seed (the seed for its own)
            for j in members:
                c = fact_chunks[j]
                if c not in best or (best[c] != i and (j == i or sims[j] > sims[best[c]])):
                    best[c] = j
            kept = sorted(best.values())
            if len(kept) < 2:
                stats.single_context_clusters += 1
                continue
            key = tuple(kept)
            if dedupe_identical and key in seen:
                stats.duplicate_clusters += 1
                continue
            seen.add(key)
            clusters.append(Cluster(seed=i, members=kept))
    stats.retained_clusters = len(clusters)
    if max_clusters and len(clusters) > max_clusters:
        stats.skipped_clusters = len(clusters) - max_clusters
        clusters = clusters[:max_clusters]
    return clusters, stats


def parse_event_reply(text: str) -> str:
    """The event text from a reply in the prompt's format ``{"event": "..."}`` (or a bare JSON string)."""
    from ..llm.jsonfix import parse_json_lenient

    data: Any = parse_json_lenient(text)
    if isinstance(data, dict):
        if "event" not in data:
            raise ValueError(f"reply JSON has no 'event' key (keys: {sorted(data)[:8]})")
        data = data["event"]
    if not isinstance(data, str):
        raise ValueError(f"'event' must be a string, got {type(data).__name__}")
    data = " ".join(data.split())
    if not data:
        raise ValueError("'event' is empty")
    return data


def integration_messages(pairs: list[tuple[Chunk, Fact]], speakers: list[str]) -> list[dict[str, str]]:
    blocks = [f"Fact {k + 1}: {f.text}\nFrom the conversation:\n{c.text}" for k, (c, f) in enumerate(pairs)]
    prompt = fill(load_prompt("integrate_event"), speakers=" and ".join(speakers) or "the speakers",
                  pairs="\n\n".join(blocks))
    return [{"role": "user", "content": prompt}]


def concat_event(facts: list[Fact]) -> str:
    """Deterministic integration without an LLM: the cluster's facts in time order."""
    return " ".join(f.text if f.text.endswith((".", "!", "?")) else f.text + "." for f in facts)


def _event_record(idx: int, cl: Cluster, facts: list[Fact], chunks: dict[str, Chunk], text: str,
                  integrator: str, event_turns: str) -> Event:
    mem = [facts[j] for j in cl.members]
    turns: dict[str, None] = {}
    for f in mem:
        for t in (f.turn_ids if event_turns == "facts" else chunks[f.chunk_id].turn_ids):
            turns.setdefault(t, None)
    return Event(id=f"E{idx}", text=text, fact_ids=[f.id for f in mem], chunk_ids=[f.chunk_id for f in mem],
                 turn_ids=list(turns), seed_fact_id=facts[cl.seed].id, integrator=integrator)


def build_events(
    clusters: list[Cluster], facts: list[Fact], chunks: list[Chunk], speakers: list[str], *,
    llm: ChatBackend | None = None, max_tokens: int = 256, retries: int = 1, event_turns: str = "facts",
    done: dict[int, str] | None = None, on_failure: Callable[[str, str, str], None] | None = None,
    checkpoint: Callable[[dict[int, str]], None] | None = None, save_every: int = 16,
    stats: EventStats | None = None,
) -> list[Event]:
    """One event per retained cluster: LLM integration when `llm` is given, else concatenation.

    `done` maps cluster position -> event text from an interrupted run; a cluster whose
    integration fails after retries is recorded via `on_failure` and makes no event.
    """
    stats = stats if stats is not None else EventStats()
    by_id = {c.id: c for c in chunks}
    texts: dict[int, str | None] = dict(done or {})
    if llm is None:
        stats.integrator = "concat"
        for k, cl in enumerate(clusters):
            texts[k] = concat_event([facts[j] for j in cl.members])
    else:
        stats.integrator = "llm"
        todo = [k for k in range(len(clusters)) if k not in texts]
        bar = tqdm(total=len(clusters), initial=len(clusters) - len(todo), desc="anchormem events",
                   unit="event", disable=len(todo) < 8)
        step = max(1, save_every)
        for start in range(0, len(todo), step):
            batch = todo[start:start + step]
            msgs = [integration_messages([(by_id[facts[j].chunk_id], facts[j]) for j in clusters[k].members],
                                         speakers) for k in batch]
            firsts = llm.complete_many([ChatRequest(m, 0.0, max_tokens, True) for m in msgs], phase="construction")
            for k, m, first in zip(batch, msgs, firsts):
                stats.llm.add(first)
                text, reasks, err, raw = ask_with_repair(llm, m, first, parse_event_reply, retries, max_tokens,
                                                         stats.llm)
                if text is None:
                    stats.failed_events += 1
                    if on_failure:
                        on_failure(f"am_events:cluster{k}:seed={facts[clusters[k].seed].id}", err, raw)
                elif reasks:
                    stats.repaired_replies += 1
                texts[k] = text
                bar.update(1)
            if checkpoint:
                checkpoint({k: v for k, v in texts.items() if v is not None})
        bar.close()
    events: list[Event] = []
    for k, cl in enumerate(clusters):
        text = texts.get(k)
        if text:
            events.append(_event_record(len(events), cl, facts, by_id, text, stats.integrator, event_turns))
    stats.events = len(events)
    return events
