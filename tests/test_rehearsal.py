"""The CPU rehearsal of the paper recipe, run as its one documented command (`python bench/rehearsal.py`):
LongMemEval-oracle questions as ConvoMem test cases -> `qgmem prepare` with the answer filter -> `accelerate launch`
with 2 gloo processes, SIGKILLed once last/ holds step 2, relaunched (requeue) -> the same weights as an
uninterrupted run (sha256) -> `evaluate.py` on the checkpoint config -> `MemoryPipeline.from_pretrained(best)`,
with one set of graph tokens in validate, evaluate and the pipeline. Slow and data-marked; QGMEM_REDUCED=1 (CI)
runs `--reduced` (a tiny random Qwen3 in place of SmolLM2, 12 cases)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REDUCED

pytestmark = [pytest.mark.slow, pytest.mark.data, pytest.mark.timeout(1500 if REDUCED else 3600)]
ROOT = Path(__file__).resolve().parents[1]


def test_rehearsal_resumes_to_the_uninterrupted_weights_with_one_set_of_graph_tokens(tmp_path, data_dir):
    work = tmp_path / "rehearsal"
    cmd = [sys.executable, str(ROOT / "bench" / "rehearsal.py"), "--work", str(work), "--data-dir", str(data_dir),
           "--kill-after", "2", *(["--reduced"] if REDUCED else [])]
    env = {**os.environ, "QGMEM_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"}
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1400 if REDUCED else 3500)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-3000:]
    rep = json.loads((work / "rehearsal.json").read_text())

    # the data: cases of the paper's layout, none from a question any LongMemEval config scores
    assert rep["data"]["cases"] > 0 and rep["data"]["questions_scored_elsewhere"] > 0
    meta = json.loads((work / "prepared" / "prepare_meta.json").read_text())
    assert meta["config"]["dataset"] == "convomem-cases" and meta["answer_filter"]["checked"] > 0

    # killed mid-run once last/ held step 2 (a fast step may land one more before the kill), resumed from the step
    # held at the kill by the same command, same bytes as the uninterrupted run
    killed_at, w = rep["kill"]["last_step_at_kill"], rep["weights"]
    assert 2 <= killed_at < w["steps"] and rep["kill"]["killed_processes"] >= 3  # launcher + 2 workers
    assert w["resumed_from"] == [killed_at] and w["history_equal"]
    for name in ("best", "last"):
        assert w[name]["requeued"] == w[name]["uninterrupted"], name
    train_log = (work / "train_requeued.log").read_text()
    assert "2 process(es)" in train_log and "gradient_checkpointing is on" in train_log
    assert len(list((work / "train" / "wandb").glob("offline-run-*"))) == 2  # wandb offline: the killed + the requeued

    # one set of graph tokens: validate == evaluate.py == MemoryPipeline.answer == MemoryPipeline.graph_tokens
    p = rep["parity"]
    assert p["questions"] >= 1 and p["tokens_equal"] and p["max_abs_difference"] == 0.0
    assert p["replies_equal"] == p["questions"]
    assert p["val_loss"]["recomputed"] == pytest.approx(p["val_loss"]["recorded_in_training"], rel=1e-5)
    rows = [json.loads(line) for line in
            (work / "results" / "convomem-cases" / "rehearsal" / "predictions.jsonl").read_text().splitlines()]
    assert {r["method"] for r in rows} == {"qgmem-graph-token"} and len(rows) == p["questions"]
    assert all(r["answer_error"] is None for r in rows)
    print(f"\nrehearsal ({'reduced' if REDUCED else 'full'}): {rep['total_wall_s']} s wall; "
          + ", ".join(f"{r['phase']} {r['wall_s']} s" for r in rep["phases"]))
