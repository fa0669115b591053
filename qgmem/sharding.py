"""Which shard a conversation belongs to, for builds and evaluations split over many jobs (`--shard I/N`).

The one assignment rule, shared by `qgmem build` and the retrieval evaluation: a conversation goes to
shard ``sha256(id) mod N``. It depends on the id alone, not on the input order nor on which other
conversations exist, so a shard keeps its conversations when a data set grows or is reordered, and a
build shard and an evaluation shard of the same I/N hold the same conversations (the evaluation reads
the build's shard store). Shards are balanced in expectation only (hashing, not round-robin).

A shard's outputs sit next to the unsharded ones under one name rule, ``<path>.shard-<I>-of-<N>``, so
the merge steps (`qgmem merge-stores`, `qgmem merge-runs`) take a glob such as ``stores/x.shard-*``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from qgmem.errors import UserError


class ShardError(ValueError, UserError):
    """A shard spec that is not ``I/N`` with 0 <= I < N."""


@dataclass(frozen=True)
class Shard:
    index: int  # 0-based
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def suffix(self) -> str:
        """``.shard-<I>-of-<N>``: appended to a store or run folder name."""
        return f".shard-{self.index}-of-{self.count}"

    def holds(self, conversation_id: str) -> bool:
        return shard_of(conversation_id, self.count) == self.index


def shard_of(conversation_id: str, count: int) -> int:
    """The shard (0..count-1) of a conversation id: a stable hash of the id alone."""
    digest = hashlib.sha256(conversation_id.encode("utf-8")).hexdigest()
    return int(digest[:16], 16) % count


def parse_shard(text: str, what: str = "--shard") -> Shard:
    """``"I/N"`` -> Shard; anything else is a ShardError naming `what` and the value."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
    if m is None:
        raise ShardError(f"{what} {text!r}: expected I/N with whole numbers, shard I (0-based) of N, e.g. 0/4")
    index, count = int(m.group(1)), int(m.group(2))
    if count < 1:
        raise ShardError(f"{what} {text!r}: the number of shards N must be >= 1")
    if index >= count:
        raise ShardError(f"{what} {text!r}: shard I is 0-based and must be below N (0..{count - 1})")
    return Shard(index, count)


def sharded_name(path: str | Path, shard: Shard | None) -> str:
    """`path` with the shard's suffix; unchanged without a shard or when it has the suffix already."""
    base = str(path).rstrip("/") or str(path)
    return base if shard is None or base.endswith(shard.suffix) else base + shard.suffix
