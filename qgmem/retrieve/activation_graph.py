"""The memory graph of a namespace, used before the top k are chosen (graph activation).

Nodes are the namespace's memory units and the keys they share: the speaker and the owner of the
subject ("Ann", "Ann's sister" -> person node Ann), each entity other than the speaker, the relation,
the trace, the session. A unit's keys are a pure function of its own fields, so the graph grows with
`add()` by the new units' keys only, and a memory rebuilt from scratch gets the same graph.

Two uses at query time (`QGMemRetriever`, config `GraphActivationConfig`):

- entity-centred expansion: a question about a person (a named speaker, or the asker's own speaker
  for a first-person question) gets one more ranked list for the fusion: the person node's units,
  ranked by the question's vector with the name's vector taken out (the name otherwise makes the
  person's shortest remarks the closest ones);
- spreading activation: the first pool units (seeds, by fusion score) spread their score over the
  edges they share with the other pool units (each key weighs 1 / its degree, so a key shared by
  half the memory carries almost nothing), and the pool is reordered by fusion + weight x activation.

The graph is stored in the store (records of kind `RECORD_KIND/<session>`: each unit's id, a signature of
the fields its keys come from, and its keys), so a new process reads it instead of recomputing it; a unit
whose signature changed (its trace, its entities) gets its keys again, and only the sessions that changed
are written. `forget` drops the namespace's
records with its other derived data, and the next index rebuilds the graph from what remains.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence

from dataclasses import dataclass

import numpy as np

from qgmem.ranking import rank_scores, top_k
from qgmem.types import AtomicUnit

from .aggregate import is_aggregate, persons_asked
from .config import GraphActivationConfig

RECORD_KIND = "graph-activation-v1"
EDGE_KINDS = ("entity", "relation", "trace", "session", "subject")


_OWNER = re.compile(r"^(.+?)(?:'s|\u2019s)(?:\s|$)")


def owner(subject: str) -> str:
    """The person a subject belongs to: "Ann's sister" -> "ann", "Ann" -> "ann" (lower case)."""
    s = subject.strip()
    m = _OWNER.match(s)
    return (m.group(1) if m else s).lower()


def unit_keys(u: AtomicUnit) -> list[str]:
    """The graph keys of one unit, prefixed by kind (p: speaker, o: the subject's owner, e: entity,
    r: relation, t: trace, d: session, s: subject); a person node is a speaker's p: and o: keys."""
    speaker = (u.speaker or "").lower()
    keys = [f"p:{speaker}"] if speaker else []
    if u.subject:
        keys += [f"o:{owner(u.subject)}", f"s:{u.subject.lower()}"]
    keys += [f"e:{e.lower()}" for e in u.entities if e and e.lower() != speaker]
    if u.relation:
        keys.append(f"r:{u.relation.lower()}")
    if u.trace_id:
        keys.append(f"t:{u.trace_id}")
    keys.append(f"d:{u.session_id}")
    return list(dict.fromkeys(keys))


def signature(u: AtomicUnit) -> str:
    """A short hash of the fields `unit_keys` reads: a stored unit whose signature differs gets new keys."""
    parts = [u.speaker or "", u.subject or "", u.relation or "", u.trace_id or "", u.session_id, *u.entities]
    return hashlib.sha1("\x1f".join(parts).encode()).hexdigest()[:16]


_PREFIX = {"entity": "e:", "relation": "r:", "trace": "t:", "session": "d:", "subject": "s:"}


class UnitGraph:
    """Units x keys incidence (CSR), key degrees, and the person nodes' units."""

    def __init__(self, keys_per_unit: Sequence[Sequence[str]], computed: int = 0):
        self.computed = computed  # units whose keys were computed, not read from the store (tests, benches)
        self.vocab: dict[str, int] = {}
        indptr = np.zeros(len(keys_per_unit) + 1, dtype=np.int64)
        ids: list[int] = []
        for i, ks in enumerate(keys_per_unit):
            for k in ks:
                ids.append(self.vocab.setdefault(k, len(self.vocab)))
            indptr[i + 1] = len(ids)
        self.indptr, self.indices = indptr, np.asarray(ids, dtype=np.int64)
        self.degree = np.bincount(self.indices, minlength=len(self.vocab)).astype(np.int64)
        # key -> units (CSC): stable argsort keeps each key's units in row order
        order = np.argsort(self.indices, kind="stable")
        self.key_rows = np.repeat(np.arange(len(keys_per_unit), dtype=np.int32), np.diff(indptr))[order]
        self.key_indptr = np.zeros(len(self.vocab) + 1, dtype=np.int64)
        np.cumsum(self.degree, out=self.key_indptr[1:])
        self._keys = list(self.vocab)  # insertion order = key id
        self.speakers = [k[2:] for k in self._keys if k.startswith("p:")]
        self._weights: dict[tuple[tuple[str, ...], int], np.ndarray] = {}
        self._person_rows: dict[str, np.ndarray] = {}

    @property
    def n(self) -> int:
        return len(self.indptr) - 1

    def keys(self, row: int) -> list[str]:
        return [self._keys[j] for j in self.indices[self.indptr[row]:self.indptr[row + 1]]]

    def units_of(self, key: str) -> np.ndarray:
        j = self.vocab.get(key)
        return self.key_rows[self.key_indptr[j]:self.key_indptr[j + 1]] if j is not None else np.zeros(0, np.int32)

    def person_rows(self, name: str) -> np.ndarray:
        """Rows of the units linked to a person node (its speaker or its subject's owner), in row order
        (kept per name: a person node is asked about again and again)."""
        n = name.lower()
        got = self._person_rows.get(n)
        if got is None:
            got = self._person_rows[n] = np.union1d(self.units_of(f"p:{n}"), self.units_of(f"o:{n}")).astype(np.int64)
        return got

    def persons_rows(self, names: Sequence[str]) -> np.ndarray:
        """Sorted rows of the units of any of these person nodes (kept per set of names)."""
        key = "\x1f".join(sorted({n.lower() for n in names}))
        got = self._person_rows.get(key)
        if got is None:
            parts = [self.person_rows(n) for n in key.split("\x1f")] if key else []
            got = self._person_rows[key] = (parts[0] if len(parts) == 1 else
                                            np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64))
        return got

    def key_weights(self, edges: Iterable[str], max_key_units: int) -> np.ndarray:
        """Per key: 1 / degree for the edge kinds asked for, shared by 2..max_key_units units; else 0
        (computed once per setting)."""
        cache_key = (tuple(edges), max_key_units)
        got = self._weights.get(cache_key)
        if got is None:
            got = self._weights[cache_key] = self._key_weights(cache_key[0], max_key_units)
        return got

    def _key_weights(self, edges: tuple[str, ...], max_key_units: int) -> np.ndarray:
        prefixes = tuple(_PREFIX[e] for e in edges)
        use = np.asarray([k.startswith(prefixes) for k in self._keys], dtype=bool) if prefixes else \
            np.zeros(len(self._keys), dtype=bool)
        ok = use & (self.degree >= 2) & (self.degree <= max_key_units)
        return np.where(ok, 1.0 / np.maximum(self.degree, 1), 0.0)

    def spread(self, rows: Sequence[int], scores: np.ndarray, n_seeds: int, weights: np.ndarray) -> np.ndarray:
        """Activation of each of `rows` from the first `n_seeds` of them: sum over its keys of the key's
        weight times the scores of the seeds holding that key, its own score left out. Costs the pool's
        keys, not the namespace's size."""
        r = np.asarray(rows, dtype=np.int64)
        if not len(r):
            return np.zeros(0, dtype=np.float64)
        keys, owner = self._slices(r)  # every key of every row, and the row (position) it belongs to
        w = weights[keys]
        n_s = min(n_seeds, len(r))
        seed = owner < n_s
        own = np.zeros(len(r), dtype=np.float64)
        own[:n_s] = np.asarray(scores[:n_s], dtype=np.float64)
        kid, inv = np.unique(keys, return_inverse=True)
        mass = np.bincount(inv[seed], weights=own[owner[seed]], minlength=len(kid))  # per key: seed score mass
        contrib = w * mass[inv]
        total = np.bincount(owner, weights=contrib, minlength=len(r))
        self_part = own * np.bincount(owner, weights=w, minlength=len(r))
        out = total - self_part
        out[np.abs(out) < 1e-12] = 0.0
        return out

    def _slices(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = self.indptr[rows], self.indptr[rows + 1]
        lens = hi - lo
        starts = np.repeat(lo - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens)
        idx = np.arange(int(lens.sum()), dtype=np.int64) + starts
        return self.indices[idx], np.repeat(np.arange(len(rows), dtype=np.int64), lens)


def blend(rows: list[int], fused: np.ndarray, activation: np.ndarray, weight: float) -> tuple[list[int], np.ndarray]:
    """Rows reordered by max-normalised fusion + weight x max-normalised activation; ties by pool position."""
    if not len(rows) or weight == 0 or not activation.any():
        return rows, fused
    f = fused / (fused.max() or 1.0)
    a = activation / (activation.max() or 1.0)
    score = f + weight * a
    order = np.lexsort((np.arange(len(rows)), -rank_scores(score)))
    return [rows[i] for i in order], score[order]


def _kind(session_id: str) -> str:
    return f"{RECORD_KIND}/{session_id}"


def load_or_build(store: object | None, ns: str, units: Sequence[AtomicUnit]) -> UnitGraph:
    """The namespace's graph: stored keys where a unit's signature still matches, new keys for the
    rest. Records are kept per session, so `add()` of one session writes that session's records (and
    those of sessions whose units changed or went), not the whole namespace's."""
    stored: dict[str, tuple[str, list[str]]] = {}
    held: dict[str, list[str]] = {}  # stored kind -> its unit ids, in order
    if store is not None:
        for kind in store.record_kinds(ns):  # type: ignore[attr-defined]
            if kind.startswith(f"{RECORD_KIND}/"):
                recs = store.get_records(ns, kind)  # type: ignore[attr-defined]
                held[kind] = [r["u"] for r in recs]
                stored.update((r["u"], (r["s"], r["k"])) for r in recs)
    keys: list[list[str]] = []
    by_kind: dict[str, list[dict[str, object]]] = {}
    changed: set[str] = set()
    computed = 0
    for u in units:
        sig, kind = signature(u), _kind(u.session_id)
        got = stored.get(u.id)
        if got is not None and got[0] == sig:
            keys.append(got[1])  # stored lists are never changed: shared, not copied
        else:
            keys.append(unit_keys(u))
            changed.add(kind)
            computed += 1
        by_kind.setdefault(kind, []).append({"u": u.id, "s": sig, "k": keys[-1]})
    if store is not None:
        for kind, recs in by_kind.items():
            if kind in changed or held.get(kind) != [r["u"] for r in recs]:
                store.put_records(ns, kind, recs)  # type: ignore[attr-defined]
        for kind in set(held) - set(by_kind):
            store.put_records(ns, kind, [])  # type: ignore[attr-defined]
    return UnitGraph(keys, computed)


def person_ranking(graph: UnitGraph, persons: Sequence[str], scores_for: Callable[[np.ndarray], np.ndarray],
                   search: Callable[[int], list[tuple[int, float]]], depth: int, exact_max: int = 20_000,
                   scores_all: Callable[[], np.ndarray] | None = None) -> list[int]:
    """Entity-centred list: the persons' units (rows), best first by `scores_for(rows)` (the question
    without the names against each unit's vector), ties by row. A person with more than `exact_max`
    units (a very large memory) is served from the dense index's search with that vector (`search(n)`,
    best first, n = depth: an HNSW index keeps its search width) filtered to the person's units;
    `scores_all()` (every unit's score, where the index holds the matrix) serves a person holding more
    than a quarter of the memory."""
    rows = graph.persons_rows(persons)
    if not len(rows):
        return []
    if len(rows) > exact_max:
        hits = np.asarray([r for r, _ in search(depth)], dtype=np.int64)
        at = np.minimum(np.searchsorted(rows, hits), len(rows) - 1)  # rows is sorted: membership by bisection
        return [int(r) for r in hits[rows[at] == hits]][:depth]
    # a person holding much of the memory: one pass over the whole (contiguous) matrix beats gathering rows
    scores = scores_all()[rows] if scores_all is not None and 4 * len(rows) > graph.n else scores_for(rows)
    return [int(rows[i]) for i in top_k(rank_scores(scores), depth)]


@dataclass
class GraphPlan:
    """What graph activation does for one question."""

    persons: list[str]  # speakers the question is about (lower case)
    name_entities: list[int]  # positions, in the parsed entities, of the names of those persons
    aggregate: bool
    person_weight: float
    spread_weight: float


def plan(text: str, entities: Sequence[str], graph: UnitGraph, cfg: GraphActivationConfig) -> GraphPlan:
    agg = is_aggregate(text)
    persons = persons_asked(text, entities, graph.speakers, cfg.self_speaker)
    names = [j for j, e in enumerate(entities) if e.lower() in persons]
    return GraphPlan(persons, names, agg, cfg.person_weight_aggregate if agg else cfg.person_weight,
                     cfg.spread_weight_aggregate if agg else cfg.spread_weight)


def without_names(qvec: np.ndarray, name_vecs: Sequence[np.ndarray], weight: float) -> np.ndarray:
    """The question's vector with `weight` x each name's vector taken out, unit length: what the question
    asks of the person rather than the person (a name alone otherwise pulls the person's emptiest remarks
    closest). Costs no encoding: the names' vectors are the attribute channel's."""
    v = np.asarray(qvec, dtype=np.float64).copy()
    for n in name_vecs:
        v -= weight * np.asarray(n, dtype=np.float64)
    norm = np.linalg.norm(v)
    return (v / norm if norm > 0 else np.asarray(qvec, dtype=np.float64)).astype(np.float32)


def check_edges(edges: Iterable[str]) -> None:
    unknown = set(edges) - set(EDGE_KINDS)
    if unknown:
        raise ValueError(f"graph.edges: unknown kind(s) {sorted(unknown)}; known: {', '.join(EDGE_KINDS)}")
