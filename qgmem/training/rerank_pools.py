"""Training data for the learned ranker: the pipeline's own pools, with the evidence turns as labels.

For each question with evidence, the unreranked pipeline builds its pool exactly as at query time
(`QGMemRetriever.pool`); every candidate becomes a feature row, labelled 1 when its span holds an
evidence turn. Labels come from the benchmark's evidence annotations of training questions only;
nothing decides what enters memory. One `.npz` per conversation under the work folder, so a rerun
(or a run killed half-way) collects only what is missing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from qgmem.evaluation.subset import select
from qgmem.retrieve.config import RetrievalConfig
from qgmem.retrieve.features import FEATURES

from .rerank_config import PoolSource, RerankTrainConfig


@dataclass
class Pools:
    """Every collected question of a source: features, labels and each row's turns."""

    x: list[np.ndarray]  # per question: (pool, features)
    y: list[np.ndarray]  # per question: (pool,) 1 = the unit's span holds an evidence turn
    turns: list[list[list[str]]]  # per question, per row: the unit's turn ids
    evidence: list[list[str]]  # per question: its evidence turn ids
    qids: list[str]

    def counts(self) -> dict[str, int]:
        return {"questions": len(self.qids), "with_evidence_in_pool": sum(int(y.sum() > 0) for y in self.y)}

    def extend(self, other: Pools) -> None:
        for name in ("x", "y", "turns", "evidence", "qids"):
            getattr(self, name).extend(getattr(other, name))

    def take(self, keep: list[int]) -> Pools:
        """The questions at positions `keep`, in that order."""
        return Pools(*([getattr(self, name)[i] for i in keep] for name in ("x", "y", "turns", "evidence", "qids")))

    @classmethod
    def empty(cls) -> Pools:
        return cls([], [], [], [], [])


def _stores(store_dir: str) -> list[Path]:
    """The store folder and its `.shard-I-of-N` siblings (an evaluation that ran with workers); the first
    one that holds a conversation serves it, the first of all builds what none holds."""
    p = Path(store_dir)
    return [*([p] if p.exists() else []), *sorted(p.parent.glob(p.name + ".shard-*-of-*"))] or [p]


def _selection(src: PoolSource, data_dir: str | None) -> list:
    from qgmem.data.registry import load_dataset_by_name

    convs = list(load_dataset_by_name(src.benchmark, data_dir=data_dir, download=False, **src.data_options))
    chosen = select(convs, src.subset)
    if src.exclude is not None:
        held = {c.id for c, _ in select(convs, src.exclude)}
        chosen = [(c, qs) for c, qs in chosen if c.id not in held]
    return [(c, [q for q in qs if q.evidence]) for c, qs in chosen if any(q.evidence for q in qs)]


def _save(path: Path, pools: Pools) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    meta = {"qids": pools.qids, "turns": pools.turns, "evidence": pools.evidence}
    np.savez(tmp, **{f"x{i}": x for i, x in enumerate(pools.x)}, **{f"y{i}": y for i, y in enumerate(pools.y)},
             meta=np.asarray(json.dumps(meta)))
    tmp.replace(path)


def _load(path: Path) -> Pools:
    with np.load(path) as z:
        meta = json.loads(str(z["meta"]))
        n = len(meta["qids"])
        return Pools([z[f"x{i}"] for i in range(n)], [z[f"y{i}"] for i in range(n)], meta["turns"],
                     meta["evidence"], meta["qids"])


def source_name(src: PoolSource, retrieval: RetrievalConfig) -> str:
    """`<benchmark>-<hash of which questions, which pipeline, which features>`: the pools' folder, the same
    whichever list names the source (a variant config that trains on one source reuses what the full config
    collected); other retrieval settings or another feature list make other pools, never stale ones. (A
    change of the pipeline's code is not in the name: delete the work folder after one.)"""
    import hashlib
    from dataclasses import asdict

    what = {"source": {k: v for k, v in asdict(src).items() if k != "store_dir"}, "retrieval": asdict(retrieval),
            "features": list(FEATURES)}
    return f"{src.benchmark}-{hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:8]}"


def collect(cfg: RerankTrainConfig, src: PoolSource) -> Pools:
    """The pools of one source, collected under `<work_dir>/<source_name>/` (existing files are reused)."""
    name = source_name(src, cfg.retrieval)
    from qgmem.retrieve.method import QGMemRetriever
    from qgmem.store import MemoryStore

    out = Path(cfg.work_dir) / name
    todo = _selection(src, cfg.data_dir)
    stores = [MemoryStore(p) for p in _stores(src.store_dir)] if src.store_dir else [MemoryStore(out / "store")]
    holds = [set(s.namespaces()) for s in stores]
    retrievers: dict[int, QGMemRetriever] = {}
    pools = Pools.empty()
    for conv, qs in tqdm(todo, desc=f"pools {name}", unit="conv"):
        path = out / f"{conv.id}.npz"
        if path.exists():
            pools.extend(_load(path))
            continue
        which = next((i for i, h in enumerate(holds) if conv.id in h), 0)
        if which not in retrievers:
            retrievers[which] = QGMemRetriever(stores[which], cfg.retrieval, turn_features=True)
        r = retrievers[which]
        r.build(conv)
        got = Pools.empty()
        for q in qs:
            _, x, turns = r.pool_example(q)
            gold = set(q.evidence)
            got.x.append(x)
            got.y.append(np.asarray([bool(gold & set(t)) for t in turns], dtype=np.float32))
            got.turns.append(turns)
            got.evidence.append(list(dict.fromkeys(q.evidence)))
            got.qids.append(f"{conv.id}/{q.id}")
        r.release(conv.id)
        _save(path, got)
        pools.extend(got)
    for s in stores:
        s.close()
    return pools
