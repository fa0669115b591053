"""One chat interface for every LLM step (extraction, consolidation, query parsing, answers, judging).

Backends implement `_complete`; the base class does accounting per phase so that every report
can say how many calls, tokens and seconds each phase cost.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

Message = dict[str, str]  # {"role": "system"|"user"|"assistant", "content": str}


class LLMError(RuntimeError):
    """A call that failed after all retries. Callers count it; they never drop it silently."""


@dataclass
class ChatRequest:
    messages: list[Message]
    temperature: float = 0.0
    max_tokens: int = 512
    json_mode: bool = False
    stop: list[str] | None = None

    def key_payload(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ChatResult:
    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    cached: bool = False
    finish_reason: str | None = None


@dataclass
class PhaseUsage:
    calls: int = 0
    failed: int = 0
    cached: int = 0
    prompt_tokens: int = 0  # new spend only; cache hits go to cached_* below
    completion_tokens: int = 0
    seconds: float = 0.0
    cached_prompt_tokens: int = 0  # tokens the cache saved (what those calls cost originally)
    cached_completion_tokens: int = 0


@dataclass
class Usage:
    """Calls, tokens and seconds per phase ("construction", "retrieval", "generation", "judge", ...)."""

    phases: dict[str, PhaseUsage] = field(default_factory=lambda: defaultdict(PhaseUsage))
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def record(self, phase: str, result: ChatResult | None, seconds: float, failed: bool = False) -> None:
        with self._lock:
            p = self.phases[phase]
            p.calls += 1
            p.seconds += seconds
            if failed or result is None:
                p.failed += 1
                return
            if result.cached:
                p.cached += 1
                p.cached_prompt_tokens += result.prompt_tokens
                p.cached_completion_tokens += result.completion_tokens
            else:
                p.prompt_tokens += result.prompt_tokens
                p.completion_tokens += result.completion_tokens

    def as_dict(self) -> dict[str, dict[str, Any]]:
        return {k: asdict(v) for k, v in self.phases.items()}


class ChatBackend(ABC):
    """Base for HTTP and local backends. Subclasses implement `_complete` only."""

    model: str = "unknown"
    max_concurrency: int = 1

    def __init__(self) -> None:
        self.usage = Usage()

    @abstractmethod
    def _complete(self, request: ChatRequest) -> ChatResult:
        """One completion; raise LLMError on failure after the backend's own retries."""

    def chat(
        self,
        messages: list[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int = 512,
        json_mode: bool = False,
        stop: list[str] | None = None,
        phase: str = "default",
    ) -> ChatResult:
        req = ChatRequest(list(messages), temperature, max_tokens, json_mode, stop)
        return self.complete(req, phase=phase)

    def _complete_in_phase(self, request: ChatRequest, phase: str) -> ChatResult:
        """Wrappers that pass the phase on to an inner backend override this; others need not."""
        return self._complete(request)

    def complete(self, request: ChatRequest, phase: str = "default") -> ChatResult:
        t0 = time.perf_counter()
        try:
            res = self._complete_in_phase(request, phase)
        except LLMError:
            self.usage.record(phase, None, time.perf_counter() - t0, failed=True)
            raise
        self.usage.record(phase, res, res.seconds if res.cached else time.perf_counter() - t0)
        return res

    def complete_many(self, requests: list[ChatRequest], phase: str = "default") -> list[ChatResult | LLMError]:
        """Run requests with at most `max_concurrency` in flight; failures come back as LLMError values."""

        def one(r: ChatRequest) -> ChatResult | LLMError:
            try:
                return self.complete(r, phase=phase)
            except LLMError as e:
                return e

        if self.max_concurrency <= 1 or len(requests) <= 1:
            return [one(r) for r in requests]
        with ThreadPoolExecutor(self.max_concurrency) as pool:
            return list(pool.map(one, requests))
