"""Graph activation designs on the LoCoMo dev split (conv-26, conv-30; categories 1-4): Recall@10, nDCG@10 and
per-category Recall@10 of each `retrieval.graph` setting, one process, one store (issue 26).

    python bench/graph_activation_dev.py --store stores/locomo_rule_ga [--designs NAME ...] [--list]

Every design is the default pipeline with a few `GraphActivationConfig` fields changed (`DESIGNS`); the
store must hold the dev conversations (any LoCoMo store built with the default settings: missing windows
are built). Choices of the defaults were made on these numbers only; the test conversations are never read.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics

from qgmem.data.locomo import load_locomo
from qgmem.evaluation import retrieval_metrics as rm
from qgmem.retrieve.config import RetrievalConfig
from qgmem.retrieve.method import QGMemRetriever
from qgmem.store import MemoryStore

DEV = ("conv-26", "conv-30")
OFF = {"person_weight": 0.0, "person_weight_aggregate": 0.0, "spread_weight": 0.0, "spread_weight_aggregate": 0.0}
DESIGNS: dict[str, dict[str, object]] = {
    "off (no graph activation)": {"enabled": False},
    "person list, aggregate 0.5": {**OFF, "person_weight_aggregate": 0.5},
    "person list, aggregate 1.0": {**OFF, "person_weight_aggregate": 1.0},
    "person list, aggregate 1.5": {**OFF, "person_weight_aggregate": 1.5},
    "person list, aggregate 2.0": {**OFF, "person_weight_aggregate": 2.0},
    "person list, every person question 0.25": {**OFF, "person_weight": 0.25, "person_weight_aggregate": 0.25},
    "person list, every person question 1.0": {**OFF, "person_weight": 1.0, "person_weight_aggregate": 1.0},
    "person list, aggregate 1.0 + others 0.25": {**OFF, "person_weight": 0.25, "person_weight_aggregate": 1.0},
    "person list, aggregate 1.0 + others 0.4": {**OFF, "person_weight": 0.4, "person_weight_aggregate": 1.0},
    "spread only, entity+relation, all 0.1": {**OFF, "spread_weight": 0.1, "spread_weight_aggregate": 0.1},
    "spread only, entity, aggregate 0.1": {**OFF, "edges": ["entity"], "spread_weight_aggregate": 0.1},
    "spread only, entity+relation, aggregate 0.1": {**OFF, "spread_weight_aggregate": 0.1},
    "spread only, entity+trace+session, aggregate 0.1": {**OFF, "edges": ["entity", "trace", "session"],
                                                         "spread_weight_aggregate": 0.1},
    "default (person 1.0 / 0.25 + spread entity+relation aggregate 0.1)": {},
    "default, spread aggregate 0.2": {"spread_weight_aggregate": 0.2},
    "default, spread all questions 0.05": {"spread_weight": 0.05},
    "default, seeds 10": {"seeds": 10},
    "default, seeds 50": {"seeds": 50},
}


def score(store: MemoryStore, convs: dict, changes: dict[str, object]) -> tuple[list[tuple[str, float, float]], list[float]]:
    cfg = RetrievalConfig()
    cfg.graph = dataclasses.replace(cfg.graph, **changes)  # type: ignore[arg-type]
    r = QGMemRetriever(store, cfg)
    rows, lat = [], []
    for cid in DEV:
        conv = convs[cid]
        r.build(conv)
        for q in conv.questions:
            if q.category not in ("1", "2", "3", "4") or not q.evidence:
                continue
            q.conversation_id = cid
            wm = r.activate(q, 10)
            items = [list(it.turn_ids) for it in wm.items]
            rows.append((q.category, rm.recall_at_k(items, q.evidence, 10), rm.ndcg_at_k(items, q.evidence, 10)))
            lat.append(float(wm.meta["latency_ms"]))
        r.release(cid)
    return rows, lat


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", required=True)
    ap.add_argument("--designs", nargs="*", default=None, help="names of DESIGNS to run (default: all)")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    if args.list:
        print("\n".join(DESIGNS))
        return 0
    convs = {c.id: c for c in load_locomo()}
    store = MemoryStore(args.store)
    print("| design | n | Recall@10 | nDCG@10 | 1 multi-hop | 2 temporal | 3 open-domain | 4 single-hop | p50 ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.designs or list(DESIGNS):
        rows, lat = score(store, convs, DESIGNS[name])
        cats = {c: statistics.mean(r for cc, r, _ in rows if cc == c) for c in ("1", "2", "3", "4")}
        print(f"| {name} | {len(rows)} | {statistics.mean(r for _, r, _ in rows):.4f} | "
              f"{statistics.mean(n for _, _, n in rows):.4f} | " + " | ".join(f"{cats[c]:.3f}" for c in cats) +
              f" | {statistics.median(lat):.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
