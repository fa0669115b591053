"""AnchorMem speed on CPU: build and per-question activation against dense retrieval over raw
turns (the naive-RAG baseline), both measured in the same run on the same conversations.

    QGMEM_DATA_DIR=/work/shared/data python bench/anchormem.py --conversations conv-26 conv-30

Build = rule facts + fact embeddings + event graph (concat integration, no LLM) + event embeddings;
baseline build = embedding every turn. Activation = one question embedding + two dot products;
baseline activation = one question embedding + one dot product over turns. Prints a ratio per row.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import numpy as np

from qgmem.anchormem import AnchorMemConfig, AnchorMemMethod
from qgmem.data.locomo import load_locomo
from qgmem.embed import get_embedder
from qgmem.store import MemoryStore


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--conversations", nargs="+", default=["conv-26", "conv-30"])
    ap.add_argument("--questions", type=int, default=50, help="questions per conversation timed")
    args = ap.parse_args()
    convs = [c for c in load_locomo() if c.id in set(args.conversations)]
    emb = get_embedder()
    emb.encode(["warm up"])
    rows = []
    for conv in convs:
        turns = conv.turns()
        t0 = time.perf_counter()
        turn_mat = emb.encode([t.render() for t in turns])
        base_build = time.perf_counter() - t0
        with tempfile.TemporaryDirectory() as tmp:
            m = AnchorMemMethod(MemoryStore(tmp), AnchorMemConfig(), embedder=emb)
            t0 = time.perf_counter()
            m.build(conv)
            am_build = time.perf_counter() - t0
            st = m.stats(conv.id)
            qs = conv.questions[: args.questions]
            base_lat, am_lat = [], []
            m.activate(qs[0])  # loads the index once, as evaluation does
            for q in qs:
                t0 = time.perf_counter()
                qv = emb.encode([q.text])[0]
                top = np.argsort(-(turn_mat @ qv))[:10]
                _ = [turns[i].id for i in top]
                base_lat.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                m.activate(q, k=10)
                am_lat.append(time.perf_counter() - t0)
        rows.append((conv.id, len(turns), st["fact_stats"]["facts"], st["event_stats"]["events"],
                     base_build, am_build, statistics.median(base_lat) * 1000, statistics.median(am_lat) * 1000))
    print("| conversation | turns | facts | events | dense-turns build s | AnchorMem build s | ratio | "
          "dense-turns activate p50 ms | AnchorMem activate p50 ms | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for cid, nt, nf, ne, bb, ab, bl, al in rows:
        print(f"| {cid} | {nt} | {nf} | {ne} | {bb:.1f} | {ab:.1f} | x{ab / bb:.2f} | {bl:.1f} | {al:.1f} | x{al / bl:.2f} |")


if __name__ == "__main__":
    main()
