"""Run folders, the one convention of QA and retrieval runs: where results go, which run
`--resume` continues, what a run folder records, how a question is keyed.

Layout: ``<output_dir>/<benchmark>/<run>/`` (`run` = `run_name` or a UTC timestamp; the methods are
in ``config.yaml`` and the summary, not in the path) with ``config.yaml`` (resolved), ``meta.json``
(package version, status) and the task's JSONL files (QA: ``predictions.jsonl``, ``builds.jsonl``;
retrieval: ``retrieval.jsonl``), appended as questions finish, then ``summary.json`` and a report.

Resume rule: `run_name` continues that run, `--resume` the latest unfinished run whose config matches;
the config's `RESUME_KEYS` (what decides the scores) must match the saved ones, else a clear refusal.
Questions are keyed ``<conversation_id>/<question_id>`` everywhere.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from qgmem.config import to_dict
from qgmem.io import atomic_write_json, atomic_write_text, read_jsonl

PREDICTIONS = "predictions.jsonl"
BUILDS = "builds.jsonl"
RETRIEVAL_ROWS = "retrieval.jsonl"
META = "meta.json"
CONFIG = "config.yaml"


def question_key(conversation_id: str, question_id: str) -> str:
    """The one question key of every run file: ``<conversation_id>/<question_id>``."""
    return f"{conversation_id}/{question_id}"


def done_keys(path: Path) -> set[tuple[str, str]]:
    """(method, question key) of every row already in a run's JSONL file."""
    return {(r["method"], r["qid"]) for r in read_jsonl(path)}


def _get(d: dict[str, Any], dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(d, dict) or part not in d:
            return None
        d = d[part]
    return d


def runs_root(cfg: Any) -> Path:
    return Path(cfg.output_dir) / cfg.benchmark


def read_meta(run_dir: Path) -> dict[str, Any]:
    p = run_dir / META
    return json.loads(p.read_text()) if p.exists() else {}


def _saved_config(run_dir: Path) -> dict[str, Any] | None:
    p = run_dir / CONFIG
    return (yaml.safe_load(p.read_text()) or {}) if p.exists() else None


def first_difference(saved: dict[str, Any], cfg: Any) -> str | None:
    """The first of `cfg.RESUME_KEYS` whose value differs from the saved config, or None."""
    now = to_dict(cfg)
    return next((key for key in cfg.RESUME_KEYS if _get(saved, key) != _get(now, key)), None)


def latest_unfinished(cfg: Any) -> Path | None:
    """The newest unfinished run under `<output_dir>/<benchmark>` whose saved config matches `cfg`."""
    root = runs_root(cfg)
    if not root.exists():
        return None
    for d in sorted(root.iterdir(), reverse=True):
        saved = _saved_config(d) if d.is_dir() and (d / META).exists() else None
        if saved is not None and read_meta(d).get("status") != "finished" and first_difference(saved, cfg) is None:
            return d
    return None


def new_run_name() -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime())


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def check_resumable(run_dir: Path, cfg: Any) -> None:
    """Refuse to mix results of different settings in one run; name the first field that differs."""
    saved = _saved_config(run_dir)
    if saved is None:
        return
    key = first_difference(saved, cfg)
    if key is not None:
        now = to_dict(cfg)
        raise ValueError(f"{run_dir / CONFIG}: cannot resume: field {key!r} differs (run has {_get(saved, key)!r}, "
                         f"config now has {_get(now, key)!r}); start a new run instead")


def open_run(cfg: Any, resume: bool = False) -> tuple[Path, bool]:
    """(run folder, resumed?). `cfg.run_name` names or resumes a run; `resume` picks the latest
    unfinished one (a new run starts when there is none)."""
    root = runs_root(cfg)
    run_dir: Path | None = None
    if cfg.run_name:
        run_dir = root / cfg.run_name
    elif resume:
        run_dir = latest_unfinished(cfg)
        if run_dir is None:
            print(f"[evaluate] --resume: no unfinished run under {root}; starting a new one")
    resumed = run_dir is not None and (run_dir / META).exists()
    if run_dir is None:
        run_dir = root / new_run_name()
        while run_dir.exists():
            time.sleep(1.0)
            run_dir = root / new_run_name()
    if resumed:
        check_resumable(run_dir, cfg)
    run_dir.mkdir(parents=True, exist_ok=True)
    cfg.run_name = run_dir.name
    from qgmem import __version__

    meta = read_meta(run_dir)
    meta.update(_embedder_meta(cfg, meta, run_dir))
    meta.update({"package": "qgmem", "version": __version__, "git_commit": _git_commit(), "status": "running",
                 "started": meta.get("started", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())),
                 "resumed": meta.get("resumed", 0) + int(resumed)})
    atomic_write_json(run_dir / META, meta)
    atomic_write_text(run_dir / CONFIG, yaml.safe_dump(to_dict(cfg), sort_keys=False))
    return run_dir, resumed


def _embedder_meta(cfg: Any, meta: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """The embedder as it runs on this machine (`:auto` resolved: bf16 or float32); a run is not resumed
    under another precision, whose vectors and rankings differ."""
    retrieval = getattr(cfg, "retrieval", None)
    if retrieval is None or not getattr(retrieval, "embedder", None):
        return {}
    from qgmem.embed import BF16_CPU_FLAGS, cpu_flags, resolve_name, split_precision

    name = resolve_name(retrieval.embedder, retrieval.device)
    if meta.get("embedder", name) != name:
        raise ValueError(f"{run_dir / META}: cannot resume: the run embedded with {meta['embedder']!r}, this "
                         f"machine resolves {retrieval.embedder!r} to {name!r}; start a new run instead")
    return {"embedder": name, "embed_precision": split_precision(name)[1],
            "cpu_bf16_units": sorted(set(BF16_CPU_FLAGS) & cpu_flags())}


@contextlib.contextmanager
def failure_recorded(run_dir: Path) -> Iterator[None]:
    """A run that stops on an error is marked "failed" (or "interrupted") with the error, not left
    "running"; `--resume` continues it like any unfinished run."""
    try:
        yield
    except BaseException as e:
        meta = read_meta(run_dir)
        meta.update({"status": "interrupted" if isinstance(e, KeyboardInterrupt) else "failed",
                     "error": f"{type(e).__name__}: {e}"[:2000],
                     "stopped": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        atomic_write_json(run_dir / META, meta)
        raise


def finish_run(run_dir: Path) -> None:
    meta = read_meta(run_dir)
    meta.update({"status": "finished", "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    atomic_write_json(run_dir / META, meta)
