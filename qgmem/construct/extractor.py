"""What every extractor (rule, LLM) offers the build: windows in, one result per window out."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from qgmem.construct.windows import Window
from qgmem.types import AtomicUnit


@dataclass
class WindowResult:
    """Outcome of one window: units (possibly none), or an error with the raw output."""

    window: Window
    units: list[AtomicUnit] = field(default_factory=list)
    error: str | None = None  # set = the window failed; it is recorded, not marked done
    raw: str | None = None
    rejected: list[dict[str, Any]] = field(default_factory=list)  # {"unit": ..., "reason": ...}
    attempts: int = 0
    requests: list[Any] = field(default_factory=list)  # the LLM requests sent (their cached replies quote the window)


class Extractor(Protocol):
    name: str

    def run(self, windows: list[Window], ns: str, speakers: list[str]) -> Iterator[WindowResult]:
        """Results in window order; may batch windows internally."""
        ...
