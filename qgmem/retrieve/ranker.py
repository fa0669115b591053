"""The learned pool ranker: a two-layer MLP over `features.FEATURES`, scored in numpy.

A checkpoint is a folder with `ranker.json` (feature names, standardisation, layer sizes, how it was
trained) and `ranker.safetensors` (the weights). Scoring 100 candidates is two small matrix products
(~0.1 ms), so the ranker can read the whole pool. Training lives in `qgmem.training.ranker_fit`; this
module only loads, saves and scores, so inference needs no torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from qgmem.errors import UserError
from qgmem.io import read_weights_folder, write_weights_folder

from .features import FEATURES

CONFIG_FILE = "ranker.json"
WEIGHTS_FILE = "ranker.safetensors"


class RankerCheckpointError(ValueError, UserError):
    """A ranker folder that is missing, incomplete, or trained on other features (one line, exit code 2)."""


@dataclass
class RankerSpec:
    features: list[str]
    mean: list[float]
    std: list[float]
    hidden: int
    info: dict[str, object] = field(default_factory=dict)  # training data, steps, seed, held-out metrics


class LearnedRanker:
    """score(X) -> one score per row of a `pool_features` matrix; higher ranks first."""

    def __init__(self, spec: RankerSpec, weights: dict[str, np.ndarray]):
        if list(spec.features) != list(FEATURES):
            extra = sorted(set(spec.features) ^ set(FEATURES))
            raise RankerCheckpointError(f"ranker was trained on other features (differ: {extra[:6]}, or their "
                                        "order); retrain it with `qgmem train-reranker`")
        self.spec = spec
        self.mean = np.asarray(spec.mean, dtype=np.float32)
        self.std = np.asarray(spec.std, dtype=np.float32)
        # C order: safetensors writes the raw buffer, so a transposed (Fortran-ordered) view would load transposed
        w = {k: np.ascontiguousarray(weights[k], dtype=np.float32) for k in ("w1", "b1", "w2", "b2")}
        self.w1, self.b1, self.w2, self.b2 = w["w1"], w["b1"], w["w2"], w["b2"]

    def score(self, x: np.ndarray) -> np.ndarray:
        h = np.maximum((x - self.mean) / self.std @ self.w1 + self.b1, 0.0)
        return (h @ self.w2 + self.b2).reshape(-1)

    @classmethod
    def load(cls, folder: str | Path) -> LearnedRanker:
        spec, weights = read_weights_folder(folder, CONFIG_FILE, WEIGHTS_FILE, RankerSpec,
                                            "ranker checkpoint; train one with `qgmem train-reranker`",
                                            RankerCheckpointError)
        return cls(spec, weights)

    def save(self, folder: str | Path) -> None:
        write_weights_folder(folder, CONFIG_FILE, WEIGHTS_FILE, self.spec,
                             {"w1": self.w1, "b1": self.b1, "w2": self.w2, "b2": self.b2})
