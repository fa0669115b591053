"""Real backbone: the loop against frozen SmolLM2-135M-Instruct (packaged GGUF), then the pipeline
from its checkpoint. Slow; REDUCED runs one optimizer step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from conftest import REDUCED
from qgmem.config import load_config, to_dict
from qgmem.training.prepare import config_from_file
from qgmem.training.prepared import save_prepared
from qgmem.training.config import TrainConfig
from qgmem.training.trainer import train

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]


def _row(i: int, split: str) -> dict:
    g = torch.Generator().manual_seed(i)
    item, colour = f"item {i}", ["red", "green", "blue"][i % 3]
    return {
        "id": f"ex{i}", "conversation_id": f"c{i}", "split": split, "question": f"What colour is {item}?",
        "question_time": "2023-05-01", "category": "x", "answer": colour, "answers": [colour], "evidence": [],
        "memory_text": f"[M1] The colour of {item} is {colour}.\n  said on 2023-04-30", "labels": ["M1"],
        "item_texts": [f"The colour of {item} is {colour}."], "item_turn_ids": [["D1:1"]],
        "x": torch.randn(2, 384, generator=g).tolist(), "edge_index": [[0, 1]],
        "edge_attr": torch.randn(1, 388, generator=g).tolist(), "node_text": [item, colour],
        "edge_text": ["has colour"], "edge_labels": ["M1"], "num_nodes": 2,
    }


def test_smollm2_train_then_pipeline(tmp_path, tiny_conversation):
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    n_train = 2 if REDUCED else 8
    prepare, _ = config_from_file(str(ROOT / "configs/train/smollm2_cpu.yaml"), [])  # graph, k, retrieval
    save_prepared({"train": [_row(i, "train") for i in range(n_train)], "val": [_row(50, "val")],
                   "test": [_row(60, "test")]}, tmp_path / "prep", to_dict(prepare), 384, 388)
    out = tmp_path / "run"
    steps = 1 if REDUCED else 4
    cfg = load_config(TrainConfig, ROOT / "configs/train/smollm2_cpu.yaml", [
        f"output_dir={out}", f"data.dir={tmp_path / 'prep'}", "data.max_length=200",
        "optim.batch_size=1", "optim.grad_accum=2", f"optim.max_steps={steps}", f"eval.every={steps}",
        "eval.max_new_tokens=4", "progress=false"])
    rep = train(cfg)
    assert rep["steps"] == steps
    assert rep["parameters"]["frozen"] > 100_000_000 > rep["parameters"]["trainable"] > 0
    assert all(torch.isfinite(torch.tensor(h["train_loss"])) for h in rep["history"] if "train_loss" in h)
    test = json.loads((out / "report.json").read_text())["test"]
    assert set(test) >= {"graph+text", "text only", "shuffled graph+text"}
    weights = load_file(str(out / "best" / "model.safetensors"))
    assert weights and all(k.startswith("graph_encoder.") for k in weights)

    from qgmem.pipeline import MemoryPipeline

    pipe = MemoryPipeline.from_pretrained(out / "best", store_dir=tmp_path / "store", max_new_tokens=16)
    pipe.add(tiny_conversation, namespace="alice")
    ans = pipe.answer("Where does Alice work now?", namespace="alice")
    assert ans.raw.strip()
    assert set(ans.cited_labels) <= {it.label for it in ans.working_memory.items}
