"""On-disk response cache: a rerun of a deterministic pipeline costs no LLM calls.

Replies are keyed by sha256 over (backend kind, model, server URL and extra request fields for
HTTP backends, messages, temperature, max_tokens, json_mode, stop) and stored in one SQLite table (WAL; safe across threads and processes).
Only temperature-0 requests are cached unless `cache_sampled=True`; failures are never cached.

Accounting: a hit comes back with `cached=True`; Usage counts its tokens under
`cached_prompt_tokens`/`cached_completion_tokens` (what the cache saved), so `prompt_tokens`
and `completion_tokens` report real new spend only.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path

from .base import ChatBackend, ChatRequest, ChatResult, LLMError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    seconds REAL NOT NULL,
    finish_reason TEXT,
    created REAL NOT NULL
)
"""


def request_key(identity: str, request: ChatRequest) -> str:
    payload = {
        "model": identity,
        "messages": request.messages,
        "temperature": float(request.temperature),
        "max_tokens": int(request.max_tokens),
        "json_mode": bool(request.json_mode),
        "stop": list(request.stop) if request.stop else None,
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def backend_identity(backend: ChatBackend) -> str:
    """Who answers: the same model name behind two servers (or with other extra request fields,
    e.g. thinking switched off) may answer differently, so each gets its own cache entries."""
    ident = f"{type(backend).__name__}:{backend.model}"
    template = getattr(backend, "chat_template_kwargs", None)
    if template:
        ident += "+" + json.dumps(template, sort_keys=True)
    url = getattr(backend, "base_url", None)
    if url:
        extra = json.dumps(getattr(backend, "extra_body", None) or {}, sort_keys=True)
        ident += f"@{url}" + (f"+{extra}" if extra != "{}" else "")
    return ident


def forget_keys(path: str | Path, keys: list[str]) -> int:
    """Delete cached replies by key from the cache file at `path` (overwriting them on disk); returns
    how many went. A missing file has nothing to forget."""
    path = Path(path)
    if not keys or not path.exists():
        return 0
    db = sqlite3.connect(path, timeout=60.0, isolation_level=None)
    try:
        db.execute("PRAGMA secure_delete=ON")
        n = sum(db.execute("DELETE FROM responses WHERE key=?", (k,)).rowcount for k in keys)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return n
    finally:
        db.close()


class CachedBackend(ChatBackend):
    """Wraps any backend; `.usage` counts every call (hits flagged cached), `.inner.usage` only misses."""

    def __init__(self, inner: ChatBackend, cache_dir: str | Path, cache_sampled: bool = False):
        super().__init__()
        self.inner = inner
        self.model = inner.model
        self.max_concurrency = inner.max_concurrency
        self.cache_sampled = cache_sampled
        self.identity = backend_identity(inner)
        self.path = Path(cache_dir) / "responses.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, timeout=60.0, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(_SCHEMA)
        except sqlite3.DatabaseError as e:
            raise RuntimeError(f"LLM response cache {self.path} is unreadable ({e}); delete it to start afresh") from e
        self.hits = 0
        self.misses = 0

    def _count(self, hits: int = 0, misses: int = 0) -> None:
        with self._lock:
            self.hits += hits
            self.misses += misses

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def cacheable(self, request: ChatRequest) -> bool:
        return self.cache_sampled or request.temperature == 0

    def lookup(self, request: ChatRequest) -> ChatResult | None:
        t0 = time.perf_counter()
        key = request_key(self.identity, request)
        with self._lock:
            row = self._db.execute(
                "SELECT text, prompt_tokens, completion_tokens, finish_reason FROM responses WHERE key=?", (key,)
            ).fetchone()
        if row is None:
            return None
        return ChatResult(row[0], row[1], row[2], time.perf_counter() - t0, cached=True, finish_reason=row[3])

    def store(self, request: ChatRequest, res: ChatResult) -> None:
        key = request_key(self.identity, request)
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses VALUES (?,?,?,?,?,?,?,?)",
                (key, self.model, res.text, res.prompt_tokens, res.completion_tokens, res.seconds,
                 res.finish_reason, time.time()),
            )

    def keys_for(self, requests: list[ChatRequest]) -> list[str]:
        """The cache keys of `requests` (what a forget must delete when their content is forgotten)."""
        return [request_key(self.identity, r) for r in requests if self.cacheable(r)]

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    # -- ChatBackend ------------------------------------------------------------------------
    def _complete(self, request: ChatRequest) -> ChatResult:
        return self._complete_in_phase(request, "default")

    def _complete_in_phase(self, request: ChatRequest, phase: str) -> ChatResult:
        use = self.cacheable(request)
        if use:
            hit = self.lookup(request)
            if hit is not None:
                self._count(hits=1)
                return hit
        self._count(misses=1)
        res = self.inner.complete(request, phase=phase)  # LLMError propagates, nothing cached
        if use:
            self.store(request, res)
        return res

    def complete_many(self, requests: list[ChatRequest], phase: str = "default") -> list[ChatResult | LLMError]:
        """Hits answered from disk; distinct misses go to `inner.complete_many` (batched/parallel)."""
        out: list[ChatResult | LLMError | None] = [None] * len(requests)
        first_of: dict[str, int] = {}  # key -> index of the miss sent to the backend
        dupes: list[tuple[int, int]] = []  # (index, index of identical sent request)
        send: list[int] = []
        for i, r in enumerate(requests):
            if not self.cacheable(r):
                send.append(i)
                continue
            hit = self.lookup(r)
            if hit is not None:
                self._count(hits=1)
                out[i] = hit
                self.usage.record(phase, hit, hit.seconds)
                continue
            key = request_key(self.identity, r)
            if key in first_of:
                dupes.append((i, first_of[key]))
            else:
                first_of[key] = i
                send.append(i)
        self._count(misses=len(send))
        results = self.inner.complete_many([requests[i] for i in send], phase=phase) if send else []
        for i, res in zip(send, results):
            out[i] = res
            if isinstance(res, LLMError):
                self.usage.record(phase, None, 0.0, failed=True)
                continue
            self.usage.record(phase, res, res.seconds)
            if self.cacheable(requests[i]):
                self.store(requests[i], res)
        for i, j in dupes:  # identical deterministic request in the same batch: reuse, count as cached
            src = out[j]
            if isinstance(src, ChatResult):
                dup = ChatResult(src.text, src.prompt_tokens, src.completion_tokens, 0.0, True, src.finish_reason)
                self._count(hits=1)
                self.usage.record(phase, dup, 0.0)
                out[i] = dup
            else:
                self.usage.record(phase, None, 0.0, failed=True)
                out[i] = src
        return out  # type: ignore[return-value]
