"""Event-attribute channel: the query's entity, location and time constraints against unit attributes.

Entities and locations match by dense similarity of the names (>= threshold, paper: 0.60) through a
vocabulary of distinct names with an inverted index to units, so a query scores only the units that
mention a matching name; a name's weight is its inverse document frequency (a speaker who appears in
every unit weighs little). Time matches by overlap of the query interval with the unit's fact time
(or, optionally and at half weight, its utterance time when the fact time is unspecified); a query
time known only to the week ("two weeks ago" names one day) matches within half a week of that day.
Units with equal attribute scores are ordered by their dense similarity to the question.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from qgmem.ranking import rank_scores, top_k
from qgmem.timex import parse_ref
from qgmem.types import AtomicUnit

from .dense import DenseIndex, IVFSpec, matvec
from .query import QueryConstraints


# Days in a unit a time expression may count in; an interval shorter than its expression's unit is
# widened by half the difference on each side when matched ("two weeks ago": the day +/- 3 days).
GRAIN_DAYS = {"day": 1, "week": 7}
NO_START, NO_END = 10**9, -(10**9)  # day ordinals of an undated unit (never overlaps a query interval)
NAME_CELLS_ABOVE = 100_000  # distinct names above which names are matched through IVF cells, not one scan


def _name_cells(n_names: int) -> IVFSpec:
    """Up to 1,024 cells of float32 name vectors (cosines as a scan's, up to float rounding), an eighth of them
    scanned per query."""
    cells = min(1024, max(1, n_names // 40))
    return IVFSpec(threshold=0, codec="Flat", nlist=cells, nprobe=max(1, cells // 8))


@lru_cache(maxsize=100_000)
def _ordinal(s: str | None) -> int | None:
    """Day ordinal of an ISO date string (remembered: a memory's units share few dates, and every
    unit's dates are read again whenever the namespace is re-indexed)."""
    d = parse_ref(s) if s else None
    return d.toordinal() if d is not None else None


def query_days(c: QueryConstraints) -> tuple[int, int] | None:
    """The query's time interval as inclusive day ordinals, widened to the precision of its expression."""
    qs, qe = _ordinal(c.time_start), _ordinal(c.time_end or c.time_start)
    if qs is None or qe is None:
        return None
    slack = max(0, (GRAIN_DAYS.get(c.time_grain, 1) - (qe - qs + 1)) // 2)
    return qs - slack, qe + slack


@dataclass
class NameColumn:
    """Names of units as arrays (a memory too large for per-unit Python lists): pair i says that unit
    `rows[i]` names `vocab[ids[i]]`; rows increasing, each (row, id) pair at most once."""

    vocab: list[str]  # distinct names, stripped and lower-cased
    rows: np.ndarray
    ids: np.ndarray

    @classmethod
    def of_lists(cls, names_per_unit: list[list[str]]) -> NameColumn:
        vocab: dict[str, int] = {}
        rows: list[int] = []
        ids: list[int] = []
        for row, names in enumerate(names_per_unit):
            for nm in dict.fromkeys(n.strip().lower() for n in names if n and n.strip()):
                rows.append(row)
                ids.append(vocab.setdefault(nm, len(vocab)))
        return cls(list(vocab), np.asarray(rows, dtype=np.int64), np.asarray(ids, dtype=np.int64))


class _NameIndex:
    def __init__(self, col: NameColumn, n_units: int, matrix: np.ndarray, cells_above: int):
        self.vocab = col.vocab
        order = np.argsort(col.ids, kind="stable")  # per name, its units in row order
        self._rows = np.asarray(col.rows, dtype=np.int64)[order]
        self.df = np.bincount(np.asarray(col.ids, dtype=np.int64), minlength=len(self.vocab))
        self._ptr = np.zeros(len(self.vocab) + 1, dtype=np.int64)
        np.cumsum(self.df, out=self._ptr[1:])
        n = max(1, n_units)
        idf_of = {int(d): math.log(1 + n / int(d)) for d in np.unique(self.df)}
        self.idf = np.asarray([idf_of[int(d)] for d in self.df], dtype=np.float32)
        # a very large vocabulary is matched through FAISS IVF cells (exact cosines, 1/8 of the names scanned):
        # scanning 500k names costs ~52 ms a query (memory-bound), the cells ~8 ms; on random name vectors
        # (no structure: the worst case) they find 96% of the names at cosine ~0.74, 100% of identical names
        big = len(self.vocab) > cells_above
        self._cells = DenseIndex(matrix, ivf=_name_cells(len(self.vocab))) if big else None
        self.matrix = None if big else matrix
        self._id: dict[str, int] | None = None

    def vector(self, name: str) -> np.ndarray | None:
        """The stored vector of `name` (matched as the vocabulary holds it: stripped, lower-cased), None when the
        memory does not name it or its vectors live in IVF cells."""
        if self.matrix is None:
            return None
        if self._id is None:  # built on first use: a process that never asks pays nothing
            self._id = {n: j for j, n in enumerate(self.vocab)}
        j = self._id.get(name.strip().lower())
        return None if j is None else self.matrix[j]

    def postings(self, j: int) -> np.ndarray:
        """Rows of the units that name vocabulary entry j, increasing."""
        return self._rows[self._ptr[j]:self._ptr[j + 1]]

    def match(self, qvec: np.ndarray, threshold: float, max_df: int | None = None) -> list[tuple[int, float]]:
        """(vocab id, similarity) of names at or above the threshold, leaving out names in more than
        `max_df` units (a speaker named in most of the memory is no constraint)."""
        if not self.vocab:
            return []
        if self._cells is not None:
            hits, sims = self._cells.above(qvec, threshold)
        else:
            sims = matvec(self.matrix, qvec)
            hits = np.nonzero(sims >= threshold)[0]
            sims = sims[hits]
        return [(int(j), float(s)) for j, s in zip(hits, sims) if max_df is None or self.df[j] <= max_df]


def _add_time(scores: dict[int, float], rows: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows, float32 scores) of the name scores plus the time weights, in order of first appearance (names
    first, then time matches in start order), each sum taken in that order: a vectorised dict update (a
    week of a 10^7-unit memory matches ~14,000 units)."""
    name_rows = np.fromiter(scores.keys(), dtype=np.int64, count=len(scores))
    name_vals = np.fromiter(scores.values(), dtype=np.float64, count=len(scores))
    if not len(rows):
        return name_rows, name_vals.astype(np.float32)
    uniq, first, inv = np.unique(np.concatenate([name_rows, rows]), return_index=True, return_inverse=True)
    acc = np.bincount(inv.reshape(-1), weights=np.concatenate([name_vals, w]), minlength=len(uniq))
    order = np.argsort(first, kind="stable")
    return uniq[order], acc[order].astype(np.float32)


class AttributeIndex:
    def __init__(self, units: list[AtomicUnit], encode: Callable[[list[str]], np.ndarray],
                 time_fallback_utterance: bool = True, name_cells_above: int = NAME_CELLS_ABOVE):
        starts, ends, weights = [], [], []
        for u in units:
            s, e, w = _ordinal(u.fact_time_start), _ordinal(u.fact_time_end or u.fact_time_start), 1.0
            if s is None and time_fallback_utterance:
                s = e = _ordinal(u.utterance_time)
                w = 0.5
            starts.append(s if s is not None else NO_START)
            ends.append(e if e is not None else NO_END)
            weights.append(w if s is not None else 0.0)
        self._build(len(units), encode, NameColumn.of_lists([[*u.entities, u.subject] for u in units]),
                    NameColumn.of_lists([[u.location] if u.location else [] for u in units]),
                    np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64),
                    np.asarray(weights, dtype=np.float32), name_cells_above)

    @classmethod
    def from_columns(cls, n: int, encode: Callable[[list[str]], np.ndarray], entities: NameColumn,
                     locations: NameColumn, start: np.ndarray, end: np.ndarray, weight: np.ndarray,
                     name_cells_above: int = NAME_CELLS_ABOVE) -> AttributeIndex:
        """The index of n units given as arrays: names as columns, time as day ordinals (`NO_START` / `NO_END`
        and weight 0 where undated; weight 1 for a fact time, 0.5 for the utterance-time fallback)."""
        ix = cls.__new__(cls)
        ix._build(n, encode, entities, locations, np.asarray(start, dtype=np.int64), np.asarray(end, dtype=np.int64),
                  np.asarray(weight, dtype=np.float32), name_cells_above)
        return ix

    def _build(self, n: int, encode: Callable[[list[str]], np.ndarray], entities: NameColumn, locations: NameColumn,
               start: np.ndarray, end: np.ndarray, weight: np.ndarray, name_cells_above: int) -> None:
        self.n = n
        # one call for both vocabularies: the caller's cache then keeps one matrix of exactly these names
        # (two calls would each replace the other's rows, and every build would encode them again)
        names = entities.vocab + locations.vocab
        both = np.asarray(encode(names), dtype=np.float32) if names else np.zeros((0, 1), dtype=np.float32)
        ne = len(entities.vocab)
        self.entities = _NameIndex(entities, n, both[:ne], name_cells_above)
        self.locations = _NameIndex(locations, n, both[ne:], name_cells_above)
        self._order = np.argsort(start, kind="stable")
        self._start_sorted = start[self._order]
        self._end = end
        self._tw = weight
        dated = self._tw > 0
        # the longest unit interval bounds how far before the query start an overlapping unit can begin
        self._max_len = int((self._end[dated] - start[dated]).max()) if dated.any() else 0

    def name_vector(self, name: str) -> np.ndarray | None:
        """The vector the memory stored for an entity or location name at index time (the same in every process
        that serves the store), None for a name it does not hold."""
        v = self.entities.vector(name)
        return v if v is not None else self.locations.vector(name)

    def _names(self, idx: _NameIndex, qvecs: list[np.ndarray], threshold: float, scores: dict[int, float],
               max_df: int | None) -> None:
        for qv in qvecs:
            best: dict[int, float] = {}
            for j, sim in idx.match(qv, threshold, max_df):
                w = sim * float(idx.idf[j])
                for row in idx.postings(j):
                    r = int(row)
                    if w > best.get(r, 0.0):
                        best[r] = w
            for r, w in best.items():
                scores[r] = scores.get(r, 0.0) + w

    def search(self, c: QueryConstraints, entity_vecs: list[np.ndarray], location_vec: np.ndarray | None,
               threshold: float, n: int, tie_break: Callable[[np.ndarray], np.ndarray] | None = None,
               max_matches: int = 2000, max_df_share: float = 1.0) -> list[tuple[int, float]]:
        """Top-n (unit row, attribute score); an empty list when no constraint matches anything."""
        if not self.n or n <= 0:
            return []
        scores: dict[int, float] = {}
        max_df = max(1, int(max_df_share * self.n)) if max_df_share < 1.0 else None
        self._names(self.entities, entity_vecs, threshold, scores, max_df)
        if location_vec is not None:
            self._names(self.locations, [location_vec], threshold, scores, max_df)
        days = query_days(c)
        if days is not None:
            qs, qe = days
            lo = int(np.searchsorted(self._start_sorted, qs - self._max_len, side="left"))
            hi = int(np.searchsorted(self._start_sorted, qe, side="right"))
            cand = self._order[lo:hi]
            ok = cand[(self._end[cand] >= qs) & (self._tw[cand] > 0)]
        else:
            ok = np.zeros(0, dtype=np.int64)
        rows, vals = _add_time(scores, ok, self._tw[ok].astype(np.float64) * 2.0)
        if not len(rows):
            return []
        if len(rows) > max_matches:
            keep = np.sort(top_k(np.round(vals, 4), max_matches))  # ties: names first, then time order
            rows, vals = rows[keep], vals[keep]
        tb = rank_scores(tie_break(rows)) if tie_break is not None else np.zeros(len(rows))
        order = np.lexsort((np.arange(len(rows)), -tb, -np.round(vals, 4)))[:n]
        return [(int(rows[i]), float(vals[i])) for i in order]
