"""Query latency of the retrieval channels + fusion at 10^4, 10^5, 10^6 synthetic units.

    python bench/retrieval_scale.py [--sizes 10000 100000 1000000] [--queries 200]

Synthetic units: Zipf-distributed words from a 50k vocabulary (12 per unit), 384-d normalised
embeddings drawn around 2,000 cluster centres, entity names from a vocabulary that grows with
size (every unit names one or two), a location on 10% and a fact time on 30% of the units. Each query runs
what `QGMemRetriever.activate` runs after the query embedding (which does not depend on the memory
size): BM25 (impact-ordered, 5,000 postings per term), dense (exact below 50,000 units, FAISS HNSW
above), the attribute channel (entity + time constraints) and RRF into a pool of 100. Prints build
times and p50/p95 per size, and the ratio p50(size) / p50(smallest size), measured in the same run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np


from qgmem.retrieve.attributes import AttributeIndex
from qgmem.retrieve.config import RetrievalConfig
from qgmem.retrieve.dense import DenseIndex
from qgmem.retrieve.fusion import rrf
from qgmem.retrieve.lexical import LexicalIndex
from qgmem.retrieve.query import QueryConstraints
from qgmem.types import AtomicUnit

DIM = 384


def _unit(i: int, ents: list[str], loc: str | None, t: str | None) -> AtomicUnit:
    return AtomicUnit(id=f"u{i}", namespace="bench", session_id="S", text="", first_turn="t", last_turn="t",
                      turn_ids=["t"], speaker="A", subject=ents[0], relation="r", object="o", entities=ents,
                      location=loc, fact_time_start=t, fact_time_end=t)


def make_data(n: int, rng: np.random.Generator):
    vocab = np.asarray([f"w{i}" for i in range(50_000)])
    ranks = np.minimum(rng.zipf(1.2, size=(n, 12)) - 1, len(vocab) - 1)
    texts = [" ".join(row) for row in vocab[ranks]]
    centres = rng.normal(size=(2000, DIM)).astype(np.float32)
    emb = centres[rng.integers(0, 2000, n)] + 0.5 * rng.normal(size=(n, DIM)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    n_names = max(100, n // 20)
    days = np.datetime64("2020-01-01") + rng.integers(0, 1500, n)
    units = []
    for i in range(n):
        ents = [f"name{rng.integers(n_names)}"] + ([f"name{rng.integers(n_names)}"] if rng.random() < 0.5 else [])
        loc = f"place{rng.integers(500)}" if rng.random() < 0.1 else None
        t = str(days[i]) if rng.random() < 0.3 else None
        units.append(_unit(i, ents, loc, t))
    return texts, emb, units, n_names


def name_encoder(seed: int):
    def enc(names: list[str]) -> np.ndarray:
        out = np.empty((len(names), DIM), np.float32)
        for j, nm in enumerate(names):
            out[j] = np.random.default_rng(abs(hash((seed, nm))) % 2**32).normal(size=DIM)
        return out / np.linalg.norm(out, axis=1, keepdims=True)
    return enc


def bench_size(n: int, queries: int, cfg: RetrievalConfig, seed: int = 0) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    texts, emb, units, n_names = make_data(n, rng)
    t_data = time.perf_counter() - t0
    enc = name_encoder(seed)
    t0 = time.perf_counter()
    lex = LexicalIndex(texts, max_postings=cfg.lexical_max_postings)
    t_lex = time.perf_counter() - t0
    t0 = time.perf_counter()
    dense = DenseIndex(emb, cfg.ann_threshold, cfg.hnsw_m, cfg.hnsw_ef_construction, cfg.hnsw_ef_search)
    t_dense = time.perf_counter() - t0
    t0 = time.perf_counter()
    attr = AttributeIndex(units, enc)
    t_attr = time.perf_counter() - t0
    lat: list[float] = []
    parts: list[tuple[float, float, float]] = []
    for qi in range(queries):
        i = int(rng.integers(n))
        qtext = texts[i].split()
        qtext = " ".join(qtext[:6])
        qv = emb[i] + 0.3 * rng.normal(size=DIM).astype(np.float32)
        qv /= np.linalg.norm(qv)
        ent = units[i].entities[0]
        day = np.datetime64("2020-01-01") + int(rng.integers(0, 1500))
        c = QueryConstraints(entities=[ent], time_start=str(day), time_end=str(day + 6) if qi % 2 else None)
        if not c.time_end:
            c.time_start = None
        ent_vec = enc([ent])[0]
        t0 = time.perf_counter()
        ranked = {"lexical": [r for r, _ in lex.search(qtext, cfg.channel_depth)]}
        t1 = time.perf_counter()
        ranked["dense"] = [r for r, _ in dense.search(qv, cfg.channel_depth)]
        t2 = time.perf_counter()
        ranked["attribute"] = [r for r, _ in attr.search(c, [ent_vec], None, cfg.attr_threshold, cfg.channel_depth,
                                                         lambda rows: dense.scores_for(qv, rows), cfg.attr_max_matches)]
        rrf(ranked, cfg.rrf_k, None, cfg.pool_size)
        t3 = time.perf_counter()
        lat.append((t3 - t0) * 1000)
        parts.append(((t1 - t0) * 1000, (t2 - t1) * 1000, (t3 - t2) * 1000))
    return {"n": n, "data_s": t_data, "bm25_build_s": t_lex, "dense_build_s": t_dense, "ann": dense.ann,
            "attr_build_s": t_attr, "p50_ms": float(np.percentile(lat, 50)), "p95_ms": float(np.percentile(lat, 95)),
            "p50_parts": [float(x) for x in np.percentile(np.asarray(parts), 50, axis=0)]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--hnsw-m", type=int, default=16)
    ap.add_argument("--ef-construction", type=int, default=40)
    ap.add_argument("--ef-search", type=int, default=128)
    a = ap.parse_args()
    cfg = RetrievalConfig(hnsw_m=a.hnsw_m, hnsw_ef_construction=a.ef_construction, hnsw_ef_search=a.ef_search)
    rows = []
    for n in a.sizes:
        r = bench_size(n, a.queries, cfg)
        rows.append(r)
        print(f"n={n:>9,}  p50={r['p50_ms']:.2f} ms  p95={r['p95_ms']:.2f} ms  (dense {'HNSW' if r['ann'] else 'exact'};"
              f" build: bm25 {r['bm25_build_s']:.0f}s, dense {r['dense_build_s']:.0f}s, attr {r['attr_build_s']:.0f}s)",
              flush=True)
    base = rows[0]["p50_ms"]
    print("\n| units | dense | p50 ms | p95 ms | p50 / p50(smallest) | p50 ms bm25 / dense / attr+RRF | build s (bm25 / dense / attr) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['n']:,} | {'HNSW' if r['ann'] else 'exact'} | {r['p50_ms']:.2f} | {r['p95_ms']:.2f} | "
              f"{r['p50_ms'] / base:.2f} | {' / '.join(f'{x:.1f}' for x in r['p50_parts'])} | {r['bm25_build_s']:.0f} / {r['dense_build_s']:.0f} / {r['attr_build_s']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
