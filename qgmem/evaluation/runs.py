"""Run folders: where results go, which run `--resume` continues, what a run folder records.

Layout: ``<output_dir>/<benchmark>/<method tag>/<run name>/`` with ``config.yaml`` (resolved),
``meta.json`` (package version, status), ``predictions.jsonl`` (one line per answered question,
appended atomically), ``builds.jsonl`` (one line per memory build), ``summary.json``,
``report.md`` and ``plots/``.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml

from qgmem.config import to_dict
from qgmem.evaluation.config import EvalConfig
from qgmem.io import atomic_write_json, atomic_write_text

PREDICTIONS = "predictions.jsonl"
BUILDS = "builds.jsonl"
META = "meta.json"
CONFIG = "config.yaml"
# config fields that must match for a run to be resumed: what decides the answers and scores
# (batch sizes, concurrency, timeouts, output_dir may change between the interrupted and the resumed run)
RESUME_KEYS = ("benchmark", "data_dir", "data_options", "subset", "methods", "method_options", "k",
               "answer.llm.backend", "answer.llm.model", "answer.llm.base_url", "answer.max_tokens", "answer.with_graph",
               "answer.max_context_tokens",
               "judge.enabled", "judge.llm.backend", "judge.llm.model", "judge.repeats", "coverage")


def _get(d: dict[str, Any], dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(d, dict) or part not in d:
            return None
        d = d[part]
    return d


def method_tag(cfg: EvalConfig) -> str:
    return "+".join(cfg.methods)


def runs_root(cfg: EvalConfig) -> Path:
    return Path(cfg.output_dir) / cfg.benchmark / method_tag(cfg)


def read_meta(run_dir: Path) -> dict[str, Any]:
    p = run_dir / META
    return json.loads(p.read_text()) if p.exists() else {}


def latest_unfinished(cfg: EvalConfig) -> Path | None:
    root = runs_root(cfg)
    if not root.exists():
        return None
    cands = [d for d in sorted(root.iterdir()) if d.is_dir() and (d / META).exists()
             and read_meta(d).get("status") != "finished"]
    return cands[-1] if cands else None


def new_run_name() -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime())


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def check_resumable(run_dir: Path, cfg: EvalConfig) -> None:
    """Refuse to mix results of different settings in one run; name the first field that differs."""
    p = run_dir / CONFIG
    if not p.exists():
        return
    saved = yaml.safe_load(p.read_text()) or {}
    now = to_dict(cfg)
    for key in RESUME_KEYS:
        if _get(saved, key) != _get(now, key):
            raise ValueError(f"{p}: cannot resume: field {key!r} differs (run has {_get(saved, key)!r}, "
                             f"config now has {_get(now, key)!r}); start a new run instead")


def open_run(cfg: EvalConfig, resume: bool = False) -> tuple[Path, bool]:
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
    meta.update({"package": "qgmem", "version": __version__, "git_commit": _git_commit(), "status": "running",
                 "started": meta.get("started", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())),
                 "resumed": meta.get("resumed", 0) + int(resumed)})
    atomic_write_json(run_dir / META, meta)
    atomic_write_text(run_dir / CONFIG, yaml.safe_dump(to_dict(cfg), sort_keys=False))
    return run_dir, resumed


def finish_run(run_dir: Path) -> None:
    meta = read_meta(run_dir)
    meta.update({"status": "finished", "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    atomic_write_json(run_dir / META, meta)
