"""The build table: what one `build_memory` run did per phase (units, traces, windows, failures,
LLM calls and tokens, seconds), in the shape of AnchorMem's Table 4."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from qgmem.construct.llm_extract import PHASE
from qgmem.llm.base import ChatBackend


@dataclass
class PhaseStats:
    """One row of the build table (AnchorMem Table 4 shape); unused columns stay 0."""

    units: int = 0
    traces: int = 0
    windows: int = 0
    resumed_windows: int = 0  # already done in an earlier (interrupted) run
    failed_windows: int = 0
    rejected_units: int = 0
    failed_traces: int = 0
    texts_encoded: int = 0
    texts_reused: int = 0
    llm_calls: int = 0
    llm_failed: int = 0
    llm_cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    def add(self, other: PhaseStats) -> None:
        for k, v in asdict(other).items():
            setattr(self, k, getattr(self, k) + v)


PHASES = ("extraction", "consolidation", "embedding")


@dataclass
class BuildReport:
    phases: dict[str, PhaseStats] = field(default_factory=lambda: {p: PhaseStats() for p in PHASES})
    namespaces: dict[str, dict[str, PhaseStats]] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)  # {"namespace", "key", "error"}
    incomplete: dict[str, int] = field(default_factory=dict)  # namespace -> windows not extracted
    warnings: list[str] = field(default_factory=list)  # input repairs (e.g. a date normalised or dropped)
    dropped_units: int = 0  # units of edited, deleted or re-extracted windows removed

    def ns(self, ns: str) -> dict[str, PhaseStats]:
        return self.namespaces.setdefault(ns, {p: PhaseStats() for p in PHASES})

    def add(self, ns: str, phase: str, stats: PhaseStats) -> None:
        self.ns(ns)[phase].add(stats)
        self.phases[phase].add(stats)

    def as_dict(self) -> dict[str, Any]:
        return {"phases": {k: asdict(v) for k, v in self.phases.items()},
                "namespaces": {n: {k: asdict(v) for k, v in p.items()} for n, p in self.namespaces.items()},
                "failures": self.failures, "incomplete": self.incomplete, "dropped_units": self.dropped_units,
                "warnings": self.warnings}

    def table(self) -> str:
        cols = [("phase", None), ("units", "units"), ("traces", "traces"), ("windows", "windows"),
                ("failed win", "failed_windows"), ("rejected", "rejected_units"), ("failed tr", "failed_traces"),
                ("encoded", "texts_encoded"), ("LLM calls", "llm_calls"), ("LLM failed", "llm_failed"), ("cached", "llm_cached"),
                ("prompt tok", "prompt_tokens"), ("compl tok", "completion_tokens"), ("seconds", "seconds")]
        rows = [[c for c, _ in cols]]
        total = PhaseStats()
        for name in PHASES:
            st = self.phases[name]
            total.add(st)
            rows.append([name] + [_fmt(getattr(st, a)) for _, a in cols[1:]])
        total.units, total.traces = self.phases["extraction"].units, self.phases["consolidation"].traces
        rows.append(["total"] + [_fmt(getattr(total, a)) for _, a in cols[1:]])
        widths = [max(len(r[i]) for r in rows) for i in range(len(cols))]
        lines = ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in rows]
        lines.insert(1, "-" * len(lines[0]))
        return "\n".join(lines)


def _fmt(v: Any) -> str:
    return f"{v:.1f}" if isinstance(v, float) else str(v)


def usage_snapshot(backend: ChatBackend | None) -> dict[str, Any]:
    if backend is None:
        return {}
    p = backend.usage.phases.get(PHASE)
    return asdict(p) if p is not None else {}


def usage_delta(stats: PhaseStats, before: dict[str, Any], after: dict[str, Any]) -> None:
    def d(k: str) -> Any:
        return after.get(k, 0) - before.get(k, 0)

    stats.llm_calls += d("calls")
    stats.llm_failed += d("failed")
    stats.llm_cached += d("cached")
    stats.prompt_tokens += d("prompt_tokens")
    stats.completion_tokens += d("completion_tokens")
