"""The store's embedding matrices: one `.npy` file per namespace and kind beside the database, its ids
(text hashes) and model in the `embeddings` table, and the vectors this process computed remembered across
namespaces. A mixin of `MemoryStore`, whose database plumbing (`_query`, `_tx`) it uses."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections import OrderedDict
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np

from qgmem.errors import StoreError
from qgmem.io import atomic_open

MEMO_VECTORS = 400_000  # vectors one store object remembers across namespaces (about 600 MB at 384 dims)


def safe_name(ns: str) -> str:
    """A file-name-safe, collision-free name for a namespace."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", ns)[:60]
    return f"{slug}-{hashlib.sha1(ns.encode()).hexdigest()[:10]}"


def _gather(table: np.ndarray, rows: list[int]) -> np.ndarray:
    """`table[rows]`, without the copy when `rows` is 0..n-1 in order: a grown namespace's texts keep their
    rows, and gathering them (a 10,000 x 384 matrix: 15 MB) took 30 ms of each add, twice."""
    idx = np.asarray(rows, dtype=np.int64)
    if len(idx) <= len(table) and np.array_equal(idx, np.arange(len(idx))):
        return table[:len(idx)]
    return table[idx]


class VectorTables:
    """Embedding matrices per namespace and kind (see the module docstring)."""

    emb_dir: Path
    _memo: OrderedDict[tuple[str, str], np.ndarray]  # (model, text hash) -> vector
    _query: Callable[..., list[tuple[Any, ...]]]
    _tx: Callable[[], AbstractContextManager[sqlite3.Connection]]

    def _emb_file(self, ns: str, kind: str) -> Path:
        return self.emb_dir / f"{safe_name(ns)}.{re.sub(r'[^A-Za-z0-9_-]+', '_', kind)}.npy"

    def set_embeddings(self, ns: str, kind: str, ids: list[str], matrix: np.ndarray, model: str) -> None:
        """Store a (len(ids), dim) float32 matrix for `ns`/`kind`, replacing any previous one."""
        matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != len(ids):
            raise StoreError(f"embeddings {ns!r}/{kind!r}: matrix shape {matrix.shape} does not match {len(ids)} ids")
        path = self._emb_file(ns, kind)
        with atomic_open(path, "wb") as f:
            np.save(f, matrix)
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (ns, kind, model, path.name, json.dumps(list(ids)), matrix.shape[0], matrix.shape[1]))

    def get_embeddings(self, ns: str, kind: str) -> tuple[list[str], np.ndarray, str] | None:
        rows = self._query("SELECT model, file, ids, rows, dim FROM embeddings WHERE ns=? AND kind=?", (ns, kind))
        if not rows:
            return None
        model, file, ids_json, n, dim = rows[0]
        path = self.emb_dir / file
        if not path.exists():
            return None  # file lost (e.g. removed by hand): callers recompute
        matrix = np.load(path)
        if matrix.shape != (n, dim):
            # a rename from a later, interrupted write can leave a newer matrix than the metadata row
            return None
        return json.loads(ids_json), matrix, model

    def cached_vectors(self, ns: str, kind: str, texts: list[str], encode: Callable[[list[str]], np.ndarray],
                       model: str, prune: bool = True) -> tuple[np.ndarray, int]:
        """Vectors of `texts` (in order) from `encode`, reusing the stored rows of texts seen before
        under `ns`/`kind` with the same `model`; returns (matrix, how many texts were encoded).
        `prune`: keep only these texts' rows (else every row seen, for callers that ask in parts).

        Rows are keyed by a hash of the text, never the text itself, so a growing memory encodes only
        its new texts and a forgotten sentence leaves no copy in the embedding index. Vectors computed
        in this process are also remembered across namespaces and kinds (a text seen in another
        conversation, e.g. a session shared by several haystacks, is encoded once); deleting or
        dropping embeddings clears that memory."""
        keys = [hashlib.sha1(t.encode()).hexdigest() for t in texts]
        prev = self.get_embeddings(ns, kind)
        ids, parts = (list(prev[0]), [prev[1]]) if prev is not None and prev[2] == model else ([], [])
        row = {k: i for i, k in enumerate(ids)}  # key -> row of the matrices in `parts`, stacked
        got = {k: v for k in dict.fromkeys(keys) if k not in row and (v := self._memo.get((model, k))) is not None}
        memo, todo = list(got), [k for k in dict.fromkeys(keys) if k not in row and k not in got]  # read once: threads
        if memo:
            parts.append(np.stack(list(got.values())))
        if todo:
            first = {k: t for k, t in zip(keys, texts)}
            parts.append(np.asarray(encode([first[k] for k in todo]), dtype=np.float32))
            self._memo.update(((model, k), v) for k, v in zip(todo, parts[-1]))
            while len(self._memo) > MEMO_VECTORS:
                self._memo.popitem(last=False)
        if not texts:
            return np.zeros((0, prev[1].shape[1] if prev is not None else 0), np.float32), 0
        row.update((k, len(ids) + i) for i, k in enumerate(memo + todo))
        table = np.concatenate(parts) if len(parts) > 1 else parts[0]  # gathered by index: no row objects
        uniq = list(dict.fromkeys(keys)) if prune else list(row)
        if todo or prev is None or prev[0] != uniq:
            self.set_embeddings(ns, kind, uniq, _gather(table, [row[k] for k in uniq]), model)
        return _gather(table, [row[k] for k in keys]), len(todo)

    def drop_embeddings(self, ns: str, keep: tuple[str, ...] = ()) -> None:
        """Remove the embedding matrices of `ns` except the kinds in `keep` (files included)."""
        self._memo.clear()
        rows = self._query("SELECT kind, file FROM embeddings WHERE ns=?", (ns,))
        gone = [(k, f) for k, f in rows if k not in keep]
        with self._tx() as db:
            for kind, _ in gone:
                db.execute("DELETE FROM embeddings WHERE ns=? AND kind=?", (ns, kind))
        for _, f in gone:
            (self.emb_dir / f).unlink(missing_ok=True)
