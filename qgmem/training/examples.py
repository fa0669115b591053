"""A prepared split as training data: examples, the epoch order, and the shuffled-graph control."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from qgmem.model.collate import GraphExample
from qgmem.model.inputs import example_from_row


class ExampleDataset:
    """A prepared split (a `datasets.Dataset` of stored rows) as a map-style dataset of `GraphExample`s."""

    def __init__(self, ds: Any, node_dim: int, edge_dim: int, limit: int | None = None):
        self.ds = ds if limit is None else ds.select(range(min(limit, len(ds))))
        self.node_dim, self.edge_dim = node_dim, edge_dim

    def __len__(self) -> int:
        return len(self.ds)

    def __getitem__(self, i: int) -> GraphExample:
        return example_from_row(self.ds[int(i)], self.node_dim, self.edge_dim)

    def examples(self) -> list[GraphExample]:
        return [self[i] for i in range(len(self))]

    def fitting(self, fits: Any) -> tuple[ExampleDataset, list[str]]:
        """This split without the examples `fits` rejects, and the ids of those (counted in the report)."""
        keep, dropped = [], []
        for i in range(len(self)):
            (keep if fits(self[i]) else dropped).append(i)
        if not dropped:
            return self, []
        out = ExampleDataset(self.ds.select(keep), self.node_dim, self.edge_dim)
        return out, [str(self.ds[i]["id"]) for i in dropped]

    def golds(self) -> list[list[str]]:
        """Every gold answer of each example (token F1 takes the max over them)."""
        return [list(self.ds[i]["answers"]) for i in range(len(self.ds))]


def shuffled_graphs(examples: list[GraphExample], seed: int) -> list[GraphExample]:
    """Each example with another example's graph (a seeded derangement when possible): the control that
    keeps graph statistics but breaks the link between graph and question."""
    n = len(examples)
    perm = list(range(n))
    if n > 1:  # one random n-cycle: every example gets a graph other than its own
        order = list(range(n))
        random.Random(seed).shuffle(order)
        nxt = {order[i]: order[(i + 1) % n] for i in range(n)}
        perm = [nxt[i] for i in range(n)]
    return [dataclasses.replace(ex, graph=examples[j].graph) for ex, j in zip(examples, perm)]


class TextDropout:
    """The training split where an example's memory text is removed with probability `p`, drawn per
    (seed, epoch, index) so a resumed run sees the same draws: on those examples the graph token is the
    only memory, which rewards an encoder that carries the question's graph instead of a fixed prompt."""

    def __init__(self, ds: ExampleDataset, p: float, seed: int, sampler: EpochSampler):
        self.ds, self.p, self.seed, self.sampler = ds, float(p), seed, sampler

    def __len__(self) -> int:
        return len(self.ds)

    def __getitem__(self, i: int) -> GraphExample:
        ex = self.ds[i]
        if random.Random(f"{self.seed}:{self.sampler.epoch}:{int(i)}").random() < self.p:
            ex = dataclasses.replace(ex, memory_text="")
        return ex


def epoch_order(n: int, seed: int, epoch: int) -> list[int]:
    """The example order of an epoch: a function of (seed, epoch) only, so a resumed run sees the same."""
    idx = list(range(n))
    random.Random(seed * 1_000_003 + epoch).shuffle(idx)
    return idx


class EpochSampler:
    """Yields `epoch_order(n, seed, epoch)` for the epoch set by `use_epoch`, so one data loader serves
    every epoch. (Not `set_epoch`: accelerate calls that with its own counter, which restarts at 0
    in the loader that skips the batches a resumed run has already seen.)"""

    def __init__(self, n: int, seed: int):
        self.n, self.seed, self.epoch = n, seed, 0

    def use_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        return iter(epoch_order(self.n, self.seed, self.epoch))
