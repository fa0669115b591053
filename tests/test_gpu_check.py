"""bench/gpu_check.py's CPU path: the same code as on a GPU (the recipe's configs, a GraphTokenLM built from the
shipped shapes, the trainer's collator and accumulate_step) at tiny shapes; one real optimizer step moves the
trainable weights of both backbones, and the report carries the numbers the GPU run is for."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "bench" / "gpu_check.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield mod
    torch.set_num_threads(threads)
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(True)
    GradientState._reset_state()


def test_tiny_training_step_through_the_gpu_check(gpu_check, tmp_path, capsys):
    out = tmp_path / "gpu_check.json"
    assert gpu_check.main(["--tiny", "--steps", "1", "--out", str(out)]) == 0
    res = json.loads(out.read_text())["results"]
    assert [r["model"] for r in res] == ["qwen3_8b", "llama31_8b"]
    for r in res:
        assert r["device"] == "cpu" and r["gradient_checkpointing"] is True  # the recipe's checkpointing
        assert (r["batch_size"], r["grad_accum"], r["max_length"]) == (2, 4, 256)  # the recipe's batch, tiny length
        assert r["trainable_changed"] is True and len(r["loss"]) == 2 and all(math.isfinite(x) for x in r["loss"])
        assert r["step_s"] > 0 and r["tokens_per_s"] > 0 and r["answer_tokens_max"] >= 32
        assert r["tokens_per_micro_batch"] <= 2 * 256 and r["estimate"].endswith("GiB")
        assert r["peak_allocated"] is None  # no CUDA here
    assert "trainable weights moved: True" in capsys.readouterr().out


def test_the_real_shapes_are_the_recipes(gpu_check):
    for shape, params in (("qwen3_8b", 8_190_735_360), ("llama31_8b", 8_030_261_248)):
        cfg, hf_cfg, _ = gpu_check.recipe(shape, tiny=False)
        assert cfg.model.dtype == "bfloat16" and cfg.model.gradient_checkpointing and cfg.data.max_length == 4096
        assert cfg.encoder.node_dim == 768 and cfg.encoder.edge_dim > 768  # BGE features + rank/time
        from qgmem.training.memory import shape_from_config

        assert shape_from_config(hf_cfg, shape).params == params  # built on the meta device: no memory


def test_refuses_without_cuda_unless_tiny(gpu_check, capsys):
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    assert gpu_check.main([]) == 2
    assert "no CUDA device" in capsys.readouterr().err
