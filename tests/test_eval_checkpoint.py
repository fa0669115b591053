"""Evaluating a trained graph-token checkpoint: every benchmark with an eval config has a checkpoint
config, and `evaluate.py --config configs/eval/locomo_checkpoint.yaml` runs end to end on CPU with a
SmolLM2 checkpoint from configs/train/smollm2_cpu.yaml (slow: prepare + train + evaluate)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REDUCED

from test_pipeline import tiny_checkpoint  # noqa: F401 - fixture: a saved tiny graph-token checkpoint

from qgmem.config import ConfigError, load_config, read_yaml
from qgmem.evaluation.config import EvalConfig
from qgmem.io import read_jsonl

ROOT = Path(__file__).resolve().parents[1]
EVAL = ROOT / "configs" / "eval"
BENCHMARKS = sorted({str(read_yaml(str(p)).get("benchmark", "locomo")) for p in EVAL.glob("*.yaml")
                     if read_yaml(str(p)).get("task", "qa") == "qa" and "checkpoint" not in p.name})


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_every_benchmark_with_an_eval_config_has_a_checkpoint_config(benchmark: str) -> None:
    name = benchmark.replace("-", "_")
    cfg = load_config(EvalConfig, str(EVAL / f"{name}_checkpoint.yaml"))
    assert cfg.benchmark == benchmark and cfg.methods == ["qgmem-graph-token"]
    assert cfg.method_options["qgmem-graph-token"]["checkpoint"]


def test_checkpoint_configs_need_a_checkpoint(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"method_options.qgmem-graph-token.checkpoint"):
        load_config(EvalConfig, str(EVAL / "locomo_checkpoint.yaml"), ["method_options.qgmem-graph-token.checkpoint="])


def _run(args: list[str], env: dict[str, str], timeout: int) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
@pytest.mark.data
def test_evaluate_locomo_checkpoint_config_end_to_end_on_cpu(tmp_path, data_dir) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QGMEM_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    prep, ck = tmp_path / "prep", tmp_path / "ck"
    train_cfg = "configs/train/smollm2_cpu.yaml"
    p = _run(["-m", "qgmem.cli", "prepare", "--config", train_cfg, "--out", str(prep),
              f"max_conversations={4 if REDUCED else 6}"], env, 900)
    assert p.returncode == 0, p.stderr[-3000:]
    t = _run(["train.py", "--config", train_cfg, f"data.dir={prep}", f"output_dir={ck}", "optim.max_steps=2",
              "eval.test=false", "progress=false"], env, 900)
    assert t.returncode == 0, t.stderr[-3000:]
    best = ck / "best"
    assert (best / "qgmem_config.json").exists()
    per_cat = 1 if REDUCED else 2
    t0 = time.perf_counter()
    e = _run(["evaluate.py", "--config", "configs/eval/locomo_checkpoint.yaml", "--quiet",
              f"method_options.qgmem-graph-token.checkpoint={best}", f"output_dir={tmp_path / 'results'}",
              "subset.max_conversations=1", f"subset.per_category={per_cat}", "bootstrap_resamples=200"], env, 1800)
    wall = time.perf_counter() - t0
    assert e.returncode == 0, e.stderr[-3000:]
    assert "qgmem-graph-token" in e.stdout  # the printed score table
    run_dir = next((tmp_path / "results" / "locomo").iterdir())
    recs = list(read_jsonl(run_dir / "predictions.jsonl"))
    assert recs and {r["method"] for r in recs} == {"qgmem-graph-token"}
    for r in recs:  # answered by the checkpoint from its own working memory, never by an endpoint
        assert r["answer_error"] is None and r["raw_output"].strip() and len(r["retrieved"]) > 0
        assert 0.0 <= r["scores"]["f1_locomo"] <= 1.0
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["methods"]["qgmem-graph-token"]["overall"]["answer_failed"] == 0
    print(f"\nevaluate.py locomo_checkpoint: {len(recs)} questions in {wall:.0f} s\n{e.stdout[-2500:]}")


def test_graph_token_method_answers_from_the_working_memory_the_run_recorded(tmp_path, tiny_checkpoint,
                                                                             tiny_conversation) -> None:
    """The run records `activate`'s working memory; the answer must come from that one, without a second
    retrieval (which costs a query and could differ from what is recorded)."""
    from qgmem.methods import make_method
    from qgmem.model.inputs import build_example

    m = make_method("qgmem-graph-token", store=tmp_path / "store", checkpoint=str(tiny_checkpoint), device="cpu")
    m.build(tiny_conversation)
    q = tiny_conversation.questions[0]
    wm = m.activate(q)
    calls = []
    real = m.pipeline.retriever.activate
    m.pipeline.retriever.activate = lambda *a, **k: calls.append(1) or real(*a, **k)
    wm.items = wm.items[:1]  # what the run recorded, here a one-item memory
    raw, _, _ = m.answer(q, wm, max_tokens=6)
    assert calls == []
    pipe = m.pipeline
    ex = build_example(wm, pipe.retriever.embedder.encode, pipe.inputs, embed_dim=pipe.retriever.embedder.dim)
    assert raw == pipe.model.generate(pipe.model.make_collator(pipe.max_length, mode="generate")([ex]),
                                      max_new_tokens=6)[0]
