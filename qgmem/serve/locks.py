"""Who may run at once: readers of a namespace in parallel, its writers one at a time, other namespaces
untouched; forgetting (which clears this process's caches shared by all namespaces) alone; and at most
`max_in_flight` requests in the server, the next one told to come back later.

Waiting is bounded: a request that cannot get its lock within `lock_timeout_s` is refused with 503 and
`Retry-After`, never queued for ever. Writers are preferred over new readers, so a steady stream of
searches cannot starve an add.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from qgmem.serve.errors import ServeError


class RWLock:
    """Many readers or one writer; a waiting writer blocks new readers."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False
        self._waiting_writers = 0

    def acquire(self, write: bool, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            if write:
                self._waiting_writers += 1
            try:
                while self._writer or (self._readers if write else self._waiting_writers):
                    left = deadline - time.monotonic()
                    if left <= 0 or not self._cond.wait(left):
                        if self._writer or (self._readers if write else self._waiting_writers):
                            return False
                if write:
                    self._writer = True
                else:
                    self._readers += 1
                return True
            finally:
                if write:
                    self._waiting_writers -= 1

    def release(self, write: bool) -> None:
        with self._cond:
            if write:
                self._writer = False
            else:
                self._readers -= 1
            self._cond.notify_all()


class Gate:
    """The server's locks: one store-wide lock (shared by every operation, exclusive for forget) and
    one per namespace (shared for reads, exclusive for writes), plus the in-flight counter."""

    def __init__(self, max_in_flight: int, lock_timeout_s: float, retry_after_s: int):
        self.max_in_flight, self.lock_timeout_s, self.retry_after_s = max_in_flight, lock_timeout_s, retry_after_s
        self._store = RWLock()
        self._ns: dict[str, RWLock] = {}
        self._mutex = threading.Lock()
        self.in_flight = 0
        self.refused = 0  # requests answered 503 so far

    def _busy(self, why: str) -> ServeError:
        with self._mutex:
            self.refused += 1
        return ServeError(503, why, retry_after=self.retry_after_s)

    @contextmanager
    def admit(self) -> Iterator[None]:
        """Count a request in; 503 when `max_in_flight` are already being served."""
        with self._mutex:
            full = self.in_flight >= self.max_in_flight
            if not full:
                self.in_flight += 1
        if full:
            raise self._busy(f"server busy: {self.max_in_flight} requests in flight; retry later")
        try:
            yield
        finally:
            with self._mutex:
                self.in_flight -= 1

    def _lock_of(self, namespace: str) -> RWLock:
        with self._mutex:
            return self._ns.setdefault(namespace, RWLock())

    @contextmanager
    def _hold(self, lock: RWLock, write: bool, what: str) -> Iterator[None]:
        if not lock.acquire(write, self.lock_timeout_s):
            raise self._busy(f"{what} stayed busy for {self.lock_timeout_s:g} s; retry later")
        try:
            yield
        finally:
            lock.release(write)

    @contextmanager
    def read(self, namespace: str) -> Iterator[None]:
        with self._hold(self._store, False, "the store"), self._hold(self._lock_of(namespace), False,
                                                                      f"namespace {namespace!r}"):
            yield

    @contextmanager
    def write(self, namespace: str) -> Iterator[None]:
        with self._hold(self._store, False, "the store"), self._hold(self._lock_of(namespace), True,
                                                                      f"namespace {namespace!r}"):
            yield

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """The whole store (forget: it clears caches every namespace shares in this process)."""
        with self._hold(self._store, True, "the store"):
            yield
