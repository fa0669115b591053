"""The answer path with the real local model (SmolLM2-135M on CPU). Slow: run with -m slow."""

from __future__ import annotations

import pytest
from conftest import REDUCED

from qgmem.evaluation.config import EvalConfig
from qgmem.evaluation.runner import evaluate
from qgmem.io import read_jsonl
from qgmem.llm import LLMConfig, make_backend

pytestmark = pytest.mark.slow


def test_smollm2_answers_through_the_evaluation_loop(tmp_path, tiny_conversation):
    n = 2 if REDUCED else 3
    cfg = EvalConfig(methods=["full-context"], output_dir=str(tmp_path), bootstrap_resamples=200)
    cfg.subset.max_questions = n
    cfg.answer.max_tokens = 24
    cfg.answer.batch_size = 2
    backend = make_backend(LLMConfig(backend="hf", model="smollm2", cache=False, max_new_tokens=24, batch_size=2))
    run_dir, summary = evaluate(cfg, [tiny_conversation], backend, show_progress=False)
    recs = list(read_jsonl(run_dir / "predictions.jsonl"))
    assert len(recs) == n
    for r in recs:
        assert r["answer_error"] is None and r["raw_output"].strip()
        assert not r["prediction"].lower().startswith("answer:")  # the answer line was parsed
        assert 0.0 <= r["scores"]["f1_locomo"] <= 1.0
        u = r["usage"]["generation"]
        assert u["calls"] == 1 and u["prompt_tokens"] > 100 and 0 < u["completion_tokens"] <= 24
    g = summary["methods"]["full-context"]["costs"]["llm"]["generation"]
    assert g["calls"] == n and g["failed"] == 0
    assert backend.usage.phases["generation"].calls == n
    assert (run_dir / "report.md").exists()
