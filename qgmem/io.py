"""Atomic file writes and JSONL appends: a killed job never leaves a half-written file."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import IO, Any, Iterable, Iterator


_UMASK_LOCK = threading.Lock()


def _file_mode() -> int:
    """What `open()` would give a new file: 0o666 minus the process umask (mkstemp gives 0o600)."""
    with _UMASK_LOCK:
        mask = os.umask(0)
        os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w") -> Iterator[IO[Any]]:
    """Write to a temp file beside `path`, fsync, then rename over it; on error nothing changes.
    The file gets the permissions a plain `open()` would give it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.fchmod(fd, _file_mode())
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def plain(obj: Any) -> Any:
    """Dataclass -> JSON-able value, like `dataclasses.asdict` without its deep copies (10x faster on a
    10,000-turn conversation; the records here hold only strings, numbers, lists and dicts)."""
    if dataclasses.is_dataclass(obj):
        return {f.name: plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, list):
        return [plain(v) for v in obj]
    return obj


def atomic_write_text(path: str | Path, text: str) -> None:
    with atomic_open(path) as f:
        f.write(text)


def atomic_write_json(path: str | Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")


def append_jsonl(path: str | Path, records: Iterable[dict[str, Any]]) -> None:
    """Append whole lines, flushed and fsynced, so a kill loses at most the line being written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
        f.flush()
        os.fsync(f.fileno())


def read_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """Read JSONL, skipping a torn last line left by a kill (and only that)."""
    path = Path(path)
    if not path.exists():
        return
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                return
            raise ValueError(f"{path}: line {i + 1} is not valid JSON")


def read_weights_folder(folder: str | Path, config_file: str, weights_file: str, spec: type[Any], what: str,
                        error: type[Exception]) -> tuple[Any, dict[str, Any]]:
    """(spec built from `config_file`'s JSON, the arrays of `weights_file`) of a small numpy checkpoint folder, or
    `error` with one line naming the folder and what it lacks (`what`: the kind and the command that trains one)."""
    from safetensors.numpy import load_file

    folder = Path(folder)
    cfg, wts = folder / config_file, folder / weights_file
    if not cfg.is_file() or not wts.is_file():
        raise error(f"{folder}: not a {what} (needs {config_file} and {weights_file})")
    try:
        return spec(**json.loads(cfg.read_text())), load_file(str(wts))
    except (TypeError, json.JSONDecodeError) as e:
        raise error(f"{cfg}: {e}") from None


def write_weights_folder(folder: str | Path, config_file: str, weights_file: str, spec: Any,
                         tensors: dict[str, Any]) -> None:
    """The counterpart of `read_weights_folder`: the arrays (C order: safetensors writes the raw buffer) and the
    spec dataclass as JSON."""
    from safetensors.numpy import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(folder / weights_file))
    atomic_write_json(folder / config_file, dataclasses.asdict(spec))
