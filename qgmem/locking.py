"""An exclusive, re-entrant lock file that names its holder.

`fcntl.flock` dies with its process, so a killed writer never leaves a stale lock behind; the PID
written into the file lets the next writer say who holds it.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path
from types import TracebackType


class LockHeld(RuntimeError):
    def __init__(self, holder: str):
        super().__init__(f"lock held by {holder}")
        self.holder = holder


class FileLock:
    """`with lock:` takes the lock (non-blocking: LockHeld when another process has it); nested
    `with` blocks in the same object only count."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._fd: int | None = None
        self._depth = 0
        self._mutex = threading.RLock()

    def __enter__(self) -> FileLock:
        with self._mutex:
            if self._depth == 0:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    holder = os.read(fd, 200).decode(errors="replace").strip() or "another process"
                    os.close(fd)
                    raise LockHeld(holder) from None
                os.ftruncate(fd, 0)
                os.write(fd, f"PID {os.getpid()} (since {time.strftime('%Y-%m-%d %H:%M:%S')})".encode())
                self._fd = fd
            self._depth += 1
        return self

    def __exit__(self, tp: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        with self._mutex:
            self._depth -= 1
            if self._depth == 0:
                self.release_all()

    def release_all(self) -> None:
        with self._mutex:
            if self._fd is not None:
                os.ftruncate(self._fd, 0)
                os.close(self._fd)  # closing the descriptor releases the flock
                self._fd = None
            self._depth = 0
