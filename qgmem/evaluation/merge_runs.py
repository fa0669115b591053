"""`qgmem merge-runs --into RUN SHARD_RUN...`: join the shard runs of a sharded retrieval evaluation.

`evaluate.py --config X --shard I/N run_name=NAME` scores the conversations of shard I into
``<output_dir>/<benchmark>/NAME.shard-I-of-N``. Per-question rows are keyed ``<conversation>/<question>``
and every summary figure is a function of the rows (means are exactly rounded, so their order does
not matter) plus two counts that add up over a partition (conversations, unmatched gold ids); so the
merge concatenates the rows and writes the summary and report with the run's own code
(`retrieval_summary.write_summary`): the merged run reads as the unsharded run would, latencies aside (they are
measured, per machine). Nothing is recomputed and no data set is read.

Refused (exit code 2, one line): a folder that is not a retrieval shard run, an unfinished shard (rerun
its command: it resumes), shards of different counts or settings (`RESUME_KEYS`), a missing or repeated
shard, a row of a conversation outside its shard, and an existing `--into`. The merged folder is
written beside its target and renamed into place, so it is never seen half-written.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from qgmem.config import ConfigError, from_dict, to_dict
from qgmem.errors import UserError
from qgmem.evaluation.config import RetrievalBenchConfig
from qgmem.evaluation.retrieval_summary import write_summary
from qgmem.evaluation.runs import CONFIG, META, RETRIEVAL_ROWS, first_difference, read_meta
from qgmem.io import append_jsonl, atomic_write_json, atomic_write_text, read_jsonl
from qgmem.sharding import Shard, parse_shard


class MergeRunsError(ValueError, UserError):
    """Shard runs that cannot be joined as given."""


def _shard_run(run_dir: Path) -> tuple[RetrievalBenchConfig, Shard, dict[str, Any]]:
    """(config, shard, summary) of a finished retrieval shard run; anything else is a MergeRunsError."""
    if not (run_dir / CONFIG).is_file() or not (run_dir / META).is_file():
        raise MergeRunsError(f"{run_dir}: not a run folder (no {CONFIG} or {META})")
    saved = yaml.safe_load((run_dir / CONFIG).read_text()) or {}
    if saved.get("task") != "retrieval":
        raise MergeRunsError(f"{run_dir}: not a retrieval run (task {saved.get('task')!r}); only those are sharded")
    try:
        cfg = from_dict(RetrievalBenchConfig, saved, str(run_dir / CONFIG))
    except (ConfigError, TypeError, ValueError) as e:
        raise MergeRunsError(str(e)) from None
    if not cfg.shard:
        raise MergeRunsError(f"{run_dir}: not a shard run (its config has no shard)")
    status = read_meta(run_dir).get("status")
    if status != "finished" or not (run_dir / "summary.json").is_file():
        raise MergeRunsError(f"{run_dir}: shard {cfg.shard} is {status!r}, not finished; rerun its evaluate.py "
                             "command (it resumes) and merge again")
    return cfg, parse_shard(cfg.shard, f"{run_dir / CONFIG}: shard"), json.loads((run_dir / "summary.json").read_text())


def _check_shards(runs: list[tuple[Path, RetrievalBenchConfig, Shard]]) -> None:
    """The same count and settings everywhere, and every shard 0..N-1 exactly once."""
    first_dir, first, shard0 = runs[0]
    for d, cfg, shard in runs[1:]:
        if shard.count != shard0.count:
            raise MergeRunsError(f"{d}: shard {shard} is not one of {shard0.count} like {first_dir} ({shard0})")
        key = first_difference({**to_dict(cfg), "shard": first.shard}, first)
        if key is not None:
            raise MergeRunsError(f"{d}: setting {key!r} differs from {first_dir}; only shards of one run can be merged")
    seen: dict[int, Path] = {}
    for d, _, shard in runs:
        if shard.index in seen:
            raise MergeRunsError(f"{d}: shard {shard} given twice (also {seen[shard.index]})")
        seen[shard.index] = d
    missing = sorted(set(range(shard0.count)) - set(seen))
    if missing:
        raise MergeRunsError(f"shard(s) {missing} of {shard0.count} missing; run them "
                             f"(evaluate.py ... --shard I/{shard0.count}) and merge all {shard0.count}")


def _rows(runs: list[tuple[Path, RetrievalBenchConfig, Shard]]) -> list[dict[str, Any]]:
    """Every shard's rows in shard order; a repeated key or a conversation outside its shard is refused."""
    out: list[dict[str, Any]] = []
    keys: set[tuple[str, str]] = set()
    for d, cfg, shard in sorted(runs, key=lambda r: r[2].index):
        for row in read_jsonl(d / RETRIEVAL_ROWS):
            conv = row["qid"].split("/")[0]
            if cfg.shard_by == "hash" and not shard.holds(conv):  # "position" shards: the repeat check below
                raise MergeRunsError(f"{d / RETRIEVAL_ROWS}: row {row['qid']!r} is not of shard {shard}")
            if (row["method"], row["qid"]) in keys:
                raise MergeRunsError(f"{d / RETRIEVAL_ROWS}: row {row['method']} {row['qid']!r} also in another shard")
            keys.add((row["method"], row["qid"]))
            out.append(row)
    return out


@dataclass
class ShardRows:
    """The checked shard runs of one sharded run, their rows grouped by the method that ran them."""

    runs: list[tuple[Path, RetrievalBenchConfig, Shard]]
    summaries: list[dict[str, Any]]
    runner: dict[str, str]  # method name -> the name that ran for it
    rows: dict[str, list[dict[str, Any]]]  # method that ran -> its rows
    merged: list[dict[str, Any]]  # every row, shard order

    @property
    def conversations(self) -> int:
        return sum(s["conversations"] for s in self.summaries)

    @property
    def unmatched(self) -> int:
        return sum(s["unmatched_gold_ids"] for s in self.summaries)


def collect_shards(shard_dirs: list[str | Path]) -> ShardRows:
    """Read and check the finished shard runs `shard_dirs` (one run's: the same settings, methods included)."""
    if not shard_dirs:
        raise MergeRunsError("no shard runs given")
    runs, summaries = [], []
    for d in map(Path, shard_dirs):
        cfg, shard, summary = _shard_run(d)
        runs.append((d, cfg, shard))
        summaries.append(summary)
    _check_shards(runs)
    runner = {name: summaries[0].get("same_as", {}).get(name, name) for name in runs[0][1].methods}
    rows: dict[str, list[dict[str, Any]]] = {first: [] for first in runner.values()}
    merged = _rows(runs)
    for row in merged:
        if row["method"] not in rows:
            raise MergeRunsError(f"row {row['method']} {row['qid']!r}: method not run by this configuration")
        rows[row["method"]].append(row)
    return ShardRows(runs, summaries, runner, rows, merged)


def merge_runs(into: str | Path, shard_dirs: list[str | Path]) -> dict[str, Any]:
    """Join the shard runs `shard_dirs` into the new run folder `into`; returns its summary."""
    into = Path(into)
    if into.exists():
        raise MergeRunsError(f"--into {into}: exists already; name a new run folder")
    got = collect_shards(shard_dirs)
    cfg = from_dict(RetrievalBenchConfig, {**to_dict(got.runs[0][1]), "shard": None, "run_name": into.name,
                                           "output_dir": str(into.parent.parent)}, "merged config")
    tmp = into.parent / f".{into.name}.merging"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    atomic_write_text(tmp / CONFIG, yaml.safe_dump(to_dict(cfg), sort_keys=False))
    summary = write_merged(tmp, cfg, got)
    metas = [read_meta(d) for d, _, _ in got.runs]
    atomic_write_json(tmp / META, {
        **{k: metas[0].get(k) for k in ("package", "version", "git_commit")}, "status": "finished",
        "started": min(str(m.get("started")) for m in metas),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "merged_from": merged_from(got)})
    tmp.rename(into)
    return summary


def write_merged(run_dir: Path, cfg: RetrievalBenchConfig, got: ShardRows) -> dict[str, Any]:
    """The rows (replacing any), summary and report of the merged run in `run_dir`."""
    rows_path = run_dir / RETRIEVAL_ROWS
    part = rows_path.with_name(rows_path.name + ".part")
    part.unlink(missing_ok=True)
    append_jsonl(part, got.merged)
    part.replace(rows_path)
    return write_summary(cfg, run_dir, got.rows, got.runner, got.conversations, got.unmatched)


def merged_from(got: ShardRows) -> list[dict[str, Any]]:
    return [{"run": str(d), "shard": str(s), "git_commit": read_meta(d).get("git_commit")} for d, _, s in got.runs]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--into", required=True,
                   help="the merged run folder to create, e.g. results/longmemeval-s/NAME")
    p.add_argument("runs", nargs="+", help="the shard run folders, e.g. results/longmemeval-s/NAME.shard-*")


def run(args: argparse.Namespace) -> int:
    merge_runs(args.into, args.runs)
    print((Path(args.into) / "results.md").read_text())
    print(f"[merge-runs] run: {args.into} ({len(args.runs)} shards)")
    return 0
