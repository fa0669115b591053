"""`workers: N`: a retrieval run scored by N processes (one shard each) reads as the one-process run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qgmem.evaluation.config import RetrievalBenchConfig
from qgmem.evaluation.retrieval import run_benchmark
from qgmem.evaluation.workers import WorkerFailed, threads_per_worker
from qgmem.io import read_jsonl


def _cfg(tmp_path: Path, data_dir: Path, **kw) -> RetrievalBenchConfig:
    base = dict(benchmark="locomo", data_dir=str(data_dir), output_dir=str(tmp_path / "out"), k=5,
                subset={"conversations": ["conv-26", "conv-30", "conv-41"], "per_category": 3},
                methods=["bm25-turns"], dev_conversations=["conv-26"])
    base.update(kw)
    from qgmem.config import from_dict

    return from_dict(RetrievalBenchConfig, base, "test")


def _rows(run: Path) -> list[str]:
    return sorted(json.dumps({k: v for k, v in r.items() if k != "latency_ms"}, sort_keys=True)
                  for r in read_jsonl(run / "retrieval.jsonl"))


def _scores(summary: dict) -> dict:
    return {g: {m: {k: v for k, v in s.items() if not k.startswith("latency")} for m, s in per.items()}
            for g, per in summary["groups"].items()}


def test_two_workers_equal_one_process_and_resume(tmp_path, data_dir) -> None:
    one = run_benchmark(_cfg(tmp_path, data_dir, run_name="one"))
    two = run_benchmark(_cfg(tmp_path, data_dir, run_name="two", workers=2))
    root = tmp_path / "out" / "locomo"
    assert _scores(two) == _scores(one) and two["conversations"] == one["conversations"] == 3
    assert _rows(root / "two") == _rows(root / "one")
    assert (root / "two" / "per_category.png").stat().st_size > 1000  # the plot of the merged run
    meta = json.loads((root / "two" / "meta.json").read_text())
    assert meta["status"] == "finished" and [m["shard"] for m in meta["merged_from"]] == ["0/2", "1/2"]
    held = [2, 1]  # by position in the selection: conv-26 and conv-41 to worker 0, conv-30 to worker 1
    assert sorted(p.name for p in root.glob("two.shard-*")) == ["two.shard-0-of-2", "two.shard-1-of-2"]
    assert [json.loads((root / f"two.shard-{i}-of-2" / "summary.json").read_text())["conversations"]
            for i in range(2)] == held
    # the same command again resumes every shard (nothing left to score) and writes the same merge
    (root / "two" / "summary.json").unlink()
    again = run_benchmark(_cfg(tmp_path, data_dir, run_name="two", workers=2))
    assert _scores(again) == _scores(one)


def test_a_failing_worker_is_reported_with_its_folder(tmp_path, data_dir) -> None:
    with pytest.raises(WorkerFailed, match=r"2 of 2 workers failed: .*bad\.shard-0-of-2 \(exit code 1\)"):
        run_benchmark(_cfg(tmp_path, data_dir / "missing", run_name="bad", workers=2))
    meta = json.loads((tmp_path / "out" / "locomo" / "bad" / "meta.json").read_text())
    assert meta["status"] == "failed" and "workers failed" in meta["error"]


def test_threads_split_the_cores() -> None:
    assert threads_per_worker(1) >= 1 and threads_per_worker(10_000) == 1
