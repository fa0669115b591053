"""The `qgmem train-reranker` YAML as dataclasses (`configs/rerank/*.yaml`).

Training questions come from the sources under `train`; `dev` picks the model (hidden size, epoch) and
is never trained on. A source's `exclude` names a question subset scored elsewhere (the LongMemEval-S
subset of the retrieval benchmark), left out before anything is collected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from qgmem.config import ConfigError, load_config
from qgmem.data.registry import DATASET_NAMES
from qgmem.evaluation.config import SubsetConfig
from qgmem.retrieve.config import RetrievalConfig


@dataclass
class PoolSource:
    benchmark: str = "longmemeval-s"  # a data registry name (msc-persona: MSC persona facts -> their turns)
    data_options: dict[str, object] = field(default_factory=dict)  # loader keywords, e.g. {split: test, limit: 300}
    store_dir: str = ""  # the evaluation's store (or its `.shard-I-of-N` stores); memories missing there are built
    subset: SubsetConfig = field(default_factory=SubsetConfig)  # which questions to use
    exclude: SubsetConfig | None = None  # questions scored elsewhere: never used


@dataclass
class FitConfig:
    hidden: list[int] = field(default_factory=lambda: [16, 32, 64])  # MLP widths tried; dev recall picks one
    epochs: int = 300  # full-batch epochs; dev recall picks the epoch (checked every `eval_every`)
    eval_every: int = 10
    lr: float = 3e-3
    weight_decay: float = 1e-4
    seed: int = 0


@dataclass
class RerankTrainConfig:
    out: str = "checkpoints/reranker/pool-mlp"  # the trained ranker (ranker.json, ranker.safetensors, MODEL_CARD.md)
    work_dir: str = "runs/reranker/pool-mlp"  # collected pools, one file per conversation (a rerun reuses them)
    data_dir: str | None = None
    k: int = 10  # the working-memory size the dev metric (turn recall@k) scores
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)  # the pipeline whose pools are ranked
    train: list[PoolSource] = field(default_factory=list)
    dev: PoolSource = field(default_factory=lambda: PoolSource(benchmark="locomo"))
    fit: FitConfig = field(default_factory=FitConfig)

    def __post_init__(self) -> None:
        if not self.train:
            raise ConfigError("train: name at least one source (benchmark, store_dir, subset)")
        for where, s in [*((f"train[{i}]", s) for i, s in enumerate(self.train)), ("dev", self.dev)]:
            if s.benchmark not in DATASET_NAMES:
                raise ConfigError(f"{where}.benchmark: {s.benchmark!r}; use one of {', '.join(DATASET_NAMES)}")
        if self.retrieval.rerank.kind != "none":
            raise ConfigError("retrieval.rerank.kind must be none: the ranker learns to order the unreranked pool")
        if self.k <= 0 or not self.fit.hidden or min(self.fit.hidden) <= 0:
            raise ConfigError("k and every fit.hidden width must be positive")


def load_rerank_config(path: str | Path, overrides: list[str] | None = None) -> RerankTrainConfig:
    return load_config(RerankTrainConfig, path, overrides or [])
