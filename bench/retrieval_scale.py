"""Query latency, build time and memory of the retrieval channels + fusion at 10^4 .. 10^7 synthetic units.

    python bench/retrieval_scale.py [--sizes 10000 100000 1000000] [--queries 200] [--dense auto]
    python bench/retrieval_scale.py --sizes 10000000 --dense ivf      # one 24 GB node

Synthetic units: Zipf-distributed words from a 50k vocabulary (12 per unit), 384-d normalised
embeddings drawn around 2,000 cluster centres, entity names from a vocabulary that grows with
size (every unit names one or two), a location on 10% and a fact time on 30% of the units. Units are
generated a chunk at a time from (seed, part, chunk), never all at once, and the channels are built from
the chunks (BM25 with the real tokeniser; dense exact / HNSW from the whole float32 matrix, or compressed
FAISS IVF-SQ8 from the chunks; the attribute channel from array columns, not AtomicUnit objects).
Each query runs what `QGMemRetriever.activate` runs after the query embedding (which does not depend on
the memory size): BM25 (impact-ordered, 5,000 postings per term), dense, the attribute channel (entity +
time constraints) and RRF into a pool of 100, then graph activation as for an aggregate question about one of
the two speakers (entity-centred list, RRF with it, spreading activation over the pool; `--no-graph` leaves
it and its build out). A query vector is its source unit's vector plus a random
perturbation of norm 1 (cosine ~0.7 to the unit, like a question to the unit that answers it; earlier
versions added N(0, 0.3^2) per dimension, norm ~5.9: a query at cosine 0.17 to its unit, nearly random).

Each size runs in its own process; per size it prints a progress line per build phase, then: build time
and resident memory per channel (bytes per unit), peak RSS (ru_maxrss), p50/p95 per query and per
channel, and the recall@10 / @100 of the dense channel against exact search (float32 vectors regenerated
from the seed a chunk at a time) on the first `--recall-queries` queries.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing as mp
import resource
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qgmem.retrieve import activation_graph as ag  # noqa: E402
from qgmem.retrieve.attributes import NAME_CELLS_ABOVE, NO_END, NO_START, AttributeIndex, NameColumn  # noqa: E402
from qgmem.retrieve.config import RetrievalConfig  # noqa: E402
from qgmem.retrieve.dense import DenseIndex, IVFSpec, exact_top_k, matvec, recall_at_k  # noqa: E402
from qgmem.retrieve.fusion import rrf  # noqa: E402
from qgmem.retrieve.lexical import LexicalIndex, term_counts  # noqa: E402
from qgmem.retrieve.query import QueryConstraints  # noqa: E402

DIM = 384
DAY0 = np.datetime64("2020-01-01")
ORD0 = 737425  # date(2020, 1, 1).toordinal()
TEXT, VEC, ATTR, GRAPH = 0, 1, 2, 3  # independent random streams per chunk


def rss_mb() -> float:
    """Resident memory of this process now (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@dataclass
class Synth:
    """The synthetic memory of n units, any chunk of it regenerated on demand from the seed."""

    n: int
    seed: int
    chunk: int
    words: np.ndarray = field(init=False)
    centres: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.words = np.asarray([f"w{i}" for i in range(50_000)])
        self.centres = np.random.default_rng([self.seed, 99]).standard_normal((2000, DIM), dtype=np.float32)
        self.n_names = max(100, self.n // 20)

    def spans(self) -> list[tuple[int, int, int]]:
        return [(c, lo, min(lo + self.chunk, self.n)) for c, lo in enumerate(range(0, self.n, self.chunk))]

    def rng(self, part: int, c: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, part, c])

    def texts(self, c: int, m: int) -> list[str]:
        ranks = np.minimum(self.rng(TEXT, c).zipf(1.2, size=(m, 12)) - 1, len(self.words) - 1)
        return [" ".join(row) for row in self.words[ranks]]

    def vectors(self, c: int, m: int) -> np.ndarray:
        r = self.rng(VEC, c)
        v = self.centres[r.integers(0, 2000, m)]
        noise = r.standard_normal((m, DIM), dtype=np.float32)
        noise *= 0.5
        v += noise  # in place: a chunk's generation holds two chunks of floats, not four
        del noise
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        return v

    def attributes(self, c: int, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(first entity, second entity or -1, location or -1, fact day or -1) per unit."""
        r = self.rng(ATTR, c)
        e1 = r.integers(self.n_names, size=m)
        e2 = np.where(r.random(m) < 0.5, r.integers(self.n_names, size=m), -1)
        loc = np.where(r.random(m) < 0.1, r.integers(500, size=m), -1)
        day = np.where(r.random(m) < 0.3, r.integers(0, 1500, size=m), -1)
        return e1, np.where(e2 == e1, -1, e2), loc, day


class Phase:
    """Times one build phase, net of the data generation it drives, and prints its progress."""

    def __init__(self, n: int, name: str):
        self.n, self.name, self.gen_s, self.t0, self.rss0 = n, name, 0.0, time.perf_counter(), rss_mb()
        print(f"[{n:,}] {name}: start (RSS {self.rss0 / 1024:.2f} GB)", flush=True)

    def chunks(self, syn: Synth, make: Callable[[int, int, int], object]) -> Iterator[object]:
        spans = syn.spans()
        for k, (c, lo, hi) in enumerate(spans):
            t = time.perf_counter()
            out = make(c, lo, hi)
            self.gen_s += time.perf_counter() - t
            yield out
            if len(spans) >= 10 and (k + 1) % (len(spans) // 10) == 0:
                print(f"[{self.n:,}] {self.name}: {hi:,} units, {time.perf_counter() - self.t0:.0f} s, "
                      f"RSS {rss_mb() / 1024:.2f} GB", flush=True)

    def done(self) -> dict[str, float]:
        gc.collect()
        build = time.perf_counter() - self.t0 - self.gen_s
        mb = rss_mb() - self.rss0
        print(f"[{self.n:,}] {self.name}: built in {build:.1f} s (+{self.gen_s:.1f} s generating data), "
              f"+{mb:,.0f} MB resident ({mb * 2**20 / self.n:,.0f} B/unit), peak RSS so far {peak_mb() / 1024:.2f} GB",
              flush=True)
        return {"build_s": build, "gen_s": self.gen_s, "mb": mb, "bytes_per_unit": mb * 2**20 / self.n}


def build_lexical(syn: Synth, cfg: RetrievalConfig, qrows: np.ndarray, qtext: dict[int, str]):
    ph = Phase(syn.n, "bm25")

    def make(c: int, lo: int, hi: int) -> list[str]:
        texts = syn.texts(c, hi - lo)
        for i in qrows[(qrows >= lo) & (qrows < hi)]:
            qtext[int(i)] = " ".join(texts[i - lo].split()[:6])
        return texts

    lex = LexicalIndex.from_chunks(ph.chunks(syn, make), max_postings=cfg.lexical_max_postings)
    return lex, ph.done()


def dense_kind(mode: str, n: int, cfg: RetrievalConfig) -> str:
    if mode != "auto":
        return mode
    return "ivf" if n > cfg.dense_compress_above else "hnsw" if n > cfg.ann_threshold else "exact"


def build_dense(syn: Synth, cfg: RetrievalConfig, kind: str, qrows: np.ndarray, qvec: dict[int, np.ndarray]):
    ph = Phase(syn.n, f"dense ({kind})")

    def make(c: int, lo: int, hi: int) -> np.ndarray:
        v = syn.vectors(c, hi - lo)
        for i in qrows[(qrows >= lo) & (qrows < hi)]:
            qvec[int(i)] = v[i - lo].copy()
        return v

    if kind == "ivf":
        spec = IVFSpec(0, cfg.ivf_codec, cfg.ivf_nlist, cfg.ivf_nprobe, cfg.ivf_train_size, syn.chunk)
        print(f"[{syn.n:,}] dense (ivf): the first {spec.train_count(syn.n):,} vectors train {spec.cells(syn.n):,} "
              f"cells (one thread: minutes), then every chunk is added", flush=True)
        dense = DenseIndex.from_chunks(ph.chunks(syn, make), syn.n, DIM, spec)
    else:
        matrix = np.concatenate(list(ph.chunks(syn, make)))
        dense = DenseIndex(matrix, syn.n if kind == "exact" else 0, cfg.hnsw_m, cfg.hnsw_ef_construction,
                           cfg.hnsw_ef_search)
        del matrix
    return dense, ph.done()


def _name_column(prefix: str, rows: np.ndarray, ids: np.ndarray) -> NameColumn:
    """Only the names some unit uses (an unused name would have no document frequency)."""
    used, inv = np.unique(ids, return_inverse=True)
    order = np.argsort(rows, kind="stable")
    return NameColumn([f"{prefix}{j}" for j in used], rows[order], inv.reshape(-1)[order])


def build_attributes(syn: Synth, enc: Callable[[list[str]], np.ndarray], qrows: np.ndarray, qent: dict[int, str],
                     name_cells_above: int):
    ph = Phase(syn.n, "attributes")
    ent_rows, ent_ids, loc_rows, loc_ids, days = [], [], [], [], []
    for lo, (e1, e2, loc, day) in ph.chunks(syn, lambda c, lo, hi: (lo, syn.attributes(c, hi - lo))):
        rows = np.arange(lo, lo + len(e1), dtype=np.int64)
        for i in qrows[(qrows >= lo) & (qrows < lo + len(e1))]:
            qent[int(i)] = f"name{e1[i - lo]}"
        two = e2 >= 0
        ent_rows += [rows, rows[two]]
        ent_ids += [e1, e2[two]]
        loc_rows.append(rows[loc >= 0])
        loc_ids.append(loc[loc >= 0])
        days.append(day.astype(np.int32))
    day = np.concatenate(days)
    del days
    dated = day >= 0
    ix = AttributeIndex.from_columns(
        syn.n, enc, _name_column("name", np.concatenate(ent_rows), np.concatenate(ent_ids)),
        _name_column("place", np.concatenate(loc_rows), np.concatenate(loc_ids)),
        np.where(dated, ORD0 + day, NO_START), np.where(dated, ORD0 + day, NO_END), dated.astype(np.float32),
        name_cells_above)
    return ix, ph.done()


def build_graph(syn: Synth) -> tuple[ag.UnitGraph, dict[str, float]]:
    """The unit graph of graph activation over the synthetic units: two speakers (alternating), the units'
    entity names, one of 200 relations, a session of 20 units (the keys `activation_graph.unit_keys` gives
    a unit; subject-owner keys are the speaker's here)."""
    ph = Phase(syn.n, "graph")
    keys: list[list[str]] = []
    for lo, (e1, e2, _, _) in ph.chunks(syn, lambda c, lo, hi: (lo, syn.attributes(c, hi - lo))):
        rel = syn.rng(GRAPH, lo).integers(200, size=len(e1))
        for j in range(len(e1)):
            i = lo + j
            ks = [f"p:{'ab'[i % 2]}", f"o:{'ab'[i % 2]}", f"e:name{e1[j]}", f"r:rel{rel[j]}", f"d:{i // 20}"]
            if e2[j] >= 0:
                ks.append(f"e:name{e2[j]}")
            keys.append(ks)
    g = ag.UnitGraph(keys, computed=len(keys))
    del keys
    return g, ph.done()


def graph_stage(g: ag.UnitGraph, cfg: RetrievalConfig, dense, qv: np.ndarray, ent_vec: np.ndarray,
                ranked: dict[str, list[int]], text: str) -> None:
    """What `QGMemRetriever._pool` adds for a question about speaker "a": the plan, the entity-centred list
    (question vector minus the name's), RRF with it, spreading activation over the pool and the blend."""
    gc_ = cfg.graph
    gp = ag.plan(text, ["a"], g, gc_)
    pv = ag.without_names(qv, [ent_vec], gc_.name_weight)
    full = (lambda: matvec(dense.matrix, pv)) if dense.kind == "exact" else None
    ranked["person"] = ag.person_ranking(g, gp.persons, lambda rows: dense.scores_for(pv, rows),
                                         lambda n: dense.search(pv, n), gc_.person_depth, scores_all=full)
    pool = rrf(ranked, cfg.rrf_k, {"person": gp.person_weight}, cfg.pool_size)
    rows = [r for r, _ in pool]
    fused = np.asarray([x for _, x in pool])
    act = g.spread(rows, fused, gc_.seeds, g.key_weights(gc_.edges, gc_.max_key_units))
    ag.blend(rows, fused, act, gp.spread_weight)


def name_encoder(seed: int) -> Callable[[list[str]], np.ndarray]:
    """A random unit vector per name, the same for the same name in any process."""
    def enc(names: list[str]) -> np.ndarray:
        out = np.empty((len(names), DIM), np.float32)
        for j, nm in enumerate(names):
            out[j] = np.random.default_rng([seed, zlib.crc32(nm.encode())]).standard_normal(DIM, dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)
    return enc


def query_vector(v: np.ndarray, rng: np.random.Generator, noise: float) -> np.ndarray:
    g = rng.standard_normal(DIM).astype(np.float32)
    q = v + noise * g / np.linalg.norm(g)
    return q / np.linalg.norm(q)


def run_queries(n: int, cfg: RetrievalConfig, lex, dense, attr, enc, qrows, qtext, qvec, qent, noise: float,
                seed: int, graph: ag.UnitGraph | None = None) -> tuple[dict, list[list[int]], np.ndarray]:
    """Time every query; return the timings, the dense channel's rows per query and the query vectors."""
    rng = np.random.default_rng([seed, 7])
    lat, parts, found, qvs = [], [], [], []
    for qi, i in enumerate(qrows):
        i = int(i)
        qv = query_vector(qvec[i], rng, noise)
        day = DAY0 + int(rng.integers(0, 1500))
        c = QueryConstraints(entities=[qent[i]], time_start=str(day), time_end=str(day + 6) if qi % 2 else None)
        if not c.time_end:
            c.time_start = None
        ent_vec = enc([qent[i]])[0]
        t0 = time.perf_counter()
        ranked = {"lexical": [r for r, _ in lex.search(qtext[i], cfg.channel_depth)]}
        t1 = time.perf_counter()
        ranked["dense"] = [r for r, _ in dense.search(qv, cfg.channel_depth)]
        t2 = time.perf_counter()
        ranked["attribute"] = [r for r, _ in attr.search(c, [ent_vec], None, cfg.attr_threshold, cfg.channel_depth,
                                                         lambda rows: dense.scores_for(qv, rows), cfg.attr_max_matches)]
        if graph is None:
            rrf(ranked, cfg.rrf_k, None, cfg.pool_size)
        t3 = time.perf_counter()
        if graph is not None:  # an aggregate question about speaker "a": every part of graph activation runs
            graph_stage(graph, cfg, dense, qv, ent_vec, ranked, "What sports does A play?")
        t4 = time.perf_counter()
        lat.append((t4 - t0) * 1000)
        parts.append(((t1 - t0) * 1000, (t2 - t1) * 1000, (t3 - t2) * 1000, (t4 - t3) * 1000))
        found.append(ranked["dense"])
        qvs.append(qv)
    p = np.asarray(parts)
    return ({"p50_ms": float(np.percentile(lat, 50)), "p95_ms": float(np.percentile(lat, 95)),
             "p50_parts": np.percentile(p, 50, axis=0).tolist(), "p95_parts": np.percentile(p, 95, axis=0).tolist()},
            found, np.stack(qvs))


def dense_recall(syn: Synth, found: list[list[int]], qv: np.ndarray, k: int) -> dict[str, float]:
    """Recall@10 / @k of the dense channel's rows against exact search over the regenerated vectors."""
    t = time.perf_counter()
    exact = exact_top_k((syn.vectors(c, hi - lo) for c, lo, hi in syn.spans()), qv, k)
    out = {"recall@10": recall_at_k(found, exact, 10), f"recall@{k}": recall_at_k(found, exact, k),
           "recall_s": time.perf_counter() - t}
    print(f"[{syn.n:,}] dense recall: @10 {out['recall@10']:.3f}, @{k} {out[f'recall@{k}']:.3f} "
          f"({len(found)} queries, exact scan {out['recall_s']:.0f} s)", flush=True)
    return out


def bench_size(n: int, a: argparse.Namespace) -> dict:
    """Every channel built for n units, then the queries; one process per size, so ru_maxrss is this size's."""
    cfg = RetrievalConfig(hnsw_m=a.hnsw_m, hnsw_ef_construction=a.ef_construction, hnsw_ef_search=a.ef_search,
                          ivf_nlist=a.nlist, ivf_nprobe=a.nprobe)
    import faiss  # loaded before any phase, so that no channel's resident memory counts a library

    term_counts()
    faiss.omp_set_num_threads(a.threads)
    t_all = time.perf_counter()
    syn = Synth(n, a.seed, a.chunk)
    qrows = np.random.default_rng([a.seed, 5]).choice(n, min(n, a.queries), replace=False)
    qtext: dict[int, str] = {}
    qvec: dict[int, np.ndarray] = {}
    qent: dict[int, str] = {}
    enc = name_encoder(a.seed)
    lex, s_lex = build_lexical(syn, cfg, np.sort(qrows), qtext)
    kind = dense_kind(a.dense, n, cfg)
    dense, s_dense = build_dense(syn, cfg, kind, np.sort(qrows), qvec)
    attr, s_attr = build_attributes(syn, enc, np.sort(qrows), qent, a.name_cells_above)
    graph, s_graph = build_graph(syn) if a.graph else (None, {"build_s": 0.0, "bytes_per_unit": 0.0})
    lat, found, qv = run_queries(n, cfg, lex, dense, attr, enc, qrows, qtext, qvec, qent, a.query_noise, a.seed,
                                 graph)
    r = a.recall_queries
    rec = dense_recall(syn, found[:r], qv[:r], cfg.channel_depth) if kind != "exact" and r else {}
    row = {"n": n, "dense": kind, "bm25": s_lex, "dense_build": s_dense, "attr": s_attr, "graph": s_graph, **lat, **rec,
           "peak_gb": peak_mb() / 1024, "total_s": time.perf_counter() - t_all}
    if kind == "ivf":
        ix = dense._index
        row["dense"] = f"IVF{ix.nlist},{cfg.ivf_codec} nprobe {cfg.ivf_nprobe}"
        print(f"[{n:,}] dense codes: {ix.code_size} B + 8 B id + 8 B direct map per unit, "
              f"{ix.nlist * DIM * 4 / 2**20:.1f} MB of centroids", flush=True)
    print(f"[{n:,}] p50 {lat['p50_ms']:.2f} ms, p95 {lat['p95_ms']:.2f} ms; peak RSS {row['peak_gb']:.2f} GB; "
          f"{row['total_s']:.0f} s in all", flush=True)
    return row


def _table(rows: list[dict]) -> None:
    base = rows[0]["p50_ms"]
    print("\n| units | dense | p50 ms | p95 ms | p50 / p50(first) | p50 ms bm25 / dense / attr+RRF / graph "
          "| p95 ms bm25 / dense / attr+RRF / graph | dense recall@10 / @100 | build s bm25 / dense / attr / graph "
          "| B/unit bm25 / dense / attr / graph | peak RSS GB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        rec = f"{r['recall@10']:.3f} / {r['recall@100']:.3f}" if "recall@10" in r else (
            "exact" if r["dense"] == "exact" else "not measured")
        builds = " / ".join(f"{c['build_s']:,.0f}" for c in (r["bm25"], r["dense_build"], r["attr"], r["graph"]))
        per_unit = " / ".join(f"{c['bytes_per_unit']:,.0f}" for c in (r["bm25"], r["dense_build"], r["attr"], r["graph"]))
        print(f"| {r['n']:,} | {r['dense']} | {r['p50_ms']:.2f} | {r['p95_ms']:.2f} | {r['p50_ms'] / base:.2f} | "
              f"{' / '.join(f'{x:.1f}' for x in r['p50_parts'])} | {' / '.join(f'{x:.1f}' for x in r['p95_parts'])} | "
              f"{rec} | {builds} | {per_unit} | {r['peak_gb']:.2f} |", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--recall-queries", type=int, default=100, help="queries whose dense recall is measured")
    ap.add_argument("--dense", choices=["auto", "exact", "hnsw", "ivf"], default="auto",
                    help="auto: exact / HNSW / compressed IVF by the RetrievalConfig thresholds")
    ap.add_argument("--hnsw-m", type=int, default=16)
    ap.add_argument("--ef-construction", type=int, default=40)
    ap.add_argument("--ef-search", type=int, default=128)
    ap.add_argument("--nlist", type=int, default=0, help="IVF cells (0: 4 sqrt(n), at most 4096)")
    ap.add_argument("--nprobe", type=int, default=64)
    ap.add_argument("--name-cells-above", type=int, default=NAME_CELLS_ABOVE,
                    help="distinct names above which the attribute channel matches names through IVF cells")
    ap.add_argument("--chunk", type=int, default=100_000, help="units generated and indexed at once")
    ap.add_argument("--query-noise", type=float, default=1.0, help="norm of the perturbation of a query's unit")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-graph", dest="graph", action="store_false",
                    help="leave out graph activation (its build, and its stage in each query)")
    ap.add_argument("--threads", type=int, default=1,
                    help="FAISS threads (training, adding); queries run one at a time")
    a = ap.parse_args()
    rows = []
    for n in a.sizes:
        with mp.get_context("spawn").Pool(1) as pool:  # a fresh process per size: its own peak RSS
            rows.append(pool.apply(bench_size, (n, a)))
    _table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
