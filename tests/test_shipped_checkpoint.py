"""The graph-token checkpoint shipped for the CPU default (checkpoints/smollm2_rehearsal): what `make demo` answers
with beside qgmem-text. Its folder holds the weights, the config inference reads, the training report and a model
card whose numbers are those of the report; the demo names it. Slow: SmolLM2 loads it and answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qgmem.config import load_config, read_yaml
from qgmem.evaluation.config import EvalConfig

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "checkpoints" / "smollm2_rehearsal"


def test_the_demo_answers_with_the_shipped_checkpoint_beside_qgmem_text():
    cfg = load_config(EvalConfig, str(ROOT / "configs/eval/locomo_cpu.yaml"), [])
    assert {"qgmem-text", "qgmem-graph-token"} <= set(cfg.methods)
    assert (ROOT / cfg.method_options["qgmem-graph-token"]["checkpoint"]).resolve() == SHIPPED.resolve()


def test_the_shipped_folder_is_a_small_smollm2_checkpoint_with_its_report_and_card():
    from safetensors.torch import load_file

    weights = SHIPPED / "model.safetensors"
    assert weights.exists() and weights.stat().st_size < 10 * 2**20  # a few MB: encoder + projector only
    tensors = load_file(str(weights))
    assert tensors and all(k.startswith("graph_encoder.") for k in tensors)
    cfg = json.loads((SHIPPED / "qgmem_config.json").read_text())
    assert cfg["extra"]["model_name"] == "smollm2" and cfg["llm_hidden"] == 576 and cfg["llm_dtype"] == "float32"
    # inference retrieves as the prepared set did: the rehearsal's prepare config
    prepare = read_yaml(ROOT / "configs/prepare/rehearsal_cpu.yaml")
    assert cfg["extra"]["prepare"]["retrieval"]["embedder"] == prepare["retrieval"]["embedder"]
    assert cfg["extra"]["prepare"]["dataset"] == "convomem-cases"
    report = json.loads((SHIPPED / "train_report.json").read_text())
    assert sum(p.numel() for p in tensors.values()) == report["parameters"]["trainable"]
    card = (SHIPPED / "MODEL_CARD.md").read_text()
    for words in ("Apache-2.0", "MIT", f"seed {report['config']['optim']['seed']}", f"{report['steps']} optimizer steps",
                  "## Held-out metrics", "| graph+text |", "| text only |", "Do not score this checkpoint on LongMemEval"):
        assert words in card, words
    test = report["test"]
    assert f"| graph+text | {test['graph+text']['loss']:.4f} |" in card  # the card's table is the report's


@pytest.mark.slow
def test_the_shipped_checkpoint_answers_through_the_pipeline(tmp_path, tiny_conversation):
    from qgmem.pipeline import MemoryPipeline

    pipe = MemoryPipeline.from_pretrained(SHIPPED, store_dir=tmp_path / "store", max_new_tokens=16)
    try:
        pipe.add(tiny_conversation, namespace="alice")
        assert not pipe.model.training
        ans = pipe.answer("Where does Alice work now?", namespace="alice")
        assert ans.raw.strip()
        assert set(ans.cited_labels) <= {it.label for it in ans.working_memory.items}
        tokens = pipe.graph_tokens("Where does Alice work now?", namespace="alice")
        assert tuple(tokens.shape) == (1, 576)
    finally:
        pipe.close()
